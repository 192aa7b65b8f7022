"""Stopping the HTTP transport (``serving_http``) while a call is in flight, on a real server on 127.0.0.1 with the
SDK's client: the call finishes and is answered within the drain, and one that outlasts it is answered with an
error (HTTP 503 before its answer started, a JSON-RPC error on an event stream after) instead of holding the
server up. (SIGTERM with many idle event streams: tests/mcp/test_mcp_transports.py.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from prism_memory import Scope, create_hash_embedder
from prism_memory.emulator import create_memory_vector_store, create_memory_working_store
from prism_memory.mcp_server import MemoryDirectory, create_mcp_server, server_scope, serving_http
from prism_memory.mcp_server import http as http_transport

from mcp_client import Caller

DIMENSIONS = 64


class SlowEmbedder:
    """The hash embedder, ``delay_s`` seconds late: a remember stays in flight that long."""

    def __init__(self, delay_s: float) -> None:
        self.inner = create_hash_embedder(DIMENSIONS)
        self.dimensions = DIMENSIONS
        self.delay_s = delay_s
        self.started = asyncio.Event()

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.started.set()
        await asyncio.sleep(self.delay_s)
        return await self.inner.embed(texts)


async def remember_while_stopping(delay_s: float) -> tuple[object, float, int]:
    """Serve a server whose embedder takes ``delay_s``; start a remember and, once it is in flight, stop the
    server. Returns what the call got (its result, a tool failure, or the exception it raised), how long the
    stop took in seconds, and how many entries the store holds afterwards."""
    store = create_memory_vector_store(DIMENSIONS)
    embedder = SlowEmbedder(delay_s)
    directory = MemoryDirectory({None: (store, create_memory_working_store())}, embedder)
    server = create_mcp_server(directory, lambda: server_scope("acme", "user-ada"))
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as client_http:
        serving = serving_http(server, "127.0.0.1", 0)
        endpoint = await serving.__aenter__()
        client = Client(streamable_http_client(endpoint.url, http_client=client_http))
        await client.__aenter__()
        await client.list_tools()  # the client checks a result against the tool's output schema, which it lists first
        call = asyncio.create_task(Caller(client)("remember", entries=["Prefers green tea"]))
        await asyncio.wait_for(embedder.started.wait(), 10)
        started = time.monotonic()
        await serving.__aexit__(None, None, None)
        stopped_s = time.monotonic() - started
        try:
            outcome: object = await asyncio.wait_for(call, 10)
        except Exception as exc:
            outcome = exc
        with contextlib.suppress(Exception):  # the server is gone: the client's own shutdown may fail to reach it
            await client.__aexit__(None, None, None)
    return outcome, stopped_s, await store.count_by_thread(Scope("acme", "user-ada", "main"))


async def test_a_call_in_flight_when_the_server_stops_finishes_and_is_answered():
    outcome, stopped_s, stored = await remember_while_stopping(1.0)
    assert isinstance(outcome, dict) and outcome["stored"] == 1, outcome
    assert 0.9 <= stopped_s < 5 and stored == 1, stopped_s


async def test_a_call_that_outlasts_the_drain_is_answered_with_an_error(monkeypatch):
    monkeypatch.setattr(http_transport, "HTTP_DRAIN_S", 0.5)
    outcome, stopped_s, stored = await remember_while_stopping(60.0)
    assert stopped_s < 3, stopped_s
    assert stored == 0
    assert isinstance(outcome, MCPError), outcome  # answered with an error, not left waiting (TimeoutError)


async def test_a_call_on_an_event_stream_that_outlasts_the_drain_gets_a_json_rpc_error(monkeypatch):
    """A client of the 2025 protocol gets its answer as an event stream, started before the call runs: a call
    still running after the drain is answered on that stream with the JSON-RPC error for its id."""
    monkeypatch.setattr(http_transport, "HTTP_DRAIN_S", 0.5)
    embedder = SlowEmbedder(60.0)
    directory = MemoryDirectory({None: (create_memory_vector_store(DIMENSIONS), create_memory_working_store())}, embedder)
    server = create_mcp_server(directory, lambda: server_scope("acme", "user-ada"))
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "remember", "arguments": {"entries": ["Prefers green tea"]}}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as client_http:
        async with serving_http(server, "127.0.0.1", 0) as endpoint:
            response = await client_http.send(client_http.build_request("POST", endpoint.url, json=request, headers=headers),
                                              stream=True)
            assert response.headers["content-type"].startswith("text/event-stream")
            await asyncio.wait_for(embedder.started.wait(), 10)
        body = (await asyncio.wait_for(response.aread(), 5)).decode()
    [data] = [line.removeprefix("data: ") for line in body.splitlines() if line.startswith("data: ")]
    assert json.loads(data) == {"jsonrpc": "2.0", "id": 7,
                                "error": {"code": -32603, "message": "the server is shutting down; retry later"}}
