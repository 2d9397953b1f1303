"""What an ``application/x-amber`` request body must pass, whatever the web framework.

The Starlette and aiohttp adapters answer the same problems with the same statuses; the
rules live here once, and each adapter only turns a :class:`Refusal` into its framework's
HTTP exception:

- 415: the Content-Type is missing or is not ``application/x-amber``, or the body has a
  Content-Encoding (amber compresses payloads itself, under the decoder's limits, while a
  compressed body would slip past the size limit).
- 413: the body, or its declared Content-Length, is larger than the limit.
- 400: the Content-Length is not a number, or the body is not a valid amber payload (the
  text names the byte offset and the kind).
- 422: the payload is well formed but names a class the handler does not accept.
- 403: the codec has a key and the payload is unsigned, altered, signed with a key it does
  not know, or older than ``max_age``.
"""

from __future__ import annotations

from typing import Any

from .. import ClassNotAllowedError, DecodeError, SignatureError
from ._config import CONTENT_TYPE, Codec, OptionsError

__all__ = [
    "Refusal",
    "body_allowed",
    "check_headers",
    "check_max_size",
    "decode_body",
    "too_large",
]


class Refusal(Exception):
    """A request the handler refuses: the HTTP status and the text to send back."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(status, text)
        self.status = status
        self.text = text


def body_allowed(status: int) -> bool:
    """Whether a response of this status may carry a body (not 1xx, 204 or 304)."""
    return status >= 200 and status not in (204, 304)


def check_max_size(max_size: object, where: str) -> int:
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size <= 0:
        raise OptionsError(
            f"{where}: max_size must be a positive number of bytes, not {max_size!r}"
        )
    return max_size


def too_large(limit: int) -> Refusal:
    return Refusal(413, f"amber body is over the limit of {limit} bytes")


def check_headers(
    content_type: str | None,
    content_encoding: str | None,
    content_length: str | None,
    limit: int | None,
    reader: str,
) -> None:
    """The checks the headers alone decide, made before a byte of the body is read.

    ``limit`` None means no size limit; ``reader`` names the handler in the texts
    ("endpoint", "handler").
    """
    if content_type is None:
        raise Refusal(415, f"missing Content-Type: an amber body is sent as {CONTENT_TYPE}")
    if content_type.split(";", 1)[0].strip().lower() != CONTENT_TYPE:
        raise Refusal(
            415,
            f"Content-Type {content_type!r} is not {CONTENT_TYPE}, the type this {reader} reads",
        )
    if content_encoding is not None and content_encoding.strip().lower() not in ("", "identity"):
        raise Refusal(
            415,
            f"Content-Encoding {content_encoding!r} is not accepted for an amber body: amber "
            "compresses payloads itself (Codec(compress='zstd')) under the decoder's size limits",
        )
    if content_length is not None and limit is not None:
        try:
            length = int(content_length)
        except ValueError:
            raise Refusal(400, f"Content-Length {content_length!r} is not a number") from None
        if length > limit:
            raise Refusal(
                413,
                f"Content-Length {length} is over the limit of {limit} bytes for an amber body",
            )


def decode_body(codec: Codec, body: bytes | bytearray, reader: str) -> Any:
    """``codec.loads(body)``, or a Refusal whose ``__cause__`` is amber's error."""
    try:
        return codec.loads(body)
    except SignatureError as exc:
        raise Refusal(403, f"amber body refused: {exc}") from exc
    except ClassNotAllowedError as exc:
        raise Refusal(
            422,
            f"amber body holds an instance of {exc.module}.{exc.qualname}, a class this "
            f"{reader} does not accept (at byte {exc.offset}, {exc.kind})",
        ) from exc
    except DecodeError as exc:
        raise Refusal(400, f"undecodable amber body: {exc}") from exc
