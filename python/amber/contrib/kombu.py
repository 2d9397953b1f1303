"""amber as a kombu serializer, and so as a Celery task and result serializer.

Installing amber registers the ``amber`` serializer with kombu through the
``kombu.serializers`` entry point (content type ``application/x-amber``, content encoding
``binary``), so a Celery config of ``task_serializer = "amber"`` and
``accept_content = ["amber"]`` works with no import of amber in the application's code. That
serializer builds no class instances: it carries every builtin and library type amber knows
(tuples, sets, datetimes, Decimals, UUIDs...) and refuses any other class.

An application that sends its own classes allows them by calling :func:`register` in the
module that defines the Celery app, so the worker, which imports that module, allows the same
ones. Brokers that more than one party can write to use the signed variant, registered with
:func:`register_signed` under its own name and content type: a worker that accepts only
``amber-signed`` refuses unsigned, altered and foreign messages before anything is built.

Celery's own protocol puts task signatures (``link=``, chains, chords, groups) in message
bodies; they are ``dict`` subclasses, which amber refuses to flatten silently, so every
serializer registered here carries the ``celery.canvas`` signature classes as custom types
and rebuilds them with Celery's own ``signature()``, as pickle does.

kombu imports this module while ``kombu.serialization`` itself is being imported (that is how
entry points are loaded), so nothing here imports kombu or Celery at module level.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any, Final

from .. import (
    ClassNotAllowedError,
    CustomType,
    DecodeError,
    DecodeLimitError,
    EncodeError,
    SignatureError,
)
from ._config import CONTENT_TYPE, Codec, OptionsError

__all__ = [
    "CONTENT_ENCODING",
    "CONTENT_TYPE",
    "NAME",
    "SIGNED_CONTENT_TYPE",
    "SIGNED_NAME",
    "register",
    "register_args",
    "register_signed",
    "signed_register_args",
]

NAME: Final = "amber"
SIGNED_NAME: Final = "amber-signed"
# A separate content type, so that a worker whose ``accept_content`` names only the signed
# variant refuses plain amber messages at kombu's accept check, before any decoder runs.
SIGNED_CONTENT_TYPE: Final = "application/x-amber-signed"
# kombu hands ``binary`` bodies to the decoder untouched (no text decoding on the way).
CONTENT_ENCODING: Final = "binary"

_CANVAS_MODULE = "celery.canvas"


# amber's exception classes, which every Celery process may need to rebuild.
_AMBER_ERRORS = (EncodeError, DecodeError, DecodeLimitError, ClassNotAllowedError, SignatureError)


def _signature_types(canvas: Any, taken: set[type]) -> list[CustomType[Any]]:
    """Custom types for ``Signature`` and every subclass of it defined so far.

    Celery's JSON encoder turns a signature into a plain dict and its worker turns it back
    with ``signature()``; pickle does the same through ``Signature.__reduce__``. Doing the
    same here keeps chains, links and chords working, and the class a decoded signature gets
    is chosen by its ``subtask_type`` among the types Celery registered, never by the payload.
    """
    rebuild = canvas.signature
    found: list[CustomType[Any]] = []
    pending = [canvas.Signature]
    seen: set[type] = set()
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        pending.extend(cls.__subclasses__())
        if cls not in taken:
            found.append(CustomType(cls, encode=dict, decode=rebuild))
    return found


class _Serializer:
    """One registered name: the options it was given and the codec built from them.

    The codec is rebuilt once when ``celery.canvas`` appears in the process after the first
    build, so that the entry point's serializer, built while kombu is still importing, learns
    Celery's signature classes without importing Celery itself.
    """

    __slots__ = ("_canvas", "_codec", "_lock", "_options", "where")

    def __init__(self, options: Mapping[str, Any], where: str) -> None:
        self._options = dict(options)
        self.where = where
        self._lock = threading.Lock()
        self._canvas = False
        self._codec: Codec | None = None

    def build(self) -> Codec:
        canvas = sys.modules.get(_CANVAS_MODULE)
        options = dict(self._options)
        user_custom = options.get("custom")
        if isinstance(user_custom, (str, bytes)):
            pass  # Codec names the mistake
        elif canvas is not None and hasattr(canvas, "Signature"):
            user_custom = list(user_custom or ())
            taken = {entry.cls for entry in user_custom if isinstance(entry, CustomType)}
            options["custom"] = [*user_custom, *_signature_types(canvas, taken)]
        user_types = options.get("types")
        if user_types is None or isinstance(user_types, (list, tuple)):
            # Celery sends a failed task's exception, whose arguments may hold amber's own
            # errors (a result amber could not encode): the client must rebuild them.
            options["types"] = [*(user_types or ()), *_AMBER_ERRORS]
        codec = Codec.from_options(options, where=self.where)
        self._codec = codec
        self._canvas = canvas is not None
        return codec

    def codec(self) -> Codec:
        codec = self._codec
        if codec is None or (not self._canvas and _CANVAS_MODULE in sys.modules):
            with self._lock:
                codec = self.build()
        return codec

    def dumps(self, obj: Any) -> bytes:
        return self.codec().dumps(obj)

    def loads(self, data: Any) -> Any:
        return self.codec().loads(data)


_default = _Serializer({}, f"kombu serializer {NAME!r}")

# What kombu's entry-point loader passes to ``kombu.serialization.register`` after the name.
register_args = (_default.dumps, _default.loads, CONTENT_TYPE, CONTENT_ENCODING)


def _signed_unconfigured(_: Any) -> Any:
    raise OptionsError(
        f"kombu serializer {SIGNED_NAME!r} has no key: call "
        "amber.contrib.kombu.register_signed(key=...) in the module that defines the Celery "
        "app, so that both the callers and the workers import it"
    )


# For a ``kombu.serializers`` entry point named ``amber-signed``: with it, a config may name
# the signed variant before the app's module calls ``register_signed``, and a process that
# never calls it refuses such messages with a message saying what is missing.
signed_register_args = (
    _signed_unconfigured,
    _signed_unconfigured,
    SIGNED_CONTENT_TYPE,
    CONTENT_ENCODING,
)


def _install(name: str, content_type: str, options: Mapping[str, Any]) -> None:
    if not isinstance(name, str) or not name or "/" in name:
        raise OptionsError(f"kombu serializer name must be a non-empty str without '/': {name!r}")
    if not isinstance(content_type, str) or "/" not in content_type:
        raise OptionsError(
            f"kombu serializer {name!r}: content_type must be a media type like "
            f"'application/x-amber', not {content_type!r}"
        )
    serializer = _Serializer(options, f"kombu serializer {name!r}")
    serializer.build()  # bad options fail here, in the app module, not at the first message
    from kombu import serialization

    # kombu's registry is untyped; Any keeps mypy strict quiet about its calls.
    registry: Any = serialization.registry

    # Two names on one content type would share kombu's one decoder for it.
    owner = registry.type_to_name.get(content_type)
    if owner is not None and owner != name:
        raise OptionsError(
            f"kombu serializer {name!r}: content type {content_type!r} is already registered "
            f"as {owner!r}; give this serializer its own content_type"
        )
    registry.register(name, serializer.dumps, serializer.loads, content_type, CONTENT_ENCODING)


def register(
    *,
    types: Any = None,
    custom: Any = None,
    name: str = NAME,
    content_type: str = CONTENT_TYPE,
    **options: Any,
) -> None:
    """Register (or re-register) the unsigned amber serializer with these options.

    Call it in the module that defines the Celery app: the worker imports that module, so
    callers and workers then allow the same ``types`` (classes or dotted paths, as for
    ``amber.loads``) and ``custom`` types. Other keywords are ``amber.contrib.Codec``'s
    (``max_alloc``, ``max_depth``, ``compress``, ``unknown_fields``...). The registry is
    kombu's, one per process: the last call for a name wins.
    """
    for refused in ("key", "fallback_keys", "max_age", "timestamp"):
        if refused in options:
            raise OptionsError(
                f"kombu serializer {name!r}: {refused} is for the signed variant; use "
                "amber.contrib.kombu.register_signed(key=...), which has its own name and "
                "content type"
            )
    _install(name, content_type, {"types": types, "custom": custom, **options})


def register_signed(
    key: Any,
    *,
    fallback_keys: Iterable[Any] = (),
    max_age: float | timedelta | None = None,
    types: Any = None,
    custom: Any = None,
    name: str = SIGNED_NAME,
    content_type: str = SIGNED_CONTENT_TYPE,
    **options: Any,
) -> None:
    """Register the signed amber serializer: HMAC-SHA256 over every body it writes.

    ``key`` (a secret of 16 bytes or more, or an ``amber.SigningKey``) signs; messages signed
    with ``key`` or any of ``fallback_keys`` are accepted, so keys rotate without a flag day:
    every process gets the new key with the old one as fallback, then the fallback goes.
    ``max_age`` (seconds or a timedelta) refuses older messages; Celery decodes a body again
    when the task runs, so it must exceed the longest countdown or ETA too. Only the body is
    signed; the task name, id and ETA travel in message headers that kombu does not pass to
    serializers.
    """
    if key is None:
        raise OptionsError(
            f"kombu serializer {name!r}: key is required (a secret of 16 bytes or more)"
        )
    _install(
        name,
        content_type,
        {
            "types": types,
            "custom": custom,
            "key": key,
            "fallback_keys": fallback_keys,
            "max_age": max_age,
            **options,
        },
    )
