"""The ``amber`` command: inspect, stats, to-json and from-json (usage in ``docs/cli.md``).

Every command reads a file or stdin whole, and writes to stdout or, with ``-o``, to a file
that is replaced only once the output is complete. Bad input and bad usage end in one line
on stderr, ``amber: error: ...``, with exit status 1 (2 for usage, as argparse does), never
in a traceback. Payloads are decoded with ``placeholders=True``: no class a payload names is
imported or built.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, NoReturn

from . import __version__, _inspect
from ._amber import (
    DEFAULT_MAX_DEPTH,
    MAX_DEPTH_LIMIT,
    MIN_KEY_LENGTH,
    DecodeError,
    EncodeError,
    SigningKey,
    _stream_payloads,
    dumps,
    envelope_info,
    loads,
    verify,
)
from ._json import JsonMappingError, from_json, iter_json
from ._stream import STREAM_MAGIC

__all__ = ["main"]

PROGRESS_THRESHOLD = 64 << 20  # inputs larger than this show progress on a terminal
CHUNK = 1 << 20


class CliError(Exception):
    """A failure to report as ``amber: error: <message>`` with exit status 1."""


# -- input and output -----------------------------------------------------------------------


class Progress:
    """Progress on stderr for big inputs: on when asked, or for inputs over 64 MiB when
    stderr is a terminal."""

    def __init__(self, forced: bool) -> None:
        self._stream = sys.stderr
        self._tty = _isatty(self._stream)
        self._active = forced
        self._last = 0.0
        self._shown = False

    def consider(self, size: int) -> None:
        """Turns progress on once the input is known to be big."""
        if size > PROGRESS_THRESHOLD and self._tty:
            self._active = True

    def show(self, text: str, *, final: bool = False) -> None:
        if not self._active:
            return
        now = time.monotonic()
        if not final and now - self._last < (0.2 if self._tty else 2.0):
            return
        self._last = now
        if self._tty:
            self._stream.write(f"\ramber: {text}\x1b[K")
        else:
            self._stream.write(f"amber: {text}\n")
        self._stream.flush()
        self._shown = True

    def done(self) -> None:
        if self._shown and self._tty:
            self._stream.write("\n")
            self._stream.flush()
        self._shown = False


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def read_input(path: str, progress: Progress) -> bytearray:
    """All bytes of ``path``, or of stdin for ``-``."""
    try:
        with contextlib.ExitStack() as stack:
            if path == "-":
                stream: IO[bytes] = sys.stdin.buffer
            else:
                stream = stack.enter_context(open(path, "rb"))
            total = _size_of(stream)
            if total is not None:
                progress.consider(total)
            data = bytearray()
            while chunk := stream.read(CHUNK):
                data += chunk
                progress.consider(len(data))
                known = f" of {_mib(total)}" if total is not None else ""
                progress.show(f"reading {_mib(len(data))}{known}")
            progress.show(f"read {_mib(len(data))}", final=True)
            return data
    except OSError as exc:
        name = "stdin" if path == "-" else path
        raise CliError(f"cannot read {name}: {exc.strerror or exc}") from None


def _size_of(stream: IO[bytes]) -> int | None:
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


@contextlib.contextmanager
def open_output(path: str | None, *, binary: bool) -> Iterator[IO[Any]]:
    """Where to write: stdout, or a temporary file that replaces ``path`` once the block
    ends without an error (and is removed if it does not)."""
    if path is None or path == "-":
        stream: IO[Any] = sys.stdout.buffer if binary else sys.stdout
        yield stream
        stream.flush()
        return
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, temp = tempfile.mkstemp(prefix=".amber-", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        # mkstemp makes the file private (0600): give it the mode the file would have had.
        os.chmod(temp, _file_mode(path))
        mode = "wb" if binary else "w"
        encoding = None if binary else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding, newline=None if binary else "\n") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def _file_mode(path: str) -> int:
    """The permissions of ``path`` if it exists, else those a new file gets (umask)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@dataclass
class Payload:
    """One payload of the input to show: its bytes, where they start in the input, and a
    label when the input holds several."""

    data: bytes | bytearray
    base: int = 0
    label: str | None = None


def payloads(data: bytearray) -> list[Payload]:
    """The payloads an input holds, in order: one, or each message of a stream (spec
    section 11). Every command reads its input through this one place."""
    if not data.startswith(STREAM_MAGIC):
        return [Payload(data)]
    try:
        frames = _stream_payloads(data)
    except DecodeError as error:
        raise CliError(f"invalid stream: {error}") from None
    return [
        Payload(bytes(data[offset : offset + length]), offset, f"message {i} at {offset}")
        for i, (offset, length) in enumerate(frames)
    ]


def _one_payload(data: bytearray) -> Payload:
    found = payloads(data)
    if len(found) != 1:
        raise CliError(f"the input holds {len(found)} payloads; this command takes one")
    return found[0]


def _decode_error(error: DecodeError, payload: Payload) -> CliError:
    where = f"{payload.label}: " if payload.label else ""
    return CliError(f"invalid payload: {where}{_inspect.error_text(error, payload.base)}")


# -- commands -------------------------------------------------------------------------------


def cmd_inspect(args: argparse.Namespace, progress: Progress) -> int:
    data = read_input(args.file, progress)
    key = read_key(args)
    progress.show("decoding", final=True)
    traced = [
        (
            payload,
            _inspect.trace(
                payload.data,
                max_depth=args.max_depth,
                max_alloc=args.max_alloc,
                max_events=args.max_lines,
                key=key,
            ),
        )
        for payload in payloads(data)
    ]
    progress.done()
    failure = next((_decode_error(t.error, p) for p, t in traced if t.error is not None), None)
    with open_output(args.output, binary=False) as out:
        for payload, result in traced:
            if payload.label:
                out.write(f"{payload.label}:\n")
            for line in envelope_lines(payload, result.body is not None):
                out.write(line + "\n")
            lines = _inspect.inspect_lines(
                payload.data, result, base=payload.base, show_hex=not args.hex_off
            )
            for line in lines:
                out.write(line + "\n")
        # A listing that ends in an error is for people watching, not for a file.
        if failure is not None and args.output not in (None, "-"):
            raise failure
    if failure is not None:
        raise failure
    return 0


def cmd_stats(args: argparse.Namespace, progress: Progress) -> int:
    data = read_input(args.file, progress)
    progress.show("decoding", final=True)
    found: list[tuple[Payload, _inspect.Stats]] = []
    key = read_key(args)
    for payload in payloads(data):
        traced = _inspect.trace(
            payload.data,
            max_depth=args.max_depth,
            max_alloc=args.max_alloc,
            max_events=None,
            key=key,
        )
        if traced.error is not None:
            raise _decode_error(traced.error, payload)
        found.append((payload, _inspect.stats(len(payload.data), traced.events)))
    progress.done()
    with open_output(args.output, binary=False) as out:
        for payload, result in found:
            if args.json:
                document = result.as_json()
                if payload.label:
                    document["label"] = payload.label
                out.write(json.dumps(document, indent=2) + "\n")
                continue
            if payload.label:
                out.write(f"{payload.label}:\n")
            for line in _inspect.stats_lines(result):
                out.write(line + "\n")
    return 0


def cmd_to_json(args: argparse.Namespace, progress: Progress) -> int:
    payload = _one_payload(read_input(args.file, progress))
    progress.show("decoding", final=True)
    try:
        value = loads(
            payload.data,
            max_depth=args.max_depth,
            max_alloc=args.max_alloc,
            placeholders=True,
            key=read_key(args),
        )
    except DecodeError as exc:
        raise _decode_error(exc, payload) from None
    written = 0
    with open_output(args.output, binary=False) as out:
        try:
            for chunk in iter_json(value, indent=args.indent):
                out.write(chunk)
                written += len(chunk)
                progress.show(f"writing JSON, {_mib(written)}")
        except JsonMappingError as exc:
            raise CliError(f"no JSON form: {exc}") from None
        out.write("\n")
    progress.done()
    return 0


def cmd_from_json(args: argparse.Namespace, progress: Progress) -> int:
    if args.output in (None, "-") and _isatty(sys.stdout):
        raise CliError("refusing to write a binary payload to a terminal; use -o FILE or a pipe")
    raw = read_input(args.file, progress)
    progress.show("converting", final=True)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"the input is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    del raw
    try:
        value = from_json(text, max_depth=args.max_depth)
    except JsonMappingError as exc:
        raise CliError(f"invalid amber JSON: {exc}") from None
    try:
        data = dumps(value, max_depth=args.max_depth)
    except EncodeError as exc:
        raise CliError(f"cannot encode the value: {exc}") from None
    with open_output(args.output, binary=True) as out:
        out.write(data)
    progress.done()
    return 0


def cmd_verify(args: argparse.Namespace, progress: Progress) -> int:
    key = read_key(args)
    if key is None:
        raise CliError("verify needs a key: --key-file PATH or --key-env VARIABLE")
    found = payloads(read_input(args.file, progress))
    progress.done()
    with open_output(args.output, binary=False) as out:
        for payload in found:
            try:
                info = verify(payload.data, key=key, max_age=args.max_age)
            except DecodeError as exc:
                raise _decode_error(exc, payload) from None
            where = f"{payload.label}: " if payload.label else ""
            out.write(f"{where}signature OK: {_envelope_text(info)}\n")
    return 0


def read_key(args: argparse.Namespace) -> SigningKey | None:
    """The signing key named by ``--key-file`` or ``--key-env`` (with ``--key-id``), if any.
    A key file holds the secret as its bytes; one trailing newline is dropped, as editors
    add it. Without ``--key-id`` the key's id is derived from the secret, as ``SigningKey``
    does."""
    path = getattr(args, "key_file", None)
    variable = getattr(args, "key_env", None)
    key_id = getattr(args, "key_id", None)
    if path is not None:
        try:
            with open(path, "rb") as f:
                secret = f.read()
        except OSError as exc:
            raise CliError(f"cannot read the key file {path}: {exc.strerror or exc}") from None
        secret = secret[:-2] if secret.endswith(b"\r\n") else secret.removesuffix(b"\n")
    elif variable is not None:
        value = os.environ.get(variable)
        if value is None:
            raise CliError(f"the environment variable {variable} is not set")
        secret = os.fsencode(value)
    else:
        return None
    if len(secret) < MIN_KEY_LENGTH:
        source = f"the key file {path}" if path is not None else f"${variable}"
        raise CliError(f"{source} holds {len(secret)} bytes; a key needs at least {MIN_KEY_LENGTH}")
    try:
        return SigningKey(secret, id=None if key_id is None else os.fsencode(key_id))
    except ValueError as exc:
        raise CliError(f"--key-id: {exc}") from None


def _envelope_text(info: Mapping[str, Any]) -> str:
    parts = []
    if info["signed"]:
        key_id = info["key_id"]
        printable = key_id.isascii() and key_id.decode().isprintable()
        shown = key_id.decode() if printable else key_id.hex()
        parts.append(f"signed with key id {shown}")
        if info["timestamp"] is not None:
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(info["timestamp"]))
            parts.append(f"at {when}")
    if info["compression"] is not None:
        parts.append(
            f"{info['compression']}-compressed, {info['compressed_size']} bytes for a "
            f"{info['size']}-byte body"
        )
    return ", ".join(parts) if parts else "plain payload"


def envelope_lines(payload: Payload, decompressed: bool) -> list[str]:
    """What a signed or compressed payload's envelope says (unverified unless the trace
    used a key), shown before its values."""
    if len(payload.data) < 3 or payload.data[2] & 0xF0 == 0:
        return []
    try:
        info = envelope_info(payload.data)
    except DecodeError:
        return []  # the trace reports the same error
    lines = [f"envelope: {_envelope_text(info)}"]
    if decompressed:
        lines.append("offsets below count from the first byte of the decompressed body")
    return lines


# -- arguments ------------------------------------------------------------------------------


def _bounded_int(low: int, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low or (high is not None and value > high):
            bound = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: {bound}")
        return value

    return parse


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"amber: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="amber",
        description="Look into amber payloads and convert them to and from JSON.",
        epilog="Run 'amber COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"amber {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, run: Callable[..., int], summary: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, description=summary)
        sub.set_defaults(run=run)
        sub.add_argument("file", nargs="?", default="-", metavar="FILE", help="input (- for stdin)")
        sub.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
        sub.add_argument(
            "--progress", action="store_true", help="show progress on stderr (big inputs do)"
        )
        sub.add_argument(
            "--max-depth",
            type=_bounded_int(1, MAX_DEPTH_LIMIT),
            default=DEFAULT_MAX_DEPTH,
            metavar="N",
            help=f"deepest nesting accepted (default {DEFAULT_MAX_DEPTH})",
        )
        return sub

    def decoding(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--max-alloc",
            type=_bounded_int(1),
            default=None,
            metavar="BYTES",
            help="decoding memory budget (default: 256 x input size + 1 MiB)",
        )

    def keyed(sub: argparse.ArgumentParser) -> None:
        source = sub.add_mutually_exclusive_group()
        source.add_argument(
            "--key-file", metavar="PATH", help="the signing secret: this file's bytes"
        )
        source.add_argument(
            "--key-env", metavar="VARIABLE", help="the signing secret: this variable's value"
        )
        sub.add_argument(
            "--key-id", metavar="ID", help="the key's id, if it was given one (default: derived)"
        )

    sub = command("inspect", cmd_inspect, "show a payload's structure, one line per value")
    decoding(sub)
    keyed(sub)
    sub.add_argument("--max-lines", type=_bounded_int(0), metavar="N", help="show at most N values")
    sub.add_argument("--no-hex", dest="hex_off", action="store_true", help="omit the bytes column")
    sub = command("stats", cmd_stats, "count a payload's values and bytes by type")
    decoding(sub)
    keyed(sub)
    sub.add_argument("--json", action="store_true", help="write the counts as JSON")
    sub = command("to-json", cmd_to_json, "write a payload's value as JSON")
    decoding(sub)
    keyed(sub)
    sub.add_argument(
        "--indent", type=_bounded_int(0), metavar="N", help="indent N spaces per level"
    )
    command("from-json", cmd_from_json, "write the value of a JSON document as a payload")
    sub = command("verify", cmd_verify, "check a signed payload's signature (and its age)")
    keyed(sub)
    sub.add_argument(
        "--max-age",
        type=_bounded_int(0),
        metavar="SECONDS",
        help="refuse payloads signed longer ago than this (they must carry a timestamp)",
    )
    return parser


def _quiet_stdout() -> None:
    """Points stdout at /dev/null, so that flushing it at exit fails no more."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line ``argv`` (``sys.argv[1:]`` by default); returns the exit
    status."""
    args = build_parser().parse_args(argv)
    progress = Progress(args.progress)
    if sys.stdout is sys.__stdout__ and isinstance(sys.stdout, io.TextIOWrapper):
        # A value's text may hold characters the terminal's encoding lacks: escape them.
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        status: int = args.run(args, progress)
        return status
    except CliError as exc:
        progress.done()
        _report(str(exc))
        return 1
    except BrokenPipeError:
        # The reader went away (``amber inspect big | head``): stop without a word.
        _quiet_stdout()
        return 1
    except KeyboardInterrupt:
        progress.done()
        _report("interrupted")
        return 130
    except MemoryError:
        progress.done()
        _report("out of memory")
        return 1


def _report(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"amber: error: {message}\n")
        sys.stderr.flush()
