"""Citus against plain PostgreSQL: recall, remember and update_working latency in one run.

Installs the same data into a throw-away schema on each engine: on the Citus
coordinator (``--citus-url``, default ``$PRISM_TEST_CITUS_URL``; workers
already added) the install is distributed by tenant with
``prism_memory.citus.distribute``; the plain engine is ``--plain-url`` or a
throw-away embedded server. The data is ``bench/latency.py``'s: one main
thread of ``--entries`` seeded synthetic entries plus ``--other-threads``
threads over five tenants, embedded with the hash embedder, then
``VACUUM (ANALYZE)``. Then, from the client, it times ``--runs`` calls of each
(after warm-up), one operation after the other: ``recall`` (top_k=8) on the
main thread, ``remember`` of one entry to it, and ``update_working``, the
two engines' calls interleaved (one on each in turn), so that a change in the
machine's load reaches both alike.

    .venv/bin/python bench/citus.py [--citus-url URL] [--plain-url URL] [--entries 1000] [--runs 300]

It also prints ``citus_plan_cache_mode``, the plan mode distribute() chose for the cluster's Citus build
(``auto`` where it reuses its local plans, else ``force_custom_plan``: docs/scaling.md).

Goal: Citus recall p50 at most 1.5x plain. The last stdout line
is a JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time

import numpy as np
import psycopg
from prism_memory import create_hash_embedder, create_postgres_memory_stores
from prism_memory.citus import delegated_schema, distribute
from prism_memory.schema import SchemaConfig, migrate
from prism_memory.types import EntryRecord
from psycopg import sql

from _common import check_local, emit, local_postgres, log, scratch_schema
from latency import QUESTIONS, build_threads, fill, ingest

DIMENSIONS = 64


async def load(dsn: str, schema: str, citus: bool, args: argparse.Namespace):
    """Install and load one engine; returns its stores, the main thread, the queries and (on Citus) the plan
    mode distribute() chose."""
    config = SchemaConfig(schema, dimensions=DIMENSIONS)
    await asyncio.to_thread(migrate, dsn, config)
    plan_cache_mode = (await asyncio.to_thread(distribute, dsn, config)).plan_cache_mode if citus else None
    embedder = create_hash_embedder(DIMENSIONS)
    threads = build_threads(args, embedder)
    stores = await create_postgres_memory_stores(dsn, schema=schema, dimensions=DIMENSIONS, skip_migrations=True)
    seconds = await ingest(stores, threads)
    log(f"{'citus' if citus else 'plain'}: loaded {sum(len(r) for _, r in threads)} entries in {seconds:.1f} s")
    rng = random.Random(args.seed)
    queries = [(text, embedder.embed_one(text)) for text in (fill(rng.choice(QUESTIONS), rng) for _ in range(64))]
    with psycopg.connect(dsn, autocommit=True) as conn:  # as autovacuum would after a bulk load
        conn.execute(sql.SQL("vacuum (analyze) {}").format(sql.SQL(config.names["entries"])))
    return stores, threads[0][0], queries, plan_cache_mode


async def measure(engines: dict, args: argparse.Namespace) -> dict[str, float]:
    """Time each operation on every engine, the engines' calls interleaved (one call on each in turn), so a
    change in the machine's load reaches both alike; returns ``<engine>_<operation>_p50_ms`` and ``_p95_ms``."""
    calls = {
        "recall": lambda stores, main, n, text, vector: stores.vector_store.recall(main, vector, text, 8, 0),
        "remember": lambda stores, main, n, text, vector: stores.vector_store.remember(
            main, [EntryRecord(f"bench-{n}", text, vector, {}, None, None)]),
        "update_working": lambda stores, main, n, text, vector: stores.working_store.update_working(
            main, {"turn": n, "last": text}, None),
    }
    timings: dict[str, list[float]] = {f"{engine}_{name}": [] for engine in engines for name in calls}
    for name, call in calls.items():  # recall first, on the loaded thread
        for n in range(args.warmup + args.runs):
            for engine, (stores, main, queries) in engines.items():
                text, vector = queries[n % len(queries)]
                started = time.perf_counter()
                await call(stores, main, n, text, vector)
                if n >= args.warmup:
                    timings[f"{engine}_{name}"].append((time.perf_counter() - started) * 1000)
    result = {}
    for key, values in timings.items():
        result[f"{key}_p50_ms"] = round(float(np.percentile(values, 50)), 3)
        result[f"{key}_p95_ms"] = round(float(np.percentile(values, 95)), 3)
    return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--citus-url", default=os.environ.get("PRISM_TEST_CITUS_URL"),
                        help="a Citus coordinator with workers added (default: $PRISM_TEST_CITUS_URL)")
    parser.add_argument("--plain-url", default=None, help="plain PostgreSQL (default: a throw-away embedded server)")
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--other-threads", type=int, default=20)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.set_defaults(derived_fraction=0.0)  # latency.build_threads: every entry written as it is
    args = parser.parse_args()
    if not args.citus_url:
        raise SystemExit("bench/citus.py needs --citus-url or $PRISM_TEST_CITUS_URL (a coordinator with workers)")
    citus_url = check_local(args.citus_url)
    result: dict[str, object] = {"entries": args.entries, "runs": args.runs, "interleaved": True}
    copies = delegated_schema(SchemaConfig("bench_citus"))[len("bench_citus"):]  # distribute() keeps them beside
    with scratch_schema(citus_url, "bench_citus", (copies,)) as citus_schema, local_postgres(args.plain_url) as plain_url, \
            scratch_schema(plain_url, "bench_plain") as plain_schema:
        *citus_engine, result["citus_plan_cache_mode"] = await load(citus_url, citus_schema, True, args)
        engines = {"citus": tuple(citus_engine), "plain": (await load(plain_url, plain_schema, False, args))[:3]}
        try:
            result.update(await measure(engines, args))
        finally:
            for stores, _, _ in engines.values():
                await stores.close()
    for name in ("recall", "remember", "update_working"):
        result[f"{name}_ratio"] = round(result[f"citus_{name}_p50_ms"] / result[f"plain_{name}_p50_ms"], 2)
    result["goal_recall_ratio_at_most"] = 1.5
    emit(result)


if __name__ == "__main__":
    asyncio.run(main())
