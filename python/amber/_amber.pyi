from typing import Any, Final, final

from typing_extensions import Buffer, Self

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "FORMAT_VERSION",
    "MAX_DEPTH_LIMIT",
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

class EncodeError(TypeError):
    path: str

class DecodeError(ValueError):
    offset: int
    kind: str

class DecodeLimitError(DecodeError): ...

def dumps(obj: Any, *, refs: bool = True, max_depth: int = 1000) -> bytes: ...
def loads(data: Buffer, *, max_depth: int = 1000, max_alloc: int | None = None) -> Any: ...

@final
class Encoder:
    def __new__(cls, *, refs: bool = True, max_depth: int = 1000) -> Self: ...
    @property
    def refs(self) -> bool: ...
    @property
    def max_depth(self) -> int: ...
    def encode(self, obj: Any) -> bytes: ...

@final
class Decoder:
    def __new__(cls, *, max_depth: int = 1000, max_alloc: int | None = None) -> Self: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def max_alloc(self) -> int | None: ...
    def decode(self, data: Buffer) -> Any: ...
