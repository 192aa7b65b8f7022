"""The administration commands: ``migrate``, ``role grant|revoke|show``, ``distribute`` and ``server url|stop``."""

from __future__ import annotations

import argparse
import asyncio

import psycopg
from rich.console import Console

from ..citus import distribute
from ..embedded import default_data_dir, embedded_dsn, stop_embedded_server
from ..schema import grant_app_role, revoke_app_role, role_tenants
from ..schema_config import SchemaConfig, installed_revision
from .options import DEFAULT_DIMENSIONS, Commands, UsageError, default_schema, open_backend, prepare_embedder, resolve_dsn


def register(commands: Commands) -> None:
    """Add ``migrate``, ``role``, ``distribute`` and ``server`` to ``commands``."""
    commands.add("migrate", cmd_migrate, "create or upgrade the schema")

    role = commands.group("role", "an application role's access")
    sub = role.add("grant", cmd_role, "grant ROLE the API functions (bound to the --bind-tenant ids when given)")
    sub.add_argument("role", metavar="ROLE")
    sub.add_argument("--bind-tenant", action="append", metavar="ID", dest="bind_tenant",
                     help="bind ROLE to this tenant (repeat for more); replaces its bindings")
    sub = role.add("revoke", cmd_role, "revoke ROLE's grants and tenant bindings")
    sub.add_argument("role", metavar="ROLE")
    sub = role.add("show", cmd_role, "print the tenants ROLE is bound to")
    sub.add_argument("role", metavar="ROLE")

    sub = commands.add("distribute", cmd_distribute,
                       "distribute the install over a Citus cluster by tenant and delegate its API (idempotent)")
    sub.add_argument("--shard-count", type=int, default=None, metavar="N",
                     help="shards per table distributed now (default: citus.shard_count)")

    server = commands.group("server", "the embedded PostgreSQL")
    server.add("url", cmd_server, "print the embedded server's database URL (starts it if needed), e.g. for psql")
    server.add("stop", cmd_server, "stop the embedded server (its data is kept)")


def install_config(args: argparse.Namespace) -> SchemaConfig:
    """The install ``--schema``, ``--table`` and ``--dimensions`` name, without building the embedder: the width is
    ``--dimensions`` or the hash embedder's, the schema ``--schema`` or :func:`default_schema` of that width."""
    width = args.dimensions or DEFAULT_DIMENSIONS
    return SchemaConfig(args.schema or default_schema(args.embedder, width), args.table, width)


def _installed_revision(dsn: str, schema: str) -> str | None:
    """The Alembic revision recorded in ``schema``, or ``None`` when it has none (blocking)."""
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


async def cmd_role(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Grant, revoke or show an application role's access (docs/security.md, "Tenant-bound roles")."""
    if args.backend == "memory":
        raise UsageError("roles are database roles: use the postgres backend")
    dsn = await asyncio.to_thread(resolve_dsn, args, status)
    config = install_config(args)
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
    if args.backend == "memory":
        raise UsageError("distribute needs a Citus coordinator: use the postgres backend with --dsn")
    if not args.dsn:
        raise UsageError("distribute needs --dsn, the URL of a Citus coordinator with its workers added")
    config = install_config(args)
    done = await asyncio.to_thread(distribute, args.dsn, config, shard_count=args.shard_count)
    tables = ", ".join(done.tables_distributed) if done.tables_distributed else "none (all were)"
    planned = ("from cached plans (this Citus reuses its local plans)" if done.plan_cache_mode == "auto"
               else "per call (this Citus leaks the local plans of cached ones: citusdata/citus#8824)")
    out.print(f"distributed now: {tables}; API functions delegated by tenant: {done.functions_delegated}, "
              f"planned {planned}; other functions on every node: {done.functions_propagated}", markup=False)


async def cmd_server(args: argparse.Namespace, out: Console, status: Console) -> None:
    """``server url`` / ``server stop``: the embedded server's URL (starting it), or stop it."""
    if args.action == "url":
        out.print(await asyncio.to_thread(embedded_dsn), markup=False)
    elif await asyncio.to_thread(stop_embedded_server):
        out.print(f"stopped the embedded PostgreSQL in {default_data_dir()} (its data is kept)", markup=False)
    else:
        out.print(f"no embedded PostgreSQL in {default_data_dir()}", markup=False)
