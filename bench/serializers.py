"""The codecs under test, each as an encode/decode pair of plain callables.

Every codec is called the way its documentation recommends for speed (reusable
encoder objects where the library has them) and with its default options, except
where an option is needed to serialize Python builtins at all (pyfory) or to pick
the newest protocol (pickle 5).
"""

from __future__ import annotations

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
    """An importable codec: how to call it and which version it is."""

    name: str
    version: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    note: str = ""


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _amber() -> Codec:
    import amber

    version = getattr(amber, "__version__", None) or _version("amber")
    return Codec("amber", str(version), amber.dumps, amber.loads, "dumps/loads")


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
    note = "msgspec.msgpack Encoder/Decoder"
    return Codec("msgspec", msgspec.__version__, encoder.encode, decoder.decode, note)


def _orjson() -> Codec:
    import orjson

    return Codec("orjson", orjson.__version__, orjson.dumps, orjson.loads, "JSON")


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

    # Python-native mode with reference tracking; strict=False lets it take
    # builtins without registering types first.
    fory = pyfory.Fory(xlang=False, ref=True, strict=False)
    note = "Fory(xlang=False, ref=True, strict=False)"
    return Codec("pyfory", _version("pyfory"), fory.serialize, fory.deserialize, note)


FACTORIES: dict[str, Callable[[], Codec]] = {
    "amber": _amber,
    "pickle": _pickle,
    "marshal": _marshal,
    "msgspec": _msgspec,
    "orjson": _orjson,
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
