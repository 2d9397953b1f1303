"""Streams: StreamWriter, StreamReader, StreamDecoder, iter_load, and load(mmap=True).

Expected stream bytes are assembled here from the layout (ab 53 01, then per message a
minimal LEB128 length and the payload, then 00); the payloads themselves come from
amber.dumps, whose bytes are checked by the payload vectors.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import io
import json
import os
import pathlib
import random
import socket
import stat
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import amber
import pytest
from _common import ERROR_KINDS, REPO_DIR, nested_list, varint
from hypothesis import given, settings
from hypothesis import strategies as st

MAGIC = bytes.fromhex("ab 53 01")
END = b"\x00"
NONE_PAYLOAD = bytes.fromhex("ab 41 01 90")
LIST12_PAYLOAD = bytes.fromhex("ab 41 01 5a 01 02")  # [1, 2]

# The kind a stream adds to those of payloads (spec section 11.5).
STREAM_KINDS = frozenset({"message_limit"})

MESSAGES: list[Any] = [
    None,
    {"id": 1, "name": "Ada", "tags": ("x", "y")},
    [1, 2.5, "three"],
    b"\x00" * 300,  # a payload over 127 bytes: a two-byte frame length
    {"nested": nested_list(20)},
    "é" * 70,
    set(range(10)),
]


def frame(payload: bytes) -> bytes:
    return varint(len(payload)) + payload


def stream_of(payloads: list[bytes], end: bool = True) -> bytes:
    return MAGIC + b"".join(frame(p) for p in payloads) + (END if end else b"")


def payloads_of(messages: list[Any]) -> list[bytes]:
    return [amber.dumps(m) for m in messages]


STREAM = stream_of(payloads_of(MESSAGES))


def frame_starts(payloads: list[bytes]) -> list[int]:
    """Stream offsets of each frame's first byte, then of the end marker."""
    starts = [len(MAGIC)]
    for p in payloads:
        starts.append(starts[-1] + len(varint(len(p))) + len(p))
    return starts


def assert_decode_error(info: pytest.ExceptionInfo[Any], kind: str, offset: int, index: int):
    err = info.value
    assert (err.kind, err.offset, err.message_index) == (kind, offset, index), str(err)
    assert f"message {index}" in str(err)


class Unseekable(io.RawIOBase):
    """A raw, unseekable source (like a pipe) whose reads return at most `step` bytes."""

    def __init__(self, data: bytes, step: int = 7) -> None:
        self._data = data
        self._pos = 0
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = min(self._step, len(b), len(self._data) - self._pos)
        b[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


SOURCES: dict[str, Callable[[bytes, pathlib.Path], Any]] = {
    "bytes": lambda data, _: data,
    "bytearray": lambda data, _: bytearray(data),
    "memoryview": lambda data, _: memoryview(b"__" + data)[2:],
    "bytesio": lambda data, _: io.BytesIO(data),
    "unseekable": lambda data, _: Unseekable(data),
    "buffered_unseekable": lambda data, _: io.BufferedReader(Unseekable(data, 5)),
    "path": lambda data, tmp: _write(tmp / "s.ambs", data),
    "mmap": lambda data, tmp: _write(tmp / "m.ambs", data),
}


def _write(path: pathlib.Path, data: bytes) -> pathlib.Path:
    path.write_bytes(data)
    return path


@contextlib.contextmanager
def reader_for(kind: str, data: bytes, tmp: pathlib.Path, **options: Any) -> Iterator[Any]:
    source = SOURCES[kind](data, tmp)
    with amber.StreamReader(source, mmap=kind == "mmap", **options) as reader:
        yield reader


# --------------------------------------------------------------------------- vectors


def _load_vectors() -> list[dict[str, Any]]:
    with open(REPO_DIR / "spec" / "vectors" / "streams.json", encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["format_version"] == 1 and doc["stream_version"] == 1
    return doc["vectors"]


VECTORS = _load_vectors()


def _hex(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


def _vector_options(vec: dict[str, Any]) -> dict[str, Any]:
    return dict(vec.get("options", {}))


def test_vectors_cover_every_stream_error_kind():
    kinds = {v["error"] for v in VECTORS if "error" in v and not v.get("payload_error")}
    assert kinds == {
        "truncated",
        "bad_magic",
        "unsupported_version",
        "overlong_varint",
        "varint_overflow",
        "message_limit",
        "trailing_bytes",
    }
    assert {v["error"] for v in VECTORS if "error" in v} <= ERROR_KINDS | STREAM_KINDS
    names = [v["name"] for v in VECTORS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("kind", ["bytes", "bytesio", "unseekable", "path"])
@pytest.mark.parametrize("vec", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_payloads(vec, kind, tmp_path):
    """Framing only: read_payload yields the listed payloads, then the framing error if any."""
    data = _hex(vec["hex"])
    expected = [_hex(p) for p in vec["payloads"]]
    framing_error = "error" in vec and not vec.get("payload_error")
    with reader_for(kind, data, tmp_path, **_vector_options(vec)) as reader:
        got = []
        if framing_error:
            with pytest.raises(amber.DecodeError) as info:
                while (p := reader.read_payload()) is not None:
                    got.append(bytes(p))
            assert_decode_error(info, vec["error"], vec["offset"], vec["message_index"])
        else:
            while (p := reader.read_payload()) is not None:
                got.append(bytes(p))
            assert reader.index == len(expected)
    assert got == expected


def _decoded(vec: dict[str, Any]) -> list[Any]:
    n = len(vec["payloads"]) - (1 if vec.get("payload_error") else 0)
    return [amber.loads(_hex(p)) for p in vec["payloads"][:n]]


DECODABLE = [v for v in VECTORS if not v.get("framing_only")]


@pytest.mark.parametrize("kind", ["bytes", "unseekable", "mmap"])
@pytest.mark.parametrize("vec", DECODABLE, ids=[v["name"] for v in DECODABLE])
def test_vector_reader(vec, kind, tmp_path):
    data = _hex(vec["hex"])
    got = []
    with reader_for(kind, data, tmp_path, **_vector_options(vec)) as reader:
        if "error" in vec:
            with pytest.raises(amber.DecodeError) as info:
                for obj in reader:
                    got.append(obj)
            assert_decode_error(info, vec["error"], vec["offset"], vec["message_index"])
            assert isinstance(info.value, amber.DecodeLimitError) == (
                vec["error"] == "message_limit"
            )
        else:
            got = list(reader)
    assert got == _decoded(vec)


@pytest.mark.parametrize("chunking", ["whole", "bytewise", "pairs"])
@pytest.mark.parametrize("vec", DECODABLE, ids=[v["name"] for v in DECODABLE])
def test_vector_decoder(vec, chunking):
    data = _hex(vec["hex"])
    step = {"whole": max(len(data), 1), "bytewise": 1, "pairs": 2}[chunking]
    dec = amber.StreamDecoder(**_vector_options(vec))
    got: list[Any] = []
    try:
        for i in range(0, len(data), step):
            got += dec.feed(data[i : i + step])
        dec.close()
    except amber.DecodeError as err:
        assert "error" in vec, str(err)
        assert (err.kind, err.offset, err.message_index) == (
            vec["error"],
            vec["offset"],
            vec["message_index"],
        ), str(err)
    else:
        assert "error" not in vec
    assert got == _decoded(vec)


# --------------------------------------------------------------------------- layout


def test_writer_layout_is_magic_frames_end(tmp_path):
    payloads = payloads_of(MESSAGES)
    assert any(len(p) > 127 for p in payloads)  # two-byte frame lengths are exercised
    buf = io.BytesIO()
    with amber.StreamWriter(buf) as writer:
        for m in MESSAGES:
            writer.write(m)
        assert writer.count == len(MESSAGES)
    assert buf.getvalue() == stream_of(payloads)
    path = tmp_path / "x.ambs"
    with amber.StreamWriter(path) as writer:
        for m in MESSAGES:
            writer.write(m)
    assert path.read_bytes() == stream_of(payloads)


def test_empty_stream_is_magic_and_end_marker():
    buf = io.BytesIO()
    with amber.StreamWriter(buf) as writer:
        pass
    assert writer.count == 0
    assert buf.getvalue() == bytes.fromhex("ab 53 01 00")
    assert list(amber.StreamReader(buf.getvalue())) == []


def test_writer_frame_lengths_at_varint_boundaries():
    buf = io.BytesIO()
    sizes = [127, 128, 16383, 16384]
    payloads = [bytes.fromhex("ab 41 01") + b"\x90" * (n - 3) for n in sizes]
    with amber.StreamWriter(buf) as writer:
        for p in payloads:
            writer.write_payload(p)
    expected = (
        MAGIC
        + b"\x7f"
        + payloads[0]
        + b"\x80\x01"
        + payloads[1]
        + b"\xff\x7f"
        + payloads[2]
        + b"\x80\x80\x01"
        + payloads[3]
        + END
    )
    assert buf.getvalue() == expected


def test_magic_constants():
    assert amber.STREAM_MAGIC == bytes.fromhex("ab 53 01")
    assert amber.DEFAULT_MAX_MESSAGE == 2**31


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("kind", list(SOURCES))
def test_roundtrip_every_source(kind, tmp_path, graph_diff):
    with reader_for(kind, STREAM, tmp_path) as reader:
        got = list(reader)
        assert reader.index == len(MESSAGES)
        assert list(reader) == []  # stays at the end
        assert reader.read_payload() is None
        assert reader.skip() == 0
    assert graph_diff(MESSAGES, got) is None


def test_roundtrip_path_many_messages(tmp_path):
    path = tmp_path / "many.ambs"
    rows = [{"id": i, "name": f"Employee_{i}", "age": 20 + i % 45} for i in range(20_000)]
    with amber.StreamWriter(path) as writer:
        for row in rows:
            writer.write(row)
    assert list(amber.iter_load(path)) == rows
    assert list(amber.iter_load(str(path), mmap=True)) == rows
    with open(path, "rb") as f:
        assert list(amber.iter_load(f)) == rows
    assert sorted(os.listdir(tmp_path)) == ["many.ambs"]  # no temporary file left


def test_roundtrip_bytesio_after_prefix():
    """A stream need not start at offset 0 of its file; offsets count from its magic."""
    buf = io.BytesIO()
    buf.write(b"HEADER")
    with amber.StreamWriter(buf) as writer:
        writer.write([1, 2])
    buf.seek(6)
    assert list(amber.StreamReader(buf)) == [[1, 2]]
    bad = io.BytesIO(b"HEADER" + MAGIC + b"\x04" + NONE_PAYLOAD)
    bad.seek(6)
    with pytest.raises(amber.DecodeError) as info:
        list(amber.StreamReader(bad))
    assert_decode_error(info, "truncated", 8, 1)


def test_roundtrip_pipe_with_writer_thread():
    messages = [{"n": i, "blob": bytes(i % 700)} for i in range(2_000)]
    read_fd, write_fd = os.pipe()
    failures: list[BaseException] = []

    def produce() -> None:
        try:
            with os.fdopen(write_fd, "wb") as f, amber.StreamWriter(f) as writer:
                for m in messages:
                    writer.write(m)
        except BaseException as err:  # reported by the main thread
            failures.append(err)

    thread = threading.Thread(target=produce)
    thread.start()
    with os.fdopen(read_fd, "rb") as f:
        got = list(amber.StreamReader(f))
    thread.join(timeout=60)
    assert not failures
    assert got == messages


def test_roundtrip_pipe_skip_unseekable():
    payloads = payloads_of(list(range(100)))
    read_fd, write_fd = os.pipe()

    def produce() -> None:
        with os.fdopen(write_fd, "wb") as f:
            f.write(stream_of(payloads))

    thread = threading.Thread(target=produce)
    thread.start()
    with os.fdopen(read_fd, "rb") as f:
        reader = amber.StreamReader(f)
        assert reader.skip(10) == 10
        assert next(reader) == 10
        assert reader.skip(50) == 50
        assert list(reader) == list(range(61, 100))
    thread.join(timeout=60)


def test_roundtrip_socketpair():
    messages = [{"n": i, "text": "x" * (i % 300)} for i in range(1_000)]
    left, right = socket.socketpair()
    right.settimeout(30)

    def produce() -> None:
        with left, left.makefile("wb") as f, amber.StreamWriter(f) as writer:
            for m in messages:
                writer.write(m)
        # leaving the with-blocks flushed the end marker and closed the socket: EOF

    thread = threading.Thread(target=produce)
    thread.start()
    with right, right.makefile("rb") as f:
        got = list(amber.StreamReader(f))
    thread.join(timeout=60)
    assert got == messages


def test_socket_reader_returns_each_message_without_waiting_for_more():
    """A message is handed out as soon as its bytes are in, even though the writer sends the
    next one only after the reader has answered (a request/response conversation)."""
    left, right = socket.socketpair()
    left.settimeout(30)
    right.settimeout(30)
    answered: list[Any] = []

    def produce() -> None:
        with left, left.makefile("wb") as f, amber.StreamWriter(f) as writer:
            for i in range(3):
                writer.write({"question": i})
                f.flush()
                answered.append(left.recv(1))  # the reader's answer to message i

    thread = threading.Thread(target=produce)
    thread.start()
    with right, right.makefile("rb") as f:
        reader = amber.StreamReader(f)
        got = []
        for obj in reader:
            got.append(obj)
            right.sendall(b"!")
    thread.join(timeout=60)
    assert got == [{"question": i} for i in range(3)]
    assert answered == [b"!"] * 3


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(
        st.one_of(
            st.none(),
            st.integers(),
            st.text(max_size=200),
            st.binary(max_size=400),
            st.lists(st.integers(), max_size=50),
        ),
        max_size=30,
    ),
    cuts=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=20),
)
def test_decoder_random_chunks(messages, cuts):
    data = stream_of(payloads_of(messages))
    dec = amber.StreamDecoder()
    got: list[Any] = []
    pos = 0
    i = 0
    while pos < len(data):
        step = cuts[i % len(cuts)]
        got += dec.feed(data[pos : pos + step])
        pos += step
        i += 1
    assert dec.finished
    dec.close()
    assert got == messages
    assert dec.index == len(messages)


def test_decoder_one_byte_chunks_and_one_chunk():
    single = amber.StreamDecoder()
    got: list[Any] = []
    for i in range(len(STREAM)):
        got += single.feed(STREAM[i : i + 1])
    single.close()
    assert got == MESSAGES
    whole = amber.StreamDecoder()
    assert whole.feed(STREAM) == MESSAGES
    assert whole.finished
    whole.close()


def test_decoder_chunks_of_any_buffer_type():
    import array

    dec = amber.StreamDecoder()
    data = stream_of([NONE_PAYLOAD, LIST12_PAYLOAD, NONE_PAYLOAD])  # 21 bytes
    got = dec.feed(array.array("i", data[:12]))  # 3 ints
    got += dec.feed(memoryview(data)[12:])
    assert got == [None, [1, 2], None]


def test_decoder_does_not_keep_the_callers_chunk():
    dec = amber.StreamDecoder()
    data = stream_of([LIST12_PAYLOAD])
    chunk = bytearray(data[:7])  # ends inside the payload
    assert dec.feed(chunk) == []
    chunk[:] = b"\xff" * 7  # the caller reuses its buffer
    chunk.extend(b"\xff")
    assert dec.feed(data[7:]) == [[1, 2]]
    dec.close()


# --------------------------------------------------------------------------- skip / read_payload


@pytest.mark.parametrize("kind", list(SOURCES))
def test_skip_and_read_payload(kind, tmp_path):
    payloads = payloads_of(MESSAGES)
    with reader_for(kind, STREAM, tmp_path) as reader:
        assert reader.skip(0) == 0
        assert reader.skip() == 1
        assert bytes(reader.read_payload()) == payloads[1]
        assert reader.skip(2) == 2  # over the 300-byte message
        assert reader.index == 4
        assert next(reader) == MESSAGES[4]
        assert reader.skip(100) == len(MESSAGES) - 5
        assert reader.index == len(MESSAGES)
        assert reader.read_payload() is None


def test_read_payload_from_buffer_is_a_view_and_outlives_the_reader(tmp_path):
    path = _write(tmp_path / "v.ambs", STREAM)
    reader = amber.StreamReader(path, mmap=True)
    first = reader.read_payload()
    assert isinstance(first, memoryview) and first.readonly
    reader.close()  # the view keeps its mapping alive
    assert bytes(first) == amber.dumps(MESSAGES[0])
    reader = amber.StreamReader(io.BytesIO(STREAM))
    assert type(reader.read_payload()) is bytes


def test_skip_seeks_on_a_seekable_file(tmp_path):
    """Skipped payloads of a seekable file are seeked over, not read."""
    big = [bytes([i]) * 3_000_000 for i in range(4)]
    path = tmp_path / "big.ambs"
    with amber.StreamWriter(path) as writer:
        for b in big:
            writer.write(b)
    reads: list[int] = []

    class Counting(io.FileIO):
        def read(self, size: int = -1) -> bytes:
            chunk = super().read(size)
            reads.append(len(chunk))
            return chunk

    with Counting(str(path), "rb") as f:
        reader = amber.StreamReader(f)
        assert reader.skip(3) == 3
        assert next(reader) == big[3]
        assert reader.read_payload() is None
    assert sum(reads) < 5_000_000  # the last message (3 MB) and a little, not 12 MB


def test_skip_validates_n():
    reader = amber.StreamReader(STREAM)
    with pytest.raises(ValueError, match="n >= 0"):
        reader.skip(-1)
    with pytest.raises(TypeError):
        reader.skip(1.5)  # type: ignore[arg-type]
    assert reader.skip(1) == 1  # the reader was not harmed


def test_skip_seekable_lying_length_fails_without_seeking_past_the_end():
    data = MAGIC + frame(NONE_PAYLOAD) + varint(1_000_000) + b"\x00" * 100
    f = io.BytesIO(data)
    reader = amber.StreamReader(f)
    assert reader.skip() == 1
    with pytest.raises(amber.DecodeError) as info:
        reader.skip()
    assert_decode_error(info, "truncated", 8, 1)
    assert f.tell() <= len(data)


def test_skip_unseekable_cut_stream():
    data = MAGIC + frame(NONE_PAYLOAD) + varint(1_000) + b"\x00" * 100
    reader = amber.StreamReader(Unseekable(data, 9))
    assert reader.skip() == 1
    with pytest.raises(amber.DecodeError) as info:
        reader.skip()
    assert_decode_error(info, "truncated", 8, 1)


# --------------------------------------------------------------------------- truncation


def _expected_cut_error(cut: int, starts: list[int], require_end: bool) -> tuple[int, int] | None:
    """(offset, message index) of the error for STREAM cut to `cut` bytes, None if valid."""
    if cut < len(MAGIC):
        return cut, 0
    for index, start in enumerate(starts):
        if cut == start:  # a frame boundary (or just before the end marker)
            return None if not require_end else (start, index)
        if index + 1 < len(starts) and start < cut < starts[index + 1]:
            return start, index
    raise AssertionError("cut beyond the stream")


@pytest.mark.parametrize("require_end", [True, False])
@pytest.mark.parametrize("kind", ["bytes", "unseekable", "bytesio", "decoder"])
def test_every_truncation_point(kind, require_end):
    payloads = payloads_of(MESSAGES)
    starts = frame_starts(payloads)
    assert starts[-1] == len(STREAM) - 1  # the end marker is the last byte
    for cut in range(len(STREAM)):
        data = STREAM[:cut]
        expected = _expected_cut_error(cut, starts, require_end)
        got: list[Any] = []
        try:
            if kind == "decoder":
                dec = amber.StreamDecoder(require_end=require_end)
                for i in range(0, cut, 5):
                    got += dec.feed(data[i : i + 5])
                dec.close()
            else:
                source = SOURCES[kind](data, pathlib.Path())
                for obj in amber.StreamReader(source, require_end=require_end):
                    got.append(obj)
        except amber.DecodeError as err:
            assert expected is not None, f"cut {cut}: {err}"
            assert (err.kind, err.offset, err.message_index) == ("truncated", *expected), (
                f"cut {cut}: {err}"
            )
            assert got == MESSAGES[: expected[1]], f"cut {cut}"
        else:
            assert expected is None, f"cut {cut} was accepted"
            assert got == MESSAGES[: starts.index(cut)], f"cut {cut}"
    # and only the cut right before the end marker yields every message
    assert list(amber.StreamReader(STREAM[:-1], require_end=False)) == MESSAGES


# --------------------------------------------------------------------------- hostile lengths


def _peak_bytes(run: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


LIE = MAGIC + varint(2**31 - 1) + NONE_PAYLOAD * 4  # under the default max_message


def _expect_error(run: Callable[[], object], kind: str, offset: int) -> Callable[[], None]:
    def check() -> None:
        with pytest.raises(amber.DecodeError) as info:
            run()
        assert (info.value.kind, info.value.offset) == (kind, offset)

    return check


def _feed_lie() -> None:
    dec = amber.StreamDecoder()
    assert dec.feed(LIE) == []
    dec.close()


@pytest.mark.parametrize(
    "name, run",
    [
        ("bytes", lambda: list(amber.StreamReader(LIE))),
        ("bytesio", lambda: list(amber.StreamReader(io.BytesIO(LIE)))),
        ("unseekable", lambda: list(amber.StreamReader(Unseekable(LIE, 3)))),
        ("buffered", lambda: list(amber.StreamReader(io.BufferedReader(Unseekable(LIE))))),
        ("skip_unseekable", lambda: amber.StreamReader(Unseekable(LIE)).skip()),
        ("payload", lambda: amber.StreamReader(Unseekable(LIE)).read_payload()),
        ("decoder", _feed_lie),
    ],
)
def test_lying_frame_length_allocates_nothing_big(name, run):
    peak = _peak_bytes(_expect_error(run, "truncated", 3))
    assert peak < 2 * 1024 * 1024, f"{name}: peak {peak} bytes for a 2 GiB lie"


def test_lying_length_buffer_grows_only_with_arriving_bytes():
    """A frame declaring 1.5 GiB whose source delivers 3 MiB: the reader holds about what came."""
    arrived = 3 * 1024 * 1024
    data = MAGIC + varint(3 * 2**29) + b"\x90" * arrived
    peak = _peak_bytes(
        _expect_error(lambda: list(amber.StreamReader(Unseekable(data, 1 << 20))), "truncated", 3)
    )
    assert peak < 4 * arrived
    dec = amber.StreamDecoder()

    def feed_all() -> None:
        for i in range(0, len(data), 65536):
            dec.feed(data[i : i + 65536])
        dec.close()

    peak = _peak_bytes(_expect_error(feed_all, "truncated", 3))
    assert peak < 3 * arrived


def test_max_message_option():
    data = stream_of([NONE_PAYLOAD, LIST12_PAYLOAD])
    assert list(amber.StreamReader(data, max_message=6)) == [None, [1, 2]]
    with pytest.raises(amber.DecodeLimitError) as info:
        list(amber.StreamReader(data, max_message=5))
    assert_decode_error(info, "message_limit", 8, 1)
    assert "max_message=5" in str(info.value)
    dec = amber.StreamDecoder(max_message=5)
    assert dec.feed(data) == [None]
    with pytest.raises(amber.DecodeLimitError) as info:
        dec.close()
    assert_decode_error(info, "message_limit", 8, 1)
    for bad, exc in ((0, ValueError), (-1, ValueError), (True, TypeError), ("9", TypeError)):
        with pytest.raises(exc, match="max_message"):
            amber.StreamReader(data, max_message=bad)
        with pytest.raises(exc, match="max_message"):
            amber.StreamDecoder(max_message=bad)
    with pytest.raises(TypeError, match="require_end"):
        amber.StreamReader(data, require_end=1)  # type: ignore[arg-type]


def test_decoder_limit_checked_on_a_length_split_across_chunks():
    data = MAGIC + varint(1000)
    dec = amber.StreamDecoder(max_message=999)
    assert dec.feed(data[:4]) == []
    with pytest.raises(amber.DecodeLimitError) as info:
        dec.feed(data[4:])
    assert_decode_error(info, "message_limit", 3, 0)


# --------------------------------------------------------------------------- structural errors


def test_bytes_after_end_marker():
    data = STREAM + b"\x90"
    for source in (data, io.BytesIO(data), Unseekable(data)):
        reader = amber.StreamReader(source)
        with pytest.raises(amber.DecodeError) as info:
            list(reader)
        assert_decode_error(info, "trailing_bytes", len(STREAM), len(MESSAGES))
    dec = amber.StreamDecoder()
    assert dec.feed(STREAM) == MESSAGES
    with pytest.raises(amber.DecodeError) as info:
        dec.feed(b"\x90")
    assert_decode_error(info, "trailing_bytes", len(STREAM), len(MESSAGES))


def test_non_minimal_frame_lengths():
    for length in (b"\x84\x00", b"\x80\x00", b"\x84\x80\x00", b"\xff\x80\x80\x00"):
        data = MAGIC + frame(NONE_PAYLOAD) + length + NONE_PAYLOAD + END
        with pytest.raises(amber.DecodeError) as info:
            list(amber.StreamReader(data))
        assert_decode_error(info, "overlong_varint", 8, 1)
        dec = amber.StreamDecoder()
        got: list[Any] = []
        with pytest.raises(amber.DecodeError) as info:
            for b in data:
                got += dec.feed(bytes([b]))
        assert_decode_error(info, "overlong_varint", 8, 1)
        assert got == [None]


def test_wrong_magic_names_the_problem():
    with pytest.raises(amber.DecodeError, match="single amber payload") as info:
        list(amber.StreamReader(NONE_PAYLOAD))
    assert_decode_error(info, "bad_magic", 0, 0)
    with pytest.raises(amber.DecodeError) as info:
        amber.StreamDecoder().feed(b"{")  # fails on the first byte, before a full header
    assert_decode_error(info, "bad_magic", 0, 0)
    with pytest.raises(amber.DecodeError) as info:
        amber.StreamDecoder().feed(b"\xab\x53\x02")
    assert_decode_error(info, "unsupported_version", 2, 0)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(STREAM)  # and a stream is not a payload
    assert (info.value.kind, info.value.offset) == ("bad_magic", 0)


class Secret:
    pass


def test_payload_error_keeps_class_and_attributes():
    good = {"before": 1}
    payload = amber.dumps([Secret()])
    data = stream_of([amber.dumps(good), payload, amber.dumps(good)])
    payload_at = len(MAGIC) + len(frame(amber.dumps(good))) + len(varint(len(payload)))
    reader = amber.StreamReader(data)
    assert next(reader) == good
    with pytest.raises(amber.ClassNotAllowedError) as info:
        next(reader)
    with pytest.raises(amber.ClassNotAllowedError) as direct:
        amber.loads(payload)
    err = info.value
    assert err.kind == "class_not_allowed"
    assert err.qualname == direct.value.qualname and err.module == direct.value.module
    assert err.offset == payload_at + direct.value.offset
    assert err.message_index == 1
    assert f"payload starts at stream byte {payload_at}" in str(err)
    assert reader.index == 2
    # the reader stays failed, with the same error kind
    with pytest.raises(amber.ClassNotAllowedError, match="failed earlier"):
        next(reader)
    # the same message decodes when its class is allowed
    allowed = list(amber.StreamReader(data, types=[Secret]))
    assert type(allowed[1][0]) is Secret


def test_decoder_error_after_completed_messages_is_deferred():
    bad = bytes.fromhex("ab 41 01 7a")
    data = stream_of([NONE_PAYLOAD, LIST12_PAYLOAD, bad, NONE_PAYLOAD])
    dec = amber.StreamDecoder()
    assert dec.feed(data) == [None, [1, 2]]  # nothing decoded is lost
    with pytest.raises(amber.DecodeError) as info:
        dec.feed(b"")
    assert_decode_error(info, "unknown_tag", 16 + 3, 2)  # frames at 3, 8, 15
    with pytest.raises(amber.DecodeError, match="failed earlier") as info:
        dec.feed(b"")
    assert info.value.kind == "unknown_tag"
    with pytest.raises(amber.DecodeError, match="failed earlier"):
        dec.close()
    assert not dec.finished
    # when the chunk completes nothing before the error, feed raises at once
    dec = amber.StreamDecoder()
    with pytest.raises(amber.DecodeError) as info:
        dec.feed(stream_of([bad]))
    assert_decode_error(info, "unknown_tag", 7, 0)


def test_decoder_close_and_finished():
    dec = amber.StreamDecoder()
    assert dec.feed(MAGIC + frame(NONE_PAYLOAD)) == [None]
    assert not dec.finished
    assert dec.feed(END) == []
    assert dec.finished
    assert dec.feed(b"") == []
    dec.close()
    dec.close()
    with pytest.raises(ValueError, match="closed"):
        dec.feed(b"")
    with pytest.raises(TypeError, match="bytes-like"):
        amber.StreamDecoder().feed("text")  # type: ignore[arg-type]


def test_reader_errors_leave_it_failed():
    data = MAGIC + frame(NONE_PAYLOAD) + b"\x84\x00"
    reader = amber.StreamReader(data)
    assert next(reader) is None
    with pytest.raises(amber.DecodeError):
        next(reader)
    for call in (lambda: next(reader), reader.read_payload, reader.skip):
        with pytest.raises(amber.DecodeError, match="failed earlier") as info:
            call()
        assert (info.value.kind, info.value.offset) == ("overlong_varint", 8)


def _open_fds() -> int:
    fds = pathlib.Path("/proc/self/fd")
    if not fds.exists():
        pytest.skip("needs /proc/self/fd")
    return len(os.listdir(fds))


def test_reader_closes_only_what_it_opened(tmp_path):
    path = _write(tmp_path / "s.ambs", STREAM)
    before = _open_fds()
    with amber.StreamReader(path) as reader:
        assert next(reader) == MESSAGES[0]
        assert _open_fds() == before + 1
    assert _open_fds() == before
    assert list(amber.iter_load(path)) == MESSAGES
    assert _open_fds() == before
    partial = amber.iter_load(path)
    assert next(partial) == MESSAGES[0]
    partial.close()  # an abandoned generator closes its file too
    assert _open_fds() == before
    with open(path, "rb") as f:
        with amber.StreamReader(f) as reader:
            assert list(reader) == MESSAGES
        assert not f.closed  # the caller's file stays open


def test_reader_source_types_rejected():
    with pytest.raises(TypeError, match="bytes-like"):
        amber.StreamReader(12)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="binary"):
        amber.StreamReader(io.StringIO("x"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mmap=True needs a path"):
        amber.StreamReader(STREAM, mmap=True)
    reader = amber.StreamReader(STREAM)
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        next(reader)


# --------------------------------------------------------------------------- writer


def test_writer_encode_error_writes_nothing_and_stays_usable(tmp_path):
    for target in (io.BytesIO(), tmp_path / "w.ambs"):
        with amber.StreamWriter(target) as writer:
            writer.write(1)
            with pytest.raises(amber.EncodeError):
                writer.write([1, object()])
            with pytest.raises(amber.EncodeError):
                writer.write(lambda: 0)
            writer.write(2)
            assert writer.count == 2
        data = target.getvalue() if isinstance(target, io.BytesIO) else target.read_bytes()
        assert data == stream_of([amber.dumps(1), amber.dumps(2)])


def test_writer_passes_options_to_dumps():
    shared = [1, 2]
    buf = io.BytesIO()
    with amber.StreamWriter(buf, refs=False) as writer:
        writer.write([shared, shared])
    assert buf.getvalue() == stream_of([amber.dumps([shared, shared], refs=False)])
    buf = io.BytesIO()
    with amber.StreamWriter(buf, max_depth=5) as writer:
        with pytest.raises(amber.EncodeError):
            writer.write(nested_list(10))
    assert buf.getvalue() == MAGIC + END
    with pytest.raises(TypeError):
        amber.StreamWriter(io.BytesIO(), no_such_option=1).write(1)


def test_reader_passes_options_to_loads():
    data = stream_of([amber.dumps(nested_list(10))])
    with pytest.raises(amber.DecodeLimitError) as info:
        list(amber.StreamReader(data, max_depth=5))
    assert info.value.kind == "depth_limit" and info.value.message_index == 0
    with pytest.raises(amber.DecodeLimitError):
        amber.StreamDecoder(max_depth=5).feed(data)
    assert list(amber.iter_load(data, max_depth=11)) == [nested_list(10)]


def test_exception_inside_with_discards_the_temporary_file(tmp_path):
    path = tmp_path / "keep.ambs"
    path.write_bytes(b"old contents")
    with pytest.raises(RuntimeError), amber.StreamWriter(path) as writer:
        writer.write(1)
        raise RuntimeError("the producer failed")
    assert path.read_bytes() == b"old contents"
    assert os.listdir(tmp_path) == ["keep.ambs"]
    new = tmp_path / "new.ambs"
    with pytest.raises(RuntimeError), amber.StreamWriter(new) as writer:
        raise RuntimeError("the producer failed")
    assert os.listdir(tmp_path) == ["keep.ambs"]


def test_failing_write_mid_stream_leaves_no_file(tmp_path, monkeypatch):
    import amber._stream as stream_module

    class FullDisk(io.BufferedWriter):
        """Fails its fifth write, as a disk that fills up would."""

        writes = 0

        def write(self, data: Any) -> int:
            FullDisk.writes += 1
            if FullDisk.writes == 5:  # the magic, then messages 0-2, then this one
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().write(data)

    real_fdopen = os.fdopen
    monkeypatch.setattr(
        stream_module.os, "fdopen", lambda fd, *a, **k: FullDisk(real_fdopen(fd, "wb", 0))
    )
    path = tmp_path / "out.ambs"
    path_new = tmp_path / "new.ambs"
    path.write_bytes(b"old")
    for target in (path, path_new):
        FullDisk.writes = 0
        writer = amber.StreamWriter(target)
        for i in range(3):
            writer.write(i)
        with pytest.raises(OSError, match="No space"):
            writer.write(3)
        assert writer.closed
        with pytest.raises(ValueError, match="closed"):
            writer.write(4)
        writer.close()  # nothing to do: the stream was discarded
    # the old file is untouched, the new one never appeared, no temporary file is left
    assert os.listdir(tmp_path) == ["out.ambs"]
    assert path.read_bytes() == b"old"


def test_exception_inside_with_on_a_file_object_writes_no_end_marker():
    buf = io.BytesIO()
    with pytest.raises(RuntimeError), amber.StreamWriter(buf) as writer:
        writer.write(1)
        raise RuntimeError("the producer failed")
    assert buf.getvalue() == MAGIC + frame(amber.dumps(1))
    assert not buf.closed
    with pytest.raises(amber.DecodeError) as info:
        list(amber.StreamReader(buf.getvalue()))
    assert_decode_error(info, "truncated", len(buf.getvalue()), 1)


def test_unclosed_path_writer_is_discarded(tmp_path):
    writer = amber.StreamWriter(tmp_path / "forgotten.ambs")
    writer.write(1)
    with pytest.warns(ResourceWarning, match="not closed"):
        del writer
        gc.collect()
    assert os.listdir(tmp_path) == []


def test_write_payload(tmp_path):
    source = stream_of(payloads_of(MESSAGES))
    out = io.BytesIO()
    with amber.StreamReader(source) as reader, amber.StreamWriter(out) as writer:
        while (p := reader.read_payload()) is not None:
            writer.write_payload(p)
    assert out.getvalue() == source
    writer = amber.StreamWriter(io.BytesIO())
    for bad in (b"", b"\xab", b"\x90\x90\x90\x90", MAGIC + END):
        with pytest.raises(ValueError, match="ab 41"):
            writer.write_payload(bad)
    with pytest.raises(ValueError, match="a stream, not a payload"):
        writer.write_payload(MAGIC + END)
    with pytest.raises(TypeError):
        writer.write_payload("ab41")  # type: ignore[arg-type]
    assert writer.count == 0
    writer.write_payload(bytes.fromhex("ab 41 21 90"))  # flags are not the framing's business
    assert writer.count == 1


def test_writer_rejects_text_files_and_non_files():
    with pytest.raises(TypeError, match="binary"):
        amber.StreamWriter(io.StringIO())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="path or a binary file"):
        amber.StreamWriter(42)  # type: ignore[arg-type]


def test_writer_to_raw_file_with_short_writes():
    class Short(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            chunk = bytes(memoryview(b)[:3])
            self.data += chunk
            return len(chunk)

    raw = Short()
    with amber.StreamWriter(raw) as writer:
        for m in MESSAGES:
            writer.write(m)
    assert bytes(raw.data) == STREAM


# --------------------------------------------------------------------------- mmap


def _mapped(path: pathlib.Path) -> bool:
    maps = pathlib.Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("needs /proc/self/maps")
    return str(path.resolve()) in maps.read_text()


def test_load_mmap_equals_load(tmp_path, graph_diff):
    from _samples import sample_objects

    path = tmp_path / "one.amber"
    for obj in sample_objects():
        amber.dump(obj, path)
        assert graph_diff(amber.load(path), amber.load(path, mmap=True)) is None
    assert not _mapped(path)


def test_load_mmap_failure_closes_the_mapping(tmp_path):
    path = tmp_path / "bad.amber"
    path.write_bytes(NONE_PAYLOAD + b"\x90")
    with pytest.raises(amber.DecodeError) as info:
        amber.load(path, mmap=True)
    assert (info.value.kind, info.value.offset) == ("trailing_bytes", 4)
    assert not _mapped(path)
    path.write_bytes(amber.dumps(nested_list(10)))
    with pytest.raises(amber.DecodeLimitError):
        amber.load(str(path), mmap=True, max_depth=5)
    assert not _mapped(path)


def test_load_mmap_empty_file(tmp_path):
    path = tmp_path / "empty.amber"
    path.write_bytes(b"")
    with pytest.raises(amber.DecodeError) as info:
        amber.load(path, mmap=True)
    assert (info.value.kind, info.value.offset) == ("truncated", 0)
    with pytest.raises(amber.DecodeError) as info:
        list(amber.StreamReader(path, mmap=True))
    assert_decode_error(info, "truncated", 0, 0)


def test_load_mmap_needs_a_regular_file_path(tmp_path):
    with pytest.raises(ValueError, match="mmap=True needs a path"):
        amber.load(io.BytesIO(NONE_PAYLOAD), mmap=True)
    fifo = tmp_path / "fifo"
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs os.mkfifo")
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    # a reader and a writer end held open, so that opening the FIFO for reading does not block
    reader_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    writer_fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(ValueError, match="regular file"):
            amber.load(fifo, mmap=True)
        with pytest.raises(ValueError, match="regular file"):
            amber.StreamReader(fifo, mmap=True)
    finally:
        os.close(writer_fd)
        os.close(reader_fd)


def test_stream_reader_mmap_unmaps_on_close(tmp_path):
    path = _write(tmp_path / "s.ambs", STREAM)
    with amber.StreamReader(path, mmap=True) as reader:
        assert next(reader) == MESSAGES[0]
        assert _mapped(path)
    assert not _mapped(path)
    with amber.StreamReader(path, mmap=True) as reader:
        assert list(reader) == MESSAGES


def test_mapped_stream_larger_than_the_page_release_step(tmp_path):
    """Reading a mapped stream hands read pages back to the kernel every few MiB; payload
    views taken earlier still read their bytes (the pages come back from the file)."""
    blobs = [random.Random(i).randbytes(700_000) for i in range(30)]  # about 21 MB
    small = list(range(2000))
    path = tmp_path / "big.ambs"
    with amber.StreamWriter(path) as writer:
        for blob in blobs:
            writer.write(blob)
        for n in small:
            writer.write(n)
    with amber.StreamReader(path, mmap=True) as reader:
        views = [reader.read_payload() for _ in blobs]
        assert list(reader) == small
        assert [amber.loads(v) for v in views] == blobs
    del views


def test_dump_failed_encode_leaves_existing_file_and_no_temp(tmp_path):
    path = tmp_path / "keep.amber"
    amber.dump([1, 2], path)
    with pytest.raises(amber.EncodeError):
        amber.dump([object()], path)
    assert amber.load(path, mmap=True) == [1, 2]
    assert os.listdir(tmp_path) == ["keep.amber"]


# --------------------------------------------------------------------------- zero copy


def test_whole_messages_are_decoded_without_copying_the_input():
    """A 16 MiB message inside one chunk (or a bytes source) costs its decoded value only."""
    blob = random.Random(5).randbytes(16 * 1024 * 1024)
    data = stream_of([amber.dumps(blob)])

    def feed_whole() -> None:
        dec = amber.StreamDecoder()
        assert dec.feed(data) == [blob]

    def read_bytes() -> None:
        assert list(amber.StreamReader(data)) == [blob]

    for run in (feed_whole, read_bytes):
        peak = _peak_bytes(run)
        assert peak < len(blob) + 1024 * 1024, f"{run.__name__}: {peak}"


def test_public_api_listed():
    for name in (
        "StreamWriter",
        "StreamReader",
        "StreamDecoder",
        "iter_load",
        "DEFAULT_MAX_MESSAGE",
        "STREAM_MAGIC",
    ):
        assert name in amber.__all__
    for public in (amber.StreamWriter, amber.StreamReader, amber.StreamDecoder, amber.iter_load):
        assert public.__doc__ and len(public.__doc__) > 100
