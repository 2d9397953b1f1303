"""amber.contrib.starlette and amber.contrib.aiohttp against real servers and real clients.

A Starlette app and a FastAPI app run under uvicorn, and an aiohttp app under its own
AppRunner, each in a background thread listening on 127.0.0.1; httpx and aiohttp's
ClientSession talk to them over TCP. The servers run in this process so that the tests can
look at what a handler was given: a probe around the ASGI app records every body chunk the
app pulled, and the aiohttp handlers record how much of the body had arrived and how much
read_amber left unread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import math
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Annotated, Any

import aiohttp
import amber
import httpx
import pytest
import uvicorn
from _services import ServiceError, wait_for_port
from aiohttp import web
from amber.contrib import CONTENT_TYPE, Codec, OptionsError
from amber.contrib.aiohttp import amber_response
from amber.contrib.aiohttp import read_amber as aio_read_amber
from amber.contrib.starlette import AmberBody, AmberResponse, read_amber
from fastapi import Depends, FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

LIMIT = 64 * 1024  # the handlers' max_size
AIO_CLIENT_MAX = 32 * 1024  # the aiohttp app's client_max_size, read_amber's default there
BIG = 8 * 1024 * 1024  # an upload far past every limit
KEY = b"amber-web-tests-signing-secret"
STARTUP_TIMEOUT = 15.0


@dataclasses.dataclass
class Point:
    x: int
    y: int
    label: str


@dataclasses.dataclass
class Secret:
    """A class no endpoint allows."""

    value: str


ALLOWING = Codec(types=[Point], where="tests: ALLOWING")
SIGNED = Codec(types=[Point], key=KEY, where="tests: SIGNED")
AllowingResponse = AmberResponse.with_codec(ALLOWING)
SignedResponse = AmberResponse.with_codec(SIGNED)


def rich_value() -> dict[str, Any]:
    shared = [1, 2, 3]
    value: dict[str, Any] = {
        "tuple": (1, "two", 3.5),
        "set": {1, 2, 3},
        "frozenset": frozenset({"a", "b"}),
        "when": datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=2))),
        "naive": datetime(1999, 12, 31, 23, 59, 59),
        "price": Decimal("19.990"),
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "point": Point(3, -4, "corner"),
        "shared": (shared, shared),
        "bytes": b"\x00\xff",
        "neg_zero": -0.0,
        "big": 2**100 + 1,
    }
    value["self"] = value
    return value


def assert_rich(back: Any) -> None:
    """``back`` is rich_value() exactly: values, types, identity and the cycle."""
    original = rich_value()
    assert type(back) is dict
    assert back["self"] is back
    assert set(back) == set(original)
    for key, expected in original.items():
        if key == "self":
            continue
        assert type(back[key]) is type(expected), key
        assert back[key] == expected, key
    assert back["shared"][0] is back["shared"][1]
    assert type(back["shared"][0]) is list
    assert str(back["price"]) == "19.990"
    assert back["when"].utcoffset() == timedelta(hours=2)
    assert back["naive"].tzinfo is None
    assert math.copysign(1.0, back["neg_zero"]) == -1.0


def payload_of_size(size: int) -> bytes:
    """An amber payload of exactly ``size`` bytes (a bytes value padded to fit)."""
    for n in range(max(0, size - 16), size + 1):
        data = amber.dumps(b"x" * n)
        if len(data) == size:
            return data
    raise AssertionError(f"no bytes value encodes to exactly {size} bytes")


def chunked(total: int, piece: int = 64 * 1024) -> Iterator[bytes]:
    """A body with no Content-Length: httpx sends an iterator with chunked transfer coding."""
    sent = 0
    while sent < total:
        n = min(piece, total - sent)
        yield b"\xab" * n
        sent += n


def amber_headers(probe: str = "") -> dict[str, str]:
    return {"content-type": CONTENT_TYPE, "x-probe": probe or uuid.uuid4().hex}


# --- servers ---------------------------------------------------------------------------------


class UvicornThread:
    """uvicorn serving an ASGI app on a socket of 127.0.0.1 it is handed, in a thread."""

    def __init__(self, app: Any) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app,
            lifespan="off",
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=5,
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def __enter__(self) -> UvicornThread:
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self.server.started:
            if not self._thread.is_alive():
                self._sock.close()
                raise ServiceError("uvicorn exited before it started serving")
            if time.monotonic() > deadline:
                self.__exit__()
                raise ServiceError(f"uvicorn did not start within {STARTUP_TIMEOUT:.0f} s")
            time.sleep(0.02)
        wait_for_port(self.port, timeout=STARTUP_TIMEOUT)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=15)
        self._sock.close()
        if self._thread.is_alive():
            raise ServiceError("uvicorn did not stop within 15 s")


class AiohttpThread:
    """An aiohttp web app on a free port of 127.0.0.1, its event loop in a thread."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    async def _start(self) -> int:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        return int(self._runner.addresses[0][1])

    def __enter__(self) -> AiohttpThread:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        try:
            port = future.result(timeout=STARTUP_TIMEOUT)
            wait_for_port(port, timeout=STARTUP_TIMEOUT)
        except Exception as exc:
            self.__exit__()
            raise ServiceError(f"the aiohttp server did not start: {exc!r}") from exc
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._runner is not None:
            cleanup = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
            cleanup.result(timeout=15)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=15)
        if self._thread.is_alive():
            raise ServiceError("the aiohttp server's loop did not stop within 15 s")
        self._loop.close()


class BodyProbe:
    """ASGI middleware: the sizes of the body chunks the app pulled, and the headers it got."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.chunks: dict[str, list[int]] = {}
        self.headers: dict[str, dict[str, str]] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        probe = headers.get("x-probe", "")
        sizes = self.chunks.setdefault(probe, [])
        self.headers[probe] = headers

        async def counting_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request" and message.get("body"):
                sizes.append(len(message["body"]))
            return message

        await self.app(scope, counting_receive, send)


# --- the Starlette app -----------------------------------------------------------------------

STARLETTE_SEEN: dict[str, Any] = {}


async def star_echo(request: Request) -> AmberResponse:
    value = await read_amber(request, codec=ALLOWING, max_size=LIMIT)
    STARLETTE_SEEN[request.headers["x-probe"]] = value
    return AmberResponse(value, codec=ALLOWING)


async def star_strict(request: Request) -> AmberResponse:
    return AmberResponse(await read_amber(request, max_size=LIMIT))


async def star_default_limit(request: Request) -> AmberResponse:
    return AmberResponse(len(await read_amber(request)))


async def star_signed(request: Request) -> AmberResponse:
    return SignedResponse(await read_amber(request, codec=SIGNED, max_size=LIMIT))


async def star_rich(request: Request) -> AmberResponse:
    return AllowingResponse(rich_value(), status_code=201, headers={"x-amber-test": "yes"})


async def star_nothing(request: Request) -> AmberResponse:
    return AmberResponse(None, status_code=204)


def starlette_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/echo", star_echo, methods=["POST"]),
            Route("/strict", star_strict, methods=["POST"]),
            Route("/default-limit", star_default_limit, methods=["POST"]),
            Route("/signed", star_signed, methods=["POST"]),
            Route("/rich", star_rich),
            Route("/nothing", star_nothing),
        ]
    )


# --- the FastAPI app -------------------------------------------------------------------------

EchoBody = Annotated[Any, Depends(AmberBody(types=[Point], max_size=LIMIT))]
StrictBody = Annotated[Any, Depends(AmberBody(max_size=LIMIT))]
SignedBody = Annotated[Any, Depends(AmberBody(codec=SIGNED, max_size=LIMIT))]
FASTAPI_SEEN: dict[str, Any] = {}


def fastapi_app() -> FastAPI:
    api = FastAPI(default_response_class=AllowingResponse)

    @api.post("/echo")
    async def echo(value: EchoBody, request: Request) -> AmberResponse:
        FASTAPI_SEEN[request.headers["x-probe"]] = value
        return AllowingResponse(value)

    @api.post("/strict")
    async def strict(value: StrictBody) -> AmberResponse:
        return AmberResponse(value)

    @api.post("/signed", response_class=SignedResponse)
    async def signed(value: SignedBody) -> AmberResponse:
        return SignedResponse(value)

    @api.get("/plain")
    async def plain():
        # No annotation: FastAPI passes the value through jsonable_encoder, then to the
        # default response class.
        return {"name": "ada", "numbers": [1, 2, 3], "pair": (1, 2)}

    return api


# --- the aiohttp app -------------------------------------------------------------------------

AIO_SEEN: dict[str, Any] = {}


async def _refused(request: web.Request, exc: web.HTTPException) -> web.HTTPException:
    """Record how far the body had come in and how much read_amber left, then re-raise."""
    arrived = request.content.total_bytes
    rest = 0
    while chunk := await request.content.readany():
        rest += len(chunk)
    AIO_SEEN[request.headers.get("x-probe", "")] = {"arrived": arrived, "unread": rest}
    return exc


async def aio_echo(request: web.Request) -> web.Response:
    try:
        value = await aio_read_amber(request, codec=ALLOWING, max_size=LIMIT)
    except web.HTTPException as exc:
        raise await _refused(request, exc) from exc.__cause__
    AIO_SEEN[request.headers["x-probe"]] = value
    return amber_response(value, codec=ALLOWING)


async def aio_strict(request: web.Request) -> web.Response:
    return amber_response(await aio_read_amber(request, max_size=LIMIT))


async def aio_default_limit(request: web.Request) -> web.Response:
    try:
        value = await aio_read_amber(request)
    except web.HTTPException as exc:
        raise await _refused(request, exc) from exc.__cause__
    return amber_response(len(value))


async def aio_signed(request: web.Request) -> web.Response:
    return amber_response(await aio_read_amber(request, codec=SIGNED, max_size=LIMIT), codec=SIGNED)


async def aio_rich(request: web.Request) -> web.Response:
    return amber_response(rich_value(), status=201, codec=ALLOWING, headers={"X-Amber-Test": "yes"})


async def aio_nothing(request: web.Request) -> web.Response:
    return amber_response(None, status=204)


async def aio_bad_limit(request: web.Request) -> web.Response:
    try:
        await aio_read_amber(request, max_size=0)
    except OptionsError as exc:
        return web.Response(text=str(exc), status=500)
    return web.Response(text="max_size=0 was accepted", status=200)


def aiohttp_app() -> web.Application:
    app = web.Application(client_max_size=AIO_CLIENT_MAX)
    app.router.add_post("/echo", aio_echo)
    app.router.add_post("/strict", aio_strict)
    app.router.add_post("/default-limit", aio_default_limit)
    app.router.add_post("/signed", aio_signed)
    app.router.add_get("/rich", aio_rich)
    app.router.add_get("/nothing", aio_nothing)
    app.router.add_post("/bad-limit", aio_bad_limit)
    return app


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def star() -> Iterator[tuple[UvicornThread, BodyProbe]]:
    probe = BodyProbe(starlette_app())
    with UvicornThread(probe) as server:
        yield server, probe


@pytest.fixture(scope="module")
def fast() -> Iterator[tuple[UvicornThread, BodyProbe]]:
    probe = BodyProbe(fastapi_app())
    with UvicornThread(probe) as server:
        yield server, probe


@pytest.fixture(scope="module")
def aio() -> Iterator[AiohttpThread]:
    with AiohttpThread(aiohttp_app()) as server:
        yield server


def client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=20.0)


# --- Starlette -------------------------------------------------------------------------------


def test_import_amber_contrib_imports_no_web_framework() -> None:
    code = (
        "import sys, amber, amber.contrib\n"
        "names = ('starlette', 'fastapi', 'aiohttp', 'uvicorn', 'httpx', 'multidict')\n"
        "print(','.join(n for n in names if n in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == ""


def test_starlette_echoes_a_rich_value_exactly(star: tuple[UvicornThread, BodyProbe]) -> None:
    server, _ = star
    probe = uuid.uuid4().hex
    with client(server.url) as http:
        response = http.post(
            "/echo", content=amber.dumps(rich_value()), headers=amber_headers(probe)
        )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == CONTENT_TYPE
    assert int(response.headers["content-length"]) == len(response.content)
    assert_rich(STARLETTE_SEEN[probe])
    assert_rich(amber.loads(response.content, types=[Point]))


def test_starlette_response_status_headers_and_codec(star: tuple[UvicornThread, BodyProbe]) -> None:
    server, _ = star
    with client(server.url) as http:
        rich = http.get("/rich")
        nothing = http.get("/nothing")
    assert rich.status_code == 201
    assert rich.headers["x-amber-test"] == "yes"
    assert rich.headers["content-type"] == CONTENT_TYPE
    assert_rich(amber.loads(rich.content, types=[Point]))
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(rich.content)
    assert nothing.status_code == 204
    assert nothing.content == b""


def test_starlette_accepts_a_body_of_exactly_the_limit(
    star: tuple[UvicornThread, BodyProbe],
) -> None:
    server, _ = star
    data = payload_of_size(LIMIT)
    with client(server.url) as http:
        response = http.post("/echo", content=data, headers=amber_headers())
    assert response.status_code == 200, response.text
    assert amber.loads(response.content) == amber.loads(data)


def test_starlette_refuses_a_content_length_over_the_limit_before_reading(
    star: tuple[UvicornThread, BodyProbe],
) -> None:
    server, probe = star
    key = uuid.uuid4().hex
    with client(server.url) as http:
        response = http.post(
            "/echo", content=payload_of_size(LIMIT + 1), headers=amber_headers(key)
        )
    assert response.status_code == 413
    assert f"Content-Length {LIMIT + 1}" in response.text
    assert str(LIMIT) in response.text
    assert probe.headers[key]["content-length"] == str(LIMIT + 1)
    assert probe.chunks[key] == []  # not one byte of the body was pulled
    assert key not in STARLETTE_SEEN


def test_starlette_stops_reading_a_chunked_upload_at_the_limit(
    star: tuple[UvicornThread, BodyProbe],
) -> None:
    server, probe = star
    key = uuid.uuid4().hex
    with client(server.url) as http:
        response = http.post("/echo", content=chunked(BIG), headers=amber_headers(key))
    assert response.status_code == 413
    assert f"over the limit of {LIMIT} bytes" in response.text
    assert "content-length" not in probe.headers[key]
    assert probe.headers[key]["transfer-encoding"] == "chunked"
    sizes = probe.chunks[key]
    # Every chunk but the last fitted under the limit: the reader stopped at the first one
    # that took the body past it, and pulled nothing after.
    assert sizes
    assert sum(sizes[:-1]) <= LIMIT < sum(sizes)
    assert sum(sizes) < BIG // 4


def test_starlette_default_limit_is_one_mebibyte(star: tuple[UvicornThread, BodyProbe]) -> None:
    server, _ = star
    with client(server.url) as http:
        fits = http.post(
            "/default-limit", content=payload_of_size(1024 * 1024), headers=amber_headers()
        )
        over = http.post(
            "/default-limit", content=payload_of_size(1024 * 1024 + 1), headers=amber_headers()
        )
    assert fits.status_code == 200, fits.text
    assert amber.loads(fits.content) == len(amber.loads(payload_of_size(1024 * 1024)))
    assert over.status_code == 413
    assert str(1024 * 1024) in over.text


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({}, "missing Content-Type"),
        ({"content-type": "application/json"}, "'application/json'"),
        ({"content-type": "application/x-amberx"}, "'application/x-amberx'"),
        ({"content-type": CONTENT_TYPE, "content-encoding": "gzip"}, "Content-Encoding 'gzip'"),
    ],
)
def test_starlette_refuses_other_media_types_with_415(
    star: tuple[UvicornThread, BodyProbe], headers: dict[str, str], named: str
) -> None:
    server, probe = star
    key = uuid.uuid4().hex
    with client(server.url) as http:
        body = amber.dumps([1, 2])
        if "content-encoding" in headers:
            body = gzip.compress(body)
        response = http.post("/echo", content=body, headers={**headers, "x-probe": key})
    assert response.status_code == 415
    assert named in response.text
    assert probe.chunks[key] == []


def test_starlette_accepts_media_type_parameters_and_case(
    star: tuple[UvicornThread, BodyProbe],
) -> None:
    server, _ = star
    with client(server.url) as http:
        response = http.post(
            "/strict",
            content=amber.dumps((1, {2})),
            headers={"content-type": "Application/X-Amber; version=1"},
        )
    assert response.status_code == 200, response.text
    back = amber.loads(response.content)
    assert back == (1, {2}) and type(back) is tuple and type(back[1]) is set


@pytest.mark.parametrize(
    "body",
    [b"garbage", b"", amber.dumps([1, 2, 3])[:-1], amber.dumps("x") + b"\x00"],
    ids=["bad-magic", "empty", "truncated", "trailing"],
)
def test_starlette_garbage_is_400_with_offset_and_kind(
    star: tuple[UvicornThread, BodyProbe], body: bytes
) -> None:
    server, _ = star
    with pytest.raises(amber.DecodeError) as expected:
        amber.loads(body)
    with client(server.url) as http:
        response = http.post("/strict", content=body, headers=amber_headers())
    assert response.status_code == 400
    assert response.text.startswith("undecodable amber body: ")
    assert f"at byte {expected.value.offset}, {expected.value.kind}" in response.text


def test_starlette_disallowed_class_is_422(star: tuple[UvicornThread, BodyProbe]) -> None:
    server, _ = star
    with client(server.url) as http:
        strict = http.post(
            "/strict", content=amber.dumps([Point(1, 2, "p")]), headers=amber_headers()
        )
        echo = http.post("/echo", content=amber.dumps({"s": Secret("x")}), headers=amber_headers())
    assert strict.status_code == 422
    assert f"{Point.__module__}.Point" in strict.text
    assert "class_not_allowed" in strict.text
    assert echo.status_code == 422
    assert f"{Secret.__module__}.Secret" in echo.text


def test_starlette_signed_codec(star: tuple[UvicornThread, BodyProbe]) -> None:
    server, _ = star
    value = {"point": Point(1, 2, "signed"), "when": datetime(2024, 1, 1)}
    signed = SIGNED.dumps(value)
    tampered = bytearray(signed)
    tampered[-1] ^= 0x01
    with client(server.url) as http:
        ok = http.post("/signed", content=signed, headers=amber_headers())
        altered = http.post("/signed", content=bytes(tampered), headers=amber_headers())
        unsigned = http.post("/signed", content=ALLOWING.dumps(value), headers=amber_headers())
        foreign = http.post(
            "/signed",
            content=Codec(key=b"another-secret-of-enough-length").dumps(value["when"]),
            headers=amber_headers(),
        )
    assert ok.status_code == 200, ok.text
    assert SIGNED.loads(ok.content) == value
    with pytest.raises(amber.SignatureError):
        ALLOWING.loads(ok.content)  # the response is signed too
    for response, kind in ((altered, "bad_signature"), (unsigned, "signature_required")):
        assert response.status_code == 403
        assert response.text.startswith("amber body refused: ")
        assert kind in response.text
    assert foreign.status_code == 403


def test_amber_options_are_checked_where_they_are_given() -> None:
    with pytest.raises(OptionsError, match="AmberBody: max_size must be a positive"):
        AmberBody(max_size=0)
    with pytest.raises(OptionsError, match="AmberBody: max_size"):
        AmberBody(max_size=True)
    with pytest.raises(OptionsError, match=r"either codec= or codec options \(key, types\)"):
        AmberBody([Point], codec=ALLOWING, key=KEY)
    with pytest.raises(OptionsError, match=r"AmberBody: types entry 'no_such_module\.Thing'"):
        AmberBody(types=["no_such_module.Thing"])
    with pytest.raises(OptionsError, match=r"with_codec: expected an amber\.contrib\.Codec"):
        AmberResponse.with_codec({"types": [Point]})
    bound = AmberResponse.with_codec(SIGNED)
    assert issubclass(bound, AmberResponse) and bound.codec is SIGNED
    assert AmberResponse.codec is not SIGNED  # the base class keeps its own codec


# --- FastAPI ---------------------------------------------------------------------------------


def test_fastapi_echoes_a_rich_value_exactly(fast: tuple[UvicornThread, BodyProbe]) -> None:
    server, _ = fast
    probe = uuid.uuid4().hex
    with client(server.url) as http:
        response = http.post(
            "/echo", content=amber.dumps(rich_value()), headers=amber_headers(probe)
        )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == CONTENT_TYPE
    assert_rich(FASTAPI_SEEN[probe])
    assert_rich(amber.loads(response.content, types=[Point]))


def test_fastapi_default_response_class_and_openapi(fast: tuple[UvicornThread, BodyProbe]) -> None:
    server, _ = fast
    with client(server.url) as http:
        plain = http.get("/plain")
        schema = http.get("/openapi.json").json()
    assert plain.status_code == 200
    assert plain.headers["content-type"] == CONTENT_TYPE
    # FastAPI ran the returned value through jsonable_encoder first: the tuple arrives as a
    # list, which is why the docs have endpoints return AmberResponse(value) themselves.
    assert amber.loads(plain.content) == {"name": "ada", "numbers": [1, 2, 3], "pair": [1, 2]}
    signed_responses = schema["paths"]["/signed"]["post"]["responses"]["200"]
    assert CONTENT_TYPE in signed_responses["content"]


def test_fastapi_limits_and_errors(fast: tuple[UvicornThread, BodyProbe]) -> None:
    server, probe = fast
    declared, streamed = uuid.uuid4().hex, uuid.uuid4().hex
    with client(server.url) as http:
        too_long = http.post(
            "/echo", content=payload_of_size(LIMIT + 1), headers=amber_headers(declared)
        )
        too_long_chunked = http.post("/echo", content=chunked(BIG), headers=amber_headers(streamed))
        exact = http.post("/echo", content=payload_of_size(LIMIT), headers=amber_headers())
        wrong_type = http.post(
            "/echo", content=amber.dumps(1), headers={"content-type": "text/plain"}
        )
        garbage = http.post("/echo", content=b"\xab\x41\x01\xff", headers=amber_headers())
        disallowed = http.post(
            "/strict", content=amber.dumps(Point(1, 2, "p")), headers=amber_headers()
        )
    assert too_long.status_code == 413
    assert f"Content-Length {LIMIT + 1}" in too_long.json()["detail"]
    assert probe.chunks[declared] == []
    assert too_long_chunked.status_code == 413
    sizes = probe.chunks[streamed]
    assert sum(sizes[:-1]) <= LIMIT < sum(sizes) < BIG // 4
    assert exact.status_code == 200, exact.text
    assert wrong_type.status_code == 415
    assert "'text/plain'" in wrong_type.json()["detail"]
    with pytest.raises(amber.DecodeError) as expected:
        amber.loads(b"\xab\x41\x01\xff")
    assert garbage.status_code == 400
    detail = garbage.json()["detail"]
    assert f"at byte {expected.value.offset}, {expected.value.kind}" in detail
    assert disallowed.status_code == 422
    assert f"{Point.__module__}.Point" in disallowed.json()["detail"]


def test_fastapi_signed_codec(fast: tuple[UvicornThread, BodyProbe]) -> None:
    server, _ = fast
    value = [Point(5, 6, "fast"), (Decimal("1.10"), {"k"})]
    signed = SIGNED.dumps(value)
    tampered = bytearray(signed)
    tampered[len(tampered) // 2] ^= 0x40
    with client(server.url) as http:
        ok = http.post("/signed", content=signed, headers=amber_headers())
        altered = http.post("/signed", content=bytes(tampered), headers=amber_headers())
    assert ok.status_code == 200, ok.text
    assert ok.headers["content-type"] == CONTENT_TYPE
    back = SIGNED.loads(ok.content)
    assert back == value and type(back[1]) is tuple and str(back[1][0]) == "1.10"
    with pytest.raises(amber.SignatureError):
        amber.loads(ok.content, types=[Point])
    assert altered.status_code == 403
    assert "bad_signature" in altered.json()["detail"]


# --- aiohttp ---------------------------------------------------------------------------------


def test_aiohttp_echoes_a_rich_value_exactly_with_both_clients(aio: AiohttpThread) -> None:
    via_httpx = uuid.uuid4().hex
    with client(aio.url) as http:
        response = http.post(
            "/echo", content=amber.dumps(rich_value()), headers=amber_headers(via_httpx)
        )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == CONTENT_TYPE
    assert_rich(AIO_SEEN[via_httpx])
    assert_rich(amber.loads(response.content, types=[Point]))

    via_aiohttp = uuid.uuid4().hex

    async def call() -> tuple[int, str, bytes]:
        timeout = aiohttp.ClientTimeout(total=20)
        async with aiohttp.ClientSession(aio.url, timeout=timeout) as session:
            async with session.post(
                "/echo", data=ALLOWING.dumps(rich_value()), headers=amber_headers(via_aiohttp)
            ) as reply:
                return reply.status, reply.content_type, await reply.read()

    status, content_type, body = asyncio.run(call())
    assert status == 200
    assert content_type == CONTENT_TYPE
    assert_rich(AIO_SEEN[via_aiohttp])
    assert_rich(ALLOWING.loads(body))


def test_aiohttp_response_status_headers_and_empty(aio: AiohttpThread) -> None:
    with client(aio.url) as http:
        rich = http.get("/rich")
        nothing = http.get("/nothing")
    assert rich.status_code == 201
    assert rich.headers["x-amber-test"] == "yes"
    assert rich.headers["content-type"] == CONTENT_TYPE
    assert_rich(amber.loads(rich.content, types=[Point]))
    assert nothing.status_code == 204
    assert nothing.content == b""


def test_aiohttp_limits(aio: AiohttpThread) -> None:
    declared, streamed, default = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
    over = payload_of_size(LIMIT + 1)

    async def call_declared() -> tuple[int, str]:
        timeout = aiohttp.ClientTimeout(total=20)
        async with aiohttp.ClientSession(aio.url, timeout=timeout) as session:
            async with session.post("/echo", data=over, headers=amber_headers(declared)) as reply:
                return reply.status, await reply.text()

    status, text = asyncio.run(call_declared())
    assert status == 413
    assert f"Content-Length {LIMIT + 1} is over the limit of {LIMIT} bytes" in text
    assert AIO_SEEN[declared]["unread"] == len(over)  # read_amber read none of it

    with client(aio.url) as http:
        chunked_reply = http.post("/echo", content=chunked(BIG), headers=amber_headers(streamed))
        exact = http.post("/echo", content=payload_of_size(LIMIT), headers=amber_headers())
        fits_default = http.post(
            "/default-limit", content=payload_of_size(AIO_CLIENT_MAX), headers=amber_headers()
        )
        over_default = http.post(
            "/default-limit",
            content=chunked(AIO_CLIENT_MAX + 1, piece=1000),
            headers=amber_headers(default),
        )
        bad_limit = http.post("/bad-limit", content=b"", headers=amber_headers())
    assert chunked_reply.status_code == 413
    assert f"over the limit of {LIMIT} bytes" in chunked_reply.text
    seen = AIO_SEEN[streamed]
    consumed = BIG - seen["unread"]
    assert LIMIT < consumed <= LIMIT + 1  # one byte past the limit is all it takes
    assert seen["arrived"] < BIG // 4  # and the server had stopped taking bytes off the socket
    assert exact.status_code == 200, exact.text
    assert amber.loads(exact.content) == amber.loads(payload_of_size(LIMIT))
    # Without max_size the limit is the application's client_max_size.
    assert fits_default.status_code == 200, fits_default.text
    assert over_default.status_code == 413
    assert f"over the limit of {AIO_CLIENT_MAX} bytes" in over_default.text
    # The byte past the limit was the body's last one: read_amber had to read it all to know.
    assert AIO_SEEN[default]["unread"] == 0
    assert bad_limit.status_code == 500
    assert "read_amber: max_size must be a positive number of bytes, not 0" in bad_limit.text


def test_aiohttp_media_type_garbage_and_classes(aio: AiohttpThread) -> None:
    with pytest.raises(amber.DecodeError) as expected:
        amber.loads(amber.dumps([1, 2, 3])[:-1])
    with client(aio.url) as http:
        missing = http.post("/strict", content=amber.dumps(1))
        wrong = http.post("/strict", content=amber.dumps(1), headers={"content-type": "text/csv"})
        gzipped = http.post(
            "/strict",
            content=gzip.compress(amber.dumps(1)),
            headers={"content-type": CONTENT_TYPE, "content-encoding": "gzip"},
        )
        params = http.post(
            "/strict",
            content=amber.dumps(frozenset({1})),
            headers={"content-type": "application/x-amber; q=1"},
        )
        garbage = http.post("/strict", content=amber.dumps([1, 2, 3])[:-1], headers=amber_headers())
        disallowed = http.post(
            "/strict", content=amber.dumps({"p": Point(0, 0, "")}), headers=amber_headers()
        )
        secret = http.post(
            "/echo", content=amber.dumps([Point(0, 0, ""), Secret("s")]), headers=amber_headers()
        )
    assert missing.status_code == 415 and "missing Content-Type" in missing.text
    assert wrong.status_code == 415 and "'text/csv'" in wrong.text
    assert gzipped.status_code == 415 and "Content-Encoding 'gzip'" in gzipped.text
    assert params.status_code == 200, params.text
    assert amber.loads(params.content) == frozenset({1})
    assert type(amber.loads(params.content)) is frozenset
    assert garbage.status_code == 400
    assert garbage.text.startswith("undecodable amber body: ")
    assert f"at byte {expected.value.offset}, {expected.value.kind}" in garbage.text
    assert disallowed.status_code == 422
    assert f"{Point.__module__}.Point" in disallowed.text
    assert secret.status_code == 422
    assert f"{Secret.__module__}.Secret" in secret.text


def test_aiohttp_signed_codec(aio: AiohttpThread) -> None:
    value = {"p": Point(7, 8, "aio"), "id": uuid.UUID(int=42)}
    signed = SIGNED.dumps(value)
    tampered = bytearray(signed)
    tampered[-2] ^= 0x10

    async def call(body: bytes) -> tuple[int, bytes]:
        timeout = aiohttp.ClientTimeout(total=20)
        async with aiohttp.ClientSession(aio.url, timeout=timeout) as session:
            async with session.post("/signed", data=body, headers=amber_headers()) as reply:
                return reply.status, await reply.read()

    ok_status, ok_body = asyncio.run(call(signed))
    altered_status, altered_body = asyncio.run(call(bytes(tampered)))
    unsigned_status, unsigned_body = asyncio.run(call(ALLOWING.dumps(value)))
    assert ok_status == 200
    assert SIGNED.loads(ok_body) == value
    with pytest.raises(amber.SignatureError):
        ALLOWING.loads(ok_body)
    assert altered_status == 403 and b"bad_signature" in altered_body
    assert unsigned_status == 403 and b"signature_required" in unsigned_body
