"""``application/x-amber`` responses and request bodies for Starlette and FastAPI.

``AmberResponse`` renders any value amber can write; ``read_amber`` reads a request body with
a size limit and decodes it with a ``Codec``'s allow-list, keys and limits; ``AmberBody`` is
the same reader as a FastAPI dependency. Problems a client can cause become
``HTTPException`` with these statuses:

- 415: the Content-Type is missing or is not ``application/x-amber``, or the body has a
  Content-Encoding (amber compresses payloads itself, under the decoder's limits).
- 413: the body, or its declared Content-Length, is larger than ``max_size``.
- 400: the body is not a valid amber payload; the detail names the byte offset and the kind.
- 422: the payload is well formed but names a class the endpoint does not accept.
- 403: the endpoint's codec has a key and the payload is unsigned, altered, signed with a
  key it does not know, or older than ``max_age``.

FastAPI hands a returned value to ``response_class`` only after ``jsonable_encoder`` has
turned tuples, sets, datetimes, dataclasses... into JSON types; an endpoint that wants the
value sent exactly returns ``AmberResponse(value)`` itself, which FastAPI passes through.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import aclosing
from typing import Any

from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ._config import CONTENT_TYPE, Codec, OptionsError
from ._http import Refusal, body_allowed, check_headers, check_max_size, decode_body, too_large

__all__ = ["DEFAULT_MAX_SIZE", "AmberBody", "AmberResponse", "read_amber"]

# The same default as aiohttp's client_max_size, so both integrations refuse the same bodies
# unless told otherwise.
DEFAULT_MAX_SIZE = 1024 * 1024

_DEFAULT_CODEC = Codec(where="amber.contrib.starlette")


class AmberResponse(Response):
    """A response whose body is ``codec.dumps(content)``, sent as ``application/x-amber``.

    The codec is the class attribute ``codec`` (no classes allowed, unsigned, by default), or
    the ``codec=`` given to one response. FastAPI builds ``response_class`` itself, with no
    way to pass it arguments, so ``AmberResponse.with_codec(codec)`` makes a subclass whose
    class attribute is that codec. A ``None`` content with a status that has no body (1xx,
    204, 304) sends no body rather than an encoded ``None``.
    """

    media_type = CONTENT_TYPE
    codec: Codec = _DEFAULT_CODEC

    def __init__(
        self,
        content: Any = None,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        media_type: str | None = None,
        background: BackgroundTask | None = None,
        *,
        codec: Codec | None = None,
    ) -> None:
        # Set before Response.__init__, which renders the body straight away.
        if codec is not None:
            self.codec = codec
        super().__init__(content, status_code, headers, media_type, background)

    def render(self, content: Any) -> bytes:
        if content is None and not body_allowed(self.status_code):
            return b""
        return self.codec.dumps(content)

    @classmethod
    def with_codec(cls, codec: Codec) -> type[AmberResponse]:
        """A subclass that renders with ``codec``: for ``response_class=`` and the like."""
        if not isinstance(codec, Codec):
            raise OptionsError(
                f"{cls.__name__}.with_codec: expected an amber.contrib.Codec, not {codec!r}"
            )
        name = f"{cls.__name__}WithCodec"
        return type(name, (cls,), {"codec": codec, "__module__": cls.__module__})


async def read_amber(
    request: Request, *, codec: Codec | None = None, max_size: int = DEFAULT_MAX_SIZE
) -> Any:
    """The request's body decoded by ``codec``, read in chunks and never past ``max_size``.

    A Content-Length over the limit is refused before the body is read; a chunked body is
    refused at the first chunk that takes it over the limit, so at most ``max_size`` bytes
    are ever held. Raises ``HTTPException`` (415, 413, 400, 422 or 403, see the module).
    """
    limit = check_max_size(max_size, "read_amber")
    headers = request.headers
    try:
        check_headers(
            headers.get("content-type"),
            headers.get("content-encoding"),
            headers.get("content-length"),
            limit,
            "endpoint",
        )
        body = bytearray()
        async with aclosing(request.stream()) as chunks:
            async for chunk in chunks:
                if len(body) + len(chunk) > limit:
                    raise too_large(limit)
                body += chunk
        return decode_body(codec if codec is not None else _DEFAULT_CODEC, body, "endpoint")
    except Refusal as refusal:
        # amber's own error, when there is one, stays the cause for handlers and logs.
        raise HTTPException(refusal.status, refusal.text) from refusal.__cause__


class AmberBody:
    """A FastAPI dependency that is the request's amber body, checked as ``read_amber`` does.

    ``AmberBody(types=[Point], max_size=65536)`` builds its codec once from the keyword
    options of ``amber.contrib.Codec``; ``AmberBody(codec=codec)`` uses a codec built
    elsewhere (shared with ``AmberResponse.with_codec``, say). Use it as
    ``value: Annotated[Any, Depends(AmberBody(types=[Point]))]``.
    """

    __slots__ = ("codec", "max_size")

    def __init__(
        self,
        types: Any = None,
        *,
        codec: Codec | None = None,
        max_size: int = DEFAULT_MAX_SIZE,
        **options: Any,
    ) -> None:
        where = "AmberBody"
        self.max_size = check_max_size(max_size, where)
        if codec is not None:
            if types is not None or options:
                given = ", ".join(sorted([*options, *(["types"] if types is not None else [])]))
                raise OptionsError(
                    f"{where}: pass either codec= or codec options ({given}), not both"
                )
            if not isinstance(codec, Codec):
                raise OptionsError(f"{where}: codec must be an amber.contrib.Codec, not {codec!r}")
            self.codec = codec
        else:
            self.codec = Codec(types=types, where=where, **options)

    async def __call__(self, request: Request) -> Any:
        return await read_amber(request, codec=self.codec, max_size=self.max_size)
