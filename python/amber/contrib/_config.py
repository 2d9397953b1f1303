"""One place that turns an integration's options into an amber encoder and decoder.

Every integration is configured the same way, whether the options arrive as keywords or as a
settings mapping (Django ``CACHES[...]["OPTIONS"]``, a Celery config module): the allowed
``types``, ``custom`` types, a signing ``key`` with ``fallback_keys`` for rotation, ``max_age``,
compression and the decoder's limits. Classes and custom types may be named by dotted path,
as settings files name them; those names come from the application's own configuration and
are imported here, once, never from a payload.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any

from .. import CustomType, Decoder, Encoder, SigningKey, dumps

__all__ = ["CONTENT_TYPE", "Codec", "OptionsError"]

# The media type every integration sends and accepts.
CONTENT_TYPE = "application/x-amber"

_OPTION_NAMES = frozenset(
    {
        "types",
        "custom",
        "key",
        "fallback_keys",
        "max_age",
        "timestamp",
        "compress",
        "level",
        "refs",
        "canonical",
        "sort_keys",
        "max_depth",
        "max_alloc",
        "max_decompressed",
        "unknown_fields",
        "placeholders",
        "strict_dumps",
    }
)


class OptionsError(ValueError):
    """An integration's options are wrong; the message names the option and where it was set."""


def _import_dotted(path: str, option: str, where: str) -> Any:
    """The object that ``pkg.module.Name`` or ``pkg.module:Outer.Inner`` names in the config."""
    if ":" in path:
        module_name, _, attr_path = path.partition(":")
    else:
        module_name, _, attr_path = path.rpartition(".")
    if not module_name or not attr_path:
        raise OptionsError(
            f"{where}: {option} entry {path!r} is not a dotted path like 'app.models.Name'"
        )
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise OptionsError(
            f"{where}: {option} entry {path!r}: cannot import {module_name!r}: {exc}"
        ) from exc
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise OptionsError(
                f"{where}: {option} entry {path!r}: {module_name!r} has no attribute {attr_path!r}"
            ) from None
    return target


def _resolve_class(entry: Any, option: str, where: str) -> type:
    cls = _import_dotted(entry, option, where) if isinstance(entry, str) else entry
    if not isinstance(cls, type):
        raise OptionsError(f"{where}: {option} entry {entry!r} is not a class")
    return cls


def _resolve_types(types: Any, where: str) -> list[type | tuple[str, type]] | None:
    if types is None:
        return None
    if isinstance(types, (str, bytes)) or not isinstance(types, Iterable):
        raise OptionsError(
            f"{where}: types must be a list of classes or dotted paths, not {types!r}"
        )
    if isinstance(types, Mapping):
        return [(str(name), _resolve_class(cls, "types", where)) for name, cls in types.items()]
    resolved: list[type | tuple[str, type]] = []
    for entry in types:
        if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str):
            resolved.append((entry[0], _resolve_class(entry[1], "types", where)))
        else:
            resolved.append(_resolve_class(entry, "types", where))
    return resolved


def _resolve_custom(custom: Any, where: str) -> list[CustomType[Any]] | None:
    if custom is None:
        return None
    if isinstance(custom, (str, bytes)) or not isinstance(custom, Iterable):
        raise OptionsError(
            f"{where}: custom must be a list of CustomType or dotted paths, not {custom!r}"
        )
    resolved: list[CustomType[Any]] = []
    for entry in custom:
        value = _import_dotted(entry, "custom", where) if isinstance(entry, str) else entry
        if not isinstance(value, CustomType):
            raise OptionsError(f"{where}: custom entry {entry!r} is not an amber.CustomType")
        resolved.append(value)
    return resolved


def _signing_key(secret: Any, option: str, where: str) -> SigningKey:
    if isinstance(secret, SigningKey):
        return secret
    try:
        return SigningKey(secret)
    except (TypeError, ValueError) as exc:
        raise OptionsError(f"{where}: {option}: {exc}") from exc


class Codec:
    """``dumps`` and ``loads`` with their options fixed once, as every integration needs them.

    ``key`` signs what ``dumps`` writes; ``loads`` accepts payloads signed with ``key`` or any
    of ``fallback_keys`` (the key id in the payload picks one), so keys rotate as Django's
    ``SECRET_KEY_FALLBACKS`` do: put the new key in ``key``, the old one in ``fallback_keys``,
    and drop it once every process writes with the new one. With a key, unsigned and foreign
    payloads are refused (``amber.SignatureError``) before anything is built. ``max_age``
    (seconds or a ``timedelta``) turns on timestamps and refuses older payloads.
    ``strict_dumps`` makes ``dumps`` refuse (``amber.EncodeError``) what ``loads`` would
    refuse: a class or function outside ``types`` and the builtin tables, so that the failure
    shows at the writer, where a system can still choose another serializer (Dask does).
    """

    __slots__ = ("_decoder", "_dump_options", "_encoder", "signed")

    def __init__(
        self,
        *,
        types: Any = None,
        custom: Any = None,
        key: Any = None,
        fallback_keys: Iterable[Any] = (),
        max_age: float | timedelta | None = None,
        timestamp: bool | None = None,
        compress: str | None = None,
        level: int | None = None,
        refs: bool = True,
        canonical: bool = False,
        sort_keys: bool = False,
        max_depth: int = 1000,
        max_alloc: int | None = None,
        max_decompressed: int | None = None,
        unknown_fields: str = "ignore",
        placeholders: bool = False,
        strict_dumps: bool = False,
        where: str = "amber options",
    ) -> None:
        resolved_types = _resolve_types(types, where)
        resolved_custom = _resolve_custom(custom, where)
        if isinstance(fallback_keys, (str, bytes, bytearray, SigningKey)):
            fallback_keys = [fallback_keys]
        elif not isinstance(fallback_keys, Iterable):
            raise OptionsError(
                f"{where}: fallback_keys must be a list of secrets, not {fallback_keys!r}"
            )
        fallbacks = [_signing_key(k, "fallback_keys", where) for k in fallback_keys]
        if key is None and fallbacks:
            raise OptionsError(f"{where}: fallback_keys given without a key to sign with")
        if key is None and max_age is not None:
            raise OptionsError(f"{where}: max_age needs a key: only signed payloads carry a time")
        signing = _signing_key(key, "key", where) if key is not None else None
        if timestamp is None:
            timestamp = max_age is not None
        elif max_age is not None and not timestamp:
            raise OptionsError(f"{where}: max_age needs timestamp=True")
        self.signed = signing is not None
        self._dump_options: dict[str, Any] = {
            "refs": refs,
            "max_depth": max_depth,
            "custom": resolved_custom,
            "canonical": canonical,
            "sort_keys": sort_keys,
            "key": signing,
            "timestamp": bool(timestamp) and signing is not None,
            "compress": compress,
            "level": level,
        }
        if strict_dumps:
            self._dump_options["types"] = resolved_types if resolved_types is not None else []
        try:
            self._encoder = Encoder(**self._dump_options)
            self._decoder = Decoder(
                max_depth=max_depth,
                max_alloc=max_alloc,
                types=resolved_types,
                custom=resolved_custom,
                unknown_fields=unknown_fields,  # type: ignore[arg-type]
                placeholders=placeholders,
                key=[signing, *fallbacks] if signing is not None else None,
                max_age=max_age,
                max_decompressed=max_decompressed,
            )
        except (TypeError, ValueError) as exc:
            raise OptionsError(f"{where}: {exc}") from exc

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None, *, where: str) -> Codec:
        """A codec from a settings mapping; keys are the keyword names, in any case.

        ``where`` names the setting in error messages, e.g. ``CACHES['default']['OPTIONS']``.
        """
        if options is None:
            return cls(where=where)
        if not isinstance(options, Mapping):
            raise OptionsError(f"{where}: expected a mapping of amber options, not {options!r}")
        keywords: dict[str, Any] = {}
        for name, value in options.items():
            option = str(name).lower()
            if option not in _OPTION_NAMES:
                known = ", ".join(sorted(_OPTION_NAMES))
                raise OptionsError(f"{where}: unknown amber option {name!r} (known: {known})")
            keywords[option] = value
        return cls(where=where, **keywords)

    def dumps(
        self, obj: Any, *, buffer_callback: Callable[[memoryview], object] | None = None
    ) -> bytes:
        """``amber.dumps`` with this codec's options (and ``buffer_callback`` for this call)."""
        if buffer_callback is None:
            return self._encoder.encode(obj)
        return dumps(obj, buffer_callback=buffer_callback, **self._dump_options)

    def loads(self, data: Any, *, buffers: Iterable[Any] | None = None) -> Any:
        """``amber.loads`` with this codec's allow-list, keys and limits."""
        return self._decoder.decode(data, buffers=buffers)
