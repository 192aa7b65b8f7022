"""The MCP server end to end: recall latency over stdio, and isolation under concurrent HTTP clients.

1. stdio: starts ``prism-memory mcp`` as a subprocess (the SDK's stdio client, as a desktop agent does) on
   Postgres, fills one thread with ``--entries`` synthetic entries through the ``remember`` tool, runs
   ``VACUUM (ANALYZE)`` on the entries (as autovacuum would after the load), then times ``--runs``
   ``recall`` tool calls (top_k 8) from the client, after ``--warmup`` untimed ones. Each block of 50 calls
   is followed by the same 50 recalls through ``Memory.recall`` in the benchmark's own process (the same
   hits, checked): ``memory_recall_p50_ms`` is what this machine takes for the recall itself at that moment,
   and ``mcp_overhead_p50_ms`` (the median over blocks of the difference of the two medians) what MCP over
   stdio adds to it.
2. HTTP: starts ``prism-memory mcp --transport http`` on 127.0.0.1 with two tokens bound to look-alike
   tenants (``acme``, ``acme-corp``: same resource and thread names, distinct entries) and runs
   ``--http-clients`` concurrent sessions (half per token) for ``--http-seconds``: recall (in its own
   thread and in the other's thread name), list_memories, remember, get_working_memory, and correct /
   forget with the other tenant's real entry ids. ``mcp_http_errors`` counts calls that failed where they
   should not (or succeeded where they should fail); ``mcp_cross_tenant_hits`` counts results holding
   anything of the other tenant (its tag, its ids) and guessed-id writes that did anything.

    .venv/bin/python bench/mcp.py [--dsn URL] [--entries 1000] [--runs 500] [--http-seconds 30] [--http-clients 8]

Targets: ``mcp_recall_p50_ms`` <= 5, ``mcp_http_errors`` == 0, ``mcp_cross_tenant_hits`` == 0. The last
stdout line is a JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
import numpy as np
import psycopg
from psycopg import sql

# This file is bench/mcp.py: run as a script, its directory comes first on sys.path and would shadow the SDK's
# `mcp` package. Import the SDK with that directory set aside, then put it back for the benchmark helpers.
_BENCH_DIR = sys.path.pop(0) if Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent else None
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from prism_memory import create_hash_embedder, create_memory, create_postgres_memory_stores  # noqa: E402
from prism_memory.mcp_server import server_scope, token_stanza  # noqa: E402
from prism_memory.schema import SchemaConfig, migrate  # noqa: E402

if _BENCH_DIR is not None:
    sys.path.insert(0, _BENCH_DIR)
from _common import emit, local_postgres, log, scratch_schema  # noqa: E402
from latency import QUESTIONS, TEMPLATES, fill  # noqa: E402

THREAD, RESOURCE = "thread-main", "user-main"
TENANTS = ("acme", "acme-corp")
REMEMBER_BATCH = 100
BLOCK = 50  # recall calls per block (stdio phase): a block over MCP, then the same recalls in process


def server_options(dsn: str, schema: str, dimensions: int) -> list[str]:
    return ["-m", "prism_memory", "--dsn", dsn, "--schema", schema, "--dimensions", str(dimensions)]


async def stdio_recall(args: argparse.Namespace, dsn: str, schema: str) -> dict:
    """Fill a thread through ``remember`` over stdio, then time ``recall`` calls from the client."""
    rng = random.Random(args.seed)
    parameters = StdioServerParameters(
        command=sys.executable, args=[*server_options(dsn, schema, args.dimensions), "mcp"],
        env={"PRISM_MEMORY_TENANT": "tenant-0", "PRISM_MEMORY_RESOURCE": RESOURCE, "PRISM_MEMORY_THREAD": THREAD},
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(parameters, errlog=errlog)) as client:
            log(f"stdio: remembering {args.entries} entries through the remember tool")
            for start in range(0, args.entries, REMEMBER_BATCH):
                texts = [fill(rng.choice(TEMPLATES), rng) for _ in range(min(REMEMBER_BATCH, args.entries - start))]
                result = await client.call_tool("remember", {"entries": texts})
                assert not result.is_error, result.content
            with psycopg.connect(dsn, autocommit=True) as conn:  # as autovacuum would after a bulk load
                conn.execute(sql.SQL("vacuum (analyze) {}").format(
                    sql.SQL(SchemaConfig(schema=schema, dimensions=args.dimensions).names["entries"])))
            queries = [fill(rng.choice(QUESTIONS), rng) for _ in range(200)]
            stores = await create_postgres_memory_stores(dsn, schema=schema, dimensions=args.dimensions, skip_migrations=True)
            try:
                memory = create_memory(tenant_id="tenant-0", resource_id=RESOURCE, thread_id=THREAD,
                                       embedder=create_hash_embedder(args.dimensions), vector_store=stores.vector_store,
                                       working_store=stores.working_store)
                for n in range(args.warmup):  # untimed, both ways
                    await client.call_tool("recall", {"query": queries[n % len(queries)], "top_k": 8})
                    await memory.recall(queries[n % len(queries)], top_k=8)
                # Blocks of BLOCK tool calls alternate with blocks of the same recalls in process (one at a time
                # in both); alternating call by call would have each evict the other's caches.
                timings, in_process, overheads = [], [], []
                for block in range(args.warmup, args.warmup + args.runs, BLOCK):
                    block_queries = [queries[n % len(queries)] for n in range(block, min(block + BLOCK, args.warmup + args.runs))]
                    over_mcp, direct, hits = [], [], []
                    for query in block_queries:
                        started = time.perf_counter()
                        result = await client.call_tool("recall", {"query": query, "top_k": 8})
                        over_mcp.append((time.perf_counter() - started) * 1000)
                        assert not result.is_error and len(result.structured_content["hits"]) == 8, result.content
                        hits.append([hit["id"] for hit in result.structured_content["hits"]])
                    for query, expected in zip(block_queries, hits):
                        started = time.perf_counter()
                        recalled = await memory.recall(query, top_k=8)
                        direct.append((time.perf_counter() - started) * 1000)
                        assert [hit.id for hit in recalled.hits] == expected  # the same recall
                    timings += over_mcp
                    in_process += direct
                    overheads.append(float(np.median(over_mcp) - np.median(direct)))
            finally:
                await stores.close()
    p50, p95, p99 = np.percentile(timings, [50, 95, 99])
    direct_p50, overhead_p50 = np.percentile(in_process, 50), np.median(overheads)
    log(f"stdio recall over {len(timings)} calls: p50 {p50:.2f} ms, p95 {p95:.2f} ms, p99 {p99:.2f} ms; "
        f"the same recalls in process (Memory.recall), in alternate blocks: p50 {direct_p50:.2f} ms; "
        f"what MCP over stdio adds to a call: p50 {overhead_p50:.2f} ms")
    return {"memory_recall_p50_ms": round(float(direct_p50), 3), "mcp_overhead_p50_ms": round(float(overhead_p50), 3),
            "mcp_recall_p50_ms": round(float(p50), 3), "mcp_recall_p95_ms": round(float(p95), 3),
            "mcp_recall_p99_ms": round(float(p99), 3), "recall_calls": len(timings), "entries_in_thread": args.entries}


class Tally:
    """What the HTTP clients saw: calls, latencies, and the two counts the targets are about."""

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.cross_tenant_hits = 0
        self.latencies: list[float] = []
        self.examples: list[str] = []

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.examples) < 5:
            self.examples.append(what)


async def http_client(url: str, token: str, tenant: str, other: str, ids: dict[str, list[str]], deadline: float,
                      tally: Tally, seed: int) -> None:
    """One session of ``tenant`` until ``deadline``: a fixed mix of calls, every result checked for ``other``'s data."""
    rng = random.Random(seed)
    foreign_tag = re.compile(re.escape(f"[{other}]"))
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=60)) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:

            async def call(tool: str, arguments: dict, expect_error: str | None = None) -> dict | None:
                started = time.perf_counter()
                try:
                    result = await client.call_tool(tool, arguments)
                except Exception as exc:  # a transport or protocol failure
                    tally.calls += 1
                    tally.error(f"{tool}: {type(exc).__name__}: {exc}")
                    return None
                tally.calls += 1
                tally.latencies.append((time.perf_counter() - started) * 1000)
                text = result.content[0].text if result.content else ""
                if foreign_tag.search(text):
                    tally.cross_tenant_hits += 1
                if expect_error is not None:  # a call on the other tenant's id, which its error text names
                    if not result.is_error:
                        tally.cross_tenant_hits += 1
                    elif expect_error not in text:
                        tally.error(f"{tool}: expected {expect_error}, got {text[:200]}")
                    return None
                if any(entry_id in text for entry_id in ids[other]):
                    tally.cross_tenant_hits += 1
                if result.is_error:
                    tally.error(f"{tool}: {text[:200]}")
                    return None
                return result.structured_content

            while time.monotonic() < deadline:
                query = fill(rng.choice(QUESTIONS), rng)
                await call("recall", {"query": query, "top_k": 8})
                await call("recall", {"query": query, "top_k": 8, "thread": THREAD})
                await call("list_memories", {"limit": 20})
                stored = await call("remember", {"entries": [f"[{tenant}] " + fill(rng.choice(TEMPLATES), rng)]})
                if stored:
                    ids[tenant].extend(stored["ids"])
                guess = rng.choice(ids[other])
                await call("correct", {"entry_id": guess, "text": f"[{tenant}] overwritten"}, expect_error="EntryNotFoundError")
                await call("forget", {"ids": [guess]}, expect_error="EntryNotFoundError")
                await call("get_working_memory", {})


async def report_progress(tally: Tally, started: float, every_s: float = 5.0) -> None:
    """Log the calls of each ``every_s`` window while the HTTP clients run."""
    seen = 0
    while True:
        await asyncio.sleep(every_s)
        log(f"  {time.monotonic() - started:5.1f} s: {(tally.calls - seen) / every_s:.0f} calls/s, "
            f"{tally.errors} errors, {tally.cross_tenant_hits} cross-tenant hits")
        seen = tally.calls


async def http_isolation(args: argparse.Namespace, dsn: str, schema: str, workdir: Path) -> dict:
    """Two look-alike tenants' tokens, ``--http-clients`` concurrent sessions for ``--http-seconds``."""
    tokens = {tenant: secrets.token_urlsafe(32) for tenant in TENANTS}
    (workdir / "tokens.toml").write_text("\n".join(
        token_stanza(tenant, tokens[tenant], server_scope(tenant, RESOURCE, THREAD, name=tenant)) for tenant in TENANTS))
    log_path = workdir / "http.log"
    with log_path.open("w") as errlog:
        process = subprocess.Popen(
            [sys.executable, *server_options(dsn, schema, args.dimensions), "mcp", "--transport", "http", "--port", "0",
             "--tokens", str(workdir / "tokens.toml")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"at (http://127\.0\.0\.1:\d+/mcp) ", log_path.read_text())):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the HTTP server did not start:\n{log_path.read_text()}")
            await asyncio.sleep(0.05)
        url = found.group(1)
        ids: dict[str, list[str]] = {}
        for tenant in TENANTS:  # each tenant's own entries, tagged, before the clients start
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens[tenant]}"}) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    rng = random.Random(tenant)
                    result = await client.call_tool("remember", {"entries": [f"[{tenant}] " + fill(rng.choice(TEMPLATES), rng)
                                                                           for _ in range(50)]})
                    ids[tenant] = list(result.structured_content["ids"])
        tally = Tally()
        log(f"http: {args.http_clients} concurrent clients for {args.http_seconds} s at {url}")
        started = time.monotonic()
        stop = started + args.http_seconds
        progress = asyncio.create_task(report_progress(tally, started))
        await asyncio.gather(*(
            http_client(url, tokens[TENANTS[n % 2]], TENANTS[n % 2], TENANTS[(n + 1) % 2], ids, stop, tally, args.seed + n)
            for n in range(args.http_clients)))
        seconds = time.monotonic() - started
        progress.cancel()
    finally:
        process.terminate()
        process.wait(timeout=30)
    for example in tally.examples:
        log(f"  error: {example}")
    p50 = float(np.percentile(tally.latencies, 50)) if tally.latencies else None
    log(f"http: {tally.calls} calls in {seconds:.1f} s, {tally.errors} errors, {tally.cross_tenant_hits} cross-tenant hits, "
        f"p50 {p50:.2f} ms" if p50 is not None else "http: no call completed")
    return {"mcp_http_errors": tally.errors, "mcp_cross_tenant_hits": tally.cross_tenant_hits, "mcp_http_calls": tally.calls,
            "mcp_http_calls_per_s": round(tally.calls / seconds, 1), "mcp_http_p50_ms": None if p50 is None else round(p50, 3),
            "http_clients": args.http_clients, "http_seconds": args.http_seconds}


async def run(args: argparse.Namespace, dsn: str, schema: str) -> dict:
    migrate(dsn, SchemaConfig(schema=schema, dimensions=args.dimensions))
    result = {}
    if args.http_seconds > 0:
        with tempfile.TemporaryDirectory(prefix="prism-bench-mcp-") as workdir:
            result.update(await http_isolation(args, dsn, schema, Path(workdir)))
    result.update(await stdio_recall(args, dsn, schema))  # last: its key ends the JSON line
    return {**result, "dimensions": args.dimensions, "top_k": 8, "transport_recall": "stdio"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="local postgresql:// URL (default: a throw-away embedded server)")
    parser.add_argument("--dimensions", type=int, default=256, help="hash-embedder width (default 256)")
    parser.add_argument("--entries", type=int, default=1000, help="entries in the recalled thread (default 1000)")
    parser.add_argument("--warmup", type=int, default=50, help="untimed recall calls first (default 50)")
    parser.add_argument("--runs", type=int, default=500, help="timed recall calls (default 500)")
    parser.add_argument("--http-seconds", type=float, default=30, help="the HTTP phase's length (default 30; 0 skips it)")
    parser.add_argument("--http-clients", type=int, default=8, help="concurrent HTTP sessions, half per tenant (default 8)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with local_postgres(args.dsn) as dsn, scratch_schema(dsn, "bench_mcp") as schema:
        result = asyncio.run(run(args, dsn, schema))
    emit(result)


if __name__ == "__main__":
    main()
