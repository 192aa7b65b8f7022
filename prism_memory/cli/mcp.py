"""The MCP commands (docs/mcp.md): ``mcp`` serves the memory to agents over stdio or streamable HTTP, ``mcp-token``
makes a bearer token for the HTTP server. :mod:`prism_memory.mcp_server` needs the ``mcp`` extra, so it is
imported when one of them runs."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import signal
import sys
from collections.abc import Awaitable
from contextlib import AsyncExitStack, redirect_stdout
from pathlib import Path
from typing import Any

from rich.console import Console

from .options import Commands, UsageError, describe_embedder, prepare_embedder, resolve_dsn

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def register(commands: Commands) -> None:
    """Add ``mcp`` and ``mcp-token`` to ``commands``."""
    sub = commands.add("mcp", cmd_mcp, "serve the memory to agents over MCP (stdio or streamable HTTP; docs/mcp.md)")
    sub.set_defaults(explicit_scope=True)
    sub.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                     help="stdio (default: one scope from --tenant/--resource or the environment) or http")
    sub.add_argument("--tokens", metavar="FILE", default=None,
                     help="http: the token file mapping each bearer token to a tenant and resource (TOML)")
    sub.add_argument("--host", default="127.0.0.1", help="http: the address to listen on (default 127.0.0.1)")
    sub.add_argument("--port", type=int, default=8848, metavar="N", help="http: the port (default 8848; 0 picks a free one)")
    sub.add_argument("--max-streams", type=int, default=None, metavar="N",
                     help="http: the requests one token may hold open at once, GET event streams and calls being "
                          "answered (default 16); beyond them a request gets 429")
    sub.add_argument("--admin-tools", action="store_true",
                     help="also serve the operator tools: legal_hold, apply_retention, export_memory, rebuild_index")
    sub.add_argument("--consent-source", choices=("agent", "user", "system"), default="agent",
                     help="the consent source stored with new entries (default agent)")
    sub.add_argument("--require-consent", action="store_true", help="recall drops entries without explicit consent")
    sub.add_argument("--working-schema", metavar="FILE", default=None, help="a JSON Schema file working memory must pass")
    sub.add_argument("--working-template", metavar="T", default=None,
                     help="the {{path}} template memory://working renders working memory through")
    sub.add_argument("--secrets-file", metavar="FILE", default=None,
                     help="literal secrets (one a line) redacted from everything stored and returned")
    sub.add_argument("--redactor", metavar="MODULE:FUNCTION", default=None,
                     help="a str -> str function applied to everything stored and returned")
    sub.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), default="WARNING",
                     help="the server log's level, on standard error (default WARNING)")

    sub = commands.add("mcp-token", cmd_mcp_token,
                       "make a bearer token for `mcp --transport http`: append its entry to FILE, print the token")
    sub.set_defaults(explicit_scope=True)
    sub.add_argument("file", metavar="FILE", help="the token file (created if missing, readable by its owner only)")
    sub.add_argument("--name", default=None, help="the token's name in logs (default TENANT/RESOURCE)")
    sub.add_argument("--token-dsn", metavar="URL", default=None,
                     help="the database URL this token's calls use, e.g. a role bound to its tenant (docs/security.md)")


def mcp_stdio_scope(args: argparse.Namespace) -> tuple[str, str, str | None]:
    """The stdio server's tenant, resource and thread: the flags, else ``PRISM_MEMORY_TENANT``,
    ``PRISM_MEMORY_RESOURCE``, ``PRISM_MEMORY_THREAD``. Raises :class:`UsageError` when tenant or resource is
    missing: the server never falls back to a default scope."""
    from ..mcp_server import SCOPE_ENVIRONMENT

    tenant = args.tenant if args.tenant is not None else os.environ.get(SCOPE_ENVIRONMENT["tenant"])
    resource = args.resource if args.resource is not None else os.environ.get(SCOPE_ENVIRONMENT["resource"])
    thread = args.thread if args.thread is not None else os.environ.get(SCOPE_ENVIRONMENT["thread"])
    if tenant is None or resource is None:
        raise UsageError(
            "no scope configured: over stdio pass --tenant and --resource (or set "
            f"{SCOPE_ENVIRONMENT['tenant']} and {SCOPE_ENVIRONMENT['resource']}); over HTTP pass --transport http --tokens FILE"
        )
    return tenant, resource, thread


def mcp_memory_options(args: argparse.Namespace) -> dict[str, Any]:
    """``create_memory`` options from the server's flags: ``--working-schema`` (a JSON Schema file),
    ``--working-template``, ``--secrets-file`` (one secret a line), ``--redactor MODULE:FUNCTION``,
    ``--require-consent``. Raises :class:`UsageError` for a file or hook that cannot be loaded."""
    options: dict[str, Any] = {"require_consent": args.require_consent, "working_memory_template": args.working_template}
    if args.working_schema:
        try:
            options["schema"] = json.loads(Path(args.working_schema).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--working-schema {args.working_schema}: not a readable JSON file ({exc})") from exc
    if args.secrets_file:
        try:
            lines = Path(args.secrets_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--secrets-file {args.secrets_file}: cannot read it ({exc})") from exc
        options["secrets"] = [line.strip() for line in lines if line.strip()]
    if args.redactor:
        module, _, name = args.redactor.partition(":")
        try:
            options["redactor"] = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise UsageError(f"--redactor {args.redactor}: no such function (give MODULE:FUNCTION): {exc}") from exc
        if not callable(options["redactor"]):
            raise UsageError(f"--redactor {args.redactor} is not callable")
    return options


async def until_terminated(serving: Awaitable[None]) -> bool:
    """Await ``serving`` until it ends, or until the process gets SIGTERM (how a service manager stops a server,
    and an agent a stdio server that did not stop when its input closed), which cancels it; returns whether
    SIGTERM did. Cancelled, the server stops serving (an HTTP server gracefully, letting its calls in flight
    finish; over stdio they are cancelled, an uncommitted transaction rolling back), its stores close, and the
    process leaves through its exit handlers, with exit status 0."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(serving)
    terminated = asyncio.Event()

    def terminate() -> None:
        terminated.set()
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, terminate)
    except (RuntimeError, NotImplementedError, ValueError):  # not the main thread, or a loop without signals
        await task
        return False
    try:
        await task
    except asyncio.CancelledError:
        if not terminated.is_set():
            raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
    return terminated.is_set()


async def cmd_mcp(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Serve the memory over MCP: stdio (one scope from flags or the environment) or streamable HTTP (a scope
    per bearer token from ``--tokens``). Refuses to start without a scope (exit code 2)."""
    try:
        from .. import mcp_server
    except ImportError as exc:
        raise UsageError(f"prism-memory mcp needs the mcp extra: pip install 'prism-memory[mcp]' ({exc})") from exc

    if args.transport == "stdio":
        if args.max_streams is not None:
            raise UsageError("--max-streams is for --transport http")
        if args.tokens:
            raise UsageError("--tokens is for --transport http; over stdio the scope comes from --tenant and --resource")
        tenant, resource, thread = mcp_stdio_scope(args)
        scopes = [mcp_server.server_scope(tenant, resource, thread, where="--tenant/--resource/--thread: ")]
        verifier, current_scope = None, (lambda: scopes[0])
    else:
        if any(value is not None for value in (args.tenant, args.resource, args.thread)):
            raise UsageError("over HTTP each token's scope comes from --tokens; drop --tenant, --resource and --thread")
        if not args.tokens:
            raise UsageError("no scope configured: over HTTP pass --tokens FILE (prism-memory mcp-token makes its entries)")
        bindings = mcp_server.load_token_file(args.tokens)
        scopes = [binding.scope for binding in bindings]
        verifier, current_scope = mcp_server.BearerTokens(bindings), mcp_server.token_scope
    options = mcp_memory_options(args)
    async with AsyncExitStack() as stack:
        with redirect_stdout(sys.stderr):  # over stdio, standard output carries only the protocol
            embedder = await prepare_embedder(args, status)  # --embedder; settles the default schema by its width
            if args.embedder == "hash":
                status.print("prism-memory mcp: note: the hash embedder is for demos and tests; it ranks entries by "
                             "hashed words, not meaning (--embedder minilm: docs/embedders.md)", markup=False)
            status.print(f"prism-memory mcp: embedding with {describe_embedder(embedder)}", markup=False)
            dsn = None
            if args.backend == "postgres" and any(scope.dsn is None for scope in scopes):
                dsn = await asyncio.to_thread(resolve_dsn, args, status)
            stores = await stack.enter_async_context(mcp_server.open_stores(
                args.backend, dsn, scopes, schema=args.schema, table=args.table, dimensions=embedder.dimensions,
                migrate=not args.dsn))  # the embedded default is migrated; a --dsn database is the operator's
        directory = mcp_server.MemoryDirectory(stores, embedder, **options)
        server = mcp_server.create_mcp_server(
            directory, current_scope, consent_source=args.consent_source, admin_tools=args.admin_tools,
            token_verifier=verifier, log_level=args.log_level)
        where = "the in-process emulator (data is lost at exit)" if args.backend == "memory" else "PostgreSQL"
        if args.transport == "stdio":
            scope = scopes[0]
            status.print(f"prism-memory mcp: serving tenant {scope.tenant_id!r}, resource {scope.resource_id!r} "
                         f"(thread {scope.thread_id!r}) over stdio on {where}", markup=False)
            # Until the client closes standard input (the MCP shutdown), or SIGTERM (an agent's shutdown when that fails).
            if await until_terminated(mcp_server.serve_stdio(server)):
                status.print("prism-memory mcp: stopped (SIGTERM)", markup=False)
            return
        if args.host not in LOOPBACK:
            status.print(f"prism-memory mcp: warning: listening on {args.host}, beyond this machine, without TLS: "
                         "put a TLS-terminating proxy in front (docs/mcp.md)", markup=False)

        async def serve_http() -> None:
            async with mcp_server.serving_http(server, args.host, args.port, args.max_streams) as endpoint:
                status.print(f"prism-memory mcp: serving {len(scopes)} token(s) over streamable HTTP at {endpoint.url} "
                             f"on {where}", markup=False)
                await asyncio.shield(endpoint.finished)  # cancelled, the block's exit stops uvicorn gracefully

        if await until_terminated(serve_http()):
            status.print("prism-memory mcp: stopped (SIGTERM)", markup=False)


async def cmd_mcp_token(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Make a bearer token for the HTTP server: append its ``[[token]]`` entry (the SHA-256, never the token)
    to FILE (created readable by its owner only) and print the token once."""
    from ..mcp_server import load_token_file, new_token, server_scope, token_stanza

    if args.tenant is None or args.resource is None:
        raise UsageError("mcp-token needs --tenant and --resource: the scope the token opens")
    name = args.name or f"{args.tenant}/{args.resource}"
    scope = server_scope(args.tenant, args.resource, args.thread, dsn=args.token_dsn, name=name)
    path = Path(args.file)
    existing = load_token_file(path) if path.exists() and path.stat().st_size else []
    if any(binding.name == name for binding in existing):
        raise UsageError(f"{path} already has a token named {name!r}; pass --name")
    token = new_token()
    with open(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a", encoding="utf-8") as file:
        file.write(("\n" if existing else "") + token_stanza(name, token, scope))
    load_token_file(path)  # what was written reads back
    sys.stdout.write(token + "\n")
