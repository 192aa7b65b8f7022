"""Serving an MCP server over this process's standard input and output (the SDK's framing: a JSON-RPC message a
line), with the pipes read and written on the event loop and the requests still running drained at the end of input.

:data:`STDIO_LINE_LIMIT` and :data:`STDIO_DRAIN_S` are read from this module at each use."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

logger = logging.getLogger("prism_memory.mcp")

#: The longest line (one JSON-RPC message) the stdio transport reads; a longer one is dropped as unparsable.
STDIO_LINE_LIMIT = 64 * 1024 * 1024
#: Over stdio, how long the end of standard input lets the requests still running finish and answer, seconds.
STDIO_DRAIN_S = 10.0


def _is_pipe(fd: int, *, socket_too: bool) -> bool:
    """Whether ``fd`` is a pipe (or, with ``socket_too``, a socket): what asyncio's pipe transports serve. Standard
    output must be a pipe: asyncio's write transport reads a socket's readability as its peer closing, and fd 0 and
    fd 1 may be one socket (inetd, systemd socket units, socat), whose incoming requests would end the writes."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or (socket_too and stat.S_ISSOCK(mode))


class _PipeLines:
    """The lines of a pipe read on the event loop (the SDK's ``stdio_server`` iterates them as text).

    A line longer than the reader's limit (:data:`STDIO_LINE_LIMIT`) is dropped whole, up to and with its newline,
    and comes out as an empty line, which the SDK drops as a message it cannot parse (as it drops any invalid
    line: no response, the JSON-RPC id is unknown); a warning names it on standard error. No part of it is
    ever read as a message of its own."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _PipeLines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:  # end of input; a last line without its newline still counts
            line = end.partial
        except asyncio.LimitOverrunError:
            await self._discard_overlong_line()
            return "\n"
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")

    async def _discard_overlong_line(self) -> None:
        """Read and drop what is left of a line over the limit: everything up to and with its newline (or to the
        end of input)."""
        dropped = 0
        while True:
            try:
                dropped += len(await self._reader.readuntil(b"\n"))
                break
            except asyncio.IncompleteReadError as end:
                dropped += len(end.partial)
                break
            except asyncio.LimitOverrunError as overrun:  # still no newline in the limit's worth buffered
                dropped += len(await self._reader.readexactly(overrun.consumed))
        logger.warning("dropped a message of %d bytes on standard input, over the %d-byte limit of one message",
                       dropped, STDIO_LINE_LIMIT)


class _OpenRequests:
    """The client's requests the server has not answered yet, as :class:`_NotingReads` and :class:`_NotingWrites`
    see them on the SDK's streams, so that the end of standard input waits until the requests still running have
    answered (at most :data:`STDIO_DRAIN_S` seconds; the SDK cancels whatever is left, answering "Connection
    closed"). Without it the SDK cancelled them at once: a ``remember`` that had committed was answered
    "Connection closed", and a client retrying it would store it twice. A request the client cancelled
    (``notifications/cancelled``) is not waited for; nor is any once :meth:`abandon` ran (no answer can reach
    the client)."""

    def __init__(self) -> None:
        self._ids: set[Any] = set()
        self._settled = asyncio.Event()
        self._settled.set()
        self._abandoned = False

    def abandon(self) -> None:
        """Wait for no request any more."""
        self._abandoned = True
        self._settled.set()

    async def drained(self) -> None:
        """Return once no request is open, or after :data:`STDIO_DRAIN_S` seconds (a warning says so)."""
        try:
            await asyncio.wait_for(self._settled.wait(), STDIO_DRAIN_S)
        except TimeoutError:
            logger.warning("standard input ended with %d request(s) still running after %.0f s: they are cancelled",
                           len(self._ids), STDIO_DRAIN_S)

    def read(self, message: Any) -> None:
        """Note a message from the client: a request opens, its cancellation closes."""
        if isinstance(message, JSONRPCRequest) and not self._abandoned:
            self._ids.add(message.id)
            self._settled.clear()
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            self._close((message.params or {}).get("requestId"))

    def written(self, message: Any) -> None:
        """Note a message to the client: an answer closes its request."""
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._close(message.id)

    def _close(self, request_id: Any) -> None:
        self._ids.discard(request_id)
        if not self._ids:
            self._settled.set()


class _NotingStream:
    """One of the SDK's streams with the messages it carries noted in ``requests`` (subclasses say which way);
    anything else is the stream's own (``receive``, ``aclose``, ``last_context``)."""

    def __init__(self, stream: Any, requests: _OpenRequests) -> None:
        self._stream, self._requests = stream, requests

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aenter__(self) -> _NotingStream:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._stream.__aexit__(*exc_info)


class _NotingReads(_NotingStream):
    """The SDK's read stream (its ``ReadStream`` protocol), each message noted; its end comes once the requests
    have drained."""

    def __aiter__(self) -> _NotingReads:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._stream.__anext__()
        except StopAsyncIteration:
            await self._requests.drained()
            raise
        self._requests.read(getattr(item, "message", None))  # an item may be a transport's exception
        return item


class _NotingWrites(_NotingStream):
    """The SDK's write stream (its ``WriteStream`` protocol), each message sent noted."""

    async def send(self, item: Any) -> None:
        await self._stream.send(item)
        self._requests.written(item.message)


class _PipeWriter(asyncio.Protocol):
    """Text written to a pipe on the event loop; ``flush`` waits until the pipe has taken every byte written (asyncio's
    flow control with a high-water mark of 0: the transport pauses while anything is buffered), so no response is
    left in a buffer when the session ends. ``on_lost()`` runs when the pipe closes but not through
    :meth:`close`: the client closed its end."""

    def __init__(self, on_lost: Callable[[], None]) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._on_lost = on_lost
        self._closed_here = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self._transport.set_write_buffer_limits(high=0)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self._writable.set()
        if not self._closed_here:
            self._on_lost()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    async def write(self, text: str) -> None:
        if self._transport is None or self._transport.is_closing():
            raise anyio.ClosedResourceError  # the client closed its end: the SDK's writer stops quietly
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writable.wait()

    def close(self) -> None:
        self._closed_here = True
        if self._transport is not None:
            self._transport.close()


async def _serve_draining(server: MCPServer, read_stream: Any, write_stream: Any, requests: _OpenRequests) -> None:
    """Run ``server``'s low-level ``Server`` on the SDK's stdio streams, as ``MCPServer.run_stdio_async`` does, with
    the end of input waiting for the requests still running (:class:`_OpenRequests`). It reaches
    ``MCPServer._lowlevel_server``, which the SDK does not document: tests/mcp/test_mcp_transports.py serves real
    subprocesses through both of serve_stdio's paths."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 - what MCPServer.run_stdio_async serves
    await lowlevel.run(_NotingReads(read_stream, requests), _NotingWrites(write_stream, requests),
                       lowlevel.create_initialization_options())


async def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` over this process's standard input and output until the client closes standard input, or
    its end of standard output (a warning on standard error says so: no response could reach it any more).

    The SDK's framing (``mcp.server.stdio.stdio_server``: a JSON-RPC message a line) on streams that read and
    write the pipes on the event loop. The SDK's own streams move each line through a worker thread (a read, a
    write and a flush per message), about 0.5 ms of a tool call (docs/benchmarks.md, bench/mcp.py). Like the
    SDK, while serving, descriptor 0 reads ``/dev/null`` and descriptor 1 writes to standard error, so stray
    output (a library's ``print``) never reaches the protocol; both are restored on return. When standard
    input is not a pipe or a socket, or standard output not a pipe (a file, a terminal, a socket), it serves on
    the SDK's own streams, as ``run_stdio_async`` does. A message over :data:`STDIO_LINE_LIMIT` bytes is dropped
    whole (:class:`_PipeLines`). Either way, at the end of standard input the requests still running finish and
    answer first, for up to :data:`STDIO_DRAIN_S` seconds (:func:`_serve_draining`).
    """
    from mcp.server.stdio import stdio_server

    if not (_is_pipe(0, socket_too=True) and _is_pipe(1, socket_too=False)):
        async with stdio_server() as (read_stream, write_stream):  # the SDK's own streams, as run_stdio_async
            await _serve_draining(server, read_stream, write_stream, _OpenRequests())
        return
    loop = asyncio.get_running_loop()
    saved = os.dup(0), os.dup(1)  # the wire, put back on return as it was (blocking or not)
    blocking = os.get_blocking(0), os.get_blocking(1)
    null = os.open(os.devnull, os.O_RDONLY)
    reader = asyncio.StreamReader(limit=STDIO_LINE_LIMIT)
    read_transport: asyncio.ReadTransport | None = None

    def client_gone() -> None:  # no answer can reach the client any more: stop reading, as at the end of input
        if not reader.at_eof():  # else the client closed standard input first: the session is ending anyway
            logger.warning("the client closed standard output: no response can reach it; the server stops")
        requests.abandon()
        if read_transport is not None:
            read_transport.close()

    writer = _PipeWriter(client_gone)
    requests = _OpenRequests()
    try:
        wire_in, wire_out = os.fdopen(os.dup(0), "rb", buffering=0), os.fdopen(os.dup(1), "wb", buffering=0)
        os.dup2(null, 0)
        os.dup2(2, 1)
        sys.stdout.flush()  # what print() left buffered goes to standard error now, not to the wire
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), wire_in)
        await loop.connect_write_pipe(lambda: writer, wire_out)
        async with stdio_server(_PipeLines(reader), writer) as (read_stream, write_stream):  # type: ignore[arg-type]
            await _serve_draining(server, read_stream, write_stream, requests)
    finally:
        writer.close()
        if read_transport is not None:
            read_transport.close()
        sys.stdout.flush()  # before the wire is back on descriptor 1
        for fd, wire, was_blocking in zip((0, 1), saved, blocking):
            os.dup2(wire, fd)
            os.set_blocking(fd, was_blocking)  # asyncio's transports made the wire non-blocking
            os.close(wire)
        os.close(null)
