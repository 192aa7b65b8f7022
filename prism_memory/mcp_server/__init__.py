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
(:func:`create_mcp_server`), ``stdio`` and ``http`` (the transports). This package exports what the CLI and
hosts use; the tools' models and limits are in their modules. The stdio transport's limits,
``STDIO_LINE_LIMIT`` and ``STDIO_DRAIN_S``, are read from ``prism_memory.mcp_server.stdio`` at each use: set them
there (they are not re-exported here, where setting them would change nothing); the HTTP transport's,
``MAX_STREAMS_PER_TOKEN`` and ``HTTP_DRAIN_S``, likewise from ``prism_memory.mcp_server.http``.
"""

from .directory import MemoryDirectory, open_stores
from .http import HttpEndpoint, serving_http
from .scopes import SCOPE_ENVIRONMENT, ServerScope, server_scope
from .server import create_mcp_server
from .stdio import serve_stdio
from .tokens import BearerTokens, TokenBinding, hash_token, load_token_file, new_token, token_scope, token_stanza

__all__ = [
    "BearerTokens",
    "HttpEndpoint",
    "MemoryDirectory",
    "SCOPE_ENVIRONMENT",
    "ServerScope",
    "TokenBinding",
    "create_mcp_server",
    "hash_token",
    "load_token_file",
    "new_token",
    "open_stores",
    "serve_stdio",
    "server_scope",
    "serving_http",
    "token_scope",
    "token_stanza",
]
