"""An MCP client for tests: tool calls through the SDK's ``Client``, their failures, and results without times; servers
over a test backend, and scenarios run through a client of each backend's server with their outcomes compared."""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp import Client
from prism_memory.mcp_server import MemoryDirectory, create_mcp_server, server_scope

from parity import assert_same

#: Keys whose values are times: each backend stamps its own.
TIMES = {"created_at", "updated_at", "granted_at", "revoked_at", "createdAt", "updatedAt", "grantedAt", "revokedAt"}

@dataclass(frozen=True)
class ToolFailure:
    """A tool call that came back with ``is_error``: the error type its text names (``arguments`` for a call
    the input schema refused), and the text itself (not compared across backends: messages may differ)."""

    error: str
    text: str


def failure(text: str) -> ToolFailure:
    match = re.match(r"Error executing tool \w+: (\w+):", text)
    return ToolFailure(match.group(1) if match else "arguments" if "validation error" in text else "unknown", text)


def without_times(value: Any) -> Any:
    """``value`` without the keys of :data:`TIMES`; an event time equal to the write time (its default) named so."""
    if isinstance(value, dict):
        kept = {key: without_times(item) for key, item in value.items() if key not in TIMES}
        for occurred, created in (("occurredAt", "createdAt"), ("occurred_at", "created_at")):
            if occurred in value and value[occurred] == value.get(created):
                kept[occurred] = "the write time"
        return kept
    if isinstance(value, list):
        return [without_times(item) for item in value]
    return value


class Caller:
    """An SDK client: ``await call(tool, **arguments)`` is the structured result, or a :class:`ToolFailure`."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def __call__(self, tool: str, **arguments: Any) -> Any:
        result = await self.client.call_tool(tool, arguments)
        if result.is_error:
            return failure(result.content[0].text)
        assert result.structured_content is not None and result.content, result
        return result.structured_content

    async def ok(self, tool: str, **arguments: Any) -> Any:
        result = await self(tool, **arguments)
        assert not isinstance(result, ToolFailure), result
        return result

    async def failed(self, tool: str, **arguments: Any) -> ToolFailure:
        result = await self(tool, **arguments)
        assert isinstance(result, ToolFailure), result
        return result

    async def count(self, thread: str | None = None) -> int:
        page = await self.ok("list_memories", limit=100, **({} if thread is None else {"thread": thread}))
        return len(page["entries"])


#: Seconds a server subprocess may take to start, answer or stop.
SERVER_START_S = 60


def mcp_command(*options: str) -> list[str]:
    """The ``prism-memory`` command line with ``options``, run by this interpreter."""
    return [sys.executable, "-m", "prism_memory", *options]


SCOPE = server_scope("acme", "user-ada", "thread-1")
TOOLS = ["remember", "recall", "get_working_memory", "update_working_memory", "list_memories", "correct", "forget",
         "set_consent"]
ADMIN_TOOLS = ["legal_hold", "apply_retention", "export_memory", "rebuild_index"]
PROFILE_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
                  "additionalProperties": False}


def server_over(backend, scope=SCOPE, *, admin_tools: bool = False, consent_source: str = "agent", **options):
    """A server over ``backend``'s stores with ids e1, e2, ... (the same on both backends)."""
    directory = MemoryDirectory({None: (backend.vector_store, backend.working_store)}, backend.embedder, **options)
    counter = itertools.count(1)
    return create_mcp_server(directory, lambda: scope, admin_tools=admin_tools, consent_source=consent_source,
                             entry_ids=lambda: f"e{next(counter)}")


async def on_both(backends, scenario: Callable[[Caller, Any], Awaitable[Any]], **server_options) -> Any:
    """``scenario(call, backend)`` through a client of a server on each backend; asserts equal outcomes (tool
    failures by type, times dropped) and returns the emulator's."""
    outcomes = []
    for backend in backends.each:
        async with Client(server_over(backend, **server_options)) as client:
            outcomes.append(await scenario(Caller(client), backend))
    comparable = [without_times(types_only(outcome)) for outcome in outcomes]
    assert_same(comparable[0], comparable[1], "outcome")
    return outcomes[0]


def types_only(value: Any) -> Any:
    if isinstance(value, ToolFailure):
        return {"failed": value.error}
    if isinstance(value, dict):
        return {key: types_only(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [types_only(item) for item in value]
    return value


async def listing(call: Caller) -> dict[str, Any]:
    listed = await call.client.list_tools()
    return {tool.name: tool.model_dump(include={"input_schema", "output_schema", "annotations", "description"})
            for tool in listed.tools}
