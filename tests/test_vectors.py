"""The language-neutral test vectors in spec/vectors/ run against the Python package."""

from __future__ import annotations

import re

import amber
import pytest
from _common import ERROR_KINDS, LIMIT_KINDS, REPO_DIR, varint
from _notation import (
    NotationUnavailable,
    build,
    build_unshared,
    classes_in,
    evaluate_python,
    load_vectors,
    missing_requirements,
    split_options,
    vector_bytes,
    vector_options,
)
from _ref import Unsupported, ref_dumps

VALUES = load_vectors("values.json")
ERRORS = load_vectors("errors.json")


def _skip_if_unavailable(vec) -> None:
    missing = missing_requirements(vec)
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


def _buffers(vec) -> list[bytes] | None:
    """The vector's out-of-band buffers (option "buffers", hex strings) as bytes, if any."""
    hexes = vector_options(vec).get("buffers")
    return None if hexes is None else [bytes.fromhex("".join(h.split())) for h in hexes]


def _decode_options(vec) -> dict:
    """loads() options: the vector's own, plus types=[...] for the classes its value names."""
    _, dec = split_options(vector_options(vec))
    if "value" in vec:
        classes = classes_in(vec["value"])
        if classes:
            dec.setdefault("types", classes)
    return dec


def _encodable(v) -> bool:
    """Vectors marked decode-only (non-canonical inputs a decoder accepts) are not re-encoded,
    nor those with out-of-band buffers, whose small data the encoder keeps in band."""
    return not (
        v.get("decode_only")
        or v.get("encode") is False
        or v.get("canonical") is False
        or "buffers" in vector_options(v)
    )


ENCODABLE = [v for v in VALUES if _encodable(v)]


def _ref_supported(v) -> bool:
    if missing_requirements(v):
        return False
    try:
        enc, _ = split_options(vector_options(v))
        ref_dumps(build(v["value"]), **enc)
    except (Unsupported, NotationUnavailable):
        return False
    return True


REF_CHECKED = [v for v in ENCODABLE if _ref_supported(v)]


def _ids(vectors):
    return [str(v["name"]) for v in vectors]


def test_vector_files_present_and_nonempty():
    assert len(VALUES) >= 20, "spec/vectors/values.json missing or nearly empty"
    assert len(ERRORS) >= 20, "spec/vectors/errors.json missing or nearly empty"


def test_vector_names_unique():
    for vectors in (VALUES, ERRORS):
        names = _ids(vectors)
        assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_error_vectors_cover_every_kind():
    """Every kind has a vector in errors.json, or, for the envelope's, in envelopes.json."""
    kinds = {v["error"] for v in ERRORS}
    assert kinds <= ERROR_KINDS, f"unknown kinds in errors.json: {sorted(kinds - ERROR_KINDS)}"
    envelope_kinds = {v["error"] for v in load_vectors("envelopes.json") if "error" in v}
    assert envelope_kinds <= ERROR_KINDS, sorted(envelope_kinds - ERROR_KINDS)
    missing = sorted(ERROR_KINDS - kinds - envelope_kinds)
    assert missing == [], f"kinds without an error vector: {missing}"


def _spec_ext_codes() -> dict[str, int]:
    """The EXT code table of spec/format.md section 5.16: name -> code."""
    spec = (REPO_DIR / "spec" / "format.md").read_text(encoding="utf-8")
    section = spec.split("\n### 5.16 ", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `?0x([0-9A-Fa-f]{2})`? \| `?([A-Z_]+)`? \|", section, re.MULTILINE)
    return {name: int(code, 16) for code, name in rows}


EXT_CODES = _spec_ext_codes()
BLOB_ROOTS = [v for v in VALUES if isinstance(v["value"], dict) and "blob" in v["value"]]


def test_spec_ext_code_table_is_complete():
    assert sorted(EXT_CODES.values()) == list(range(1, 0x19)), EXT_CODES


@pytest.mark.parametrize("vec", BLOB_ROOTS, ids=_ids(BLOB_ROOTS))
def test_ext_blob_vector_is_consistent(vec):
    """A root EXT blob's "hex" is header, EXT tag, code, length and the notation's "blob"."""
    value = vec["value"]
    blob = bytes.fromhex(value["blob"])
    code = EXT_CODES[value["ext"]]
    expected = b"\xab\x41\x01\x76" + varint(code) + varint(len(blob)) + blob
    assert vector_bytes(vec).hex(" ") == expected.hex(" ")


_PYTHON_TYPES = {
    "DATE": "date",
    "TIME": "time",
    "DATETIME": "datetime",
    "TIMEDELTA": "timedelta",
    "TZINFO": "timezone ZoneInfo",
    "DECIMAL": "Decimal",
    "UUID": "UUID",
    "ARRAY": "array",
    "PATH": "PurePosixPath PureWindowsPath PosixPath WindowsPath",
    "IP_ADDRESS": "IPv4Address IPv6Address",
    "IP_NETWORK": "IPv4Network IPv6Network",
    "IP_INTERFACE": "IPv4Interface IPv6Interface",
    "NDARRAY": "ndarray",
    "OUT_OF_BAND": "bytes bytearray array ndarray",
    "SINGLETON": "ellipsis NotImplementedType",
}


@pytest.mark.parametrize("vec", BLOB_ROOTS, ids=_ids(BLOB_ROOTS))
def test_ext_blob_vector_python_type(vec):
    """The "python" expression gives a value of the type its EXT code is for."""
    _skip_if_unavailable(vec)
    value = vec["value"]
    obj = evaluate_python(value["python"])
    if value["ext"] == "NUMPY_SCALAR":
        assert type(obj).__module__ == "numpy" and obj.shape == ()
    else:
        assert type(obj).__name__ in _PYTHON_TYPES[value["ext"]].split()


@pytest.mark.parametrize("vec", ENCODABLE, ids=_ids(ENCODABLE))
def test_value_vector_dumps(vec):
    _skip_if_unavailable(vec)
    value = build(vec["value"])
    enc, _ = split_options(vector_options(vec))
    got = amber.dumps(value, **enc)
    assert got.hex(" ") == vector_bytes(vec).hex(" ")
    assert type(got) is bytes


def _expected(vec):
    """The graph the vector's bytes decode to (refs=False payloads hold no shared objects)."""
    if vector_options(vec).get("refs") is False:
        return build_unshared(vec["value"])
    return build(vec["value"])


@pytest.mark.parametrize("vec", VALUES, ids=_ids(VALUES))
def test_value_vector_loads(vec, graph_diff):
    _skip_if_unavailable(vec)
    got = amber.loads(vector_bytes(vec), buffers=_buffers(vec), **_decode_options(vec))
    diff = graph_diff(_expected(vec), got)
    assert diff is None, diff


@pytest.mark.parametrize("vec", VALUES, ids=_ids(VALUES))
def test_value_vector_decoder_object(vec, graph_diff):
    _skip_if_unavailable(vec)
    decoder = amber.Decoder(**_decode_options(vec))
    data = vector_bytes(vec)
    first = decoder.decode(data, buffers=_buffers(vec))
    second = decoder.decode(data, buffers=_buffers(vec))
    assert graph_diff(_expected(vec), first) is None
    assert graph_diff(_expected(vec), second) is None


@pytest.mark.parametrize("vec", REF_CHECKED, ids=_ids(REF_CHECKED))
def test_value_vector_agrees_with_reference_encoder(vec):
    """The vector's bytes are what the design brief's encoder rules produce (checks the vector)."""
    enc, _ = split_options(vector_options(vec))
    assert ref_dumps(build(vec["value"]), **enc).hex(" ") == vector_bytes(vec).hex(" ")


@pytest.mark.parametrize("vec", ERRORS, ids=_ids(ERRORS))
def test_error_vector(vec):
    _skip_if_unavailable(vec)
    data = vector_bytes(vec)
    _, dec = split_options(vector_options(vec))
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, buffers=_buffers(vec), **dec)
    err = info.value
    assert (err.kind, err.offset) == (vec["error"], vec["offset"]), str(err)
    assert isinstance(err, amber.DecodeLimitError) == (vec["error"] in LIMIT_KINDS)
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("vec", ERRORS, ids=_ids(ERRORS))
def test_error_vector_via_decoder_and_buffers(vec):
    """Same error through Decoder.decode and through a bytearray / memoryview input."""
    _skip_if_unavailable(vec)
    data = vector_bytes(vec)
    _, dec = split_options(vector_options(vec))
    decoder = amber.Decoder(**dec)
    for payload in (data, bytearray(data), memoryview(data)):
        with pytest.raises(amber.DecodeError) as info:
            decoder.decode(payload, buffers=_buffers(vec))
        assert (info.value.kind, info.value.offset) == (vec["error"], vec["offset"])
