"""amber: exact, fast and safe serialization of Python object graphs.

``dumps``/``loads`` turn an object graph into bytes and back with every type, shared object
and cycle intact. ``loads`` only ever builds the builtin types in the format: it never imports
or runs code named by the payload, and it enforces depth and memory limits on hostile input.
``StreamWriter``, ``StreamReader``, ``StreamDecoder`` and ``iter_load`` put many payloads in one
file, pipe or socket.
``dumps(..., key=..., compress=...)`` signs (HMAC-SHA256) and compresses (zstd, lz4) payloads;
``loads(..., key=...)`` checks the signature before it decompresses or builds anything.
"""

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
from ._files import dump, load
from ._stream import (
    DEFAULT_MAX_MESSAGE,
    STREAM_MAGIC,
    StreamDecoder,
    StreamReader,
    StreamWriter,
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
