"""The Python API: functions, input buffer types, files, Encoder/Decoder, options, exceptions."""

from __future__ import annotations

import array
import io
import mmap
import os
import pathlib

import amber
import pytest
from _samples import sample_objects

H = b"\xab\x41\x01"
VALUE = {"a": [1, 2.5, "three", (4, None)], "b": {b"x", frozenset({9})}, "c": bytearray(b"z")}


def test_public_names():
    for name in (
        "dumps",
        "loads",
        "dump",
        "load",
        "Encoder",
        "Decoder",
        "EncodeError",
        "DecodeError",
        "DecodeLimitError",
        "FORMAT_VERSION",
    ):
        assert hasattr(amber, name), name
    assert amber.FORMAT_VERSION == 1


def test_exception_hierarchy():
    assert issubclass(amber.EncodeError, TypeError)
    assert issubclass(amber.DecodeError, ValueError)
    assert issubclass(amber.DecodeLimitError, amber.DecodeError)
    assert not issubclass(amber.EncodeError, ValueError)
    assert not issubclass(amber.DecodeError, TypeError)


def test_dumps_loads_basic(graph_diff):
    data = amber.dumps(VALUE)
    assert type(data) is bytes
    assert data[:3] == H
    assert graph_diff(VALUE, amber.loads(data)) is None


@pytest.mark.parametrize("obj", sample_objects(), ids=lambda o: type(o).__name__)
def test_samples_roundtrip(obj, graph_diff):
    assert graph_diff(obj, amber.loads(amber.dumps(obj))) is None


# --------------------------------------------------------------------------- input types


def _inputs(data: bytes):
    padded = b"??" + data + b"!!"
    return {
        "bytes": data,
        "bytearray": bytearray(data),
        "memoryview": memoryview(data),
        "memoryview_slice": memoryview(padded)[2:-2],
        "memoryview_of_bytearray_slice": memoryview(bytearray(padded))[2:-2],
        "array_B": array.array("B", data),
        "readonly_memoryview": memoryview(bytearray(data)).toreadonly(),
    }


@pytest.mark.parametrize("kind", list(_inputs(b"")))
def test_loads_accepts_buffers(kind, graph_diff):
    data = amber.dumps(VALUE)
    payload = _inputs(data)[kind]
    assert graph_diff(VALUE, amber.loads(payload)) is None
    assert graph_diff(VALUE, amber.Decoder().decode(payload)) is None


def test_loads_accepts_any_c_contiguous_buffer():
    data = H + b"\x90"  # 4 bytes
    ints = array.array("i")
    ints.frombytes(data)
    assert amber.loads(ints) is None
    two_d = memoryview(data).cast("B", shape=[2, 2])
    assert two_d.c_contiguous
    assert amber.loads(two_d) is None


def test_loads_accepts_mmap(tmp_path, graph_diff):
    path = tmp_path / "payload.amber"
    path.write_bytes(amber.dumps(VALUE))
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert graph_diff(VALUE, amber.loads(mm)) is None
        # the buffer export is released: the mmap can be closed right away
    assert mm.closed


def test_loads_releases_buffer():
    data = bytearray(amber.dumps([1, 2, 3]))
    amber.loads(data)
    data.append(0)  # BufferError if loads still held an export
    with pytest.raises(amber.DecodeError):
        amber.loads(data)  # trailing byte
    data.pop()  # the export is released on the error path too
    assert amber.loads(data) == [1, 2, 3]


def test_loads_result_does_not_alias_input():
    data = bytearray(amber.dumps([b"abc", bytearray(b"def"), "ghi"]))
    out = amber.loads(data)
    data[:] = b"\x00" * len(data)
    assert out == [b"abc", bytearray(b"def"), "ghi"]


def test_loads_non_contiguous_memoryview_raises():
    data = amber.dumps([1, 2, 3])
    doubled = bytes(b for x in data for b in (x, 0))
    view = memoryview(doubled)[::2]
    assert bytes(view) == data
    assert not view.c_contiguous
    with pytest.raises(TypeError):
        amber.loads(view)


@pytest.mark.parametrize("bad", ["text", 12, None, [1, 2], object()], ids=repr)
def test_loads_rejects_non_buffers(bad):
    with pytest.raises(TypeError):
        amber.loads(bad)


# --------------------------------------------------------------------------- files


@pytest.mark.parametrize("as_path", [str, pathlib.Path], ids=["str", "Path"])
def test_dump_load_path(tmp_path, as_path, graph_diff):
    path = as_path(tmp_path / "x.amber")
    assert amber.dump(VALUE, path) is None
    assert pathlib.Path(path).read_bytes() == amber.dumps(VALUE)
    assert graph_diff(VALUE, amber.load(path)) is None
    # overwrite in place
    amber.dump([1, 2], path)
    assert amber.load(path) == [1, 2]


def test_dump_load_bytesio(graph_diff):
    buf = io.BytesIO()
    buf.write(b"prefix")
    amber.dump(VALUE, buf)
    assert buf.getvalue() == b"prefix" + amber.dumps(VALUE)
    buf.seek(6)
    assert graph_diff(VALUE, amber.load(buf)) is None
    assert buf.read() == b""  # read to EOF


def test_dump_load_real_file(tmp_path, graph_diff):
    path = tmp_path / "f.amber"
    with path.open("wb") as f:
        amber.dump(VALUE, f)
    with path.open("rb") as f:
        assert graph_diff(VALUE, amber.load(f)) is None
    with open(path, "rb", buffering=0) as f:
        assert graph_diff(VALUE, amber.load(f)) is None


class _Trickle(io.RawIOBase):
    """A raw stream that returns at most 3 bytes per read call."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(3, len(b), len(self._data) - self._pos)
        b[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


def test_load_reads_to_eof_from_short_reads(graph_diff):
    data = amber.dumps(VALUE)
    assert graph_diff(VALUE, amber.load(_Trickle(data))) is None
    with pytest.raises(amber.DecodeError) as info:
        amber.load(_Trickle(data + b"\x90"))
    assert (info.value.kind, info.value.offset) == ("trailing_bytes", len(data))


def test_dump_load_options(tmp_path):
    a = [1, 2, 3, 4]
    buf = io.BytesIO()
    amber.dump([a, a], buf, refs=False)
    assert buf.getvalue() == amber.dumps([a, a], refs=False)
    path = tmp_path / "deep.amber"
    deep: list = [None]
    for _ in range(20):
        deep = [deep]
    amber.dump(deep, path)
    with pytest.raises(amber.DecodeLimitError):
        amber.load(path, max_depth=5)
    with pytest.raises(amber.EncodeError):
        amber.dump(deep, tmp_path / "other.amber", max_depth=5)
    with pytest.raises(amber.DecodeLimitError):
        amber.load(io.BytesIO(amber.dumps("x" * 10_000)), max_alloc=100)


def test_load_errors_from_file(tmp_path):
    path = tmp_path / "bad.amber"
    path.write_bytes(H + b"\x90\x90")
    with pytest.raises(amber.DecodeError) as info:
        amber.load(path)
    assert (info.value.kind, info.value.offset) == ("trailing_bytes", 4)
    with pytest.raises(amber.DecodeError):
        amber.load(io.BytesIO(b""))


def test_dump_to_path_is_atomic_on_failure(tmp_path):
    path = tmp_path / "keep.amber"
    amber.dump({"old": True}, path)
    old = path.read_bytes()
    before = sorted(os.listdir(tmp_path))
    for bad in ([1, 2, object()], {"k": {1, 2, lambda: 0}}, nested_cycle_refs_false()):
        with pytest.raises(amber.EncodeError):
            if isinstance(bad, tuple):
                amber.dump(bad[0], path, refs=False)
            else:
                amber.dump(bad, path)
        assert path.read_bytes() == old
        assert sorted(os.listdir(tmp_path)) == before  # no temp file left behind
    for name in ("new.amber",):
        with pytest.raises(amber.EncodeError):
            amber.dump(object(), tmp_path / name)
        assert not (tmp_path / name).exists()
        assert sorted(os.listdir(tmp_path)) == before


def nested_cycle_refs_false() -> tuple:
    a: list = []
    a.append(a)
    return (a,)


def test_dump_to_path_is_atomic_same_directory(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    path = sub / "v.amber"
    amber.dump(list(range(100)), str(path))
    assert sorted(os.listdir(sub)) == ["v.amber"]
    assert amber.load(str(path)) == list(range(100))


def test_dump_unsupported_to_file_object_raises():
    buf = io.BytesIO()
    with pytest.raises(amber.EncodeError):
        amber.dump([object()], buf)


# --------------------------------------------------------------------------- Encoder / Decoder


def test_encoder_reuse_identical_output():
    enc = amber.Encoder()
    a = [1, 2]
    first = enc.encode([a, a])
    assert enc.encode([a, a]) == first == amber.dumps([a, a])
    # no memo carried over: `a` alone is written in full, not as a REF to the last call
    assert enc.encode(a) == amber.dumps(a) == H + b"\x5a\x01\x02"
    assert enc.encode([a, a]) == first
    with pytest.raises(amber.EncodeError):
        enc.encode(object())
    assert enc.encode([a, a]) == first  # a failed call leaves no state either


def test_encoder_options():
    a = [1]
    assert amber.Encoder(refs=False).encode([a, a]) == amber.dumps([a, a], refs=False)
    deep: list = [None]
    for _ in range(10):
        deep = [deep]
    with pytest.raises(amber.EncodeError):
        amber.Encoder(max_depth=5).encode(deep)
    assert amber.Encoder(max_depth=11).encode(deep) == amber.dumps(deep)


def test_decoder_carries_no_state_between_calls():
    dec = amber.Decoder()
    shared = H + bytes.fromhex("5A D9 01 93 01")  # [x, x] with x = [1] tracked at body offset 1
    out = dec.decode(shared)
    assert out == [[1], [1]] and out[0] is out[1]
    # body offset 1 is now a plain None: a REF to it must fail, not resolve to the old [1]
    stale = H + bytes.fromhex("5A 90 93 01")
    with pytest.raises(amber.DecodeError) as info:
        dec.decode(stale)
    assert (info.value.kind, info.value.offset) == ("bad_reference", 5)
    # and a REF to an offset past the end of this (shorter) payload
    with pytest.raises(amber.DecodeError) as info:
        dec.decode(H + bytes.fromhex("59 93 01"))
    assert info.value.kind == "bad_reference"
    # the decoder still works, and after an error too
    out2 = dec.decode(shared)
    assert out2 == [[1], [1]] and out2[0] is out2[1] and out2[0] is not out[0]


def test_decoder_state_after_error_mid_container():
    dec = amber.Decoder()
    with pytest.raises(amber.DecodeError):
        dec.decode(H + bytes.fromhex("5B D9 01 93 01 95"))  # unknown tag after a tracked list
    with pytest.raises(amber.DecodeError) as info:
        dec.decode(H + bytes.fromhex("5A 90 93 01"))
    assert info.value.kind == "bad_reference"
    assert dec.decode(H + b"\x58") == []


def test_decoder_options():
    deep = H + b"\x59" * 20 + b"\x90"
    with pytest.raises(amber.DecodeLimitError):
        amber.Decoder(max_depth=10).decode(deep)
    assert amber.Decoder(max_depth=20).decode(deep) is not None
    with pytest.raises(amber.DecodeLimitError):
        amber.Decoder(max_depth=19).decode(deep)


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("bad", [0, -1, -1000, 10001, 2**70])
def test_max_depth_out_of_range_raises_value_error(bad):
    with pytest.raises(ValueError):
        amber.dumps([], max_depth=bad)
    with pytest.raises(ValueError):
        amber.loads(H + b"\x58", max_depth=bad)
    with pytest.raises(ValueError):
        amber.Encoder(max_depth=bad)
    with pytest.raises(ValueError):
        amber.Decoder(max_depth=bad)


def test_max_depth_bounds_accepted():
    for ok in (1, 10000):
        assert amber.loads(amber.dumps([], max_depth=ok), max_depth=ok) == []
        amber.Encoder(max_depth=ok)
        amber.Decoder(max_depth=ok)


def test_max_depth_not_a_decode_error():
    with pytest.raises(ValueError) as info:
        amber.loads(H + b"\x58", max_depth=0)
    assert not isinstance(info.value, amber.DecodeError)


def test_unknown_keywords_raise_type_error(tmp_path):
    with pytest.raises(TypeError):
        amber.dumps([], foo=1)
    with pytest.raises(TypeError):
        amber.loads(H + b"\x58", foo=1)
    with pytest.raises(TypeError):
        amber.loads(H + b"\x58", refs=False)  # an encoder option
    with pytest.raises(TypeError):
        amber.dumps([], max_alloc=10)  # a decoder option
    with pytest.raises(TypeError):
        amber.Encoder(foo=1)
    with pytest.raises(TypeError):
        amber.Decoder(refs=True)
    with pytest.raises(TypeError):
        amber.dump([], io.BytesIO(), foo=1)
    with pytest.raises(TypeError):
        amber.load(io.BytesIO(H + b"\x58"), foo=1)


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        amber.dumps([], False)  # type: ignore[misc]
    with pytest.raises(TypeError):
        amber.loads(H + b"\x58", 5)  # type: ignore[misc]
