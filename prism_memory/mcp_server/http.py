"""Serving an MCP server over streamable HTTP (uvicorn), stateless: each request authenticated and scoped on its own."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from mcp.server.mcpserver import MCPServer

from ..errors import ConfigurationError


@dataclasses.dataclass(frozen=True, slots=True)
class HttpEndpoint:
    """A running HTTP server: its MCP endpoint's ``url`` and ``finished``, the task that ends when it stops (await
    it shielded: cancelling it would stop the server abruptly, where leaving :func:`serving_http` stops it gracefully)."""

    url: str
    finished: asyncio.Task[None]


@asynccontextmanager
async def serving_http(server: MCPServer, host: str, port: int) -> AsyncIterator[HttpEndpoint]:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` (``port`` 0: a free one) until the block
    ends or the process is interrupted.

    Stateless: every request is authenticated and scoped on its own (no session carries a scope from one
    request to the next). DNS-rebinding protection is on for a loopback ``host`` (the SDK's default). Signals
    are the caller's: cancelled (the CLI cancels on SIGTERM), the block shuts the server down gracefully on
    its way out. Raises :class:`ConfigurationError` when the address cannot be bound.
    """
    import uvicorn

    class Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            # uvicorn would take SIGINT and SIGTERM for itself and raise them again once stopped, which ends the
            # process before its exit handlers run; the caller handles them instead.
            yield

    app = server.streamable_http_app(stateless_http=True, host=host)
    http = Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
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
        http.should_exit = True
        await finished
