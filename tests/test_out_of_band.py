"""Out-of-band buffers: dumps(buffer_callback=...) and loads(buffers=...) (spec 5.16.6).

Large bytes, bytearray, array.array and numpy data stays out of the payload: the callback gets a
read-only memoryview of the object's own memory, the payload an OUT_OF_BAND reference, and the
decoder takes the buffers back (zero-copy for numpy arrays and exact bytes).
"""

from __future__ import annotations

import array
import io
import pickle
import sys
from typing import Any

import amber
import pytest
from _common import HEADER, varint
from _samples import sample_objects
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    import numpy as np
except ImportError:  # numpy is optional
    np = None  # type: ignore[assignment]

needs_numpy = pytest.mark.skipif(np is None, reason="needs numpy")
little_endian = pytest.mark.skipif(
    sys.byteorder != "little", reason="a big-endian host writes arrays in band"
)

T = amber.OOB_THRESHOLD
EXT_OOB = b"\x76\x16"


def dumps_oob(obj: Any, **options: Any) -> tuple[bytes, list[memoryview]]:
    views: list[memoryview] = []
    data = amber.dumps(obj, buffer_callback=views.append, **options)
    return data, views


def oob_payload(index: int, length: int, tail: bytes) -> bytes:
    """A root OUT_OF_BAND value built from the spec's layout: index, length, kind and the rest."""
    blob = varint(index) + varint(length) + tail
    return HEADER + EXT_OOB + varint(len(blob)) + blob


def root_blob(data: bytes) -> bytes:
    """The blob of a payload whose root is an OUT_OF_BAND value."""
    assert data[:5] == HEADER + EXT_OOB
    n, shift, pos = 0, 0, 5
    while True:
        byte = data[pos]
        n |= (byte & 0x7F) << shift
        shift, pos = shift + 7, pos + 1
        if byte < 0x80:
            break
    assert len(data) == pos + n
    return data[pos:]


def pattern(n: int, seed: int = 7) -> bytes:
    """n bytes that are not all alike, so that a shifted or partial copy is noticed."""
    block = bytes((i * 31 + seed) % 251 for i in range(251))
    return (block * (n // 251 + 1))[:n]


# --------------------------------------------------------------------------- API and constants


def test_threshold_is_one_mebibyte():
    assert amber.OOB_THRESHOLD == 1 << 20 == amber._amber.OOB_THRESHOLD
    assert "OOB_THRESHOLD" in amber.__all__


def test_options_are_exposed():
    calls: list[memoryview] = []
    enc = amber.Encoder(buffer_callback=calls.append)
    assert enc.buffer_callback == calls.append
    assert amber.Encoder().buffer_callback is None
    big = pattern(T)
    data = enc.encode([big])
    assert len(calls) == 1 and len(data) < 32
    dec = amber.Decoder()
    assert dec.decode(data, buffers=calls) == [big]
    with pytest.raises(amber.DecodeError):
        dec.decode(data)


@pytest.mark.parametrize("bad", [3, "f", b"x", object()])
def test_non_callable_callback_is_a_type_error(bad):
    with pytest.raises(TypeError, match="buffer_callback must be callable"):
        amber.dumps(b"x", buffer_callback=bad)
    with pytest.raises(TypeError, match="buffer_callback must be callable"):
        amber.Encoder(buffer_callback=bad)


def test_none_callback_is_no_callback():
    big = pattern(T + 1)
    assert amber.dumps(big, buffer_callback=None) == amber.dumps(big)


@pytest.mark.parametrize("bad", [3, object(), None.__class__])
def test_non_iterable_buffers_is_a_type_error(bad):
    with pytest.raises(TypeError, match="buffers must be an iterable"):
        amber.loads(amber.dumps(1), buffers=bad)


@pytest.mark.parametrize(
    "buffers, index, name",
    [([b"ok", 3], 1, "int"), (["text"], 0, "str"), ([bytearray(1), None], 1, "NoneType")],
)
def test_buffers_without_the_buffer_protocol_are_a_type_error(buffers, index, name):
    with pytest.raises(TypeError, match=rf"buffers\[{index}\] is a {name}"):
        amber.loads(amber.dumps(1), buffers=buffers)
    with pytest.raises(TypeError, match=rf"buffers\[{index}\] is a {name}"):
        amber.Decoder().decode(amber.dumps(1), buffers=buffers)


def test_buffers_may_be_any_iterable():
    big = pattern(T)
    data, views = dumps_oob(big)
    assert amber.loads(data, buffers=iter(views)) == big
    assert amber.loads(data, buffers=(bytes(v) for v in views)) == big


def test_dump_and_load_pass_the_options_through():
    big = bytearray(pattern(T + 3))
    views: list[memoryview] = []
    out = io.BytesIO()
    amber.dump({"b": big}, out, buffer_callback=views.append)
    assert len(views) == 1 and len(out.getvalue()) < 64
    back = amber.load(io.BytesIO(out.getvalue()), buffers=views)
    assert back == {"b": big} and type(back["b"]) is bytearray


# --------------------------------------------------------------------------- no behaviour change


def _bigs() -> list[Any]:
    values: list[Any] = [
        pattern(3 * T),
        bytearray(pattern(T)),
        array.array("d", range(T // 8 + 5)),
        [pattern(T - 1), bytearray(T - 1)],
    ]
    if np is not None:
        values.append(np.arange(T // 4, dtype=">i4").reshape(2, -1, order="F"))
    return values


@pytest.mark.parametrize("value", _bigs() + sample_objects())
def test_without_a_callback_the_output_is_unchanged(value):
    plain = amber.dumps(value)
    assert amber.dumps(value, buffer_callback=None) == plain
    assert amber.Encoder(buffer_callback=None).encode(value) == plain


def test_big_bytes_without_a_callback_is_the_version_1_bytes():
    data = pattern(2 * T)
    assert amber.dumps(data) == HEADER + b"\x6a" + varint(len(data)) + data
    ba = bytearray(data)
    assert amber.dumps(ba) == HEADER + b"\x6b" + varint(len(ba)) + bytes(ba)


@needs_numpy
def test_big_ndarray_without_a_callback_is_the_in_band_ndarray():
    arr = np.arange(T // 8 + 1, dtype="<f8")
    head = varint(1) + varint(arr.size) + b"\x03<f8"
    blob = head + arr.tobytes()
    assert amber.dumps(arr) == HEADER + b"\x76\x14" + varint(len(blob)) + blob


def test_small_data_stays_in_band_with_a_callback():
    value = [pattern(T - 1), bytearray(T - 1), array.array("b", bytes(T - 1)), b"", bytearray()]
    data, views = dumps_oob(value)
    assert views == []
    assert data == amber.dumps(value)


# --------------------------------------------------------------------------- bytes and bytearray


@pytest.mark.parametrize("n", [T, T + 1, 3 * T + 17])
def test_bytes_round_trip(n):
    original = pattern(n)
    data, views = dumps_oob(original)
    assert len(views) == 1
    (view,) = views
    assert data == oob_payload(0, n, b"\x00")
    assert (view.format, view.ndim, view.nbytes, view.readonly) == ("B", 1, n, True)
    assert view.obj is original  # a view of the object itself, not of a copy
    back = amber.loads(data, buffers=views)
    assert type(back) is bytes and back == original
    # An exact bytes buffer is itself the value: no copy on decode either.
    transported = bytes(view)
    assert amber.loads(data, buffers=[transported]) is transported
    # Any other buffer is copied into a new bytes object.
    other = bytearray(view)
    back = amber.loads(data, buffers=[other])
    assert type(back) is bytes and back == original
    other[0] ^= 0xFF
    assert back == original


@needs_numpy
def test_bytes_view_shares_the_object_memory():
    original = pattern(T + 5)
    _, (view,) = dumps_oob(original)
    assert np.shares_memory(np.frombuffer(view, np.uint8), np.frombuffer(original, np.uint8))


def test_bytearray_round_trip_is_a_copy():
    original = bytearray(pattern(T + 9))
    data, views = dumps_oob(original)
    assert data == oob_payload(0, len(original), b"\x01")
    (view,) = views
    assert view.readonly and view.obj is original
    # Zero-copy on encode: the view sees later changes to the bytearray.
    original[10] ^= 0xFF
    assert view[10] == original[10]
    original[10] ^= 0xFF
    buffer = bytearray(view)
    back = amber.loads(data, buffers=[buffer])
    assert type(back) is bytearray and back == original
    assert back is not buffer
    buffer[0] ^= 0xFF  # the decoded bytearray does not alias the caller's buffer
    assert back[0] == original[0]


# --------------------------------------------------------------------------- array.array

TYPECODES = [c for c in "bBhHiIlLqQfdu" if array.array(c).itemsize in (1, 2, 4, 8)]
WIRE_SIZE = dict.fromkeys("bB", 1) | dict.fromkeys("hH", 2) | dict.fromkeys("iIfu", 4)
WIRE_SIZE |= dict.fromkeys("lLqQd", 8)


@little_endian
@pytest.mark.parametrize("typecode", TYPECODES)
def test_array_round_trip(typecode):
    if array.array(typecode).itemsize != WIRE_SIZE[typecode]:
        pytest.skip("the host's items differ from the wire size")
    items = T // WIRE_SIZE[typecode] + 3
    if typecode == "u":
        original = array.array("u", "".join(chr(0x41 + i % 50) for i in range(items)))
    else:
        original = array.array(typecode, pattern(items * WIRE_SIZE[typecode]))
    data, views = dumps_oob(original)
    nbytes = len(original) * original.itemsize
    assert data == oob_payload(0, nbytes, b"\x02" + typecode.encode())
    (view,) = views
    assert (view.format, view.nbytes, view.readonly) == ("B", nbytes, True)
    assert view.obj is original
    back = amber.loads(data, buffers=[bytes(view)])
    assert type(back) is array.array and back.typecode == typecode
    assert back.tobytes() == original.tobytes()


@little_endian
def test_array_view_is_the_array_memory_and_decode_copies():
    original = array.array("d", range(T // 8))
    _, (view,) = dumps_oob(original)
    original[3] = -1.5
    assert view[24:32].tobytes() == array.array("d", [-1.5]).tobytes()
    buffer = bytearray(view)
    back = amber.loads(amber.dumps(original, buffer_callback=lambda v: None), buffers=[buffer])
    buffer[:8] = bytes(8)
    assert back == original


# --------------------------------------------------------------------------- numpy arrays


def _dtypes() -> list[Any]:
    return [
        "<f8",
        ">f8",
        "<i4",
        ">i2",
        "u1",
        "?",
        "<c16",
        "<M8[ns]",
        ">m8[s]",
        "S5",
        "<U3",
        "V7",
        [("a", "<i2"), ("b", ">f8", (2,))],
        [("x", "u1"), ("", "V3"), ("y", [("p", "<f4"), ("q", "S2")])],
    ]


def _fill(dtype: Any, shape: tuple[int, ...], order: str) -> Any:
    dt = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.frombuffer(pattern(count * dt.itemsize), dtype=np.uint8)
    if dt.kind == "b":
        raw = raw & 1
    elif dt.kind == "U":
        raw = np.frombuffer(
            ("".join(chr(0x61 + i % 26) for i in range(count * dt.itemsize // 4))).encode(
                "utf-32-le"
            ),
            dtype=np.uint8,
        )
    flat = raw.view(dt)
    return np.array(flat.reshape(shape), order=order)


def _shape(dtype: Any, ndim: int) -> tuple[int, ...]:
    items = T // np.dtype(dtype).itemsize + 1
    if ndim == 1:
        return (items,)
    if ndim == 2:
        return (3, items // 3 + 1)
    return (2, 3, items // 6 + 1)


@needs_numpy
@pytest.mark.parametrize("dtype", _dtypes(), ids=str)
@pytest.mark.parametrize("ndim, order", [(1, "C"), (2, "C"), (2, "F"), (3, "F")])
def test_ndarray_round_trip(dtype, ndim, order):
    original = _fill(dtype, _shape(dtype, ndim), order)
    data, views = dumps_oob(original)
    assert len(data) < 400, "the data went into the payload"
    (view,) = views
    fortran = order == "F" and not original.flags.c_contiguous
    kind = b"\x04" if fortran else b"\x03"
    assert root_blob(data).startswith(varint(0) + varint(original.nbytes) + kind)
    assert (view.format, view.nbytes, view.readonly) == ("B", original.nbytes, True)
    # Zero-copy on encode: the view is the array's own memory.
    assert np.shares_memory(np.frombuffer(view, np.uint8), original)
    for buffer in (bytes(view), bytearray(view)):
        back = amber.loads(data, buffers=[buffer])
        assert type(back) is np.ndarray
        assert back.dtype == original.dtype and back.shape == original.shape
        assert back.tobytes() == original.tobytes()
        assert back.flags.f_contiguous if fortran else back.flags.c_contiguous
        # Zero-copy on decode: a view of the buffer, writeable exactly when it is.
        assert np.shares_memory(back, np.frombuffer(buffer, np.uint8))
        assert back.flags.writeable == isinstance(buffer, bytearray)


@needs_numpy
def test_ndarray_zero_dimensional():
    original = np.array(pattern(T + 1), dtype=f"S{T + 1}")
    assert original.shape == () and original.nbytes == T + 1
    data, views = dumps_oob(original)
    header = b"\x00" + varint(len(original.dtype.str)) + original.dtype.str.encode()
    assert data == oob_payload(0, T + 1, b"\x03" + header)
    back = amber.loads(data, buffers=views)
    assert back.shape == () and back.dtype == original.dtype
    assert back.tobytes() == original.tobytes()


@needs_numpy
def test_ndarray_fortran_payload_layout():
    original = np.asfortranarray(np.arange(T // 8 * 2, dtype="<f8").reshape(2, -1))
    data, views = dumps_oob(original)
    rows, cols = original.shape
    header = varint(2) + varint(rows) + varint(cols) + b"\x03<f8"
    assert data == oob_payload(0, original.nbytes, b"\x04" + header)
    # The buffer is the Fortran-order memory, column after column.
    assert bytes(views[0][:16]) == original[:, 0].tobytes()


@needs_numpy
def test_ndarray_writeable_buffer_is_shared_both_ways():
    original = np.arange(T // 8 + 1, dtype="<f8")
    data, views = dumps_oob(original)
    buffer = bytearray(views[0])
    back = amber.loads(data, buffers=[buffer])
    back[0] = 42.0
    assert np.frombuffer(buffer, "<f8")[0] == 42.0
    readonly = amber.loads(data, buffers=[bytes(buffer)])
    with pytest.raises(ValueError):
        readonly[0] = 1.0
    # The memoryviews the callback got are read-only, so an array over them is too.
    assert not amber.loads(data, buffers=views).flags.writeable


@needs_numpy
def test_non_contiguous_ndarray_is_copied_to_c_order():
    base = np.arange(T // 4, dtype="<f8")
    strided = base[::2]
    assert not strided.flags.c_contiguous and not strided.flags.f_contiguous
    data, views = dumps_oob(strided)
    (view,) = views
    assert view.nbytes == strided.nbytes
    assert not np.shares_memory(np.frombuffer(view, np.uint8), base)  # documented copy
    assert root_blob(data).startswith(varint(0) + varint(view.nbytes) + b"\x03")
    back = amber.loads(data, buffers=views)
    assert back.flags.c_contiguous and np.array_equal(back, strided)


@needs_numpy
def test_small_ndarray_stays_in_band():
    arr = np.zeros(T // 8 - 1)
    data, views = dumps_oob(arr)
    assert views == [] and data == amber.dumps(arr)


@needs_numpy
def test_ten_megabyte_array_payload_is_tiny():
    arr = np.ones(10_000_000 // 8)
    data, views = dumps_oob({"a": arr})
    assert len(data) < 40 and views[0].nbytes == arr.nbytes


# --------------------------------------------------------------------------- identity


def test_shared_object_is_one_buffer_and_a_ref():
    big = pattern(T + 2)
    ba = bytearray(pattern(T, seed=3))
    value = [big, ba, big, {"k": ba, "j": big}]
    data, views = dumps_oob(value)
    assert len(views) == 2
    assert [v.obj for v in views] == [big, ba]
    back = amber.loads(data, buffers=[bytes(v) for v in views])
    assert back[0] is back[2] is back[3]["j"]
    assert back[1] is back[3]["k"] and type(back[1]) is bytearray
    assert back == value


@needs_numpy
def test_shared_ndarray_is_one_buffer():
    arr = np.arange(T // 8 + 1)
    data, views = dumps_oob((arr, [arr]))
    assert len(views) == 1
    back = amber.loads(data, buffers=views)
    assert back[0] is back[1][0]


def test_refs_false_writes_each_occurrence():
    big = pattern(T)
    data, views = dumps_oob([big, big], refs=False)
    assert len(views) == 2 and all(v.obj is big for v in views)
    back = amber.loads(data, buffers=[bytes(v) for v in views])
    assert back == [big, big] and back[0] is not back[1]


def test_cycle_through_a_tuple_gives_each_buffer_once():
    # A cycle through a tuple makes the encoder walk the graph twice (spec 6.5); the
    # callback must see only the buffers of the final payload, each once.
    t = ([], pattern(2 * T))  # the bytes is held by the tuple alone
    t[0].append(t)
    data, views = dumps_oob(t)
    assert len(views) == 1
    back = amber.loads(data, buffers=views)
    assert back[0][0] is back and back[1] == t[1]


def test_callback_runs_once_the_payload_is_complete():
    # The callback may change the graph: it is called after the walk, so this is safe.
    holder: list[Any] = [pattern(T), pattern(T, seed=1)]
    data = amber.dumps(holder, buffer_callback=holder.append)
    assert len(holder) == 4
    back = amber.loads(data, buffers=holder[2:])
    assert back == holder[:2]


def test_buffers_are_numbered_in_payload_order():
    values = [pattern(T + i, seed=i) for i in range(4)]
    data, views = dumps_oob({"x": values[2], "y": [values[0], values[3]], "z": values[1]})
    assert [v.nbytes for v in views] == [T + 2, T, T + 3, T + 1]
    back = amber.loads(data, buffers=[bytes(v) for v in views])
    assert back == {"x": values[2], "y": [values[0], values[3]], "z": values[1]}


# --------------------------------------------------------------------------- decode errors


def _decode_error(data: bytes, **options: Any) -> amber.DecodeError:
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, **options)
    return info.value


def test_missing_buffers():
    data, _ = dumps_oob([1, pattern(T)])
    err = _decode_error(data)
    assert (err.kind, err.offset) == ("missing_buffer", 5)
    assert "buffers=" in str(err) and "buffer 0" in str(err)
    assert not isinstance(err, amber.DecodeLimitError)
    err = _decode_error(data, buffers=[])
    assert err.kind == "missing_buffer" and "only 0 buffers were given" in str(err)


def test_index_beyond_the_buffers_given():
    data, views = dumps_oob([pattern(T), pattern(T + 1), pattern(T + 2)])
    err = _decode_error(data, buffers=views[:2])
    assert err.kind == "missing_buffer"
    assert "buffer 2" in str(err) and "only 2 buffers were given" in str(err)
    huge = oob_payload(2**64 - 1, 3, b"\x00")
    err = _decode_error(huge, buffers=[b"abc"])
    assert err.kind == "missing_buffer" and str(2**64 - 1) in str(err)


@pytest.mark.parametrize("delta", [-1, 1, -T])
def test_wrong_buffer_length(delta):
    data, _ = dumps_oob(pattern(T))
    err = _decode_error(data, buffers=[bytes(T + delta)])
    assert (err.kind, err.offset) == ("buffer_mismatch", 3)
    assert f"has {T + delta} bytes; the payload says {T}" in str(err)


@needs_numpy
def test_wrong_ndarray_buffer_length():
    data, views = dumps_oob(np.zeros((2, T // 16 + 1)))
    nbytes = views[0].nbytes
    err = _decode_error(data, buffers=[bytes(nbytes - 8)])
    assert err.kind == "buffer_mismatch" and str(nbytes) in str(err)


def test_non_contiguous_buffer_is_refused():
    data, _ = dumps_oob(pattern(T))
    strided = memoryview(bytes(2 * T))[::2]
    err = _decode_error(data, buffers=[strided])
    assert err.kind == "buffer_mismatch" and "contiguous" in str(err)


def test_unused_and_unneeded_buffers_are_fine():
    assert amber.loads(amber.dumps([1, b"x"]), buffers=[b"unused"]) == [1, b"x"]
    big = pattern(T)
    data = oob_payload(1, T, b"\x00")
    assert amber.loads(data, buffers=[b"first", big, b"third"]) is big


def test_one_buffer_cannot_back_two_values():
    one = EXT_OOB + b"\x03\x00\x03\x00"
    err = _decode_error(HEADER + b"\x5a" + one + one, buffers=[b"abc"])
    assert (err.kind, err.offset) == ("invalid_ext", 10) and "already used" in str(err)


def test_blob_checks_come_before_the_buffers():
    # An undefined kind is invalid_ext even though no buffers were given.
    err = _decode_error(oob_payload(0, 3, b"\x07"))
    assert err.kind == "invalid_ext" and "kind 7" in str(err)


def test_buffer_copies_are_not_charged_to_max_alloc():
    big = bytearray(pattern(4 * T))
    in_band = amber.dumps(big)
    assert _decode_error(in_band, max_alloc=100_000).kind == "alloc_limit"
    data, views = dumps_oob(big)
    assert amber.loads(data, max_alloc=100_000, buffers=views) == big


@needs_numpy
@pytest.mark.parametrize(
    "make",
    [
        lambda b: b,
        lambda b: bytearray(b),
        lambda b: memoryview(b),
        lambda b: pickle.PickleBuffer(bytearray(b)),
        lambda b: np.frombuffer(b, np.uint8).copy(),
        lambda b: np.frombuffer(b, "<f8").copy(),
    ],
    ids=["bytes", "bytearray", "memoryview", "PickleBuffer", "uint8 array", "float array"],
)
def test_any_contiguous_buffer_type(make):
    original = np.arange(T // 8 * 3, dtype="<f8").reshape(3, -1)
    data, views = dumps_oob([original, pattern(T)])
    buffers = [make(bytes(v)) for v in views]
    back = amber.loads(data, buffers=buffers)
    assert np.array_equal(back[0], original) and back[1] == pattern(T)
    assert np.shares_memory(back[0], np.asarray(memoryview(buffers[0]).cast("B")))


# --------------------------------------------------------------------------- callback errors


class Boom(Exception):
    pass


def test_callback_raising_is_an_encode_error_with_path_and_cause():
    def refuse(view: memoryview) -> None:
        raise Boom("no room")

    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({"k": [1, pattern(T)]}, buffer_callback=refuse)
    err = info.value
    assert isinstance(err.__cause__, Boom)
    assert err.path == 'root["k"][1]'
    assert str(err) == (
        'buffer_callback raised Boom: no room for out-of-band buffer 0 of 1 at root["k"][1]'
    )


def test_callback_raising_on_a_later_buffer():
    seen: list[memoryview] = []

    def second_fails(view: memoryview) -> None:
        if seen:
            raise ValueError("disk full")
        seen.append(view)

    value = [pattern(T), bytearray(T), (3, array.array("B", bytes(T)))]
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value, buffer_callback=second_fails)
    assert len(seen) == 1  # the buffers before the failing one were handed over
    assert "out-of-band buffer 1 of 3" in str(info.value)
    assert info.value.path == "root[1]"
    assert isinstance(info.value.__cause__, ValueError)


class Blob:
    """A class written by a custom encode function whose state holds big bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data


def test_callback_raising_inside_custom_state():
    def refuse(view: memoryview) -> None:
        raise Boom("nope")

    kept = amber.CustomType(Blob, encode=lambda b: [b.data], decode=lambda s: Blob(s[0]))
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({"b": Blob(pattern(T))}, custom=[kept], buffer_callback=refuse)
    # The state list is made anew by each walk, but the bytes in it is the same object.
    assert info.value.path.startswith('root["b"]') and info.value.path.endswith("[0]")
    # A state made of fresh bytes each time cannot be found again: the path is the root.
    fresh = amber.CustomType(Blob, encode=lambda b: bytes(bytearray(b.data)), decode=Blob)
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps([Blob(pattern(T))], custom=[fresh], buffer_callback=refuse)
    assert info.value.path == "root" and isinstance(info.value.__cause__, Boom)
    # Both round trip when the callback accepts the buffers.
    data, views = dumps_oob([Blob(pattern(T))], custom=[fresh])
    assert len(views) == 1
    assert amber.loads(data, custom=[fresh], buffers=views)[0].data == pattern(T)


def test_callback_not_called_when_the_encode_fails():
    calls: list[memoryview] = []
    with pytest.raises(amber.EncodeError):
        amber.dumps([pattern(T), lambda: 0], buffer_callback=calls.append)
    assert calls == []


def test_callback_return_value_is_ignored():
    big = pattern(T)
    data = amber.dumps(big, buffer_callback=lambda view: True)
    assert data == oob_payload(0, T, b"\x00")


# --------------------------------------------------------------------------- properties


def _leaf(draw: Any) -> Any:
    kind = draw(st.sampled_from(["bytes", "bytearray", "array", "ndarray", "small"]))
    n = draw(st.sampled_from([T - 1, T, T + 8, 2 * T]))
    seed = draw(st.integers(0, 250))
    if kind == "bytes":
        return pattern(n, seed)
    if kind == "bytearray":
        return bytearray(pattern(n, seed))
    if kind == "array":
        return array.array(draw(st.sampled_from("bhiqd")), pattern(n - n % 8, seed))
    if kind == "ndarray" and np is not None:
        dtype = draw(st.sampled_from(["<f8", ">i4", "u1", "<c8"]))
        items = n // np.dtype(dtype).itemsize
        arr = np.frombuffer(pattern(items * np.dtype(dtype).itemsize, seed), dtype=dtype)
        layout = draw(st.sampled_from(["flat", "C", "F", "strided"]))
        if layout == "C":
            return arr[: items // 2 * 2].reshape(2, -1).copy()
        if layout == "F":
            return np.asfortranarray(arr[: items // 2 * 2].reshape(2, -1))
        if layout == "strided":
            return arr[::2]
        return arr.copy()
    return draw(st.sampled_from([1, "two", None, 3.5, b"small", (4,)]))


@st.composite
def mixtures(draw: Any) -> list[Any]:
    pool = [_leaf(draw) for _ in range(draw(st.integers(1, 4)))]
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=6))
    return [pool[i] for i in picks]


@little_endian
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(mixtures(), st.booleans(), st.booleans())
def test_random_mixtures_round_trip(graph_diff, value, refs, transport):
    data, views = dumps_oob(value, refs=refs)
    big = [x for x in value if _data_size(x) >= T]
    distinct = {id(x) for x in big}
    assert len(views) == (len(distinct) if refs else len(big))
    assert len(data) < len(amber.dumps(value, refs=refs)) or not big
    buffers: list[Any] = [bytes(v) for v in views] if transport else views
    back = amber.loads(data, buffers=buffers)
    if refs:
        assert graph_diff(value, back) is None
    else:  # without refs every occurrence is its own copy
        assert all(graph_diff(x, y) is None for x, y in zip(value, back, strict=True))
    if refs:
        for i, x in enumerate(value):
            for j, y in enumerate(value):
                if x is y and _data_size(x) >= T:
                    assert back[i] is back[j]
    assert amber.dumps(value, refs=refs) == amber.dumps(value, refs=refs, buffer_callback=None)


def _data_size(x: Any) -> int:
    if isinstance(x, (bytes, bytearray)):
        return len(x)
    if isinstance(x, array.array):
        return len(x) * x.itemsize
    if np is not None and isinstance(x, np.ndarray):
        return int(x.nbytes)
    return 0
