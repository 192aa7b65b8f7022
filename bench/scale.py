"""Scale benchmark: batched ingest and exact scoped recall on the synthetic corpus.

Loads ``bench/corpus.py``'s corpus (default 1,000,000 entries of 384
dimensions over 10,000 tenants, threads of 10 to 5,000 entries) with
``PostgresVectorStore.remember_batch``: one ``remember_batch_v2`` call per
batch of about ``--batch`` entries of one tenant, ``--concurrency`` calls in
flight, embeddings sent in binary. The corpus is generated (its "embedding")
in chunks outside the clock; ``ingest_entries_per_s`` is entries over the time
spent writing. Then half of the invalid entries are tombstoned (the other half
were written with revoked consent), the tables are vacuumed and analyzed, and
``--queries`` scoped top-10 recalls run against threads drawn uniformly at
random, timed from the client (``scoped_recall_p50_ms``/``_p99_ms``), then
200 more on the largest thread (``largest_thread_recall_*``). Unless
``--no-scopes``, ``bench/scopes.py`` then loads threads and resources of
1,000 to 100,000 entries beside the corpus and times thread recall and
``across_threads`` recall on them (``scope_table``; ``resource_recall_*`` and
``resource_ingest_entries_per_s`` for the largest, by default the
100,000-entry resource in 500 threads, half of it consent scope "user"). Each answer is
compared with a brute-force numpy ranking of the thread's valid entries
(similarity + LEXICAL_WEIGHT x lexical, where an entry's event date holds the weekday or month a query names),
so ``exact`` says whether every answer was the true top 10.

    .venv/bin/python bench/scale.py                      # the full 1M run (about 15 minutes here)
    .venv/bin/python bench/scale.py --entries 20000      # the CI smoke size

``per_row_us`` is the slope of latency against thread size (least squares
over all timed queries): what one more row in the scanned thread costs.
``membw_floor_us_per_row`` is the time to stream one stored row (its heap
bytes) at this machine's measured memory bandwidth: the floor of any exact
scan. ``rss_mb_peak`` is this process's peak RSS up to the end of ingest;
``server_pss_mb_peak`` the server's peak proportional set size (all its
processes) sampled during ingest. The last stdout line is one JSON object;
progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import resource
import threading
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from prism_memory import create_postgres_memory_stores
from prism_memory.lexical import lexical_terms, query_terms
from prism_memory.lexical_dates import lexical_score, query_date_terms
from prism_memory.scoring import LEXICAL_WEIGHT
from psycopg import sql

import scopes
from _common import auto_explain_notices, emit, local_postgres, log, remember_concurrently, scratch_schema
from corpus import CorpusSpec, Thread, thread_entries, thread_query, threads
from corpus import tenant_batches as corpus_batches

TABLE = "semantic_memory"
TOP_K = 10
#: Timed recalls on the largest thread, reported apart from the uniform mix.
LARGEST_QUERIES = 200


class ServerMemory:
    """Samples the summed PSS (MiB) of the server's processes every ``interval`` seconds; keeps the peak."""

    def __init__(self, postmaster_pid: int, interval: float = 0.5) -> None:
        self.pid, self.interval, self.peak_mb = postmaster_pid, interval, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _pids(self) -> list[int]:
        pids = [self.pid]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.pid:
                    pids.append(int(stat.parent.name))
            except (OSError, ValueError, IndexError):
                continue
        return pids

    def sample(self) -> float:
        total_kb = 0
        for pid in self._pids():
            try:
                for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        total_kb += int(line.split()[1])
            except OSError:
                continue
        self.peak_mb = max(self.peak_mb, total_kb / 1024)
        return total_kb / 1024

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> ServerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def rss_mb_peak() -> float:
    """This process's peak resident set size in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_bandwidth_gb_s() -> float:
    """Single-core copy bandwidth (GB/s, bytes read) of a 512 MiB array; the best of three."""
    source = np.ones(64 * 2**20, dtype=np.float64)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - started)
    return source.nbytes / best / 1e9


async def ingest(stores, spec: CorpusSpec, batch: int, concurrency: int) -> tuple[float, int, int, dict[int, list[str]]]:
    """Write the corpus with ``concurrency`` calls in flight; returns (seconds writing, entries, calls, tombstone
    ids to write per thread).

    The corpus is generated (the "embedding" step) in chunks of about 50,000 entries outside the clock; each
    chunk is then written against the clock, so generating never overlaps or slows the writes.
    """
    seconds, entries, calls = 0.0, 0, 0
    tombstoned: dict[int, list[str]] = {}
    report = time.perf_counter()
    batches = corpus_batches(spec, batch)
    while chunk := list(itertools.islice(batches, max(1, 50_000 // batch))):
        for writes in chunk:
            for thread, rows in writes:
                ids = {record.id for record in rows.records}
                tombstoned.setdefault(thread.index, []).extend(sorted(ids & rows.tombstoned))
        calls_in_chunk = [[(thread.scope, rows.records) for thread, rows in writes] for writes in chunk]
        started = time.perf_counter()
        await remember_concurrently(stores.vector_store, calls_in_chunk, concurrency)
        seconds += time.perf_counter() - started
        calls += len(chunk)
        entries += sum(len(rows.records) for writes in chunk for _, rows in writes)
        if time.perf_counter() - report > 10:
            report = time.perf_counter()
            log(f"  {entries:,} / {spec.entries:,} entries, {entries / seconds:,.0f} entries/s writing")
    return seconds, entries, calls, tombstoned


async def tombstone(stores, by_index: dict[int, Thread], tombstoned: dict[int, list[str]]) -> int:
    """Invalidate (reason 'revoked') the entries the corpus marks for tombstoning; returns how many."""
    count = 0
    for index, ids in tombstoned.items():
        for start in range(0, len(ids), 64):
            await stores.vector_store.invalidate(by_index[index].scope, ids[start : start + 64], "revoked")
        count += len(ids)
    return count


def brute_force(entries, query: np.ndarray, query_text: str) -> tuple[list[str], np.ndarray]:
    """The true ranking of a thread's valid entries: ids by (score desc, sequence asc), and their scores
    (similarity + LEXICAL_WEIGHT x the share of the query's terms an entry holds in its text or event date)."""
    terms = query_terms(query_text)
    dates = query_date_terms(terms)
    valid = [n for n, record in enumerate(entries.records)
             if record.id not in entries.revoked and record.id not in entries.tombstoned]
    similarity = entries.embeddings[valid].astype(np.float64) @ query.astype(np.float64)
    lexical = np.asarray([lexical_score(terms, lexical_terms(entries.records[n].text), entries.records[n].occurred_at,
                                        dates) for n in valid])
    scores = similarity + LEXICAL_WEIGHT * lexical
    order = sorted(range(len(valid)), key=lambda i: (-scores[i], valid[i]))
    return [entries.records[valid[i]].id for i in order], scores[order]


def is_exact(returned: list[str], truth: list[str], truth_scores: np.ndarray, k: int) -> bool:
    """True when ``returned`` is the true top ``k``, allowing swaps among entries whose scores tie within 1e-6
    (pgvector sums in float32)."""
    if len(returned) != min(k, len(truth)):
        return False
    if not returned:
        return True
    cutoff = truth_scores[len(returned) - 1]
    allowed = {entry_id for entry_id, score in zip(truth, truth_scores) if score >= cutoff - 1e-6}
    required = {entry_id for entry_id, score in zip(truth, truth_scores) if score > cutoff + 1e-6}
    return required <= set(returned) <= allowed


def make_queries(spec: CorpusSpec, picked: list[Thread], seed: int):
    """One (thread, query embedding, query text) triple per thread of ``picked``: a unit vector near the thread's
    topic and three words of its vocabulary."""
    rng = np.random.default_rng([seed, 3])
    return [(thread, *thread_query(spec, thread, rng)) for thread in picked]


async def time_queries(stores, spec: CorpusSpec, queries, warmup: int, cache: dict) -> tuple[list[float], bool]:
    """Client-side latency (ms) of each recall after ``warmup`` untimed ones, back to back; then whether every
    answer was exact (checked after the clock, so the checks do not sit between the timed calls)."""
    latencies, answers = [], []
    for n, (thread, vector, text) in enumerate(queries):
        started = time.perf_counter()
        result = await stores.vector_store.recall(thread.scope, vector, text, TOP_K, 0)
        elapsed = (time.perf_counter() - started) * 1000
        if n >= warmup:
            latencies.append(elapsed)
            answers.append((thread, vector, text, [hit.id for hit in result.hits]))
    exact = True
    for thread, vector, text, returned in answers:
        if thread.index not in cache:
            cache[thread.index] = thread_entries(spec, thread)
        truth = brute_force(cache[thread.index], vector, text)
        if not is_exact(returned, truth[0], truth[1], TOP_K):
            exact = False
            log(f"  not exact: thread {thread.index} ({thread.size} entries), query {text!r}")
    return latencies, exact


def explain_largest(dsn: str, schema: str, thread: Thread, query: np.ndarray, text: str) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of recall_v4's inner statements on ``thread``, via auto_explain."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        notices = auto_explain_notices(conn)
        for _ in range(6):  # PL/pgSQL settles on its generic plan after five executions
            notices.clear()
            conn.execute(
                sql.SQL("select * from {}.recall_v4(%s, %s, %s, %s, %s, %s, 0)").format(sql.Identifier(schema)),
                (thread.scope.tenant_id, thread.scope.resource_id, thread.scope.thread_id, query, text, TOP_K),
            ).fetchall()
    return "\n\n".join(notice for notice in notices if TABLE in notice)


async def load(stores, spec: CorpusSpec, args: argparse.Namespace, dsn: str, schema: str) -> dict:
    """Ingest the corpus (the server's memory watched), tombstone a share, load the scope-size threads and
    resources, vacuum; returns the figures of the load."""
    by_index = {thread.index: thread for thread in threads(spec)}
    with psycopg.connect(dsn, autocommit=True) as conn:
        postmaster_pid = int(Path(conn.execute("show data_directory").fetchone()[0], "postmaster.pid")
                             .read_text().split()[0])
    with ServerMemory(postmaster_pid) as server_memory:
        seconds, entries, calls, tombstoned = await ingest(stores, spec, args.batch, args.concurrency)
    ingest_rss_mb = rss_mb_peak()  # before the brute-force answers below add their own memory
    log(f"ingest: {entries / seconds:,.0f} entries/s ({seconds:.1f} s in {calls:,} remember_batch calls)")
    started = time.perf_counter()
    count = await tombstone(stores, by_index, tombstoned)
    log(f"tombstoned {count:,} entries in {time.perf_counter() - started:.1f} s")
    scope_ingest = {}
    if args.scopes:
        log(f"loading threads and resources of {', '.join(f'{size:,}' for size in args.scope_sizes)} entries")
        scope_ingest = await scopes.load(stores, spec, args.scope_sizes, args.concurrency, args.batch)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in (TABLE, f"{TABLE}_invalidation"):
            conn.execute(sql.SQL("vacuum (analyze) {}.{}").format(sql.Identifier(schema), sql.Identifier(table)))
        table_bytes = conn.execute(
            sql.SQL("select pg_table_size({})").format(sql.Literal(f"{schema}.{TABLE}"))).fetchone()[0]
    return {"seconds": seconds, "entries": entries, "calls": calls, "tombstoned": count, "rss_mb": ingest_rss_mb,
            "server_pss_mb": server_memory.peak_mb, "table_bytes": table_bytes, "scope_ingest": scope_ingest}


async def measure(stores, spec: CorpusSpec, args: argparse.Namespace, dsn: str, schema: str) -> dict:
    """Time scoped recalls on threads drawn uniformly, then on the largest thread, then against scope size."""
    all_threads = threads(spec)
    rng = np.random.default_rng([args.seed, 4])
    picked = [all_threads[i] for i in rng.integers(0, len(all_threads), args.warmup + args.queries)]
    largest = max(all_threads, key=lambda thread: thread.size)
    cache: dict[int, object] = {}
    log(f"timing {args.queries:,} scoped top-{TOP_K} recalls on threads drawn uniformly, then "
        f"{LARGEST_QUERIES} on the largest thread ({largest.size:,} entries)")
    latencies, exact = await time_queries(stores, spec, make_queries(spec, picked, args.seed), args.warmup, cache)
    largest_latencies, largest_exact = await time_queries(
        stores, spec, make_queries(spec, [largest] * (10 + LARGEST_QUERIES), args.seed + 1), 10, cache)
    plan = explain_largest(dsn, schema, largest, *make_queries(spec, [largest], args.seed)[0][1:])
    scope_figures = {}
    if args.scopes:
        log("timing recall against scope size")
        scope_figures = await scopes.measure(stores, spec, args.scope_sizes, args.scope_queries, args.resource_queries)
    return {"latencies": latencies, "sizes": [thread.size for thread in picked[args.warmup:]], "largest": largest,
            "largest_latencies": largest_latencies, "exact": exact and largest_exact, "plan": plan,
            "scope_figures": scope_figures}


async def run(args: argparse.Namespace, dsn: str, schema: str) -> dict:
    spec = CorpusSpec(entries=args.entries, tenants=args.tenants or max(1, args.entries // 100), seed=args.seed)
    log(f"corpus: {spec.entries:,} entries, {spec.tenants:,} tenants, {len(threads(spec)):,} threads, "
        f"{spec.dimensions} dims")
    stores = await create_postgres_memory_stores(dsn, schema=schema, dimensions=spec.dimensions,
                                                 max_pool_size=max(2, args.concurrency))
    try:
        loaded = await load(stores, spec, args, dsn, schema)
        timed = await measure(stores, spec, args, dsn, schema)
    finally:
        await stores.close()
    return report(spec, args, loaded, timed)


def report(spec: CorpusSpec, args: argparse.Namespace, loaded: dict, timed: dict) -> dict:
    """The JSON line: ingest, scoped and largest-thread latencies, the per-row slope against the memory-bandwidth
    floor, memory, and the scope-size figures."""
    latencies_ms, largest, largest_ms = np.asarray(timed["latencies"]), timed["largest"], np.asarray(timed["largest_latencies"])
    all_ms = np.concatenate([latencies_ms, largest_ms])
    slope_ms_per_row = float(np.polyfit(np.asarray(timed["sizes"] + [largest.size] * len(largest_ms)), all_ms, 1)[0])
    bandwidth = memory_bandwidth_gb_s()
    entries = loaded["entries"]
    bytes_per_row = loaded["table_bytes"] / entries
    p50, p99 = np.percentile(latencies_ms, [50, 99])
    log(f"recall on the largest thread ({largest.size:,} entries), plan:\n{timed['plan']}")
    log(f"recall p50 {p50:.2f} ms, p99 {p99:.2f} ms; largest thread p50 {np.percentile(largest_ms, 50):.2f} ms")
    return {
        "ingest_entries_per_s": round(entries / loaded["seconds"], 1),
        "scoped_recall_p50_ms": round(float(p50), 3),
        "scoped_recall_p99_ms": round(float(p99), 3),
        "exact": timed["exact"],
        "per_row_us": round(slope_ms_per_row * 1000, 3),
        "rss_mb_peak": round(loaded["rss_mb"], 1),
        "server_pss_mb_peak": round(loaded["server_pss_mb"], 1),
        "largest_thread_entries": largest.size,
        "largest_thread_recall_p50_ms": round(float(np.percentile(largest_ms, 50)), 3),
        "largest_thread_recall_p99_ms": round(float(np.percentile(largest_ms, 99)), 3),
        "membw_gb_s": round(bandwidth, 2),
        "bytes_per_row": round(bytes_per_row, 1),
        "membw_floor_us_per_row": round(bytes_per_row / (bandwidth * 1e3), 4),
        "entries": entries,
        "tenants": spec.tenants,
        "threads": len(threads(spec)),
        "tombstoned": loaded["tombstoned"],
        "remember_batch_calls": loaded["calls"],
        "queries": len(latencies_ms),
        "top_k": TOP_K,
        "dimensions": spec.dimensions,
        **loaded["scope_ingest"],
        **timed["scope_figures"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="local postgresql:// URL (default: a throw-away embedded server)")
    parser.add_argument("--entries", type=int, default=CorpusSpec.entries)
    parser.add_argument("--tenants", type=int, default=None, help="default: entries / 100")
    parser.add_argument("--batch", type=int, default=1000, help="entries per remember_batch call (default 1000)")
    parser.add_argument("--concurrency", type=int, default=2, help="remember_batch calls in flight (default 2)")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=CorpusSpec.seed)
    parser.add_argument("--no-scopes", dest="scopes", action="store_false",
                        help="skip the threads and resources of 1,000 to 100,000 entries (bench/scopes.py)")
    parser.add_argument("--scope-sizes", type=lambda text: tuple(int(size) for size in text.split(",")),
                        default=scopes.SIZES, help="entries of the scopes timed by size (default 1000,5000,20000,100000)")
    parser.add_argument("--scope-queries", type=int, default=50, help="timed recalls per scope size (default 50)")
    parser.add_argument("--resource-queries", type=int, default=300,
                        help="timed recalls on the 100,000-entry resource (default 300)")
    args = parser.parse_args()
    with local_postgres(args.dsn) as dsn, scratch_schema(dsn, "bench_scale") as schema:
        result = asyncio.run(run(args, dsn, schema))
    emit(result)


if __name__ == "__main__":
    main()
