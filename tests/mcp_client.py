"""An MCP client for tests: tool calls through the SDK's ``Client``, their failures, and results without times."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mcp import Client

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
    if isinstance(value, dict):
        return {key: without_times(item) for key, item in value.items() if key not in TIMES}
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
