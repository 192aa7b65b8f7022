"""Serving an MCP server over streamable HTTP (uvicorn), stateless: each request authenticated and scoped on its own.

:data:`MAX_STREAMS_PER_TOKEN` and :data:`HTTP_DRAIN_S` are read from this module at each use."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.types import INTERNAL_ERROR
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigurationError

#: The requests one bearer token may have open at once (GET event streams and calls being answered), by default.
MAX_STREAMS_PER_TOKEN = 16
#: On shutdown, how long the calls in flight may take to finish and answer, seconds (event streams close at once).
HTTP_DRAIN_S = 10.0


@dataclasses.dataclass(frozen=True, slots=True)
class HttpEndpoint:
    """A running HTTP server: its MCP endpoint's ``url`` and ``finished``, the task that ends when it stops (await
    it shielded: cancelling it would stop the server abruptly, where leaving :func:`serving_http` stops it gracefully)."""

    url: str
    finished: asyncio.Task[None]


class StreamLimits:
    """ASGI middleware in front of the MCP endpoint: a bound on the requests each bearer token holds open, and a
    shutdown that cannot be held up by them.

    A request beyond ``max_streams`` open ones of the same bearer token (GET event streams, which a
    stateless server never writes to, and calls still being answered) is refused with 429 and a JSON body
    ``{"error": ...}``. :meth:`close` refuses every new request with 503 and ends the open GET event streams at
    once (each response is finished cleanly, so the client sees its stream end); :meth:`cancel_calls` then ends
    the calls still running, each answered (:meth:`Exchange.end`): 503 if its answer had not started, else the
    JSON-RPC error "the server is shutting down" on its event stream.
    """

    def __init__(self, app: ASGIApp, max_streams: int) -> None:
        self.app = app
        self.max_streams = max_streams
        self.closing = False
        self._open: dict[bytes, int] = {}
        self._streams: set[anyio.CancelScope] = set()
        self._calls: set[anyio.CancelScope] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.closing:
            await refuse(send, 503, "the server is shutting down; retry later")
            return
        holder = bearer_token_digest(scope)
        if self._open.get(holder, 0) >= self.max_streams:
            await refuse(send, 429, f"this token already holds {self.max_streams} open requests (GET event streams "
                                    "and calls being answered), the server's limit: close one first")
            return
        self._open[holder] = self._open.get(holder, 0) + 1
        group = self._streams if scope["method"] == "GET" else self._calls
        exchange = Exchange(receive, send)
        try:
            with anyio.CancelScope() as cancel:
                group.add(cancel)
                await self.app(scope, exchange.receive, exchange.send)
        finally:
            group.discard(cancel)
            self._open[holder] -= 1
            if not self._open[holder]:
                del self._open[holder]
        if cancel.cancelled_caught:
            await exchange.end()

    def close(self) -> None:
        """Refuse new requests (503) and end every open GET event stream now."""
        self.closing = True
        for cancel in list(self._streams):
            cancel.cancel()

    def cancel_calls(self) -> None:
        """End the calls still being answered."""
        for cancel in list(self._calls):
            cancel.cancel()


class Exchange:
    """One request's ``receive`` and ``send`` as the app sees them, noting what :meth:`end` needs to finish the
    response if the app is ended early: whether it started (and as an event stream) or completed, and the
    request's JSON-RPC id (from a body up to the SDK's size limit)."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self._body: bytearray | None = bytearray()
        self.started = self.events = self.complete = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request" and self._body is not None:
            self._body += message.get("body", b"")
            if len(self._body) > DEFAULT_MAX_REQUEST_BODY_SIZE:
                self._body = None
        return message

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            self.events = dict(message.get("headers", [])).get(b"content-type", b"").startswith(b"text/event-stream")
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete = True
        await self._send(message)

    async def end(self) -> None:
        """Finish the response of an app that was ended: 503 if it had not started; on an event stream, the
        JSON-RPC error "the server is shutting down" for the request's id, when it had one; then the end."""
        if self.complete:
            return
        if not self.started:
            await refuse(self._send, 503, "the server is shutting down; retry later")
            return
        request_id = self.request_id()
        body = b""
        if self.events and request_id is not None:
            error = {"jsonrpc": "2.0", "id": request_id,
                     "error": {"code": INTERNAL_ERROR, "message": "the server is shutting down; retry later"}}
            body = b"event: message\r\ndata: " + json.dumps(error).encode() + b"\r\n\r\n"
        await self._send({"type": "http.response.body", "body": body, "more_body": False})

    def request_id(self) -> str | int | None:
        """The JSON-RPC id of the request's body, ``None`` for a notification, a batch or a body not read whole."""
        try:
            message = json.loads(bytes(self._body or b""))
        except ValueError:
            return None
        identifier = message.get("id") if isinstance(message, dict) else None
        return identifier if isinstance(identifier, (str, int)) and not isinstance(identifier, bool) else None


def bearer_token_digest(scope: Scope) -> bytes:
    """The SHA-256 digest of the bearer token a request presents, read as the SDK's ``BearerAuthBackend`` reads
    it (the first ``Authorization`` header; the scheme in any case), so a request counts against the token it
    is served as, however its header is spelt or repeated. A request with no bearer token (which the SDK
    answers with 401) counts against the empty one."""
    header = Headers(scope=scope).get("authorization") or ""
    token = header[7:] if header.lower().startswith("bearer ") else ""
    return hashlib.sha256(token.encode("utf-8")).digest()


async def refuse(send: Send, status: int, error: str) -> None:
    """Answer with ``status`` and the JSON body ``{"error": error}``."""
    body = json.dumps({"error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status in (429, 503):
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def serving_http(server: MCPServer, host: str, port: int, max_streams: int | None = None) -> AsyncIterator[HttpEndpoint]:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` (``port`` 0: a free one) until the block
    ends or the process is interrupted.

    Stateless: every request is authenticated and scoped on its own (no session carries a scope from one
    request to the next). DNS-rebinding protection is on for a loopback ``host`` (the SDK's default). Each
    bearer token may hold ``max_streams`` requests open at once (default :data:`MAX_STREAMS_PER_TOKEN`;
    :class:`StreamLimits`). Signals are the caller's: cancelled (the CLI cancels on SIGTERM), the block shuts
    the server down on its way out: new requests get 503, open GET event streams end at once, the calls in
    flight get :data:`HTTP_DRAIN_S` seconds to answer and are then ended. Raises :class:`ConfigurationError`
    when the address cannot be bound or ``max_streams`` is not positive.
    """
    import uvicorn

    max_streams = MAX_STREAMS_PER_TOKEN if max_streams is None else max_streams
    if isinstance(max_streams, bool) or not isinstance(max_streams, int) or max_streams < 1:
        raise ConfigurationError(f"max_streams must be a positive whole number, got {max_streams!r}")

    class Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            # uvicorn would take SIGINT and SIGTERM for itself and raise them again once stopped, which ends the
            # process before its exit handlers run; the caller handles them instead.
            yield

    limits = StreamLimits(server.streamable_http_app(stateless_http=True, host=host), max_streams)
    # uvicorn's own bound on a graceful stop backs up the drain below.
    config = uvicorn.Config(limits, host=host, port=port, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=int(HTTP_DRAIN_S) + 5)
    http = Server(config)
    finished = asyncio.create_task(http.serve())
    while not http.started:
        if finished.done():
            try:
                await finished
            except SystemExit:  # uvicorn's way of saying it could not bind
                pass
            raise ConfigurationError(f"cannot serve HTTP on {host}:{port} (in use, or not an address of this machine?)")
        await asyncio.sleep(0.01)
    bound = http.servers[0].sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    try:
        yield HttpEndpoint(f"http://{shown}:{bound}/mcp", finished)
    finally:
        await stop(http, limits, finished)


async def stop(http: Any, limits: StreamLimits, finished: asyncio.Task[None]) -> None:
    """Stop ``http`` whatever its clients hold open: event streams at once, the calls in flight after
    :data:`HTTP_DRAIN_S` seconds."""
    limits.close()
    http.should_exit = True
    try:
        await asyncio.wait_for(asyncio.shield(finished), HTTP_DRAIN_S)
    except TimeoutError:
        limits.cancel_calls()
        await finished
