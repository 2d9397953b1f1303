from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal, final

from typing_extensions import Buffer, Self

from ._classes import CustomType

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "FORMAT_VERSION",
    "MAX_DEPTH_LIMIT",
    "OOB_THRESHOLD",
    "ClassNotAllowedError",
    "DecodeError",
    "DecodeLimitError",
    "Decoder",
    "EncodeError",
    "Encoder",
    "dumps",
    "loads",
]

FORMAT_VERSION: Final[int]
MAX_DEPTH_LIMIT: Final[int]
DEFAULT_MAX_DEPTH: Final[int]
OOB_THRESHOLD: Final[int]

_Types = Iterable[type | tuple[str, type]] | Mapping[str, type] | None
_Custom = Iterable[CustomType[Any]] | None
_BufferCallback = Callable[[memoryview], object] | None

class EncodeError(TypeError):
    path: str

class DecodeError(ValueError):
    offset: int
    kind: str

class DecodeLimitError(DecodeError): ...

class ClassNotAllowedError(DecodeError):
    module: str
    qualname: str

def dumps(
    obj: Any,
    *,
    refs: bool = True,
    max_depth: int = 1000,
    custom: _Custom = None,
    buffer_callback: _BufferCallback = None,
    canonical: bool = False,
    sort_keys: bool = False,
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
) -> Any: ...

@final
class Encoder:
    def __new__(
        cls,
        *,
        refs: bool = True,
        max_depth: int = 1000,
        custom: _Custom = None,
        buffer_callback: _BufferCallback = None,
        canonical: bool = False,
        sort_keys: bool = False,
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
    ) -> Self: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def max_alloc(self) -> int | None: ...
    def decode(self, data: Buffer, *, buffers: Iterable[Buffer] | None = None) -> Any: ...
