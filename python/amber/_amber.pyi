from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any, Final, Literal, TypedDict, TypeVar, final

from typing_extensions import Buffer, Self

from ._classes import CustomType

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "FORMAT_VERSION",
    "MAX_DEPTH_LIMIT",
    "MIN_KEY_LENGTH",
    "OOB_THRESHOLD",
    "_DEFAULT_MAX_MESSAGE",
    "_DUMPS_KEYWORDS",
    "_LOADS_KEYWORDS",
    "_MORE",
    "_STREAM_END",
    "_STREAM_MAGIC",
    "ClassNotAllowedError",
    "DecodeError",
    "DecodeLimitError",
    "Decoder",
    "EncodeError",
    "Encoder",
    "SignatureError",
    "SigningKey",
    "_FrameGatherer",
    "_FrameReader",
    "_FrameWriter",
    "_callbacks",
    "_dict_layout_known",
    "_frame_payload",
    "_stream_payloads",
    "_trace",
    "_value_rule",
    "dumps",
    "envelope_info",
    "loads",
    "verify",
]

FORMAT_VERSION: Final[int]
MAX_DEPTH_LIMIT: Final[int]
DEFAULT_MAX_DEPTH: Final[int]
OOB_THRESHOLD: Final[int]
MIN_KEY_LENGTH: Final[int]
_STREAM_MAGIC: Final[bytes]
_STREAM_END: Final[bytes]
_DEFAULT_MAX_MESSAGE: Final[int]
# The keyword names the fast keyword path of dumps and loads matches (see fastcall.rs).
_DUMPS_KEYWORDS: Final[tuple[str, ...]]
_LOADS_KEYWORDS: Final[tuple[str, ...]]
# What _FrameReader.next_message returns when the next message needs Python.
_MORE: Final[object]

# Classes and functions the decoder may build or refer to (spec 5.17.4), each allowed under
# its own names, or under another "module:qualname" as a pair or a mapping entry.
_Allowed = type | Callable[..., Any]
_Types = Iterable[_Allowed | tuple[str, _Allowed]] | Mapping[str, _Allowed] | None
# (module, qualname, kind name, field names) of an OBJECT shape.
_Shape = tuple[str, str, str, tuple[str, ...]]
# What a traced value is: ("scalar",), ("unknown",), ("supersede",), ("data", length),
# ("container", items), ("packed", items), ("tuple_list", rows, arity),
# ("ext", code name, blob length or None), ("object", shape number, defines the shape, shape),
# ("ref", target offset, table index).
_TraceInfo = (
    tuple[Literal["scalar", "unknown", "supersede"]]
    | tuple[Literal["data", "container", "packed"], int]
    | tuple[Literal["tuple_list"], int, int]
    | tuple[Literal["ext"], str, int | None]
    | tuple[Literal["object"], int, bool, _Shape]
    | tuple[Literal["ref"], int, int]
)
# (offset, end, depth, tag, tag name, head end, table index when tracked, info, value)
_TraceEvent = tuple[int, int | None, int, int, str, int | None, int | None, _TraceInfo, Any]
_Custom = Iterable[CustomType[Any]] | None
_BufferCallback = Callable[[memoryview], object] | None
_Secret = bytes | bytearray | memoryview | str
_Compress = Literal["zstd", "lz4"] | None
_MaxAge = float | timedelta | None
_Clock = Callable[[], int] | None

class _EnvelopeInfo(TypedDict):
    signed: bool
    key_id: bytes | None
    timestamp: int | None
    compression: Literal["zstd", "lz4"] | None
    compressed_size: int | None
    size: int

@final
class SigningKey:
    def __new__(cls, secret: _Secret, *, id: _Secret | None = None) -> Self: ...
    @property
    def id(self) -> bytes: ...

_Key = _Secret | SigningKey | list[_Secret | SigningKey] | tuple[_Secret | SigningKey, ...] | None

class EncodeError(TypeError):
    path: str

class DecodeError(ValueError):
    offset: int
    kind: str

class DecodeLimitError(DecodeError): ...

class ClassNotAllowedError(DecodeError):
    module: str
    qualname: str

class SignatureError(DecodeError): ...

def dumps(
    obj: Any,
    *,
    refs: bool = True,
    max_depth: int = 1000,
    types: _Types = None,
    custom: _Custom = None,
    buffer_callback: _BufferCallback = None,
    canonical: bool = False,
    sort_keys: bool = False,
    key: _Key = None,
    timestamp: bool = False,
    compress: _Compress = None,
    level: int | None = None,
    clock: _Clock = None,
) -> bytes: ...
def loads(
    data: Buffer,
    *,
    max_depth: int = 1000,
    max_alloc: int | None = None,
    types: _Types = None,
    custom: _Custom = None,
    unknown_fields: Literal["ignore", "error"] = "ignore",
    placeholders: bool = False,
    buffers: Iterable[Buffer] | None = None,
    key: _Key = None,
    max_age: _MaxAge = None,
    max_decompressed: int | None = None,
    clock: _Clock = None,
) -> Any: ...
def _trace(
    data: Buffer,
    *,
    max_depth: int = 1000,
    max_alloc: int | None = None,
    max_events: int | None = None,
    key: _Key = None,
) -> tuple[list[_TraceEvent], int, DecodeError | None, bytes | None]: ...
def _dict_layout_known() -> bool: ...
def _callbacks() -> list[tuple[str, str]]: ...
def _value_rule(kind: str, index: int, value: Any) -> str | None: ...
def verify(
    data: Buffer, *, key: _Key, max_age: _MaxAge = None, clock: _Clock = None
) -> _EnvelopeInfo: ...
def envelope_info(data: Buffer) -> _EnvelopeInfo: ...

@final
class Encoder:
    def __new__(
        cls,
        *,
        refs: bool = True,
        max_depth: int = 1000,
        types: _Types = None,
        custom: _Custom = None,
        buffer_callback: _BufferCallback = None,
        canonical: bool = False,
        sort_keys: bool = False,
        key: _Key = None,
        timestamp: bool = False,
        compress: _Compress = None,
        level: int | None = None,
        clock: _Clock = None,
    ) -> Self: ...
    @property
    def refs(self) -> bool: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def canonical(self) -> bool: ...
    @property
    def sort_keys(self) -> bool: ...
    @property
    def buffer_callback(self) -> Callable[[memoryview], object] | None: ...
    @property
    def key_id(self) -> bytes | None: ...
    @property
    def timestamp(self) -> bool: ...
    @property
    def compress(self) -> _Compress: ...
    @property
    def level(self) -> int | None: ...
    @property
    def clock(self) -> Callable[[], int] | None: ...
    def encode(self, obj: Any) -> bytes: ...

@final
class Decoder:
    def __new__(
        cls,
        *,
        max_depth: int = 1000,
        max_alloc: int | None = None,
        types: _Types = None,
        custom: _Custom = None,
        unknown_fields: Literal["ignore", "error"] = "ignore",
        placeholders: bool = False,
        key: _Key = None,
        max_age: _MaxAge = None,
        max_decompressed: int | None = None,
        clock: _Clock = None,
    ) -> Self: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def max_alloc(self) -> int | None: ...
    @property
    def key_ids(self) -> tuple[bytes, ...]: ...
    @property
    def max_age(self) -> int | None: ...
    @property
    def max_decompressed(self) -> int | None: ...
    @property
    def clock(self) -> Callable[[], int] | None: ...
    def decode(self, data: Buffer, *, buffers: Iterable[Buffer] | None = None) -> Any: ...

# The stream framing (spec section 11) for amber._stream.

_Payload = TypeVar("_Payload", bound=Buffer)

def _frame_payload(payload: _Payload) -> bytes | tuple[bytes, _Payload]: ...
def _stream_payloads(data: Buffer) -> list[tuple[int, int]]: ...

@final
class _FrameWriter:
    def __new__(cls, options: dict[str, Any]) -> Self: ...
    def frame(self, obj: Any) -> bytes | tuple[bytes, bytes]: ...

@final
class _FrameReader:
    def __new__(
        cls, require_end: bool, max_message: int | None, loads_options: dict[str, Any]
    ) -> Self: ...
    @property
    def offset(self) -> int: ...
    @property
    def index(self) -> int: ...
    def set_fast_until(self, offset: int) -> None: ...
    def next_message(self, data: Buffer, base: int) -> Any: ...
    def step(self, data: Buffer, base: int, ends: bool) -> int | None: ...
    def decode_payload(self, data: Buffer, base: int) -> Any: ...
    def payload_read(self) -> None: ...
    def cut(self, have: int) -> DecodeError: ...

@final
class _FrameGatherer:
    def __new__(
        cls, require_end: bool, max_message: int | None, loads_options: dict[str, Any]
    ) -> Self: ...
    @property
    def index(self) -> int: ...
    @property
    def ended(self) -> bool: ...
    def feed(self, chunk: Buffer, out: list[Any]) -> None: ...
    def close(self) -> None: ...
