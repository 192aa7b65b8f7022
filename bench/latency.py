"""Postgres latency benchmark: ingest throughput and recall latency on a 1,000-entry thread.

Loads one "main" thread plus ``--other-threads`` threads (spread over five
tenants) of synthetic, seeded short texts embedded with the hash embedder,
interleaving the threads' batches as concurrent users would. Embeddings are
computed before the clock starts, so ``ingest_entries_per_s`` measures the
store writes only (``PostgresVectorStore.remember`` batches of 128). Then it
runs ``VACUUM (ANALYZE)`` (as autovacuum would after a bulk load), times ``PostgresVectorStore.recall`` (top_k=8) on the main
thread from the client, plain and with composite scoring (``RecallScoringOptions(0.3, 0.2,
7 days)``) and with the embedding-model guard (``model=``: ``recall_v4`` checks the model id in the same
call), times a one-entry ``remember`` without and with the guard, and reads the plan recall_v4 runs via auto_explain.

Where the time of a recall goes: ``client_overhead_p50_ms`` is the client's p50 minus the p50 of the same
``recall_v4`` call timed inside the server (:data:`SERVER_RECALL`), the two alternated in blocks; and
``driver_floor_p50_ms`` the same split for a statement that does nothing of prism-memory's (:data:`SPIN`).
``adjacent_vs_plain_5k``: recall with ``message_range`` 2 over recall with 0 on a thread of
``--large-entries`` entries.

    .venv/bin/python bench/latency.py [--dsn URL] [--entries 1000] [--other-threads 20] [--derived-fraction 0.1]

``--derived-fraction`` writes that share of every thread's entries as derived ones (``metadata._lineage``
naming an earlier entry of the thread), the shape whose expiry the read gate follows through lineage.

The last stdout line is a JSON object; progress and the plan go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import time
from datetime import datetime, timezone

import numpy as np
import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from prism_memory import RecallScoringOptions, Scope, create_hash_embedder, create_postgres_memory_stores, embedding_model
from prism_memory.scoring import LEXICAL_WEIGHT
from prism_memory.types import EntryRecord
from psycopg import sql

from _common import auto_explain_notices, emit, local_postgres, log, scratch_schema

BATCH = 128
#: The composite scoring timed for ``recall_scored_p50_ms`` (seed example: a week's half-life).
SCORING = RecallScoringOptions(recency_weight=0.3, importance_weight=0.2, half_life_ms=7 * 24 * 3600 * 1000)
#: Share of every thread's entries tombstoned for the second measurement.
TOMBSTONED = 0.10
TABLE = "semantic_memory"

NAMES = ["Alice", "Bob", "Carmen", "Dmitri", "Esha", "Farid", "Grace", "Hiro", "Ines", "Jonah", "Kemi", "Luca"]
CITIES = ["Lisbon", "Osaka", "Nairobi", "Denver", "Krakow", "Montreal", "Hanoi", "Bristol", "Lima", "Tbilisi"]
FOODS = ["oat porridge", "spicy ramen", "lentil soup", "sushi", "tacos", "black coffee", "green tea", "dark chocolate"]
TOPICS = ["the quarterly budget", "kubernetes upgrades", "the marathon plan", "tax forms", "a birthday party",
          "the garden redesign", "learning Portuguese", "the mortgage refinance", "a job interview", "the team offsite"]
RELATIONS = ["sister", "manager", "landlord", "best friend", "dentist", "grandfather", "coworker", "neighbour"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WHEN = ["last week", "yesterday", "in March", "two years ago", "this morning", "over the weekend", "next month"]
JOBS = ["nurse", "data engineer", "chef", "architect", "teacher", "pilot", "lawyer", "carpenter"]

TEMPLATES = [
    "{name} said they moved to {city} {when} and are still settling in.",
    "Reminder: {name} prefers {food} for breakfast and dislikes anything too sweet.",
    "{name} is planning a trip to {city} with their {relation} {when}.",
    "The user asked for a summary of {topic} before {day}.",
    "{name}'s {relation} works as a {job} in {city}.",
    "Meeting with {name} about {topic} moved to {day} at {hour}:00.",
    "{name} can't eat {food} because of an allergy, mention it when booking dinner.",
    "{name} finished a course on {topic} {when} and wants to practise more.",
    "Assistant suggested splitting {topic} into smaller tasks; {name} agreed.",
    "{name} mentioned feeling stressed about {topic} and asked for a checklist.",
    "Call {name}'s {relation} on {day} to confirm the plans in {city}.",
    "{name} started training as a {job} {when} and enjoys the night shifts.",
]
QUESTIONS = [
    "Where did {name} move to?",
    "What does {name} like to eat for breakfast?",
    "When is the meeting about {topic}?",
    "What is {name}'s {relation}'s job?",
    "Which food is {name} allergic to?",
    "Who is travelling to {city}?",
]


def fill(template: str, rng: random.Random) -> str:
    """One synthetic sentence from ``template`` with random slot values."""
    return template.format(
        name=rng.choice(NAMES), city=rng.choice(CITIES), food=rng.choice(FOODS), topic=rng.choice(TOPICS),
        relation=rng.choice(RELATIONS), day=rng.choice(DAYS), when=rng.choice(WHEN), job=rng.choice(JOBS),
        hour=rng.randint(8, 18),
    )


def build_threads(args: argparse.Namespace, embedder) -> list[tuple[Scope, list[EntryRecord]]]:
    """The main thread first, then the others; every entry embedded up front."""
    rng = random.Random(args.seed)
    scopes = [Scope("tenant-0", "user-main", "thread-main")]
    scopes += [Scope(f"tenant-{i % 5}", f"user-{i}", f"thread-{i}") for i in range(args.other_threads)]
    threads = []
    for scope in scopes:
        texts = [fill(rng.choice(TEMPLATES), rng) for _ in range(args.entries)]
        vectors = [embedder.embed_one(text) for text in texts]
        every = round(1 / args.derived_fraction) if args.derived_fraction else 0
        records = [
            EntryRecord(f"m{n:05d}", text, vector, {"role": rng.choice(["user", "assistant"]), **(
                {"_lineage": {"sourceIds": [f"m{n - rng.randint(1, min(n, 5)):05d}"]}} if every and n and n % every == 0
                else {})}, None, None)
            for n, (text, vector) in enumerate(zip(texts, vectors))
        ]
        threads.append((scope, records))
    return threads


def build_large_thread(args: argparse.Namespace, embedder) -> tuple[Scope, list[EntryRecord]]:
    """A thread of ``--large-entries`` entries in a tenant of its own (the adjacency measurement), written
    after the ingest is timed."""
    rng = random.Random(args.seed + 2)
    texts = [fill(rng.choice(TEMPLATES), rng) for _ in range(args.large_entries)]
    records = [EntryRecord(f"l{n:05d}", text, embedder.embed_one(text), {}, None, None) for n, text in enumerate(texts)]
    return Scope("tenant-large", "user-large", "thread-large"), records


async def ingest(stores, threads) -> float:
    """Write every thread in batches of 128, round-robin across threads; returns seconds spent."""
    batches = [[(scope, records[i : i + BATCH]) for i in range(0, len(records), BATCH)] for scope, records in threads]
    order = [batch for round_ in zip(*batches) for batch in round_]
    started = time.perf_counter()
    for scope, batch in order:
        await stores.vector_store.remember(scope, batch)
    return time.perf_counter() - started


async def time_recall(stores, scope: Scope, queries, warmup: int, runs: int, scoring=None, model=None) -> np.ndarray:
    """Client-side latency (ms) of ``runs`` recalls after ``warmup`` untimed ones (with ``scoring`` when given,
    and with the embedding-model guard when ``model`` is)."""
    timings = []
    for n in range(warmup + runs):
        text, vector = queries[n % len(queries)]
        started = time.perf_counter()
        await stores.vector_store.recall(scope, vector, text, 8, 0, scoring=scoring, model=model)
        if n >= warmup:
            timings.append((time.perf_counter() - started) * 1000)
    return np.asarray(timings)


async def time_writes(stores, scope: Scope, embedder, model, runs: int = 200) -> dict[str, float]:
    """p50 (ms) of a one-entry ``remember`` without and with the embedding-model guard (its own transaction)."""
    result = {}
    for name, guard in (("remember_one_p50_ms", None), ("remember_one_guarded_p50_ms", model)):
        timings = []
        for n in range(runs):
            text = f"a write of {name} number {n}"
            record = EntryRecord(f"{name}-{n}", text, embedder.embed_one(text), {}, None, None)
            started = time.perf_counter()
            await stores.vector_store.remember(scope, [record], model=guard)
            timings.append((time.perf_counter() - started) * 1000)
        result[name] = round(float(np.percentile(timings, 50)), 3)
    return result


#: The store's own recall statement wrapped so that it returns, once its rows are computed, the time from the
#: statement's receipt (statement_timestamp(): the transaction's start, locks and the call included): what the
#: server spends on a recall, without the protocol and the client.
SERVER_RECALL = ("select extract(epoch from clock_timestamp() - statement_timestamp()) * 1000 "
                 "from (select count(*) from ({}) as r) as timed")
#: A statement that only counts ``%s`` rows, timed the same way: the floor of the driver, the socket and the
#: wake-ups for a statement of that length on this machine, with nothing of prism-memory in it.
SPIN = ("select extract(epoch from clock_timestamp() - statement_timestamp()) * 1000 "
        "from (select count(*) from generate_series(1, %s)) as g")


def recall_params(scope: Scope, text: str, vector) -> tuple:
    """The parameters of the store's recall statement for a plain recall (top_k 8, every option at its
    default), as ``PostgresVectorStore.recall`` sends them."""
    return (scope.tenant_id, scope.resource_id, scope.thread_id, vector, text, 8, 0, False, None, False,
            datetime.now(timezone.utc), None, None, None, False, None, None, None, None, None, None, LEXICAL_WEIGHT)


async def time_client_and_server(stores, dsn: str, scope: Scope, queries, blocks: int = 10,
                                 per_block: int = 100) -> dict[str, float]:
    """p50s (ms) of the same recalls (top_k 8) timed from the client and inside the server, block by block.

    ``client``: ``PostgresVectorStore.recall`` timed from Python. ``server``: :data:`SERVER_RECALL` on a
    connection of its own. ``floor_client`` / ``floor_server``: :data:`SPIN` sized to take about the
    recall's server time, timed from a bare psycopg connection and inside the server. The first block is a
    warm-up and left out.
    """
    timings: dict[str, list[float]] = {"client": [], "server": [], "floor_client": [], "floor_server": []}
    recall_sql = sql.SQL(SERVER_RECALL).format(stores.vector_store.queries.recall)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await register_vector_async(conn)
        spin_rows = 20_000
        for block in range(blocks + 1):
            chosen = [queries[(block * per_block + n) % len(queries)] for n in range(per_block)]
            client = await time_recall(stores, scope, chosen, 0, per_block)
            server, floor_client, floor_server = [], [], []
            for text, vector in chosen:
                cursor = await conn.execute(recall_sql, recall_params(scope, text, vector))
                [(ms,)] = await cursor.fetchall()
                server.append(float(ms))
                started = time.perf_counter()
                [(ms,)] = await (await conn.execute(SPIN, (spin_rows,))).fetchall()
                floor_client.append((time.perf_counter() - started) * 1000)
                floor_server.append(float(ms))
            # Size the spin to the recall's server time for the next block.
            spin_rows = max(1, round(spin_rows * float(np.median(server)) / float(np.median(floor_server))))
            if block:
                for key, values in zip(timings, (client, server, floor_client, floor_server)):
                    timings[key].extend(values)
    return {key: float(np.percentile(values, 50)) for key, values in timings.items()}


async def time_adjacency(stores, scope: Scope, queries, runs: int = 300) -> tuple[float, float]:
    """p50 (ms) of recall on ``scope`` with ``message_range`` 0 and 2, alternated call by call (after 30
    untimed calls of each)."""
    timings: dict[int, list[float]] = {0: [], 2: []}
    for n in range(30 + runs):
        text, vector = queries[n % len(queries)]
        for message_range in (0, 2) if n % 2 else (2, 0):
            started = time.perf_counter()
            await stores.vector_store.recall(scope, vector, text, 8, message_range)
            if n >= 30:
                timings[message_range].append((time.perf_counter() - started) * 1000)
    return float(np.percentile(timings[0], 50)), float(np.percentile(timings[2], 50))


def explain_recall(dsn: str, recall_sql, scope: Scope, queries, calls: int = 8) -> str:
    """The plan of recall_v4's nested statements (auto_explain), from the last of ``calls`` calls.

    Several calls, so the plan shown is the one PL/pgSQL settles on (it may
    switch to a generic plan after five executions).
    """
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        notices = auto_explain_notices(conn)
        for n in range(calls):
            notices.clear()
            text, vector = queries[n % len(queries)]
            conn.execute(recall_sql, recall_params(scope, text, vector)).fetchall()
    return "\n\n".join(notice for notice in notices if re.search(rf"\b{TABLE}(_invalidation)?\b", notice))


def plan_uses_scope_index(plan: str) -> bool:
    """True when the entries table is read through its scope or primary-key index and never seq-scanned."""
    index_scan = re.search(rf"Index (Only )?Scan (Backward )?(using|on) {TABLE}_(scope_idx|pkey)\b", plan)
    seq_scan = re.search(rf"Seq Scan on (\S+\.)?{TABLE}\b", plan)
    return bool(index_scan) and not seq_scan


def tombstone_check_uses_index(plan: str) -> bool:
    """True when recall's tombstone anti-join probes the invalidation table's primary key, never a Seq Scan."""
    index = re.search(rf"(Index Scan using|Index Only Scan using|Bitmap Index Scan on) {TABLE}_invalidation_pkey", plan)
    return bool(index) and f"Seq Scan on {TABLE}_invalidation" not in plan


async def run(args: argparse.Namespace, dsn: str, schema: str) -> dict:
    embedder = create_hash_embedder(args.dimensions)
    log(f"embedding {(args.other_threads + 1) * args.entries} synthetic entries ({args.dimensions} dims)")
    threads = build_threads(args, embedder)
    rng = random.Random(args.seed + 1)
    queries = []
    for _ in range(200):
        text = fill(rng.choice(QUESTIONS), rng)
        queries.append((text, np.asarray(embedder.embed_one(text), dtype=np.float32)))
    main_scope = threads[0][0]
    total = sum(len(records) for _, records in threads)

    stores = await create_postgres_memory_stores(dsn, schema=schema, dimensions=args.dimensions)
    try:
        log(f"ingesting {total} entries in batches of {BATCH}")
        seconds = await ingest(stores, threads)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("vacuum (analyze) {}.{}").format(sql.Identifier(schema), sql.Identifier(TABLE)))
        log(f"ingest: {total / seconds:,.0f} entries/s ({seconds:.1f} s)")
        timings = await time_recall(stores, main_scope, queries, args.warmup, args.queries)
        split = await time_client_and_server(stores, dsn, main_scope, queries)
        scored_timings = await time_recall(stores, main_scope, queries, args.warmup, args.queries, SCORING)
        # The embedding-model guard: the main thread records the hash embedder's model (a one-entry rebuild
        # page), then recall_v4 checks the model id it is given in the same call.
        model = embedding_model(embedder)
        first = threads[0][1][0]
        await stores.vector_store.reembed(main_scope, [first.id], [first.text], [first.embedding], model=model)
        guarded_timings = await time_recall(stores, main_scope, queries, args.warmup, args.queries, model=model)
        large_scope, large_records = build_large_thread(args, embedder)
        log(f"adjacency: a {len(large_records)}-entry thread, message_range 2 against 0")
        for start in range(0, len(large_records), BATCH):
            await stores.vector_store.remember(large_scope, large_records[start : start + BATCH])
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("vacuum (analyze) {}.{}").format(sql.Identifier(schema), sql.Identifier(TABLE)))
        plain_5k, adjacent_5k = await time_adjacency(stores, large_scope, queries)
        writes = await time_writes(stores, Scope(main_scope.tenant_id, main_scope.resource_id, "writes"), embedder, model)
        recall_sql = stores.vector_store.queries.recall  # the very statement the store sends
        plan = explain_recall(dsn, recall_sql, main_scope, queries)
        log(f"tombstoning {TOMBSTONED:.0%} of every thread's entries (invalidate_v1)")
        for scope, records in threads:
            doomed = [record.id for record in records[:: round(1 / TOMBSTONED)]]
            for start in range(0, len(doomed), 64):
                await stores.vector_store.invalidate(scope, doomed[start : start + 64], "revoked")
        with psycopg.connect(dsn, autocommit=True) as conn:
            for table in (TABLE, f"{TABLE}_invalidation"):
                conn.execute(sql.SQL("vacuum (analyze) {}.{}").format(sql.Identifier(schema), sql.Identifier(table)))
        tombstoned_timings = await time_recall(stores, main_scope, queries, args.warmup, args.queries)
        tombstoned_plan = explain_recall(dsn, recall_sql, main_scope, queries)
    finally:
        await stores.close()
    log("recall_v4 nested plan (auto_explain, last of 8 calls):\n" + plan)
    log("with tombstones:\n" + tombstoned_plan)
    p50, p99 = np.percentile(timings, [50, 99])
    tombstoned_p50 = float(np.percentile(tombstoned_timings, 50))
    log(f"recall over {len(timings)} queries: p50 {p50:.2f} ms, p99 {p99:.2f} ms, mean {timings.mean():.2f} ms")
    log(f"with {TOMBSTONED:.0%} tombstoned: p50 {tombstoned_p50:.2f} ms")
    log(f"with the embedding-model guard: p50 {np.percentile(guarded_timings, 50):.2f} ms; one-entry remember p50 "
        f"{writes['remember_one_p50_ms']:.2f} ms, guarded {writes['remember_one_guarded_p50_ms']:.2f} ms")
    floor = split["floor_client"] - split["floor_server"]
    log(f"client and server alternated: client p50 {split['client']:.3f} ms, server p50 {split['server']:.3f} ms; "
        f"the driver's floor for a statement that long {floor:.3f} ms; {len(large_records)}-entry thread: "
        f"message_range 0 p50 {plain_5k:.2f} ms, 2: {adjacent_5k:.2f} ms")
    return {
        "ingest_entries_per_s": round(total / seconds, 1),
        "recall_p50_ms": round(float(p50), 3),
        "client_overhead_p50_ms": round(split["client"] - split["server"], 3),
        "client_recall_p50_ms": round(split["client"], 3),
        "server_recall_p50_ms": round(split["server"], 3),
        "driver_floor_p50_ms": round(floor, 3),
        "adjacent_vs_plain_5k": round(adjacent_5k / plain_5k, 3),
        "plain_5k_p50_ms": round(plain_5k, 3),
        "adjacent_5k_p50_ms": round(adjacent_5k, 3),
        "recall_p99_ms": round(float(p99), 3),
        "recall_mean_ms": round(float(timings.mean()), 3),
        "recall_queries": len(timings),
        "recall_scored_p50_ms": round(float(np.percentile(scored_timings, 50)), 3),
        "recall_scored_vs_plain": round(float(np.percentile(scored_timings, 50) / p50), 3),
        "recall_guarded_p50_ms": round(float(np.percentile(guarded_timings, 50)), 3),
        "recall_guarded_vs_plain": round(float(np.percentile(guarded_timings, 50) / p50), 3),
        **writes,
        "plan_uses_scope_index": plan_uses_scope_index(plan),
        "recall_p50_ms_with_tombstones": round(tombstoned_p50, 3),
        "tombstone_check_uses_index": tombstone_check_uses_index(tombstoned_plan),
        "entries_in_thread": len(threads[0][1]),
        "total_entries": total,
        "threads": len(threads),
        "dimensions": args.dimensions,
        "derived_fraction": args.derived_fraction,
        "top_k": 8,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="local postgresql:// URL (default: a throw-away embedded server)")
    parser.add_argument("--dimensions", type=int, default=384, help="hash-embedder width (default 384)")
    parser.add_argument("--entries", type=int, default=1000, help="entries per thread (default 1000)")
    parser.add_argument("--large-entries", type=int, default=5000,
                        help="entries of the thread adjacency is timed on (default 5000)")
    parser.add_argument("--other-threads", type=int, default=20, help="threads besides the measured one (default 20)")
    parser.add_argument("--warmup", type=int, default=50, help="untimed recalls first (default 50)")
    parser.add_argument("--queries", type=int, default=1000, help="timed recalls (default 1000)")
    parser.add_argument("--derived-fraction", type=float, default=0.0,
                        help="share of each thread's entries derived from an earlier one (default 0)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not 0 <= args.derived_fraction <= 1:
        parser.error("--derived-fraction must be between 0 and 1")
    with local_postgres(args.dsn) as dsn, scratch_schema(dsn, "bench_latency") as schema:
        result = asyncio.run(run(args, dsn, schema))
    emit(result)


if __name__ == "__main__":
    main()
