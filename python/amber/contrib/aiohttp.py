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

from ._config import CONTENT_TYPE, Codec
from ._http import Refusal, body_allowed, check_headers, check_max_size, decode_body, too_large

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
    if data is None and not body_allowed(status):
        return web.Response(status=status, headers=real_headers)
    body = (codec if codec is not None else _DEFAULT_CODEC).dumps(data)
    return web.Response(body=body, status=status, headers=real_headers)


def _http_error(refusal: Refusal, limit: int | None) -> web.HTTPException:
    """aiohttp's exception for a refusal: aiohttp has one class per status."""
    if refusal.status == 413:
        # Only a limit refuses a size; what was sent is known only to be more than the limit.
        most = limit if limit is not None else 0
        return web.HTTPRequestEntityTooLarge(max_size=most, actual_size=most + 1, text=refusal.text)
    by_status: dict[int, type[web.HTTPException]] = {
        400: web.HTTPBadRequest,
        403: web.HTTPForbidden,
        415: web.HTTPUnsupportedMediaType,
        422: web.HTTPUnprocessableEntity,
    }
    return by_status[refusal.status](text=refusal.text)


async def _read_body(request: web.BaseRequest, limit: int | None) -> bytearray:
    body = bytearray()
    stream = request.content
    while True:
        if limit is not None:
            # One byte more than still fits is enough to know the body is too large, and no
            # read ever returns more than it is asked for.
            chunk = await stream.read(limit - len(body) + 1)
        else:
            chunk = await stream.readany()
        if not chunk:
            return body
        body += chunk
        if limit is not None and len(body) > limit:
            raise too_large(limit)


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
    limit: int | None
    if max_size is None:
        # 0 is aiohttp's own word for "no limit".
        limit = request.client_max_size or None
    else:
        limit = check_max_size(max_size, "read_amber")
    headers = request.headers
    try:
        check_headers(
            headers.get(hdrs.CONTENT_TYPE),
            headers.get(hdrs.CONTENT_ENCODING),
            headers.get(hdrs.CONTENT_LENGTH),
            limit,
            "handler",
        )
        body = await _read_body(request, limit)
        return decode_body(codec if codec is not None else _DEFAULT_CODEC, body, "handler")
    except Refusal as refusal:
        raise _http_error(refusal, limit) from refusal.__cause__
