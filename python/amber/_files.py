"""``dump`` and ``load``: a payload to and from a file, by path or file object."""

from __future__ import annotations

import os
import tempfile
from typing import IO, Any

from ._amber import dumps, loads
from ._stream import _map_file

__all__ = ["dump", "load"]

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
