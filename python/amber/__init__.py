"""amber: exact, fast and safe serialization of Python object graphs.

``dumps``/``loads`` turn an object graph into bytes and back with every type, shared object
and cycle intact. ``loads`` only ever builds the builtin types in the format: it never imports
or runs code named by the payload, and it enforces depth and memory limits on hostile input.
``StreamWriter``, ``StreamReader``, ``StreamDecoder`` and ``iter_load`` put many payloads in one
file, pipe or socket.
``dumps(..., key=..., compress=...)`` signs (HMAC-SHA256) and compresses (zstd, lz4) payloads;
``loads(..., key=...)`` checks the signature before it decompresses or builds anything.
"""

from __future__ import annotations

import os
import tempfile
from typing import IO, Any

from ._amber import (
    DEFAULT_MAX_DEPTH,
    FORMAT_VERSION,
    MAX_DEPTH_LIMIT,
    MIN_KEY_LENGTH,
    OOB_THRESHOLD,
    ClassNotAllowedError,
    DecodeError,
    DecodeLimitError,
    Decoder,
    EncodeError,
    Encoder,
    SignatureError,
    SigningKey,
    dumps,
    envelope_info,
    loads,
    verify,
)
from ._classes import CustomType, Placeholder
from ._stream import (
    DEFAULT_MAX_MESSAGE,
    STREAM_MAGIC,
    StreamDecoder,
    StreamReader,
    StreamWriter,
    _map_file,
    iter_load,
)

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_MESSAGE",
    "FORMAT_VERSION",
    "MAX_DEPTH_LIMIT",
    "MIN_KEY_LENGTH",
    "OOB_THRESHOLD",
    "STREAM_MAGIC",
    "ClassNotAllowedError",
    "CustomType",
    "DecodeError",
    "DecodeLimitError",
    "Decoder",
    "EncodeError",
    "Encoder",
    "Placeholder",
    "SignatureError",
    "SigningKey",
    "StreamDecoder",
    "StreamReader",
    "StreamWriter",
    "dump",
    "dumps",
    "envelope_info",
    "iter_load",
    "load",
    "loads",
    "verify",
]

__version__ = "0.1.0"

PathLike = str | os.PathLike[str]


def dump(obj: Any, file: PathLike | IO[bytes], **options: Any) -> None:
    """Encode ``obj`` into ``file``: a path or a binary file object.

    A path is written atomically: the payload goes to a temporary file in the same directory,
    which then replaces the target, so a failed encode or a crash never leaves a partial file.
    ``options`` are those of :func:`dumps`.
    """
    payload = dumps(obj, **options)
    if not isinstance(file, (str, os.PathLike)):
        file.write(payload)
        return
    target = os.fspath(file)
    directory = os.path.dirname(os.path.abspath(target))
    fd, temp = tempfile.mkstemp(prefix=".amber-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


def load(file: PathLike | IO[bytes], *, mmap: bool = False, **options: Any) -> Any:
    """Decode the payload in ``file``: a path or a binary file object read to its end.

    With ``mmap=True`` (a path only) the file is not read into memory: it is mapped read-only
    and decoded straight from the mapping, which is closed again before ``load`` returns or
    raises. If another process truncates the file while it is mapped, touching the lost pages
    kills the process with SIGBUS: use it only on files that nothing shortens meanwhile.
    ``options`` are those of :func:`loads`.
    """
    if isinstance(file, (str, os.PathLike)):
        if mmap:
            mapping, view = _map_file(file)
            try:
                return loads(view, **options)
            finally:
                view.release()
                if mapping is not None:
                    mapping.close()
        with open(file, "rb") as f:
            data = f.read()
    elif mmap:
        raise ValueError(f"mmap=True needs a path, not {type(file).__name__}")
    else:
        data = file.read()
    return loads(data, **options)
