"""Shared plumbing for the benchmarks: a local Postgres, a throw-away schema, output helpers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg
from psycopg import sql

REPO_ROOT = Path(__file__).resolve().parent.parent
_LOCAL_HOSTS = {"", "localhost", "127.0.0.1", "::1"}


def log(*parts: object) -> None:
    """Human-readable progress, on stderr (stdout ends with the JSON line)."""
    print(*parts, file=sys.stderr, flush=True)


def emit(result: dict) -> None:
    """Print the result as one JSON object: the last line on stdout."""
    print(json.dumps(result, sort_keys=False), flush=True)


def check_local(dsn: str) -> str:
    """Refuse a DSN whose host is not a Unix socket or the loopback interface."""
    parsed = urlparse(dsn)
    hosts = [parsed.hostname or ""] + parse_qs(parsed.query).get("host", [])
    for host in hosts:
        for part in host.split(","):
            if not (part in _LOCAL_HOSTS or part.startswith("/")):
                raise SystemExit(f"refusing non-local host {part!r}: benchmarks run against a local server only")
    return dsn


def auto_explain_notices(conn: psycopg.Connection) -> list[str]:
    """Make ``conn`` log the analyzed plan (with buffers) of every statement, nested ones included, as notices;
    returns the list the notices' texts are appended to."""
    for statement in (
        "load 'auto_explain'",
        "set auto_explain.log_min_duration = 0",
        "set auto_explain.log_nested_statements = on",
        "set auto_explain.log_analyze = on",
        "set auto_explain.log_buffers = on",
        "set auto_explain.log_level = 'notice'",
        "set client_min_messages = 'notice'",
    ):
        conn.execute(statement)
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    return notices


async def remember_concurrently(vector_store, batches, concurrency: int) -> None:
    """``vector_store.remember_batch`` on each of ``batches`` (lists of (scope, records)), ``concurrency`` in flight."""
    gate = asyncio.Semaphore(concurrency)

    async def write(writes) -> None:
        async with gate:
            await vector_store.remember_batch(writes)

    await asyncio.gather(*(write(writes) for writes in batches))


@contextlib.contextmanager
def local_postgres(dsn: str | None) -> Iterator[str]:
    """Yield ``dsn`` (checked to be local), or start a throw-away embedded server and yield its URL."""
    if dsn:
        yield check_local(dsn)
        return
    from prism_memory.embedded import ensure_database, start_embedded_server

    with tempfile.TemporaryDirectory(prefix="prism-bench-") as tmp:
        log(f"starting embedded Postgres in {tmp}")
        server = start_embedded_server(Path(tmp) / "pgdata", keep_running=False)
        try:
            yield ensure_database(server, "bench")
        finally:
            with contextlib.suppress(Exception):
                server.cleanup()


@contextlib.contextmanager
def scratch_schema(dsn: str, prefix: str, suffixes: tuple[str, ...] = ()) -> Iterator[str]:
    """A fresh schema name (``<prefix>_<hex>``); the schema, and each ``<prefix>_<hex><suffix>`` (the schemas an
    install keeps beside its own), are dropped afterwards."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    try:
        yield name
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for schema in (name, *(name + suffix for suffix in suffixes)):
                conn.execute(sql.SQL("drop schema if exists {} cascade").format(sql.Identifier(schema)))
