"""The codecs under test, each as an encode/decode pair of plain callables.

Every codec is called the way its documentation recommends for speed (reusable
encoder objects where the library has them) and with its default options, except
where an option is needed to serialize Python builtins at all (pyfory) or to pick
the newest protocol (pickle 5).

Payloads of class instances name their classes (``Payload.types``, ``.schema``); a
codec that needs them to decode those instances gets a copy set up for that payload
(``Codec.for_payload``): amber decodes with ``loads(data, types=[...])``, msgspec
decodes into the payload's static type (``typed``), pyfory registers the
dataclasses (``registered``). The other codecs take such payloads as they are.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import marshal
import pickle
import platform
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SUBJECT = "amber"


@dataclass(frozen=True)
class Codec:
    """An importable codec: how to call it and which version it is.

    ``specialize(types, schema)`` returns the codec to use on a payload holding
    instances of ``types`` (whole static type ``schema``, or None); ``variant`` names
    how such a copy differs from the default call ("typed", "registered"), and is
    shown next to the codec's name in the tables.
    """

    name: str
    version: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    note: str = ""
    variant: str | None = None
    specialize: Callable[[tuple[type, ...], Any], Codec] | None = None

    def for_payload(self, types: tuple[type, ...], schema: object) -> Codec:
        """This codec, set up for a payload of ``types`` instances (may raise)."""
        if not types or self.specialize is None:
            return self
        return self.specialize(types, schema)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _amber() -> Codec:
    import amber

    version = getattr(amber, "__version__", None) or _version("amber")

    def with_types(types: tuple[type, ...], schema: object) -> Codec:
        # dumps writes instances by module and qualified name; loads builds only the
        # classes it is given.
        loads: Callable[..., Any] = amber.loads  # types= is newer than some builds
        decode = functools.partial(loads, types=list(types))
        return dataclasses.replace(codec, decode=decode, specialize=None)

    note = "dumps/loads; loads(types=[...]) on class payloads"
    codec = Codec("amber", str(version), amber.dumps, amber.loads, note, specialize=with_types)
    return codec


def _pickle() -> Codec:
    python = f"Python {platform.python_version()}"
    encode = functools.partial(pickle.dumps, protocol=5)
    return Codec("pickle", python, encode, pickle.loads, "protocol 5")


def _marshal() -> Codec:
    python = f"Python {platform.python_version()}"
    note = f"version {marshal.version}"
    return Codec("marshal", python, marshal.dumps, marshal.loads, note)


def _msgspec() -> Codec:
    import msgspec

    encoder, decoder = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()

    def typed(types: tuple[type, ...], schema: object) -> Codec:
        # Untyped, msgspec decodes class instances as dicts; given the payload's type
        # it builds the dataclasses again. Raises TypeError for types it cannot build.
        if schema is None:
            return codec
        typed_decoder = msgspec.msgpack.Decoder(schema)
        return dataclasses.replace(
            codec, decode=typed_decoder.decode, variant="typed", specialize=None
        )

    note = "msgspec.msgpack Encoder/Decoder; Decoder(payload type) on class payloads"
    codec = Codec(
        "msgspec", msgspec.__version__, encoder.encode, decoder.decode, note, specialize=typed
    )
    return codec


def _orjson() -> Codec:
    import orjson

    return Codec("orjson", orjson.__version__, orjson.dumps, orjson.loads, "JSON")


def _ssrjson() -> Codec:
    import ssrjson

    # dumps_to_bytes is its fast path to UTF-8 bytes (dumps returns a str); loads takes
    # bytes as they are. Defaults kept, so dumps_to_bytes leaves the UTF-8 form of a
    # non-ASCII str cached on the str, and repeat encodes of the same strings reuse it.
    note = "JSON; dumps_to_bytes/loads"
    return Codec("ssrjson", ssrjson.__version__, ssrjson.dumps_to_bytes, ssrjson.loads, note)


def _ormsgpack() -> Codec:
    import ormsgpack

    version = _version("ormsgpack")
    return Codec("ormsgpack", version, ormsgpack.packb, ormsgpack.unpackb)


def _msgpack() -> Codec:
    import msgpack  # type: ignore[import-untyped]

    packer = msgpack.Packer()
    return Codec("msgpack", _version("msgpack"), packer.pack, msgpack.unpackb, "Packer")


def _cbor2() -> Codec:
    import cbor2

    return Codec("cbor2", _version("cbor2"), cbor2.dumps, cbor2.loads)


def _pyfory() -> Codec:
    import pyfory  # type: ignore[import-untyped]

    def make_fory(types: tuple[type, ...] = ()) -> Any:
        # Python-native mode with reference tracking; strict=False lets it take
        # builtins without registering types first.
        fory = pyfory.Fory(xlang=False, ref=True, strict=False)
        for cls in types:
            fory.register(cls)
        return fory

    def registered(types: tuple[type, ...], schema: object) -> Codec:
        # Only dataclasses: pyfory serializes a registered class as a struct of its
        # annotated fields, so a registered plain class (attributes set in __init__)
        # round-trips with no attributes at all; unregistered, strict=False, it is exact.
        structs = tuple(cls for cls in types if dataclasses.is_dataclass(cls))
        if not structs:
            return codec
        # A fresh instance per payload: registrations are per Fory and cannot repeat.
        fory = make_fory(structs)
        return dataclasses.replace(
            codec,
            encode=fory.serialize,
            decode=fory.deserialize,
            variant="registered",
            specialize=None,
        )

    fory = make_fory()
    note = "Fory(xlang=False, ref=True, strict=False); register(dataclass) on class payloads"
    codec = Codec(
        "pyfory",
        _version("pyfory"),
        fory.serialize,
        fory.deserialize,
        note,
        specialize=registered,
    )
    return codec


FACTORIES: dict[str, Callable[[], Codec]] = {
    "amber": _amber,
    "pickle": _pickle,
    "marshal": _marshal,
    "msgspec": _msgspec,
    "orjson": _orjson,
    "ssrjson": _ssrjson,
    "ormsgpack": _ormsgpack,
    "msgpack": _msgpack,
    "cbor2": _cbor2,
    "pyfory": _pyfory,
}


def load_codecs(names: list[str]) -> tuple[list[Codec], dict[str, str]]:
    """Import the named codecs; return those that loaded and why the others did not."""
    loaded: list[Codec] = []
    missing: dict[str, str] = {}
    for name in names:
        if name not in FACTORIES:
            missing[name] = f"unknown codec (known: {', '.join(FACTORIES)})"
            continue
        try:
            loaded.append(FACTORIES[name]())
        except Exception as error:  # a broken codec must not stop the run
            missing[name] = f"{type(error).__name__}: {error}"
    return loaded, missing
