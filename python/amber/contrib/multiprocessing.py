"""amber between ``multiprocessing`` processes: connections and a queue that never unpickle.

``multiprocessing.Connection.send``/``recv``, ``multiprocessing.Queue`` and ``SimpleQueue``
pickle what they carry, so whichever process can write to their pipe can run code in the
process that reads it. Here every message goes through ``send_bytes``/``recv_bytes`` as amber,
so a compromised peer can send wrong data but cannot run code in the receiver, cannot make it
read more than ``max_message`` bytes of one message, and, when the codec has a key the peer does
not hold, cannot forge a message. The threat model is in docs/integrations/multiprocessing.md.

A message (one ``send`` or ``put``) is on the wire as ``send_bytes`` messages:

- one holding the amber payload (which starts with ``ab 41``), when no buffer went out of band;
- otherwise a head ``01``, the number of buffers as 4 bytes big-endian and the payload, then
  each out-of-band buffer as a message of its own, in index order.

``max_message`` bounds a whole message, its head and buffers together. The receiver hands what
is left of it to ``recv_bytes`` as ``maxlength``, so a peer's declared length is refused
before anything of that length is allocated.

CPython's ``recv_bytes`` refuses a message over ``maxlength`` after reading only its length,
leaving the rest in the pipe; it then marks a duplex connection unreadable and closes a
read-only one. Nothing after that point can be read in step, so the wrapper closes the
connection (and a queue marks itself broken in every process) and says so in the error.
"""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import time
from collections.abc import Mapping
from multiprocessing import context as _mp_context
from typing import TYPE_CHECKING, Any, Final

from .._amber import OOB_THRESHOLD, DecodeError, DecodeLimitError, SignatureError
from ._config import Codec, OptionsError

if TYPE_CHECKING:
    from multiprocessing.connection import _ConnectionBase
    from multiprocessing.context import BaseContext
    from multiprocessing.synchronize import Event, Lock
    from types import TracebackType

    from typing_extensions import Self

    _Conn = _ConnectionBase[Any, Any]
    CodecSpec = Codec | Mapping[str, Any] | None

__all__ = ["DEFAULT_MAX_MESSAGE", "AmberConnection", "Pipe", "Queue"]

DEFAULT_MAX_MESSAGE: Final = 64 << 20
"""The largest message (payload and out-of-band buffers together) received unless told
otherwise: 64 MiB. A peer can make a receiver hold about this much, so it stays modest."""

_WITH_BUFFERS: Final = 0x01
_HEAD_PREFIX: Final = 5  # 01, then the buffer count as 4 bytes big-endian
# The message CPython's reader raises (as OSError) when a length is over ``maxlength``.
_CPYTHON_OVER_LIMIT: Final = "bad message length"


# --------------------------------------------------------------------------- options


def _check_max_message(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: max_message must be an int, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{where}: max_message must be at least 1, got {value}")
    return value


def _resolve_codec(codec: object, where: str) -> tuple[Codec, dict[str, Any] | None]:
    """The codec to use, and the options it was built from (None when the caller built it,
    so this process cannot describe it to another)."""
    if codec is None:
        return Codec(where=where), {}
    if isinstance(codec, Codec):
        return codec, None
    if isinstance(codec, Mapping):
        options = dict(codec)
        return Codec.from_options(options, where=where), options
    raise TypeError(
        f"{where}: codec must be an amber.contrib.Codec, a mapping of its options, or None; "
        f"got {type(codec).__name__}"
    )


def _check_out_of_band(out_of_band: object, codec: Codec, where: str) -> bool:
    if not isinstance(out_of_band, bool):
        raise TypeError(f"{where}: out_of_band must be a bool, not {type(out_of_band).__name__}")
    if out_of_band and codec.signed:
        # The signature covers the payload only: a peer without the key could swap the buffers.
        raise OptionsError(
            f"{where}: out_of_band=True with a signing key: amber signs the payload but not "
            "out-of-band buffers, so a peer could replace them; send large data in band"
        )
    return out_of_band


def _portable_options(options: dict[str, Any] | None, where: str) -> dict[str, Any]:
    """The codec options to send to a child process, which rebuilds the codec from them.

    Checked here, in the parent, so that a codec that cannot travel fails with a message saying
    what to change instead of a bare pickling error from deep inside ``Process.start``.
    """
    if options is None:
        raise TypeError(
            f"{where} was given an amber.contrib.Codec object, which cannot be sent to another "
            "process: pass the codec's options as a mapping instead, e.g. "
            "codec={'types': ['app.models.Point'], 'key': secret}, and the child rebuilds "
            "the codec from them (under the 'fork' start method a Codec object works)"
        )
    try:
        pickle.dumps(options)
    except Exception as exc:
        raise TypeError(
            f"{where}: its codec options cannot be sent to another process ({exc}): name "
            "classes and custom types by importable dotted path ('app.models.Point') and "
            "give keys as bytes or str, not amber.SigningKey"
        ) from exc
    return options


# --------------------------------------------------------------------------- wire format


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _encode(
    codec: Codec, obj: Any, out_of_band: bool, max_message: int, where: str
) -> tuple[bytes, list[memoryview]]:
    """The head message and the out-of-band buffers of ``obj``, checked against the limit here
    so that a message the peer would refuse is never half sent."""
    buffers: list[memoryview] = []
    if out_of_band:
        payload = codec.dumps(obj, buffer_callback=buffers.append)
    else:
        payload = codec.dumps(obj)
    if buffers:
        head = bytes((_WITH_BUFFERS,)) + len(buffers).to_bytes(4, "big") + payload
    else:
        head = payload
    total = len(head) + sum(buffer.nbytes for buffer in buffers)
    if total > max_message:
        parts = f"{len(head)} in the payload"
        if buffers:
            parts += f", {total - len(head)} in {_count(len(buffers), 'out-of-band buffer')}"
        raise ValueError(
            f"{where}: the message is {total} bytes ({parts}), over max_message "
            f"({max_message} bytes); nothing was sent. The receiver refuses anything longer: "
            "raise max_message on both ends to send it"
        )
    return head, buffers


def _send(conn: _Conn, head: bytes, buffers: list[memoryview]) -> None:
    conn.send_bytes(head)
    for buffer in buffers:
        conn.send_bytes(buffer)


def _error(
    cls: type[DecodeError], kind: str, index: int, message: str, offset: int = 0
) -> DecodeError:
    err = cls(f"{message} ({kind})")
    err.kind = kind
    err.offset = offset
    err.message_index = index  # type: ignore[attr-defined]
    return err


class _StreamLost(Exception):
    """The pipe holds the rest of a message that was not read: nothing after it is in step.

    Carries the error for the caller to raise once it has closed what must be closed.
    """

    def __init__(self, error: DecodeError) -> None:
        super().__init__(str(error))
        self.error = error


def _recv_within(conn: _Conn, limit: int, index: int, refusal: str) -> bytes:
    """One ``recv_bytes`` message of at most ``limit`` bytes; ``refusal`` says what was over."""
    was_open = not conn.closed and conn.readable
    try:
        return conn.recv_bytes(limit)
    except OSError as exc:
        # CPython signals an over-limit length with this OSError and, having read only the
        # length, makes the connection unreadable or closes it: tell that from a broken pipe.
        now_shut = conn.closed or not conn.readable
        if str(exc) != _CPYTHON_OVER_LIMIT and not (was_open and now_shut):
            raise
        err = _error(DecodeLimitError, "message_limit", index, f"{refusal}; it was not read")
        raise _StreamLost(err) from exc


def _read_message(
    conn: _Conn, max_message: int, index: int, where: str
) -> tuple[bytes, list[bytes]]:
    """The head and buffers of one message, within ``max_message`` in all.

    Raises ``_StreamLost`` when the pipe is no longer in step, ``DecodeError`` for a message
    that was read whole but is malformed (the pipe is still in step after it).
    """
    head = _recv_within(
        conn,
        max_message,
        index,
        f"{where}: message {index} is longer than max_message ({max_message} bytes)",
    )
    if head[:1] != bytes((_WITH_BUFFERS,)):
        return head, []
    if len(head) < _HEAD_PREFIX:
        raise _error(
            DecodeError,
            "truncated",
            index,
            f"{where}: message {index} announces out-of-band buffers but ends inside the "
            f"buffer count ({len(head)} bytes)",
            len(head),
        )
    count = int.from_bytes(head[1:_HEAD_PREFIX], "big")
    if count == 0:
        raise _error(
            DecodeError,
            "bad_frame",
            index,
            f"{where}: message {index} announces out-of-band buffers but counts none",
            1,
        )
    budget = max_message - len(head)
    # amber sends a buffer out of band only from OOB_THRESHOLD bytes on, so a message within
    # the limit has at most this many; more is a lie that would keep the reader looping.
    if count > budget // OOB_THRESHOLD:
        raise _StreamLost(
            _error(
                DecodeLimitError,
                "message_limit",
                index,
                f"{where}: message {index} announces {count} out-of-band buffers, but buffers "
                f"of at least {OOB_THRESHOLD} bytes each cannot fit the {budget} bytes that "
                f"max_message ({max_message} bytes) leaves after its payload",
                1,
            )
        )
    buffers: list[bytes] = []
    for number in range(count):
        buffer = _recv_within(
            conn,
            budget,
            index,
            f"{where}: out-of-band buffer {number} (of {count}) of message {index} is longer "
            f"than the {budget} bytes that max_message ({max_message} bytes) leaves for it",
        )
        budget -= len(buffer)
        buffers.append(buffer)
    return head, buffers


def _decode(codec: Codec, head: bytes, buffers: list[bytes], index: int, where: str) -> Any:
    if buffers:
        if codec.signed:
            raise _error(
                SignatureError,
                "unsigned_buffers",
                index,
                f"{where}: message {index} has {_count(len(buffers), 'out-of-band buffer')}, "
                "which no signature covers; a codec with a key accepts signed payloads only",
            )
        payload: bytes | memoryview = memoryview(head)[_HEAD_PREFIX:]
    else:
        payload = head
    try:
        return codec.loads(payload, buffers=buffers or None)
    except DecodeError as err:
        # Same class and attributes as loads raised them (kind, offset in the payload, module
        # and qualname...), with the message they came in named.
        original = err.args[0] if err.args else str(err)
        where_detail = f"{where}, message {index}: {len(head)} bytes"
        if buffers:
            where_detail += f" and {_count(len(buffers), 'out-of-band buffer')}"
        err.args = (f"{original} [in {where_detail}; the offset counts from its payload]",)
        err.message_index = index  # type: ignore[attr-defined]
        raise


# --------------------------------------------------------------------------- connection


class AmberConnection:
    """A ``multiprocessing`` connection that carries amber with ``send_bytes``/``recv_bytes``.

    ``conn`` is a ``multiprocessing.connection.Connection`` (from ``Pipe``, ``Listener`` or
    ``Client``). ``codec`` is an ``amber.contrib.Codec`` or a mapping of its options (the
    form that can be handed to a spawned child). ``recv`` refuses a message whose payload and
    out-of-band buffers take more than ``max_message`` bytes without reading it, and then
    closes the connection, whose pipe is no longer in step. With ``out_of_band=True`` the
    arrays and bytes of ``amber.OOB_THRESHOLD`` bytes or more travel as messages of their own,
    never copied into the payload; arrays received so are read-only views of what arrived.

    One end is for one process (or thread) at a time, like the connection it wraps; for many
    producers or consumers use :class:`Queue`.
    """

    __slots__ = (
        "_broken",
        "_codec",
        "_conn",
        "_options",
        "_received",
        "_where",
        "max_message",
        "out_of_band",
    )

    def __init__(
        self,
        conn: _Conn,
        codec: CodecSpec = None,
        *,
        max_message: int = DEFAULT_MAX_MESSAGE,
        out_of_band: bool = False,
    ) -> None:
        where = "amber.contrib.multiprocessing.AmberConnection"
        if not (hasattr(conn, "send_bytes") and hasattr(conn, "recv_bytes")):
            raise TypeError(
                f"{where}: expected a multiprocessing connection (with send_bytes and "
                f"recv_bytes), got {type(conn).__name__}"
            )
        resolved, options = _resolve_codec(codec, where)
        self._setup(conn, resolved, options, max_message, out_of_band)

    def _setup(
        self,
        conn: _Conn,
        codec: Codec,
        options: dict[str, Any] | None,
        max_message: int,
        out_of_band: bool,
    ) -> None:
        self._conn = conn
        self._where = "amber connection" + ("" if conn.closed else f" (fd {conn.fileno()})")
        self.max_message = _check_max_message(max_message, self._where)
        self.out_of_band = _check_out_of_band(out_of_band, codec, self._where)
        self._codec = codec
        self._options = options
        self._received = 0
        self._broken: str | None = None

    @classmethod
    def _assemble(
        cls,
        conn: _Conn,
        codec: Codec,
        options: dict[str, Any] | None,
        max_message: int,
        out_of_band: bool,
    ) -> AmberConnection:
        self = cls.__new__(cls)
        self._setup(conn, codec, options, max_message, out_of_band)
        return self

    @property
    def connection(self) -> _Conn:
        """The wrapped connection (whatever is read from it directly is not checked)."""
        return self._conn

    @property
    def codec(self) -> Codec:
        return self._codec

    @property
    def closed(self) -> bool:
        return self._conn.closed

    @property
    def readable(self) -> bool:
        return self._conn.readable

    @property
    def writable(self) -> bool:
        return self._conn.writable

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise OSError(f"{self._where} is closed: {self._broken}")
        if self._conn.closed:
            raise OSError(f"{self._where} is closed")

    def send(self, obj: Any) -> None:
        """Send ``obj`` as one message (``amber.EncodeError`` if amber cannot write it)."""
        self._check_usable()
        head, buffers = _encode(self._codec, obj, self.out_of_band, self.max_message, self._where)
        _send(self._conn, head, buffers)

    def recv(self) -> Any:
        """The next message's object; blocks until one arrives (see :meth:`poll`).

        Raises ``amber.DecodeError`` (or its subclass) for a message that is malformed, holds a
        class the codec does not allow or, with a key, is not signed by it: the connection
        stays usable. ``amber.DecodeLimitError`` (kind ``message_limit``) for a message over
        ``max_message``: the connection is then closed. ``EOFError`` once the peer has closed.
        """
        self._check_usable()
        index = self._received
        self._received += 1
        try:
            head, buffers = _read_message(self._conn, self.max_message, index, self._where)
        except _StreamLost as lost:
            self._conn.close()
            err = lost.error
            self._broken = (
                f"message {index} was refused ({err.kind}) with the rest of it still in the "
                "pipe, so nothing after it could be read in step"
            )
            err.args = (
                f"{err.args[0]}. The connection is now closed: the rest of that message is "
                "still in the pipe, so nothing after it could be read in step",
            )
            raise err from None
        return _decode(self._codec, head, buffers, index, self._where)

    def poll(self, timeout: float | None = 0.0) -> bool:
        """Whether a message has started to arrive, waiting up to ``timeout`` seconds (None:
        for ever). A peer that stops in the middle of a message still blocks ``recv``."""
        self._check_usable()
        return self._conn.poll(timeout)

    def fileno(self) -> int:
        return self._conn.fileno()

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        # Handing an end to a child (Process args) pickles it in this, trusted, process; the
        # child gets the connection (multiprocessing duplicates its descriptor) and the codec
        # options, from which it rebuilds the codec.
        options = _portable_options(self._options, self._where)
        return (
            _rebuild_connection,
            (self._conn, options, self.max_message, self.out_of_band),
        )

    def __repr__(self) -> str:
        state = "closed" if self._conn.closed else f"fd {self._conn.fileno()}"
        return f"<AmberConnection {state}, max_message={self.max_message}>"


def _rebuild_connection(
    conn: _Conn, options: dict[str, Any], max_message: int, out_of_band: bool
) -> AmberConnection:
    where = "amber.contrib.multiprocessing.AmberConnection (rebuilt in a child process)"
    codec = Codec.from_options(options, where=where)
    return AmberConnection._assemble(conn, codec, options, max_message, out_of_band)


def Pipe(
    duplex: bool = True,
    *,
    codec: CodecSpec = None,
    ctx: BaseContext | None = None,
    max_message: int = DEFAULT_MAX_MESSAGE,
    out_of_band: bool = False,
) -> tuple[AmberConnection, AmberConnection]:
    """Two connected :class:`AmberConnection` ends, as ``multiprocessing.Pipe`` makes them.

    With ``duplex=False`` the first end only receives and the second only sends. Both ends
    share ``codec``, ``max_message`` and ``out_of_band``.
    """
    where = "amber.contrib.multiprocessing.Pipe"
    resolved, options = _resolve_codec(codec, where)
    first, second = (ctx if ctx is not None else multiprocessing.get_context()).Pipe(duplex)
    try:
        return (
            AmberConnection._assemble(first, resolved, options, max_message, out_of_band),
            AmberConnection._assemble(second, resolved, options, max_message, out_of_band),
        )
    except BaseException:
        first.close()
        second.close()
        raise


# --------------------------------------------------------------------------- queue


class Queue:
    """A queue between processes whose messages are amber, never pickle.

    Any number of processes may ``put`` and ``get``: a lock per direction keeps one message
    (with its out-of-band buffers) whole on the pipe. Hand it to a child in ``Process`` args;
    create it with the same ``ctx`` as the processes (``multiprocessing.get_context("spawn")``).
    Under spawn the child rebuilds the codec from its options, so pass ``codec`` as a mapping
    (``{"types": ["app.models.Point"], "key": secret}``); a Codec object works under fork only.

    There is no feeder thread: ``put`` writes to the pipe itself and blocks while the pipe is
    full, so get what the children put before joining them. Over-limit or out-of-step input
    makes the queue unusable in every process that holds it (the rest of the refused message
    stays in the pipe): every later call raises ``OSError`` saying so.
    """

    def __init__(
        self,
        *,
        codec: CodecSpec = None,
        ctx: BaseContext | None = None,
        max_message: int = DEFAULT_MAX_MESSAGE,
        out_of_band: bool = False,
    ) -> None:
        self._where = "amber.contrib.multiprocessing.Queue"
        self._codec, self._options = _resolve_codec(codec, self._where)
        self.max_message = _check_max_message(max_message, self._where)
        self.out_of_band = _check_out_of_band(out_of_band, self._codec, self._where)
        context = ctx if ctx is not None else multiprocessing.get_context()
        self._reader, self._writer = context.Pipe(duplex=False)
        self._rlock: Lock = context.Lock()
        self._wlock: Lock = context.Lock()
        # Set by whichever process finds the pipe out of step, so the others stop reading it.
        self._broken: Event = context.Event()
        self._received = 0

    @property
    def codec(self) -> Codec:
        return self._codec

    def _check_usable(self) -> None:
        if self._broken.is_set():
            raise OSError(
                f"{self._where} is unusable: a process refused a message over max_message "
                f"({self.max_message} bytes) or a lying buffer count, and the rest of that "
                "message is still in the pipe, so nothing after it can be read in step"
            )
        if self._reader.closed or self._writer.closed:
            raise OSError(f"{self._where} is closed")

    def put(self, obj: Any) -> None:
        """Add ``obj``; blocks while the pipe is full. Encoded before the lock is taken."""
        self._check_usable()
        head, buffers = _encode(self._codec, obj, self.out_of_band, self.max_message, self._where)
        with self._wlock:
            _send(self._writer, head, buffers)

    def get(self, timeout: float | None = None) -> Any:
        """The next object; raises ``queue.Empty`` if none starts to arrive within ``timeout``
        seconds (None: wait for ever, 0: do not wait). Errors are those of
        :meth:`AmberConnection.recv`; a message is decoded after the lock is released."""
        if timeout is not None and timeout < 0:
            raise ValueError(f"{self._where}.get: timeout must be >= 0 or None, got {timeout}")
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._rlock.acquire(True, timeout):
            raise queue.Empty
        try:
            self._check_usable()
            if deadline is not None and not self._reader.poll(
                max(0.0, deadline - time.monotonic())
            ):
                raise queue.Empty
            index = self._received
            self._received += 1
            try:
                head, buffers = _read_message(self._reader, self.max_message, index, self._where)
            except _StreamLost as lost:
                self._broken.set()
                self._reader.close()
                err = lost.error
                err.args = (
                    f"{err.args[0]}. The queue is now unusable in every process: the rest of "
                    "that message is still in the pipe, so nothing after it can be read in step",
                )
                raise err from None
        finally:
            self._rlock.release()
        return _decode(self._codec, head, buffers, index, self._where)

    def empty(self) -> bool:
        """Whether nothing is waiting at this moment (another process may change that)."""
        self._check_usable()
        return not self._reader.poll()

    def close(self) -> None:
        """Close this process's ends of the pipe; other processes' copies stay open."""
        self._reader.close()
        self._writer.close()

    def __getstate__(self) -> dict[str, Any]:
        # As multiprocessing's own queues: only while a child is being started, which is when
        # the locks and the pipe's descriptors can be handed over.
        _mp_context.assert_spawning(self)
        return {
            "reader": self._reader,
            "writer": self._writer,
            "rlock": self._rlock,
            "wlock": self._wlock,
            "broken": self._broken,
            "options": _portable_options(self._options, self._where),
            "max_message": self.max_message,
            "out_of_band": self.out_of_band,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._where = "amber.contrib.multiprocessing.Queue"
        self._reader = state["reader"]
        self._writer = state["writer"]
        self._rlock = state["rlock"]
        self._wlock = state["wlock"]
        self._broken = state["broken"]
        self._options = state["options"]
        self._codec = Codec.from_options(
            self._options, where=f"{self._where} (rebuilt in a child process)"
        )
        self.max_message = state["max_message"]
        self.out_of_band = state["out_of_band"]
        self._received = 0

    def __repr__(self) -> str:
        return f"<amber Queue max_message={self.max_message}>"
