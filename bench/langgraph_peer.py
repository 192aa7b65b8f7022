"""PrismStore against LangGraph's own AsyncPostgresStore on one embedded server: the same items, the same
queries, interleaved.

Loads ``--items`` items spread over ``--users`` namespaces ``("memories", user)`` into both stores (values
``{"text": ...}`` of 8 words drawn from a 500-word vocabulary, indexed on ``text``, the same deterministic
64-wide bag-of-words embedding), then times, from the client, interleaved in rotating order:

* ``aput`` of a new item into a random user's namespace (``speedup_put_vs_langgraph_postgres``, p50);
* ``asearch(("memories", user), query=<3 words>, limit=10)`` (``speedup_search_vs_langgraph_postgres``, p50).

AsyncPostgresStore is configured as its docs say: ``index={"dims", "embed", "fields"}`` with its default
pgvector HNSW index on cosine distance, ``setup()`` run first. PrismStore keeps one resource per user
(``resource_label=1``, as docs/integrations.md advises) and runs with ``lexical_weight=0``, so
both rank by cosine similarity alone and ``differential_mismatches`` counts the searches whose top-10 scores
differ or whose keys above the 10th score differ (keys tied at the cut may differ: the bag-of-words embedding ties
often), plus gets of the put items whose values differ.

    pip install -e '.[langgraph,bench]'
    .venv/bin/python bench/langgraph_peer.py [--items 100000] [--users 1000] [--queries 300] [--puts 300]

The last stdout line is one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import statistics
import time

import numpy as np

from langgraph.store.postgres.aio import AsyncPostgresStore
from prism_memory import create_postgres_memory_stores
from prism_memory.integrations.langgraph import PrismStore

from _common import emit, local_postgres, log, scratch_schema

DIMENSIONS = 64
VOCABULARY = [f"w{i}" for i in range(500)]


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic bag-of-words embedding (never zero)."""
    vectors = []
    for text in texts:
        vector = [0.0] * DIMENSIONS
        vector[0] = 0.01
        for word in text.split():
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
        vectors.append(vector)
    return vectors


INDEX = {"dims": DIMENSIONS, "embed": embed, "fields": ["text"]}


def sentence(rng: np.random.Generator, words: int) -> str:
    return " ".join(VOCABULARY[i] for i in rng.integers(0, len(VOCABULARY), words))


def same_ranking(left, right) -> bool:
    """Whether two top-k answers agree: the same scores (to 1e-6) and the same keys above the last score, where
    keys tied at the cut may legitimately differ (a bag-of-words embedding ties often)."""
    if len(left) != len(right) or any(abs(a.score - b.score) > 1e-6 for a, b in zip(left, right)):
        return False
    cut = left[-1].score if left else 0.0
    return {h.key for h in left if h.score > cut + 1e-6} == {h.key for h in right if h.score > cut + 1e-6}


async def timed(call) -> float:
    start = time.perf_counter()
    await call
    return (time.perf_counter() - start) * 1000


async def run(args: argparse.Namespace, dsn: str, schema: str) -> dict:
    rng = np.random.default_rng(args.seed)
    stores = await create_postgres_memory_stores(dsn, schema=schema, dimensions=DIMENSIONS, max_pool_size=2)
    prism = PrismStore.create(tenant_id="bench", resource_id="langgraph", index=INDEX, lexical_weight=0, resource_label=1,
                              vector_store=stores.vector_store, working_store=stores.working_store)
    async with AsyncPostgresStore.from_conn_string(dsn, index=INDEX) as peer:
        await peer.setup()
        log(f"loading {args.items:,} items over {args.users:,} users into both stores")
        for n in range(args.items):
            namespace, value = ("memories", f"user_{n % args.users}"), {"text": sentence(rng, 8)}
            await prism.aput(namespace, f"item_{n}", value)
            await peer.aput(namespace, f"item_{n}", value)
        put_ms = {"prism": [], "peer": []}
        mismatches = 0
        log(f"timing {args.puts} puts, interleaved")
        for n in range(args.puts):
            namespace, value = ("memories", f"user_{rng.integers(args.users)}"), {"text": sentence(rng, 8)}
            pair = [("prism", prism), ("peer", peer)][:: 1 if n % 2 == 0 else -1]
            for name, store in pair:
                put_ms[name].append(await timed(store.aput(namespace, f"new_{n}", value)))
            got, want = await prism.aget(namespace, f"new_{n}"), await peer.aget(namespace, f"new_{n}")
            mismatches += (got and got.value) != (want and want.value)
        search_ms = {"prism": [], "peer": []}
        log(f"timing {args.queries} top-10 searches, interleaved")
        for n in range(args.warmup + args.queries):
            namespace, query = ("memories", f"user_{rng.integers(args.users)}"), sentence(rng, 3)
            results = {}
            for name, store in [("prism", prism), ("peer", peer)][:: 1 if n % 2 == 0 else -1]:
                start = time.perf_counter()
                results[name] = await store.asearch(namespace, query=query, limit=10)
                if n >= args.warmup:
                    search_ms[name].append((time.perf_counter() - start) * 1000)
            if n >= args.warmup:
                mismatches += not same_ranking(results["prism"], results["peer"])
    await stores.close()
    p50 = {kind: {name: statistics.median(ms) for name, ms in figures.items()}
           for kind, figures in (("put", put_ms), ("search", search_ms))}
    return {
        "speedup_search_vs_langgraph_postgres": round(p50["search"]["peer"] / p50["search"]["prism"], 3),
        "speedup_put_vs_langgraph_postgres": round(p50["put"]["peer"] / p50["put"]["prism"], 3),
        "differential_mismatches": mismatches,
        "search_p50_ms": {name: round(ms, 3) for name, ms in p50["search"].items()},
        "put_p50_ms": {name: round(ms, 3) for name, ms in p50["put"].items()},
        "items": args.items, "users": args.users, "queries": args.queries, "puts": args.puts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="local postgresql:// URL (default: a throw-away embedded server)")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--puts", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args()
    with local_postgres(args.dsn) as dsn, scratch_schema(dsn, "bench_langgraph") as schema:
        result = asyncio.run(run(args, dsn, schema))
    emit(result)


if __name__ == "__main__":
    main()
