"""The MCP server: prism-memory as the self-hosted memory of any agent (``prism-memory mcp``, docs/mcp.md).

Built on the official SDK's ``MCPServer`` (``mcp>=2``, the optional extra ``mcp``). The scope of every
call (tenant, resource, default thread, database) comes from the server, never from a tool argument:

- over stdio one :class:`ServerScope` is fixed at start (flags or environment variables);
- over streamable HTTP each bearer token maps to a :class:`ServerScope` in an operator's token file
  (:func:`load_token_file`: TOML, SHA-256 digests only, compared in constant time by :class:`BearerTokens`).

Tools take a thread only within that scope's resource, and refuse unknown arguments (a ``tenant`` or
``resource`` argument is an error, not ignored). Every :class:`~prism_memory.errors.PrismMemoryError`
becomes a readable tool error (redacted, with fixed texts for database and embedder failures); anything else is the
SDK's generic "Error executing tool <name>" with the traceback in the server's log only.

The modules, one job each: ``scopes`` (a caller's scope), ``directory`` (the memories and stores scopes reach),
``tokens`` (the token file and bearer tokens), ``models`` (the tools' argument and result models and schemas),
``failures`` (what a failed call answers), ``tools``, ``prompts`` (the resource and the prompt), ``server``
(:func:`create_mcp_server`), ``stdio`` and ``http`` (the transports). The stdio transport's limits,
``STDIO_LINE_LIMIT`` and ``STDIO_DRAIN_S``, are read from ``prism_memory.mcp_server.stdio`` at each use: set them
there (they are not re-exported here, where setting them would change nothing).
"""

from .directory import MemoryDirectory, open_stores
from .failures import describe, prompt_error, protocol_errors, resource_error, tool_errors
from .http import HttpEndpoint, serving_http
from .models import (
    ADDITIVE,
    DESTRUCTIVE_IDEMPOTENT,
    IDEMPOTENT,
    READ_ONLY,
    REPLACING,
    Adjacent,
    ConsentChoice,
    ConsentState,
    Cursor,
    Entry,
    EntryId,
    EntryIds,
    Exported,
    Forgotten,
    Held,
    Hit,
    MemoryPage,
    NewEntry,
    Rebuilt,
    Recalled,
    Remembered,
    Swept,
    Thread,
    WorkingMemory,
    compact_schema,
    strict_tool,
)
from .prompts import WORKING_URI, context_text, prompt_flag, prompt_number
from .scopes import DEFAULT_THREAD, SCOPE_ENVIRONMENT, ServerScope, server_scope
from .server import INSTRUCTIONS, create_mcp_server
from .stdio import serve_stdio
from .tokens import (
    EMPTY_TOKEN_DIGEST,
    BearerTokens,
    ScopedAccessToken,
    TokenBinding,
    hash_token,
    load_token_file,
    new_token,
    token_scope,
    token_stanza,
    toml_string,
)
from .tools import LIST_LIMIT, LIST_MAX_BYTES, MAX_NEW_ENTRIES, ToolContext, new_entry_id, working_document

__all__ = [
    "ADDITIVE",
    "DEFAULT_THREAD",
    "DESTRUCTIVE_IDEMPOTENT",
    "EMPTY_TOKEN_DIGEST",
    "IDEMPOTENT",
    "INSTRUCTIONS",
    "LIST_LIMIT",
    "LIST_MAX_BYTES",
    "MAX_NEW_ENTRIES",
    "READ_ONLY",
    "REPLACING",
    "SCOPE_ENVIRONMENT",
    "WORKING_URI",
    "Adjacent",
    "BearerTokens",
    "ConsentChoice",
    "ConsentState",
    "Cursor",
    "Entry",
    "EntryId",
    "EntryIds",
    "Exported",
    "Forgotten",
    "Held",
    "Hit",
    "HttpEndpoint",
    "MemoryDirectory",
    "MemoryPage",
    "NewEntry",
    "Rebuilt",
    "Recalled",
    "Remembered",
    "ScopedAccessToken",
    "ServerScope",
    "Swept",
    "Thread",
    "TokenBinding",
    "ToolContext",
    "WorkingMemory",
    "compact_schema",
    "context_text",
    "create_mcp_server",
    "describe",
    "hash_token",
    "load_token_file",
    "new_entry_id",
    "new_token",
    "open_stores",
    "prompt_error",
    "prompt_flag",
    "prompt_number",
    "protocol_errors",
    "resource_error",
    "serve_stdio",
    "server_scope",
    "serving_http",
    "strict_tool",
    "token_scope",
    "token_stanza",
    "toml_string",
    "tool_errors",
    "working_document",
]
