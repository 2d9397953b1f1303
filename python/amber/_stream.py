"""Streams: many amber payloads framed one after another in a file, pipe or socket.

The layout (spec/format.md, section 11):

    ab 53 01                 stream magic and stream version 1
    varint L, L bytes        one frame per message: L >= 1, then one complete amber payload
    ...
    00                       the end marker; nothing may follow it

The framing never looks inside a payload, so payloads with any header flags pass through
unchanged, and a reader can skip a message by its length without decoding it.

The rules of the framing (the header, frame lengths, the end marker, the reader's limits and
which error each fault is) are the Rust format crate's (``amber_format::stream``), reached
through the extension: ``_FrameWriter`` encodes and frames a message, ``_FrameReader`` finds
and decodes the messages in a reader's buffer, and ``_FrameGatherer`` those of a decoder's
chunks. This module keeps what is Python's: files, paths, mappings, buffers and locks.

Every error raised here for bad stream bytes is a :class:`amber.DecodeError` (or the same
subclass ``loads`` raised) whose ``.offset`` is a byte offset in the stream, counted from the
first magic byte, and whose ``.message_index`` attribute is the index of the message concerned
(the number of messages before it).
"""

from __future__ import annotations

import functools
import io
import mmap as _mmap
import os
import stat
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, Final, TypeAlias

from ._amber import (
    _DEFAULT_MAX_MESSAGE,
    _MORE,
    _STREAM_END,
    _STREAM_MAGIC,
    DecodeError,
    _frame_payload,
    _FrameGatherer,
    _FrameReader,
    _FrameWriter,
)

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Buffer, Self

    PathLike: TypeAlias = str | os.PathLike[str]
    StreamSource: TypeAlias = PathLike | IO[bytes] | Buffer

__all__ = [
    "DEFAULT_MAX_MESSAGE",
    "STREAM_MAGIC",
    "StreamDecoder",
    "StreamReader",
    "StreamWriter",
    "iter_load",
]

STREAM_MAGIC: Final = _STREAM_MAGIC
"""The first three bytes of every stream: ``ab``, ASCII ``S``, stream version 1."""

DEFAULT_MAX_MESSAGE: Final = _DEFAULT_MAX_MESSAGE
"""The largest frame (payload length in bytes) a reader accepts unless told otherwise: 2 GiB."""

_PAYLOAD_MAGIC: Final = b"\xab\x41"
# Reads ask for this much at least (read-ahead for small messages) and, for a large frame, at
# most as much as has already arrived, so a lying frame length can make a reader allocate at
# most about twice the bytes that really came, never the length it declares.
_READ_CHUNK: Final = 1 << 18
# A mapped stream hands the pages it has read back to the kernel every this many bytes: mapped
# file pages count in the process's resident memory until then, and would grow with the file.
_MAPPED_RELEASE_STEP: Final = 1 << 20
_TEMP_PREFIX: Final = ".amber-"
_TEMP_SUFFIX: Final = ".tmp"


# --------------------------------------------------------------------------- shared helpers


def _failed_again(err: BaseException, owner: str) -> BaseException:
    """The exception raised by every call after a failure, for the failure ``err``."""
    again: BaseException
    if isinstance(err, DecodeError):
        again = type(err)(f"{owner} failed earlier: {err}")
        again.__dict__.update(err.__dict__)
    else:
        again = ValueError(f"{owner} failed earlier: {type(err).__name__}: {err}")
    again.__cause__ = err
    return again


def _check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _byte_view(data: Buffer, what: str) -> memoryview:
    """A flat view of unsigned bytes over any C-contiguous buffer."""
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError(f"{what} must be a bytes-like object, not {type(data).__name__}") from None
    if view.format != "B" or view.ndim != 1:
        if not view.c_contiguous:
            view.release()
            raise TypeError(f"{what} must be a C-contiguous buffer")
        view = view.cast("B")
    return view


def _map_file(path: PathLike) -> tuple[_mmap.mmap | None, memoryview]:
    """A read-only mapping of the file at ``path`` and a byte view of it; (None, empty view)
    for an empty file, which cannot be mapped. The file descriptor is closed on return (the
    mapping keeps its own).

    If another process truncates the file while the mapping is in use, reading the lost pages
    kills the process with SIGBUS: map only files that nothing shortens meanwhile.
    """
    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"mmap=True needs a regular file, and {os.fspath(path)!r} is not one")
        if info.st_size == 0:
            return None, memoryview(b"")
        mapping = _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_READ)
    return mapping, memoryview(mapping)


def _write_all(file: IO[bytes], data: bytes | memoryview) -> None:
    """Write every byte: raw files may write fewer bytes than asked and say so."""
    written = file.write(data)
    if not isinstance(written, int) or written >= len(data):
        return
    with memoryview(data) as rest:
        while written < len(rest):
            n = file.write(rest[written:])
            if n is None:
                raise BlockingIOError(
                    "the file is non-blocking and accepts no more bytes; StreamWriter needs a "
                    "blocking file"
                )
            written += n


# --------------------------------------------------------------------------- writer


class StreamWriter:
    """Write many messages into one stream: a path or a binary file object.

    ``StreamWriter(file, **dumps_options)`` writes the stream magic at once; ``write(obj)``
    encodes one object with :func:`amber.dumps` (given ``dumps_options``) and frames it;
    ``close()`` writes the end marker. Use it as a context manager::

        with amber.StreamWriter("events.ambs") as out:
            for event in events:
                out.write(event)

    A path is written atomically: the stream goes to a temporary file in the same directory,
    which is flushed, fsynced and renamed over the target by a clean ``close()``. An exception
    inside the ``with`` block, a failed write or :meth:`abort` discards the temporary file and
    leaves any existing target untouched.

    A file object (a file opened ``"wb"``, a ``BytesIO``, a socket's ``makefile("wb")``) is
    written in place, flushed by ``close()`` but not closed. After an exception inside the
    ``with`` block no end marker is written, so that readers see the stream as truncated.

    An object that cannot be encoded raises :class:`amber.EncodeError` (or whatever ``dumps``
    raised) and writes nothing: the writer stays usable. A failed write to the file (an
    ``OSError``) aborts the writer, since a partial frame may have reached the file.

    Threads may share a writer: each ``write`` encodes its object on its own (several at once)
    and then appends its whole frame under a lock, so frames never interleave.
    """

    def __init__(self, file: PathLike | IO[bytes], **dumps_options: Any) -> None:
        # Held while a frame is written; the methods called under it use _abort, not abort.
        self._lock = threading.Lock()
        # Encodes as dumps(obj, **dumps_options) and frames, in one call.
        self._frame = _FrameWriter(dumps_options).frame
        self._count = 0
        self._closed = False
        self._temp: str | None = None
        self._target: str | None = None
        if isinstance(file, (str, os.PathLike)):
            self._target = os.fspath(file)
            directory = os.path.dirname(os.path.abspath(self._target))
            fd, self._temp = tempfile.mkstemp(
                prefix=_TEMP_PREFIX, suffix=_TEMP_SUFFIX, dir=directory
            )
            try:
                self._file: IO[bytes] = os.fdopen(fd, "wb", buffering=_READ_CHUNK)
            except BaseException:
                os.close(fd)
                self._discard_temp()
                raise
        elif isinstance(file, io.TextIOBase):
            raise TypeError("StreamWriter needs a binary file (opened with 'wb'), not a text file")
        elif not callable(getattr(file, "write", None)):
            raise TypeError(
                f"StreamWriter needs a path or a binary file object, not {type(file).__name__}"
            )
        else:
            self._file = file
        # A buffered file writes everything or raises; a raw one may write fewer bytes.
        self._write: Callable[[bytes | memoryview], object] = (
            self._file.write
            if isinstance(self._file, io.BufferedIOBase)
            else functools.partial(_write_all, self._file)
        )
        self._write_frame_bytes(STREAM_MAGIC)

    @property
    def count(self) -> int:
        """The number of messages written so far."""
        return self._count

    @property
    def closed(self) -> bool:
        """True after :meth:`close` or :meth:`abort` (or a failed write)."""
        return self._closed

    def write(self, obj: Any) -> None:
        """Encode ``obj`` and append it to the stream as one message.

        The object is encoded completely before anything is written: if encoding fails,
        nothing of it reaches the stream and the writer stays usable.
        """
        if self._closed:
            raise ValueError("write to a closed StreamWriter")
        frame = self._frame(obj)  # outside the lock: threads encode at the same time
        with self._lock:
            if self._closed:
                raise ValueError("write to a closed StreamWriter")
            self._write_frame(frame)

    def write_payload(self, payload: Buffer) -> None:
        """Append an already encoded payload (from :func:`amber.dumps`, or read from another
        stream) as one message. Only its magic is checked; its contents are framed unchanged.
        """
        self._check_open()
        view = _byte_view(payload, "payload")
        with self._lock, view:
            self._check_open()
            if bytes(view[:2]) != _PAYLOAD_MAGIC:
                found = bytes(view[:3]).hex(" ") or "nothing"
                is_stream = bytes(view[:2]) == STREAM_MAGIC[:2]
                hint = " (that is a stream, not a payload)" if is_stream else ""
                raise ValueError(
                    f"write_payload needs an amber payload starting with ab 41, got {found}{hint}"
                )
            self._write_frame(_frame_payload(view))

    def close(self) -> None:
        """Write the end marker and flush; for a path, fsync and rename the temporary file over
        the target. Closing twice does nothing."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._closed:
            return
        self._write_frame_bytes(_STREAM_END)
        try:
            flush = getattr(self._file, "flush", None)
            if flush is not None:
                flush()
            if self._temp is not None:
                os.fsync(self._file.fileno())
                self._file.close()
                assert self._target is not None
                os.replace(self._temp, self._target)
                self._temp = None
        except BaseException:
            self._abort()
            raise
        self._closed = True

    def abort(self) -> None:
        """Stop without an end marker: for a path, delete the temporary file (any existing
        target stays as it was); a file object is left as it is, without an end marker, so that
        readers see a truncated stream. Does nothing once closed."""
        with self._lock:
            self._abort()

    def _abort(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._temp is not None:
            try:
                self._file.close()
            except OSError:
                pass  # the file is being thrown away; the error that led here matters more
            self._discard_temp()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        # A writer dropped without close() must not leave a temporary file behind; nor may it
        # publish the stream, since the program may have stopped half-way.
        if getattr(self, "_temp", None) is not None and not getattr(self, "_closed", True):
            try:
                warnings.warn(
                    f"StreamWriter for {self._target!r} was not closed; the stream is discarded",
                    ResourceWarning,
                    stacklevel=2,
                    source=self,
                )
                self.abort()
            except Exception:
                pass  # at interpreter shutdown the modules used here may be gone

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("write to a closed StreamWriter")

    def _write_frame(self, frame: bytes | tuple[bytes, bytes | memoryview]) -> None:
        # A small frame comes whole, for one write call; a large one as its length and its
        # payload, so that the payload is not copied.
        try:
            if isinstance(frame, bytes):
                self._write(frame)
            else:
                head, payload = frame
                self._write(head)
                self._write(payload)
        except BaseException:
            self._abort()
            raise
        self._count += 1

    def _write_frame_bytes(self, part: bytes) -> None:
        try:
            self._write(part)
        except BaseException:
            self._abort()
            raise

    def _discard_temp(self) -> None:
        if self._temp is None:
            return
        try:
            os.unlink(self._temp)
        except FileNotFoundError:
            pass
        self._temp = None


# --------------------------------------------------------------------------- reader


class StreamReader:
    """Read the messages of a stream one at a time.

    ``source`` is a path, a binary file object (seekable or not: a file, ``BytesIO``, a pipe,
    a socket's ``makefile("rb")``) or a bytes-like object (``bytes``, ``memoryview``,
    ``mmap``...). Iterating decodes one message at a time with :func:`amber.loads` (given
    ``loads_options``); :meth:`read_payload` returns the next raw payload instead and
    :meth:`skip` passes over messages without decoding them.

    Memory stays bounded by the largest message, not the stream: a file is read in chunks, and
    a frame's declared length is never allocated up front, only the bytes that really arrive.
    A frame longer than ``max_message`` bytes (default :data:`DEFAULT_MAX_MESSAGE`, 2 GiB) is a
    :class:`amber.DecodeLimitError` of kind ``message_limit``; one longer than what is left of a
    source whose size is known (bytes, regular files) fails at once as ``truncated``.

    The stream must end with its end marker and nothing after it: a stream that stops at a
    frame boundary without one (its writer died) is a ``truncated`` error, unless
    ``require_end=False`` (a log still being appended to), which ends the iteration there.
    Reading to the end therefore needs the source to end: over a socket, the writer shuts down
    its side after the stream.

    ``mmap=True`` (with a path only) maps the file read-only and decodes each message straight
    from the mapping, without reading the file into memory. If another process truncates the
    file while it is mapped, touching the lost pages kills the process with SIGBUS: use it only
    on files that nothing shortens meanwhile.

    Errors are :class:`amber.DecodeError` with ``.kind``, ``.offset`` (a byte offset in the
    stream) and ``.message_index``; an error in a payload is the one ``loads`` raised, of the
    same class and kind, with its offset moved into the stream. Any error leaves the reader
    failed: later calls raise again. (To get past a message that does not decode, read
    payloads with :meth:`read_payload` and decode them with ``loads`` yourself.) The reader is
    a context manager; closing it closes a file (or mapping) that it opened itself.

    Threads may share a reader: its calls take turns under a lock, and each message goes to
    exactly one of them.
    """

    def __init__(
        self,
        source: StreamSource,
        *,
        require_end: bool = True,
        max_message: int | None = None,
        mmap: bool = False,
        **loads_options: Any,
    ) -> None:
        # Reentrant, so that a class's own decode code may use the reader it is read from.
        self._lock = threading.RLock()
        # The framing and the decoding: its offset is the reader's position in the stream.
        self._frames = _FrameReader(
            _check_flag("require_end", require_end), max_message, loads_options
        )
        use_mmap = _check_flag("mmap", mmap)
        self._failure: BaseException | None = None
        self._closed = False
        self._mapping: _mmap.mmap | None = None
        self._owned: IO[bytes] | None = None
        self._file: IO[bytes] | None = None
        self._read: Callable[[int], bytes | None] | None = None
        # No more bytes come than are in self._data: the source has ended, or is a buffer.
        self._eof = True
        self._seekable = False
        # The input at hand is self._data, whose first byte is at stream offset self._base; the
        # reader's position in it is self._frames.offset - self._base. A file is read into a
        # bytearray that is compacted as it is consumed; a buffer source is all of the stream.
        self._base = 0
        self._data: bytes | bytearray | memoryview
        # A view of all of self._data, for slicing payloads out of it; while self._data is a
        # bytearray, it is dropped before the bytearray changes size.
        self._view: memoryview | None = None
        self._released = 0  # with a mapping: the pages before this offset are handed back
        if isinstance(source, (str, os.PathLike)):
            if use_mmap:
                self._mapping, self._data = _map_file(source)
                self._view = self._data
                self._frames.set_fast_until(_MAPPED_RELEASE_STEP)
            else:
                self._owned = open(source, "rb", buffering=0)
                self._attach_file(self._owned)
            return
        if use_mmap:
            raise ValueError(f"mmap=True needs a path, not {type(source).__name__}")
        if isinstance(source, io.TextIOBase):
            raise TypeError("StreamReader needs a binary file (opened with 'rb'), not a text file")
        try:
            self._data = self._view = _byte_view(source, "source")  # type: ignore[arg-type]
        except TypeError:
            if not callable(getattr(source, "read", None)):
                raise TypeError(
                    "StreamReader needs a path, a binary file object or a bytes-like object, "
                    f"not {type(source).__name__}"
                ) from None
            self._attach_file(source)  # type: ignore[arg-type]
            return
        if isinstance(source, bytes):
            # Decoded from the bytes object itself, which lets a large compressed payload be
            # opened without the GIL (its bytes cannot change meanwhile).
            self._data = source

    def _attach_file(self, file: IO[bytes]) -> None:
        self._file = file
        self._read = getattr(file, "read1", None) or file.read
        self._data = bytearray()
        self._eof = False
        try:
            self._seekable = bool(file.seekable())
        except (AttributeError, OSError, ValueError):
            self._seekable = False

    @property
    def index(self) -> int:
        """The number of messages consumed so far: decoded, read or skipped."""
        return self._frames.index

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        """The next message, decoded."""
        with self._lock:
            # Fast path: a frame wholly buffered, as most frames of a stream of small messages
            # are, read and decoded in one call. Anything else goes the general way.
            if self._failure is None and not self._closed:
                try:
                    obj = self._frames.next_message(self._data, self._base)
                except Exception as err:
                    self._failure = err
                    raise
                if obj is not _MORE:
                    return obj
            return self._next_general()

    def _next_general(self) -> Any:
        length = self._next_frame()
        if length is None:
            raise StopIteration
        if not self._guarded(self._fill, length):
            raise self._fail_cut()
        try:
            return self._frames.decode_payload(self._data, self._base)
        except Exception as err:
            self._failure = err
            raise

    def read_payload(self) -> bytes | memoryview | None:
        """The next message's payload, not decoded; None at the end of the stream.

        From a bytes-like source or a mapping this is a memoryview into it (no copy; it keeps
        the source alive); from a file, a ``bytes`` copy.
        """
        with self._lock:
            length = self._next_frame()
            if length is None:
                return None
            payload = self._take_payload(length)
            if self._file is None:
                return payload
            with payload:
                return payload.tobytes()

    def skip(self, n: int = 1) -> int:
        """Pass over the next ``n`` messages without decoding them; returns how many were
        skipped (fewer only at the end of the stream). A seekable file seeks past them; any
        other file is read and discarded in bounded chunks."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"skip() takes an int, not {type(n).__name__}")
        if n < 0:
            raise ValueError(f"skip() needs n >= 0, got {n}")
        with self._lock:
            for done in range(n):
                length = self._next_frame()
                if length is None:
                    return done
                self._guarded(self._skip_payload, length)
            return n

    def close(self) -> None:
        """Release the source: close the file or mapping the reader opened itself (a file
        object passed in stays open). Closing twice does nothing."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for view in (self._view, self._data):
            if isinstance(view, memoryview):
                view.release()  # payload views handed out stay valid: they hold the buffer
        self._view = None
        self._data = bytearray()
        if self._mapping is not None:
            try:
                self._mapping.close()
            except BufferError:
                pass  # payload views from read_payload() keep it mapped until they are freed
            self._mapping = None
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- framing

    def _guarded(self, step: Callable[..., Any], *args: Any) -> Any:
        """Run one reading step; any exception leaves the reader failed."""
        if self._failure is not None:
            raise _failed_again(self._failure, "StreamReader")
        if self._closed:
            raise ValueError("read from a closed StreamReader")
        try:
            return step(*args)
        except Exception as err:
            self._failure = err
            raise

    def _next_frame(self) -> int | None:
        """Read the next frame's length (None at the end of the stream), leaving the position
        on its payload."""
        return self._guarded(self._read_frame_length)  # type: ignore[no-any-return]

    def _read_frame_length(self) -> int | None:
        frames = self._frames
        if self._mapping is not None and frames.offset - self._released >= _MAPPED_RELEASE_STEP:
            self._release_pages(frames.offset)
        while (length := frames.step(self._data, self._base, self._eof)) is None:
            # One byte more at least; _fill reads ahead, and at the source's end sets _eof.
            self._fill(len(self._data) - (frames.offset - self._base) + 1)
        if length == 0:
            return None
        if length > len(self._data) - (frames.offset - self._base):
            left = self._bytes_left()
            if left is not None and length > left:
                raise frames.cut(left)
        return length

    def _take_payload(self, length: int) -> memoryview:
        """A view of the whole payload of ``length`` bytes at the position, which moves past it;
        the caller releases the view."""
        if not self._guarded(self._fill, length):
            raise self._fail_cut()
        start = self._frames.offset - self._base
        self._frames.payload_read()
        if self._view is None:
            self._view = memoryview(self._data)
        return self._view[start : start + length]

    def _fail_cut(self) -> DecodeError:
        """The error for a source that ends inside the payload that is due; the reader fails."""
        err = self._frames.cut(len(self._data) - (self._frames.offset - self._base))
        self._failure = err
        return err

    def _skip_payload(self, length: int) -> None:
        have = len(self._data) - (self._frames.offset - self._base)
        if length > have:
            assert self._file is not None  # a buffer source has checked the length against its size
            rest = length - have
            self._release_view()
            self._data = bytearray()
            if self._seekable:
                # _read_frame_length has checked the length against the file's size
                self._file.seek(rest, os.SEEK_CUR)
            else:
                while rest:
                    chunk = self._read_chunk(min(rest, _READ_CHUNK))
                    if not chunk:
                        raise self._frames.cut(length - rest)
                    rest -= len(chunk)
            self._base = self._frames.offset + length
        self._frames.payload_read()

    # -- input

    def _bytes_left(self) -> int | None:
        """Bytes from the position to the end of the source, when its size is known."""
        unread = len(self._data) - (self._frames.offset - self._base)
        if self._file is None:
            return unread
        if not self._seekable:
            return None
        here = self._file.tell()
        end = self._file.seek(0, os.SEEK_END)
        self._file.seek(here)
        return end - here + unread

    def _release_pages(self, end: int) -> None:
        """Drop the mapped pages before ``end`` from this process (not from the page cache):
        they are read again from the file if a payload view handed out touches them."""
        assert self._mapping is not None
        end -= end % _mmap.PAGESIZE
        advice = getattr(_mmap, "MADV_DONTNEED", None)
        if advice is not None and end > self._released:
            self._mapping.madvise(advice, self._released, end - self._released)
        self._released = end
        self._frames.set_fast_until(end + _MAPPED_RELEASE_STEP)

    def _release_view(self) -> None:
        if self._view is not None:
            self._view.release()
            self._view = None

    def _read_chunk(self, size: int) -> bytes:
        if self._eof:
            return b""
        assert self._read is not None
        chunk = self._read(size)
        if chunk is None:
            raise BlockingIOError(
                "the file is non-blocking and has no data ready; StreamReader needs a blocking file"
            )
        if not isinstance(chunk, (bytes, bytearray)):
            raise TypeError(
                f"the file's read() returned {type(chunk).__name__}; StreamReader needs a file "
                "opened in binary mode"
            )
        if not chunk:
            self._eof = True
        return chunk

    def _fill(self, need: int) -> bool:
        """Have at least ``need`` unread bytes buffered; False if the source ends first."""
        data = self._data
        pos = self._frames.offset - self._base
        have = len(data) - pos
        if have >= need:
            return True
        if not isinstance(data, bytearray):
            return False
        self._release_view()
        if pos:
            del data[:pos]
            self._base += pos
        while have < need:
            chunk = self._read_chunk(max(_READ_CHUNK, min(need - have, have)))
            if not chunk:
                return False
            data += chunk
            have += len(chunk)
        return True


# --------------------------------------------------------------------------- incremental decoder


class StreamDecoder:
    """Decode a stream fed in chunks of any size, as they arrive (from a socket, an event
    loop, a network protocol).

    ``feed(chunk)`` returns the messages that ``chunk`` completes, decoded with
    :func:`amber.loads` (given ``loads_options``): none, one or many. ``close()`` says that no
    more input will come, and raises if the stream was cut inside a frame or (unless
    ``require_end=False``) lacks its end marker. ``finished`` turns True once the end marker
    has been fed; bytes after it are an error.

    A message lying entirely inside one chunk is decoded from the chunk itself, without a copy;
    only a message split across chunks is gathered, in a buffer that grows as its bytes
    arrive (a declared length is never allocated up front). ``max_message`` caps the frame
    length as for :class:`StreamReader`. The caller may reuse its chunk buffer after ``feed``
    returns.

    Any error leaves the decoder failed (later calls raise again); it never skips ahead to
    the next frame. Nothing decoded is lost to an error: when a chunk completes some messages
    and then fails, ``feed`` returns those messages and the error is raised by the next call to
    ``feed`` or ``close``. Errors carry ``.kind``, ``.offset`` (in the stream) and
    ``.message_index``, as for :class:`StreamReader`.

    Each ``feed`` and ``close`` holds a lock, so calls from several threads never corrupt the
    decoder; but a stream is one sequence of bytes, so its chunks must be fed in order: from
    one thread at a time, or from several only when each chunk holds whole frames.
    """

    def __init__(
        self,
        *,
        require_end: bool = True,
        max_message: int | None = None,
        **loads_options: Any,
    ) -> None:
        self._lock = threading.RLock()
        # The framing, the gathering of split frames and the decoding.
        self._frames = _FrameGatherer(
            _check_flag("require_end", require_end), max_message, loads_options
        )
        self._closed = False
        self._failure: BaseException | None = None
        self._failure_raised = False

    @property
    def finished(self) -> bool:
        """True once the end marker has been fed."""
        return self._frames.ended

    @property
    def index(self) -> int:
        """The number of messages taken from the stream so far."""
        return self._frames.index

    def feed(self, chunk: Buffer) -> list[Any]:
        """Take the next bytes of the stream; return the messages they complete, in order."""
        with self._lock:
            return self._feed(chunk)

    def _feed(self, chunk: Buffer) -> list[Any]:
        self._check_usable()
        view = _byte_view(chunk, "chunk")
        out: list[Any] = []
        try:
            self._frames.feed(view, out)
        except Exception as err:
            self._failure = err
            if out:
                return out  # the error waits for the next call, so these are not lost
            self._failure_raised = True
            raise
        finally:
            view.release()
        return out

    def close(self) -> None:
        """Declare the end of the input: raise :class:`amber.DecodeError` (``truncated``) if
        the stream stops inside its header or a frame, or lacks its end marker while
        ``require_end`` is True. Closing twice does nothing."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        self._check_usable(closing=True)
        if self._closed:
            return
        try:
            self._frames.close()
        except Exception as err:
            self._failure = err
            self._failure_raised = True
            raise
        self._closed = True

    def _check_usable(self, closing: bool = False) -> None:
        failure = self._failure
        if failure is not None:
            if not self._failure_raised:
                self._failure_raised = True
                raise failure
            raise _failed_again(failure, "StreamDecoder")
        if self._closed and not closing:
            raise ValueError("feed() on a closed StreamDecoder")


def iter_load(source: StreamSource, **options: Any) -> Iterator[Any]:
    """Yield the messages of a stream one at a time: a generator over :class:`StreamReader`
    (``options`` are its keyword arguments and those of :func:`amber.loads`), which closes
    a file it opened when the iteration ends or the generator is closed."""
    with StreamReader(source, **options) as reader:
        yield from reader
