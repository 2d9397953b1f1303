"""The language-neutral test vectors in spec/vectors/ run against the Python package."""

from __future__ import annotations

import amber
import pytest
from _common import ERROR_KINDS, LIMIT_KINDS
from _notation import (
    build,
    build_unshared,
    load_vectors,
    split_options,
    vector_bytes,
    vector_options,
)
from _ref import Unsupported, ref_dumps

VALUES = load_vectors("values.json")
ERRORS = load_vectors("errors.json")


def _encodable(v) -> bool:
    """Vectors marked decode-only (non-canonical inputs a decoder accepts) are not re-encoded."""
    return not (v.get("decode_only") or v.get("encode") is False or v.get("canonical") is False)


ENCODABLE = [v for v in VALUES if _encodable(v)]


def _ref_supported(v) -> bool:
    try:
        enc, _ = split_options(vector_options(v))
        ref_dumps(build(v["value"]), **enc)
    except Unsupported:
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
    kinds = {v["error"] for v in ERRORS}
    assert kinds <= ERROR_KINDS, f"unknown kinds in errors.json: {sorted(kinds - ERROR_KINDS)}"
    missing = sorted(ERROR_KINDS - kinds)
    assert missing == [], f"kinds without an error vector: {missing}"


@pytest.mark.parametrize("vec", ENCODABLE, ids=_ids(ENCODABLE))
def test_value_vector_dumps(vec):
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
    expected = _expected(vec)
    _, dec = split_options(vector_options(vec))
    got = amber.loads(vector_bytes(vec), **dec)
    diff = graph_diff(expected, got)
    assert diff is None, diff


@pytest.mark.parametrize("vec", VALUES, ids=_ids(VALUES))
def test_value_vector_decoder_object(vec, graph_diff):
    _, dec = split_options(vector_options(vec))
    decoder = amber.Decoder(**dec)
    data = vector_bytes(vec)
    first = decoder.decode(data)
    second = decoder.decode(data)
    assert graph_diff(_expected(vec), first) is None
    assert graph_diff(_expected(vec), second) is None


@pytest.mark.parametrize("vec", REF_CHECKED, ids=_ids(REF_CHECKED))
def test_value_vector_agrees_with_reference_encoder(vec):
    """The vector's bytes are what the design brief's encoder rules produce (checks the vector)."""
    enc, _ = split_options(vector_options(vec))
    assert ref_dumps(build(vec["value"]), **enc).hex(" ") == vector_bytes(vec).hex(" ")


@pytest.mark.parametrize("vec", ERRORS, ids=_ids(ERRORS))
def test_error_vector(vec):
    data = vector_bytes(vec)
    _, dec = split_options(vector_options(vec))
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, **dec)
    err = info.value
    assert (err.kind, err.offset) == (vec["error"], vec["offset"]), str(err)
    assert isinstance(err, amber.DecodeLimitError) == (vec["error"] in LIMIT_KINDS)
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("vec", ERRORS, ids=_ids(ERRORS))
def test_error_vector_via_decoder_and_buffers(vec):
    """Same error through Decoder.decode and through a bytearray / memoryview input."""
    data = vector_bytes(vec)
    _, dec = split_options(vector_options(vec))
    decoder = amber.Decoder(**dec)
    for payload in (data, bytearray(data), memoryview(data)):
        with pytest.raises(amber.DecodeError) as info:
            decoder.decode(payload)
        assert (info.value.kind, info.value.offset) == (vec["error"], vec["offset"])
