"""Build Python objects from the test-vector notation of spec/vectors/*.json.

Notation (see spec/format.md):
    null / true / false                 None / True / False
    {"int": "123"}                      int (decimal string, any size)
    {"float": "3ff0000000000000"}       float from 16 hex digits (big-endian IEEE-754 bits)
    {"complex": [bits, bits]}           complex(real, imag), each part as "float" bits
    {"str": "text"}                     str
    {"str_cp": [0x61, 0xD800]}          str from code points (lone surrogates allowed)
    {"bytes": "00ff"}                   bytes from hex
    {"bytearray": "00ff"}               bytearray from hex
    {"list" | "tuple" | "set" | "frozenset": [V, ...]}
    {"dict": [[K, V], ...]}
    {"anchor": "a", "value": V}         defines shared object "a"
    {"ref": "a"}                        the object "a" itself (may appear inside V: cycles)
    {"ext": "DATE", "blob": "<hex>", "python": "datetime.date(1, 1, 1)"}
                                        an EXT blob value: the Python expression is evaluated
                                        with only the stdlib modules of PYTHON_NAMESPACE (and
                                        numpy) in scope; "blob" is for other languages
    {"ext": "DEQUE", "values": [V, ...]}
                                        an EXT composite built from its values
    {"object": {"module": m, "qualname": q, "kind": "ATTRS", "fields": [...]}, "values": [...]}
                                        an instance of a class from tests/_vector_classes.py

Cycles through immutable containers are built the way pickle builds them: mutable containers
are created empty and registered before their children are built; when a reference to an
immutable container that is still being built is met, the container is built again right
there (the "inner" occurrence, which becomes the real object), and the outer construction is
discarded in favour of it.

EXT composites and objects follow the same rule: DEQUE, ORDERED_DICT, COUNTER, DEFAULTDICT and
ATTRS/STATE objects are created first (so they may contain themselves); FRACTION, RANGE, SLICE
and TUPLE_FIELDS/ENUM objects are built from their complete values.

Note: a notation node without an anchor is still one object (memoized by node identity); each
JSON node occurs once in the parsed document, so this only matters for such rebuilds.
"""

from __future__ import annotations

import array
import collections
import copy
import datetime
import decimal
import fractions
import ipaddress
import json
import os
import pathlib
import struct
import sys
import types
import uuid
import zoneinfo
from pathlib import Path
from typing import Any

from _vector_classes import class_named

VECTORS_DIR = Path(__file__).resolve().parent.parent / "spec" / "vectors"

# What the "python" expressions of EXT blob vectors may use (no builtins).
PYTHON_NAMESPACE: dict[str, Any] = {
    "array": array,
    "datetime": datetime,
    "decimal": decimal,
    "ipaddress": ipaddress,
    "pathlib": pathlib,
    "uuid": uuid,
    "zoneinfo": zoneinfo,
    # The one constant a SINGLETON expression needs a name for (``...`` is a literal).
    "NotImplemented": NotImplemented,
}

# The builtins a DEFAULTDICT factory may name (spec section 5.16).
DEFAULTDICT_FACTORIES: dict[str, Any] = {
    f.__name__: f
    for f in (list, dict, set, int, float, str, bytes, tuple, frozenset, bool, complex, bytearray)
}

CREATE_FIRST_EXT = ("DEQUE", "ORDERED_DICT", "COUNTER", "DEFAULTDICT", "NAMESPACE")
BUILD_AFTER_EXT = {"FRACTION": fractions.Fraction, "RANGE": range, "SLICE": slice}


class NotationError(Exception):
    pass


class NotationUnavailable(NotationError):
    """The value needs something this interpreter lacks (numpy, a newer Python, POSIX)."""


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def missing_requirements(v: dict[str, Any]) -> list[str]:
    """The entries of a vector's "requires" list that this interpreter does not meet."""
    missing = []
    for need in v.get("requires", ()):
        if need == "numpy":
            ok = _numpy() is not None
        elif need == "posix":
            ok = os.name == "posix"
        elif need.startswith("python>="):
            wanted = tuple(int(part) for part in need[len("python>=") :].split("."))
            ok = sys.version_info[: len(wanted)] >= wanted
        else:
            raise NotationError(f"unknown requirement {need!r}")
        if not ok:
            missing.append(need)
    return missing


def _loaded_only(name: str, *args: Any, **kwargs: Any) -> Any:
    """The only builtin the expressions' frame has. CPython's C code looks `__import__` up in
    the calling frame's builtins when it imports on its own: on 3.13 the warnings machinery
    does, for the DeprecationWarning of array('u') under pytest's warning capture. It may
    reach modules already loaded, never load one."""
    if name.partition(".")[0] not in sys.modules:
        raise ImportError(f"{name} is not loaded; vector expressions cannot import")
    return __import__(name, *args, **kwargs)


def evaluate_python(expression: str) -> Any:
    """A fresh object from an EXT blob vector's "python" expression."""
    namespace: dict[str, Any] = {"__builtins__": {"__import__": _loaded_only}, **PYTHON_NAMESPACE}
    numpy = _numpy()
    if numpy is not None:
        namespace["numpy"] = numpy
    elif "numpy." in expression:
        raise NotationUnavailable("numpy is not installed")
    # The expressions come from this repository's vector files, not from payloads.
    return eval(expression, namespace)


def object_class(shape: dict[str, Any]) -> type:
    return class_named(shape["module"], shape["qualname"])


def classes_in(node: Any) -> list[type]:
    """Every class an {"object"} node of the notation names, in first-seen order."""
    found: dict[type, None] = {}
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(reversed(n))
        elif isinstance(n, dict):
            if isinstance(n.get("object"), dict) and "values" in n:
                # builtins are the spec's fixed tables: a decoder needs no allow-list for them
                if n["object"]["module"] != "builtins":
                    found.setdefault(object_class(n["object"]))
            stack.extend(reversed(list(n.values())))
    return list(found)


def float_from_bits(bits: str) -> float:
    if not isinstance(bits, str) or len(bits) != 16:
        raise NotationError(f"float bits must be 16 hex digits, got {bits!r}")
    return struct.unpack(">d", bytes.fromhex(bits))[0]


def bits_of_float(x: float) -> str:
    return struct.pack(">d", x).hex()


class _Builder:
    """Builds like pickle: every container node is memoized by the identity of its notation node
    (mutable ones before their children are built), so an immutable container met again while
    it is being built is built a second time (the inner occurrence) and the outer one is
    replaced by it."""

    def __init__(self, root: Any) -> None:
        self.names: dict[str, Any] = {}
        self.built: dict[int, Any] = {}
        self.depth = 0
        self._scan(root)

    def _scan(self, root: Any) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                if "anchor" in node:
                    name = node["anchor"]
                    if name in self.names:
                        raise NotationError(f"anchor {name!r} defined twice")
                    self.names[name] = node["value"]
                stack.extend(node.values())

    def resolve(self, node: Any) -> Any:
        for _ in range(100):
            if isinstance(node, dict) and "anchor" in node:
                node = node["value"]
            elif isinstance(node, dict) and "ref" in node:
                if node["ref"] not in self.names:
                    raise NotationError(f"reference to undefined anchor {node['ref']!r}")
                node = self.names[node["ref"]]
            else:
                return node
        raise NotationError("anchor/ref loop")

    def build(self, node: Any) -> Any:
        self.depth += 1
        if self.depth > 5000:
            raise NotationError("notation nests too deeply (a cycle without a mutable?)")
        try:
            return self._build(self.resolve(node))
        finally:
            self.depth -= 1

    def _build(self, node: Any) -> Any:
        if node is None or isinstance(node, bool):
            return node
        if isinstance(node, dict) and ("ext" in node or "object" in node):
            key = id(node)
            if key in self.built:
                return self.built[key]
            if "ext" in node:
                return self._build_ext(node)
            return self._build_object(node)
        if not isinstance(node, dict) or len(node) != 1:
            raise NotationError(f"unexpected notation node {node!r}")
        key = id(node)
        if key in self.built:
            return self.built[key]
        ((kind, arg),) = node.items()
        obj: Any
        if kind in ("list", "dict", "set"):
            obj = {"list": list, "dict": dict, "set": set}[kind]()
            self.built[key] = obj
            if kind == "list":
                for child in arg:
                    obj.append(self.build(child))
            elif kind == "set":
                for child in arg:
                    obj.add(self.build(child))
            else:
                for pair in arg:
                    k, v = pair
                    k_obj = self.build(k)
                    obj[k_obj] = self.build(v)
            return obj
        if kind in ("tuple", "frozenset"):
            items = [self.build(child) for child in arg]
            if key in self.built:
                # an inner occurrence was built while building our children: it is the object
                return self.built[key]
            obj = tuple(items) if kind == "tuple" else frozenset(items)
        elif kind == "int":
            obj = int(arg)
        elif kind == "float":
            obj = float_from_bits(arg)
        elif kind == "complex":
            re, im = arg
            obj = complex(float_from_bits(re), float_from_bits(im))
        elif kind == "str":
            obj = "".join(list(arg))  # a fresh str object, not the one held by the parsed JSON
        elif kind == "str_cp":
            obj = "".join(chr(c) for c in arg)
        elif kind == "bytes":
            obj = bytes.fromhex(arg)
        elif kind == "bytearray":
            obj = bytearray.fromhex(arg)
        else:
            raise NotationError(f"unknown notation kind {kind!r}")
        self.built[key] = obj
        return obj

    def _items_of(self, node: Any, kind: str) -> Any:
        """The item list of a {"list"} or the pairs of a {"dict"} node (a composite's part)."""
        node = self.resolve(node)
        if not isinstance(node, dict) or set(node) != {kind}:
            raise NotationError(f"expected a {{{kind!r}: ...}} node, got {node!r}")
        return node[kind]

    def _build_ext(self, node: dict[str, Any]) -> Any:
        key = id(node)
        code = node["ext"]
        if "blob" in node:
            obj = evaluate_python(node["python"])
            self.built[key] = obj
            return obj
        values = node["values"]
        if code in CREATE_FIRST_EXT:
            obj: Any
            if code == "DEQUE":
                maxlen, items = values
                obj = collections.deque(maxlen=self.build(maxlen))
                self.built[key] = obj
                for child in self._items_of(items, "list"):
                    obj.append(self.build(child))
                return obj
            if code == "NAMESPACE":
                (attrs,) = values
                obj = types.SimpleNamespace()
                self.built[key] = obj
                for k, v in self._items_of(attrs, "dict"):
                    setattr(obj, self.build(k), self.build(v))
                return obj
            if code == "DEFAULTDICT":
                factory_node, pairs = values
                factory = self.build(factory_node)
                if factory is not None:
                    factory = DEFAULTDICT_FACTORIES[factory]
                obj = collections.defaultdict(factory)
            else:
                (pairs,) = values
                obj = collections.OrderedDict() if code == "ORDERED_DICT" else collections.Counter()
            self.built[key] = obj
            for k, v in self._items_of(pairs, "dict"):
                k_obj = self.build(k)
                obj[k_obj] = self.build(v)
            return obj
        if code in BUILD_AFTER_EXT:
            items = [self.build(child) for child in values]
            if key in self.built:  # an inner occurrence became the object (a cycle)
                return self.built[key]
            obj = BUILD_AFTER_EXT[code](*items)
            self.built[key] = obj
            return obj
        raise NotationError(f"unknown EXT composite {code!r}")

    def _build_object(self, node: dict[str, Any]) -> Any:
        key = id(node)
        shape = node["object"]
        cls = object_class(shape)
        kind = shape["kind"]
        values = node["values"]
        if kind in PARTS_KINDS:
            return self._build_parts(key, cls, kind, values)
        if kind in ("ATTRS", "STATE"):
            obj = cls.__new__(cls)
            self.built[key] = obj
            if kind == "ATTRS":
                for field, child in zip(shape["fields"], values, strict=True):
                    object.__setattr__(obj, field, self.build(child))
            else:
                (state,) = values
                obj.__setstate__(self.build(state))
            return obj
        items = [self.build(child) for child in values]
        if key in self.built:  # an inner occurrence became the object (a cycle)
            return self.built[key]
        if kind == "TUPLE_FIELDS":
            obj = cls(*items)
        elif kind == "ENUM":
            (value,) = items
            obj = cls(value)
        else:
            raise NotationError(f"object kind {kind!r} has no notation builder")
        self.built[key] = obj
        return obj

    def _build_parts(self, key: int, cls: Any, kind: str, values: list[Any]) -> Any:
        """The kinds of spec 5.17.3 made from their parts, built as pickle builds them: a
        MUTABLE_SUBCLASS instance first, the others from their first value, then the rest."""
        if kind == "GLOBAL":
            self.built[key] = cls
            return cls
        if kind == "MUTABLE_SUBCLASS":
            obj = cls()
            self.built[key] = obj
            value, state = (self.build(v) for v in values)
            obj.update(value)
            if state is not None:
                obj.__dict__.update(state)
            return obj
        first = self.build(values[0])
        if key in self.built:  # an inner occurrence became the object (a cycle)
            return self.built[key]
        if kind == "VALUE_SUBCLASS":
            obj = cls(first)
        elif kind == "REDUCE":
            obj = cls(*first)
        elif kind == "NEWOBJ":
            obj = cls.__new__(cls, *first)
        elif kind in ("REDUCE_KW", "NEWOBJ_KW"):
            args, kwargs = first
            obj = cls(*args, **kwargs) if kind == "REDUCE_KW" else cls.__new__(cls, *args, **kwargs)
        elif kind == "EXCEPTION":
            base = next(b for b in cls.__mro__ if b.__module__ == "builtins")
            obj = base.__new__(cls, *first)
            base.__init__(obj, *first)
        else:
            raise NotationError(f"object kind {kind!r} has no notation builder")
        self.built[key] = obj
        rest = [self.build(v) for v in values[1:]]
        if kind == "EXCEPTION":
            state, obj.__cause__, obj.__context__, obj.__suppress_context__ = rest
        else:
            state = rest[0]
        if state is not None:
            if hasattr(obj, "__setstate__"):
                obj.__setstate__(state)
            else:
                obj.__dict__.update(state)
        return obj


PARTS_KINDS = (
    "MUTABLE_SUBCLASS",
    "VALUE_SUBCLASS",
    "GLOBAL",
    "REDUCE",
    "NEWOBJ",
    "EXCEPTION",
    "REDUCE_KW",
    "NEWOBJ_KW",
)


def build(node: Any) -> Any:
    """Build the Python object described by a notation node."""
    return _Builder(node).build(node)


def build_unshared(node: Any) -> Any:
    """Build with every {"ref"} replaced by a fresh copy of its anchor's value: the graph a
    refs=False payload decodes to. Raises NotationError for a cyclic value."""
    names = _Builder(node).names

    def expand(n: Any, depth: int) -> Any:
        if depth > 1000:
            raise NotationError("cyclic value cannot be built without sharing")
        if isinstance(n, list):
            return [expand(c, depth + 1) for c in n]
        if isinstance(n, dict):
            if "anchor" in n:
                return expand(n["value"], depth + 1)
            if "ref" in n:
                return expand(copy.deepcopy(names[n["ref"]]), depth + 1)
            return {k: expand(v, depth + 1) for k, v in n.items()}
        return n

    return build(expand(node, 0))


def _vector_list(doc: Any, path: Path) -> list[dict[str, Any]]:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for key in ("vectors", "values", "errors", "cases", "tests"):
            if isinstance(doc.get(key), list):
                return doc[key]
    raise NotationError(f"{path.name}: cannot find the list of vectors")


def load_vectors(filename: str) -> list[dict[str, Any]]:
    """Load a vector file; returns [] if it does not exist yet (callers assert non-empty)."""
    path = VECTORS_DIR / filename
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as f:
        doc = json.load(f)
    vectors = _vector_list(doc, path)
    for i, v in enumerate(vectors):
        v.setdefault("name", f"{filename}[{i}]")
    return vectors


def vector_hex(v: dict[str, Any]) -> str:
    for key in ("hex", "bytes", "encoded", "data"):
        if isinstance(v.get(key), str):
            return "".join(v[key].split())
    raise NotationError(f"vector {v.get('name')!r} has no hex field")


def vector_bytes(v: dict[str, Any]) -> bytes:
    return bytes.fromhex(vector_hex(v))


def vector_options(v: dict[str, Any]) -> dict[str, Any]:
    opts = v.get("options") or v.get("opts") or {}
    return dict(opts)


def split_options(opts: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split vector options into (dumps options, loads options).

    "types" names classes as "module:qualname"; they are resolved in tests/_vector_classes.py.
    """
    enc = {k: v for k, v in opts.items() if k in ("refs", "max_depth")}
    dec = {k: v for k, v in opts.items() if k in ("max_depth", "max_alloc", "unknown_fields")}
    if "types" in opts:
        dec["types"] = [class_named(*name.split(":", 1)) for name in opts["types"]]
    return enc, dec
