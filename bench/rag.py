"""RAG vector store benchmark: HNSW quality and latency, filtered min-k, and ACL latency on Postgres.

Builds ``--chunks`` (100,000) chunks of ``--dimensions`` (384) in one scope of one tenant
through ``PostgresVectorStore.upsert`` (batches of 1,000, HNSW index maintained as rows
arrive), then ``VACUUM ANALYZE``. Embeddings are synthetic and seeded: ``--clusters``
(1,000) Gaussian centres, each chunk its centre plus Gaussian noise, the way real
embeddings cluster by topic. Chunk i has source ``s{i // 10}`` and metadata
``{"bucket": i % 100, "band": i % 4}`` (1% and 25% selective), plus ``"rare": true`` on 5 chunks.

Document ACL: source s is granted to group ``g{s % 20}``, and to principal ``ada`` when
``s % 200 == 0``. Readers: ``bob`` in g0..g4 (25% of the chunks), ``carol`` in g7 (5%),
``ada`` alone (0.5%).

    .venv/bin/python bench/rag.py [--dsn URL] [--chunks 100000] [--queries 200] [--concurrency 1]

``--concurrency`` upserts are in flight while loading (each its own transaction of 1,000 chunks), as a
bulk loader on more than one core would run them.

Timings are client-side (``store.query`` through the pool, round trip included). Exact
answers are computed with numpy over the float32 vectors. The last stdout line is a JSON
object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np
import psycopg
from prism_memory import RagAccessConstraint, RagChunk, create_postgres_vector_store
from psycopg import sql

from _common import emit, local_postgres, log, scratch_schema

TENANT, SCOPE = "bench-tenant", "handbook"
READERS = {
    "bob (25%)": RagAccessConstraint("bob", ("g0", "g1", "g2", "g3", "g4")),
    "carol (5%)": RagAccessConstraint("carol", ("g7",)),
    "ada (0.5%)": RagAccessConstraint("ada"),
}


def readable(reader: RagAccessConstraint, source: int) -> bool:
    return f"g{source % 20}" in reader.group_ids or (reader.principal_id == "ada" and source % 200 == 0)


def corpus(count: int, dimensions: int, clusters: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dimensions)).astype(np.float32)
    vectors = centres[rng.integers(0, clusters, size=count)] + rng.normal(scale=0.6, size=(count, dimensions)).astype(np.float32)
    asked = centres[rng.integers(0, clusters, size=queries)] + rng.normal(scale=0.6, size=(queries, dimensions)).astype(np.float32)
    return vectors.astype(np.float32), asked.astype(np.float32)


def metadata(i: int, count: int) -> dict:
    return {"bucket": i % 100, "band": i % 4, **({"rare": True} if i % (count // 5) == 7 else {})}


def exact_top(unit: np.ndarray, query: np.ndarray, mask: np.ndarray | None, k: int = 10) -> list[int]:
    scores = unit @ (query / np.linalg.norm(query))
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = np.argpartition(-scores, min(k, len(scores) - 1))[: k + 20]
    ranked = sorted((int(i) for i in top if np.isfinite(scores[i])), key=lambda i: (-scores[i], f"c{i:07d}"))
    return ranked[:k]


def percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3)


async def timed(call) -> tuple[list, float]:
    start = time.perf_counter()
    result = await call
    return result, (time.perf_counter() - start) * 1000


async def load(store, dsn: str, schema: str, vectors: np.ndarray, args: argparse.Namespace) -> tuple[float, int]:
    """Upsert every chunk (batches of 1,000), grant each source to a group (and every 200th to ``ada``), vacuum;
    returns the ingest's seconds and the number of sources."""
    log(f"loading {args.chunks} chunks of {args.dimensions} dims into {schema}, {args.concurrency} upserts in flight")
    gate = asyncio.Semaphore(args.concurrency)

    async def upsert(start: int) -> None:
        async with gate:
            await store.upsert(TENANT, SCOPE, [
                RagChunk(f"c{i:07d}", f"s{i // 10}", f"chunk {i} of source {i // 10}", vectors[i].tolist(),
                         metadata(i, args.chunks))
                for i in range(start, min(start + 1000, args.chunks))
            ])
            if start % 20000 == 0:
                log(f"  {start + 1000} chunks, {time.perf_counter() - started:.0f} s")

    started = time.perf_counter()
    await asyncio.gather(*(upsert(start) for start in range(0, args.chunks, 1000)))
    ingest_s = time.perf_counter() - started
    sources = (args.chunks + 9) // 10
    async with store.transaction() as tx:
        for source in range(sources):
            principals = ["ada"] if source % 200 == 0 else []
            await tx.set_source_access(TENANT, f"s{source}", principal_ids=principals,
                                       group_ids=[f"g{source % 20}"], access_version=1)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("semantic_memory_rag_chunk", "semantic_memory_rag_source_acl"):
            conn.execute(sql.SQL("vacuum analyze {}.{}").format(sql.Identifier(schema), sql.Identifier(table)))
    return ingest_s, sources


async def unfiltered(store, asked: np.ndarray, unit: np.ndarray) -> tuple[list[float], float]:
    """Each query unfiltered: the latencies (ms) and the recall@10 against the exact top 10."""
    log("unfiltered queries")
    latencies, found = [], 0
    for query in asked:
        got, ms = await timed(store.query(TENANT, SCOPE, query.tolist(), top_k=10))
        latencies.append(ms)
        found += len({int(m.id[1:]) for m in got} & set(exact_top(unit, query, None)))
    return latencies, found / (10 * len(asked))


async def filtered(store, asked: np.ndarray, unit: np.ndarray, chunks: int) -> tuple[bool, dict, dict]:
    """Half the queries under each metadata filter: whether each returned min(10, matches) matching chunks,
    and per filter the p50 latency and the recall@10 against the exact top 10 of the matches."""
    log("filtered queries")
    index = np.arange(chunks)
    filters = {
        "bucket 1%": ({"bucket": 42}, index % 100 == 42),
        "band 25%": ({"band": 1}, index % 4 == 1),
        "rare 5 rows": ({"rare": True}, index % (chunks // 5) == 7),
        "no match": ({"bucket": 1000}, np.zeros(chunks, dtype=bool)),
    }
    ok, latency, recall = True, {}, {}
    for name, (wanted, mask) in filters.items():
        spent, hits = [], 0
        for query in asked:
            got, ms = await timed(store.query(TENANT, SCOPE, query.tolist(), top_k=10, filter=wanted))
            spent.append(ms)
            returned = [int(m.id[1:]) for m in got]
            ok &= len(returned) == min(10, int(mask.sum())) and all(mask[i] for i in returned)
            hits += len(set(returned) & set(exact_top(unit, query, mask)))
        latency[name] = percentile(spent, 50)
        recall[name] = round(hits / max(1, len(asked) * min(10, int(mask.sum()))), 4)
    return ok, latency, recall


async def with_acl(store, asked: np.ndarray, unit: np.ndarray, chunks: int, sources: int) -> dict:
    """Half the queries as each reader of READERS: latencies, leaks (chunks the reader may not read), whether
    each returned min(10, readable), and per reader the p50 latency and the recall@10 against the exact answer."""
    log("ACL queries")
    source_of = np.arange(chunks) // 10
    figures = {"spent": [], "by_reader": {}, "leaks": 0, "recall": {}, "ok": True}
    for name, reader in READERS.items():
        mask = np.array([readable(reader, s) for s in range(sources)])[source_of]
        spent, hits = [], 0
        for query in asked:
            got, ms = await timed(store.query(TENANT, SCOPE, query.tolist(), top_k=10, authorization=reader))
            spent.append(ms)
            returned = [int(m.id[1:]) for m in got]
            figures["leaks"] += sum(1 for i in returned if not mask[i])
            figures["ok"] &= len(returned) == min(10, int(mask.sum()))
            hits += len(set(returned) & set(exact_top(unit, query, mask)))
        figures["spent"] += spent
        figures["by_reader"][name] = percentile(spent, 50)
        figures["recall"][name] = round(hits / (10 * len(asked)), 4)
    return figures


async def run(dsn: str, args: argparse.Namespace) -> dict:
    vectors, asked = corpus(args.chunks, args.dimensions, args.clusters, args.queries, args.seed)
    unit = vectors.astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    with scratch_schema(dsn, "bench_rag") as schema:
        store = await create_postgres_vector_store(dsn, schema=schema, dimensions=args.dimensions)
        try:
            ingest_s, sources = await load(store, dsn, schema, vectors, args)
            for query in asked[: args.warmup]:
                await store.query(TENANT, SCOPE, query.tolist(), top_k=10)
            latencies, hnsw_recall = await unfiltered(store, asked, unit)
            half = asked[: args.queries // 2]
            filtered_ok, filtered_latency, filtered_recall = await filtered(store, half, unit, args.chunks)
            acl = await with_acl(store, half, unit, args.chunks, sources)
        finally:
            await store.close()

    return {
        "hnsw_recall_at_10": round(hnsw_recall, 4),
        "query_p50_ms": percentile(latencies, 50),
        "query_p99_ms": percentile(latencies, 99),
        "filtered_min_k_ok": bool(filtered_ok and acl["ok"]),
        "acl_query_p50_ms": percentile(acl["spent"], 50),
        "acl_query_p99_ms": percentile(acl["spent"], 99),
        "acl_query_p50_ms_by_reader": acl["by_reader"],
        "acl_recall_at_10_by_reader": acl["recall"],
        "acl_leaks": acl["leaks"],
        "filtered_query_p50_ms": filtered_latency,
        "filtered_recall_at_10": filtered_recall,
        "ingest_chunks_per_s": round(args.chunks / ingest_s, 1),
        "ingest_concurrency": args.concurrency,
        "chunks": args.chunks,
        "dimensions": args.dimensions,
        "queries": len(asked),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="a local Postgres URL (default: a throw-away embedded server)")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dimensions", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=1,
                        help="upserts of 1,000 chunks in flight while loading (default 1)")
    args = parser.parse_args()
    with local_postgres(args.dsn) as dsn:
        emit(asyncio.run(run(dsn, args)))


if __name__ == "__main__":
    main()
