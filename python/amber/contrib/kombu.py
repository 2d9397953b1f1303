"""amber as a kombu serializer, and so as a Celery task serializer.

Installing amber registers the ``amber`` serializer with kombu through the
``kombu.serializers`` entry point, with content type ``application/x-amber``.
"""

from __future__ import annotations

from typing import Any

from ._config import CONTENT_TYPE, Codec

_default = Codec(where="kombu serializer 'amber'")


def _dumps(obj: Any) -> bytes:
    return _default.dumps(obj)


def _loads(data: Any) -> Any:
    return _default.loads(data)


# What kombu's entry-point loader passes to ``kombu.serialization.register`` after the name.
register_args = (_dumps, _loads, CONTENT_TYPE, "binary")
