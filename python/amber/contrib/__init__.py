"""amber inside the systems that already move Python objects around.

Each module adapts amber to one system, following that system's own conventions, and imports
the system only when it is itself imported: ``import amber`` never pulls any of them in.

- ``amber.contrib.django``: serializers for Django's ``RedisCache`` and for django-redis.
- ``amber.contrib.kombu``: the ``amber`` content type for kombu and Celery (an entry point, so
  ``task_serializer = "amber"`` works after ``pip install``), and a signed variant.
- ``amber.contrib.dask``: a Dask ``distributed`` serialization family with out-of-band frames.
- ``amber.contrib.starlette`` and ``amber.contrib.aiohttp``: ``application/x-amber`` responses
  and size-limited request bodies.
- ``amber.contrib.multiprocessing``: connections and queues that carry amber payloads with
  ``send_bytes``/``recv_bytes``, never pickle.

``amber.contrib.Codec`` is what they share: a ``dumps``/``loads`` pair with options fixed once,
built from keywords or from a settings mapping.
"""

from __future__ import annotations

from ._config import CONTENT_TYPE, Codec, OptionsError

__all__ = ["CONTENT_TYPE", "Codec", "OptionsError"]
