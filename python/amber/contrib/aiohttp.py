"""``application/x-amber`` responses and request bodies for aiohttp's web server.

``amber_response`` builds a ``web.Response`` from any value amber can write; ``read_amber``
reads a request body with a size limit (the application's ``client_max_size`` unless told
otherwise) and decodes it with a ``Codec``'s allow-list, keys and limits. Problems a client
can cause are raised as aiohttp's HTTP exceptions, with the same statuses as
``amber.contrib.starlette``:

- 415 ``HTTPUnsupportedMediaType``: the Content-Type is missing or is not
  ``application/x-amber``, or the body has a Content-Encoding (amber compresses payloads
  itself, under the decoder's limits).
- 413 ``HTTPRequestEntityTooLarge``: the body, or its declared Content-Length, is larger
  than the limit.
- 400 ``HTTPBadRequest``: the body is not a valid amber payload; the text names the byte
  offset and the kind.
- 422 ``HTTPUnprocessableEntity``: the payload is well formed but names a class the handler
  does not accept.
- 403 ``HTTPForbidden``: the codec has a key and the payload is unsigned, altered, signed
  with a key it does not know, or older than ``max_age``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import hdrs, web
from aiohttp.typedefs import LooseHeaders
from multidict import CIMultiDict

from .. import ClassNotAllowedError, DecodeError, SignatureError
from ._config import CONTENT_TYPE, Codec, OptionsError

__all__ = ["amber_response", "read_amber"]

_DEFAULT_CODEC = Codec(where="amber.contrib.aiohttp")


def amber_response(
    data: Any,
    *,
    status: int = 200,
    codec: Codec | None = None,
    headers: LooseHeaders | None = None,
) -> web.Response:
    """A response whose body is ``codec.dumps(data)``, sent as ``application/x-amber``.

    A Content-Type in ``headers`` is kept, as aiohttp keeps it; ``None`` data with a status
    that has no body (1xx, 204, 304) sends no body rather than an encoded ``None``.
    """
    real_headers: CIMultiDict[str] = CIMultiDict(headers or {})
    if hdrs.CONTENT_TYPE not in real_headers:
        real_headers[hdrs.CONTENT_TYPE] = CONTENT_TYPE
    if data is None and (status < 200 or status in (204, 304)):
        return web.Response(status=status, headers=real_headers)
    body = (codec if codec is not None else _DEFAULT_CODEC).dumps(data)
    return web.Response(body=body, status=status, headers=real_headers)


def _media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def _too_large(limit: int, text: str) -> web.HTTPRequestEntityTooLarge:
    return web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=limit + 1, text=text)


def _refuse_early(request: web.BaseRequest, limit: int) -> None:
    """The checks the headers alone decide, made before a byte of the body is read."""
    content_type = request.headers.get(hdrs.CONTENT_TYPE)
    if content_type is None:
        raise web.HTTPUnsupportedMediaType(
            text=f"missing Content-Type: an amber body is sent as {CONTENT_TYPE}"
        )
    if _media_type(content_type) != CONTENT_TYPE:
        raise web.HTTPUnsupportedMediaType(
            text=f"Content-Type {content_type!r} is not {CONTENT_TYPE}, the type this handler reads"
        )
    encoding = request.headers.get(hdrs.CONTENT_ENCODING)
    if encoding is not None and encoding.strip().lower() not in ("", "identity"):
        raise web.HTTPUnsupportedMediaType(
            text=f"Content-Encoding {encoding!r} is not accepted for an amber body: amber "
            "compresses payloads itself (Codec(compress='zstd')) under the decoder's size limits"
        )
    declared = request.headers.get(hdrs.CONTENT_LENGTH)
    if declared is not None and limit:
        try:
            length = int(declared)
        except ValueError:
            raise web.HTTPBadRequest(text=f"Content-Length {declared!r} is not a number") from None
        if length > limit:
            raise _too_large(
                limit,
                f"Content-Length {length} is over the limit of {limit} bytes for an amber body",
            )


async def _read_body(request: web.BaseRequest, limit: int) -> bytearray:
    body = bytearray()
    stream = request.content
    while True:
        if limit:
            # One byte more than still fits is enough to know the body is too large, and no
            # read ever returns more than it is asked for.
            chunk = await stream.read(limit - len(body) + 1)
        else:
            chunk = await stream.readany()
        if not chunk:
            return body
        body += chunk
        if limit and len(body) > limit:
            raise _too_large(limit, f"amber body is over the limit of {limit} bytes")


def _decode(codec: Codec, body: bytearray) -> Any:
    try:
        return codec.loads(body)
    except SignatureError as exc:
        raise web.HTTPForbidden(text=f"amber body refused: {exc}") from exc
    except ClassNotAllowedError as exc:
        raise web.HTTPUnprocessableEntity(
            text=f"amber body holds an instance of {exc.module}.{exc.qualname}, a class this "
            f"handler does not accept (at byte {exc.offset}, {exc.kind})"
        ) from exc
    except DecodeError as exc:
        raise web.HTTPBadRequest(text=f"undecodable amber body: {exc}") from exc


async def read_amber(
    request: web.BaseRequest, *, codec: Codec | None = None, max_size: int | None = None
) -> Any:
    """The request's body decoded by ``codec``, read in pieces and never past the limit.

    The limit is ``max_size``, or else the application's ``client_max_size`` (1 MiB unless
    ``web.Application(client_max_size=...)`` says otherwise; 0 there means no limit, as it
    does for ``request.read()``). A Content-Length over the limit is refused before the body
    is read, and a chunked body as soon as it passes the limit: at most the limit plus one
    byte is ever held. Raises aiohttp's HTTP exceptions (415, 413, 400, 422 or 403).
    """
    if max_size is None:
        limit = request.client_max_size
    elif isinstance(max_size, bool) or not isinstance(max_size, int) or max_size <= 0:
        raise OptionsError(
            f"read_amber: max_size must be a positive number of bytes, not {max_size!r}"
        )
    else:
        limit = max_size
    _refuse_early(request, limit)
    body = await _read_body(request, limit)
    return _decode(codec if codec is not None else _DEFAULT_CODEC, body)
