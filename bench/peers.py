"""Head-to-head: prism-memory against langchain-postgres and mem0 on one server, one corpus, one run.

Loads the same 100,000 entries (``bench/corpus.py`` at that size: 1,000
tenants, threads of 10 to 5,000 entries, 384 dimensions) into the same
embedded server through three stores, then times the same scoped top-10
queries on each, interleaved (query 1 on all three, in rotating order, then
query 2, ...), from the client:

* prism-memory: ``PostgresVectorStore.remember_batch`` (one call per tenant
  batch of about 1,000 entries, two in flight) and ``recall`` (exact,
  behind the consent gate and tombstones, similarity + lexical).
* langchain-postgres ``PGVectorStore`` (the maintained v2 store;
  ``PGVector`` is deprecated): tenant/resource/thread as metadata columns,
  ``add_embeddings`` per batch, then its documented ``apply_vector_index(HNSWIndex())``,
  plus a B-tree on the scope columns; ``asimilarity_search_by_vector`` with
  an ``$eq`` filter on the three columns.
* mem0's ``PGVector`` vector store used directly with the precomputed
  vectors: ``hnsw=True`` (its documented index), plus a B-tree on the
  payload keys it filters on; ``insert`` per batch and ``search`` with
  ``filters={"user_id": tenant/resource, "run_id": thread}``.

The peers store every entry (they have no consent or tombstones); prism-memory
stores the 10% invalid ones too and filters them at recall. Ingest is timed
to a queryable store: the loads plus any index the peer builds afterwards.
Then all tables are vacuumed and analyzed (as autovacuum would), untimed.
Each peer's answers are also scored against the exact cosine top 10 of what
it stored (``recall_at_10_*``), since an HNSW index under a scope filter can
return fewer or other rows. Then ``--large-queries`` more, interleaved the same
way, all on the corpus's largest thread (5,000 entries):
``speedup_large_thread_vs_*`` and ``large_thread_p50_ms``.

    pip install -e '.[bench]'
    .venv/bin/python bench/peers.py [--entries 100000] [--queries 500]

The last stdout line is one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import secrets
import time
import uuid

import numpy as np
import psycopg
from prism_memory import create_postgres_memory_stores
from psycopg import sql

from _common import emit, local_postgres, log, remember_concurrently, scratch_schema
from corpus import CorpusSpec, Thread, tenant_batches, thread_entries, thread_query, threads

TOP_K = 10


class PrecomputedEmbeddings:
    """langchain's ``Embeddings`` for a store fed only precomputed vectors: embedding text is an error."""

    def embed_documents(self, texts):
        raise RuntimeError("peers.py passes precomputed embeddings")

    def embed_query(self, text):
        raise RuntimeError("peers.py passes precomputed embeddings")


def mem0_id(thread: Thread, entry_id: str) -> str:
    """mem0 keys rows by UUID: a stable one per (thread, entry)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{thread.scope.thread_id}/{entry_id}"))


class Prism:
    name = "prism"

    def __init__(self, dsn: str, schema: str, dimensions: int) -> None:
        self.dsn, self.schema, self.dimensions = dsn, schema, dimensions

    async def open(self) -> None:
        self.stores = await create_postgres_memory_stores(self.dsn, schema=self.schema, dimensions=self.dimensions,
                                                          max_pool_size=2)

    async def load(self, chunk) -> None:
        await remember_concurrently(
            self.stores.vector_store, [[(t.scope, rows.records) for t, rows in writes] for writes in chunk], 2)

    async def finish(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("analyze {}.semantic_memory").format(sql.Identifier(self.schema)))

    async def query(self, thread: Thread, vector: np.ndarray, text: str) -> list[str]:
        result = await self.stores.vector_store.recall(thread.scope, vector, text, TOP_K, 0)
        return [hit.id for hit in result.hits]

    async def close(self) -> None:
        await self.stores.close()


class LangChain:
    name = "langchain"

    def __init__(self, dsn: str, table: str, dimensions: int) -> None:
        self.dsn, self.table, self.dimensions = dsn, table, dimensions

    async def open(self) -> None:
        from langchain_postgres import Column, PGEngine, PGVectorStore

        self.engine = PGEngine.from_connection_string(self.dsn.replace("postgresql://", "postgresql+psycopg://", 1))
        columns = [Column("tenant_id", "TEXT"), Column("resource_id", "TEXT"), Column("thread_id", "TEXT"),
                   Column("entry_id", "TEXT")]
        await self.engine.ainit_vectorstore_table(self.table, self.dimensions, metadata_columns=columns)
        self.store = await PGVectorStore.create(
            self.engine, PrecomputedEmbeddings(), self.table,
            metadata_columns=["tenant_id", "resource_id", "thread_id", "entry_id"])

    async def load(self, chunk) -> None:
        for writes in chunk:
            records = [(t, r) for t, rows in writes for r in rows.records]
            await self.store.aadd_embeddings(
                [r.text for _, r in records],
                [np.asarray(r.embedding, dtype=np.float32).tolist() for _, r in records],
                [{"tenant_id": t.scope.tenant_id, "resource_id": t.scope.resource_id,
                  "thread_id": t.scope.thread_id, "entry_id": r.id} for t, r in records],
                ids=[mem0_id(t, r.id) for t, r in records],
            )

    async def finish(self) -> None:
        from langchain_postgres.v2.indexes import HNSWIndex

        await self.store.aapply_vector_index(HNSWIndex())
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("create index on {} (tenant_id, resource_id, thread_id)").format(
                sql.Identifier(self.table)))
            conn.execute(sql.SQL("analyze {}").format(sql.Identifier(self.table)))

    async def query(self, thread: Thread, vector: np.ndarray, text: str) -> list[str]:
        scope = thread.scope
        docs = await self.store.asimilarity_search_by_vector(
            vector.tolist(), k=TOP_K,
            filter={"tenant_id": {"$eq": scope.tenant_id}, "resource_id": {"$eq": scope.resource_id},
                    "thread_id": {"$eq": scope.thread_id}})
        return [doc.metadata["entry_id"] for doc in docs]

    async def close(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("drop table if exists {}").format(sql.Identifier(self.table)))
        await self.engine.close()


class Mem0:
    name = "mem0"

    def __init__(self, dsn: str, table: str, dimensions: int) -> None:
        self.dsn, self.table, self.dimensions = dsn, table, dimensions

    async def open(self) -> None:
        from mem0.vector_stores.pgvector import PGVector

        self.store = PGVector(dbname=None, collection_name=self.table, embedding_model_dims=self.dimensions,
                              user=None, password=None, host=None, port=None, diskann=False, hnsw=True,
                              connection_string=self.dsn)
        self.store.create_col()
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("create index on {} ((payload->>'user_id'), (payload->>'run_id'))").format(
                sql.Identifier(self.table)))
        self.ids: dict[str, str] = {}

    async def load(self, chunk) -> None:
        for writes in chunk:
            records = [(t, r) for t, rows in writes for r in rows.records]
            ids = [mem0_id(t, r.id) for t, r in records]
            self.ids.update({key: r.id for key, (_, r) in zip(ids, records)})
            self.store.insert(
                [np.asarray(r.embedding, dtype=np.float32).tolist() for _, r in records],
                [{"user_id": f"{t.scope.tenant_id}/{t.scope.resource_id}", "run_id": t.scope.thread_id,
                  "data": r.text} for t, r in records],
                ids,
            )

    async def finish(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("analyze {}").format(sql.Identifier(self.table)))

    async def query(self, thread: Thread, vector: np.ndarray, text: str) -> list[str]:
        scope = thread.scope
        hits = self.store.search(text, vector.tolist(), top_k=TOP_K,
                                 filters={"user_id": f"{scope.tenant_id}/{scope.resource_id}",
                                          "run_id": scope.thread_id})
        return [self.ids[hit.id] for hit in hits]

    async def close(self) -> None:
        self.store.delete_col()
        self.store.connection_pool.close()


def exact_cosine(entries, vector: np.ndarray) -> list[str]:
    """The cosine top 10 of every entry of a thread (what a peer stored): the peers' ground truth."""
    similarity = entries.embeddings.astype(np.float64) @ vector.astype(np.float64)
    order = np.argsort(-similarity, kind="stable")[:TOP_K]
    return [entries.records[i].id for i in order]


async def load_all(stores: list, spec: CorpusSpec, dsn: str, schema: str) -> tuple[dict[str, float], dict[str, float]]:
    """Load the corpus into every store, 50 batches at a time, the peers in turn; then each store's own finish
    (index, analyze) and a vacuum of the tables. Returns the seconds each spent loading and finishing."""
    ingest = {store.name: 0.0 for store in stores}
    finish = {store.name: 0.0 for store in stores}
    log(f"loading {spec.entries:,} entries into each store, chunk by chunk (peers in turn)")
    batches = tenant_batches(spec, 1000)
    loaded = 0
    while chunk := list(itertools.islice(batches, 50)):
        for store in stores:
            started = time.perf_counter()
            await store.load(chunk)
            ingest[store.name] += time.perf_counter() - started
        loaded += sum(len(rows.records) for writes in chunk for _, rows in writes)
        log(f"  {loaded:,} entries: " + ", ".join(f"{name} {loaded / s:,.0f}/s" for name, s in ingest.items()))
    for store in stores:
        started = time.perf_counter()
        await store.finish()
        finish[store.name] = time.perf_counter() - started
    log("after load: " + ", ".join(f"{name} index/analyze {s:.1f} s" for name, s in finish.items()))
    with psycopg.connect(dsn, autocommit=True) as conn:  # what autovacuum does after a bulk load, for all three
        for table in (sql.Identifier(schema, "semantic_memory"), sql.Identifier(schema, "semantic_memory_invalidation"),
                      sql.Identifier(stores[1].table), sql.Identifier(stores[2].table)):
            conn.execute(sql.SQL("vacuum (analyze) {}").format(table))
    return ingest, finish


async def time_scoped(stores: list, spec: CorpusSpec, picked: list, rng, warmup: int) -> tuple[dict, dict[str, int], int]:
    """One query per picked thread, each store in turn (rotating who goes first); after ``warmup`` queries, each
    store's latencies (ms), the peers' hits of the exact top k, and how many the exact answers held."""
    latencies: dict[str, list[float]] = {store.name: [] for store in stores}
    found = {"langchain": 0, "mem0": 0}
    expected = 0
    for n, thread in enumerate(picked):
        vector, text = thread_query(spec, thread, rng)
        answers = {}
        for store in stores[n % 3:] + stores[: n % 3]:
            started = time.perf_counter()
            answers[store.name] = await store.query(thread, vector, text)
            if n >= warmup:
                latencies[store.name].append((time.perf_counter() - started) * 1000)
        if n >= warmup:
            truth = exact_cosine(thread_entries(spec, thread), vector)
            expected += len(truth)
            for name in found:
                found[name] += len(set(answers[name]) & set(truth))
    return latencies, found, expected


async def time_thread(stores: list, spec: CorpusSpec, thread, rng, warmup: int, queries: int) -> dict[str, list[float]]:
    """``warmup + queries`` queries on one thread, each store in turn (rotating); the latencies (ms) after warmup."""
    latencies: dict[str, list[float]] = {store.name: [] for store in stores}
    for n in range(warmup + queries):
        vector, text = thread_query(spec, thread, rng)
        for store in stores[n % 3:] + stores[: n % 3]:
            started = time.perf_counter()
            await store.query(thread, vector, text)
            if n >= warmup:
                latencies[store.name].append((time.perf_counter() - started) * 1000)
    return latencies


async def run(args: argparse.Namespace, dsn: str, schema: str) -> dict:
    spec = CorpusSpec(entries=args.entries, tenants=max(1, args.entries // 100), seed=args.seed)
    suffix = secrets.token_hex(4)
    stores = [Prism(dsn, schema, spec.dimensions), LangChain(dsn, f"bench_langchain_{suffix}", spec.dimensions),
              Mem0(dsn, f"bench_mem0_{suffix}", spec.dimensions)]
    for store in stores:
        await store.open()
    try:
        ingest, finish = await load_all(stores, spec, dsn, schema)
        all_threads = threads(spec)
        rng = np.random.default_rng([args.seed, 5])
        picked = [all_threads[i] for i in rng.integers(0, len(all_threads), args.warmup + args.queries)]
        log(f"timing {args.queries} scoped top-{TOP_K} queries, interleaved")
        latencies, found, expected = await time_scoped(stores, spec, picked, rng, args.warmup)
        largest = max(all_threads, key=lambda thread: thread.size)
        log(f"timing {args.large_queries} top-{TOP_K} queries on the largest thread ({largest.size:,} entries), interleaved")
        large = await time_thread(stores, spec, largest, rng, args.warmup, args.large_queries)
    finally:
        for store in stores:
            await store.close()
    return report(args, ingest, finish, latencies, large, found, expected, largest.size)


def report(args: argparse.Namespace, ingest: dict, finish: dict, latencies: dict, large: dict, found: dict,
           expected: int, largest_size: int) -> dict:
    """The JSON line: each speedup of prism over a peer (the peer's figure over prism's), and the figures."""
    large_p50 = {name: float(np.percentile(values, 50)) for name, values in large.items()}
    p50 = {name: float(np.percentile(values, 50)) for name, values in latencies.items()}
    p99 = {name: float(np.percentile(values, 99)) for name, values in latencies.items()}
    to_query = {name: ingest[name] + finish[name] for name in ingest}
    for name in p50:
        log(f"{name}: recall p50 {p50[name]:.2f} ms, p99 {p99[name]:.2f} ms; "
            f"ingest {args.entries / ingest[name]:,.0f}/s ({to_query[name]:.1f} s to a queryable store)")
    return {
        "speedup_recall_vs_langchain": round(p50["langchain"] / p50["prism"], 2),
        "speedup_recall_vs_mem0": round(p50["mem0"] / p50["prism"], 2),
        "speedup_large_thread_vs_langchain": round(large_p50["langchain"] / large_p50["prism"], 2),
        "speedup_large_thread_vs_mem0": round(large_p50["mem0"] / large_p50["prism"], 2),
        "large_thread_p50_ms": {name: round(value, 3) for name, value in large_p50.items()},
        "large_thread_entries": largest_size,
        "speedup_ingest_vs_langchain": round(to_query["langchain"] / to_query["prism"], 2),
        "speedup_ingest_vs_mem0": round(to_query["mem0"] / to_query["prism"], 2),
        "speedup_recall_p99_vs_langchain": round(p99["langchain"] / p99["prism"], 2),
        "speedup_recall_p99_vs_mem0": round(p99["mem0"] / p99["prism"], 2),
        "recall_p50_ms": {name: round(value, 3) for name, value in p50.items()},
        "recall_p99_ms": {name: round(value, 3) for name, value in p99.items()},
        "ingest_entries_per_s": {name: round(args.entries / seconds, 1) for name, seconds in ingest.items()},
        "seconds_to_queryable": {name: round(value, 1) for name, value in to_query.items()},
        "recall_at_10_langchain": round(found["langchain"] / expected, 4),
        "recall_at_10_mem0": round(found["mem0"] / expected, 4),
        "entries": args.entries,
        "queries": args.queries,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="local postgresql:// URL (default: a throw-away embedded server)")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--large-queries", type=int, default=200, help="queries on the largest thread (default 200)")
    parser.add_argument("--seed", type=int, default=CorpusSpec.seed)
    args = parser.parse_args()
    with local_postgres(args.dsn) as dsn, scratch_schema(dsn, "bench_peers") as schema:
        result = asyncio.run(run(args, dsn, schema))
    emit(result)


if __name__ == "__main__":
    main()
