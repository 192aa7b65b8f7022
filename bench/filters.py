"""Filtered and windowed recall against plain recall, on one thread of Postgres, interleaved.

One thread of ``--entries`` (default 5,000) entries of 384 dimensions (seeded random unit vectors, texts of a
few words, each with ``metadata`` ``{"bucket": n % 100, "half": n % 2, "kind": ...}`` and an ``occurred_at`` one
hour apart), beside eight threads of a look-alike tenant holding four times as many (so the thread is read
through its index, as in a shared table), then ``--rounds`` rounds of four recalls of the same query (top 10, the store's own statement):
plain, a filter matching 1% of the thread (``{"bucket": 7}``), one matching 50% (``{"half": {"$eq": 1}}``) and
an ``occurred_at`` window holding 10% of it. Each round runs the four in one order, rotated round by round, so
every variant sees the same server, caches and neighbours. Every answer is checked against the plain
ranking of the whole thread at top_k 32 restricted to the selection when the selection's own top 10 is
within it (``exact``: the selected hits equal that restriction wherever it can be checked), and the plan of
the filtered recall is read (``plan_uses_scope_index``: the thread is read through its scope index, never a
sequential scan). Bounds: ``filtered_vs_plain_1pct`` at most 1.2, ``filtered_vs_plain_50pct`` at most
1.5, ``window_vs_plain`` at most 1.2.

    .venv/bin/python bench/filters.py                  # 5,000 entries, 200 rounds
    .venv/bin/python bench/filters.py --entries 500 --rounds 20   # a smoke run

The last stdout line is one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb
from prism_memory import RecallSelection, Scope, create_postgres_memory_stores
from prism_memory.scoring import LEXICAL_WEIGHT
from prism_memory.types import EntryRecord

from _common import auto_explain_notices, emit, local_postgres, log, scratch_schema

DIMENSIONS = 384
TABLE = "semantic_memory"
WORDS = "tea garden lisbon flight hotel piano yoga budget chess river coffee meeting invoice plan".split()
START = datetime(2023, 1, 1, tzinfo=timezone.utc)
SCOPE = Scope("acme", "user_1", "main")


def variants(entries: int) -> dict[str, RecallSelection | None]:
    """The four recalls: plain, 1% and 50% metadata filters, and a 10% event-time window."""
    window = (START + timedelta(hours=entries * 0.45), START + timedelta(hours=entries * 0.55))
    return {
        "plain": None,
        "filtered_1pct": RecallSelection(filter={"bucket": 7}),
        "filtered_50pct": RecallSelection(filter={"half": {"$eq": 1}}),
        "window": RecallSelection(occurred_after=window[0], occurred_before=window[1]),
    }


def build(entries: int, seed: int) -> list[EntryRecord]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((entries, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = random.Random(seed)
    return [
        EntryRecord(f"e{n:06d}", " ".join(words.sample(WORDS, 4)) + f" note {n}", vectors[n].tolist(),
                    {"bucket": n % 100, "half": n % 2, "kind": words.choice(["fact", "event", "plan"])}, n, None,
                    occurred_at=START + timedelta(hours=n))
        for n in range(entries)
    ]


async def load(stores, records: list[EntryRecord]) -> float:
    """The thread, and the other tenant's eight threads (the same records, twice over, 4x in all)."""
    started = time.perf_counter()
    others = [Scope("acme-corp", "user_1", f"main-{n}") for n in range(8)]
    for scope in [SCOPE, *others]:
        share = records if scope == SCOPE else records[: len(records) // 2]
        for offset in range(0, len(share), 500):
            await stores.vector_store.remember(scope, share[offset:offset + 500])
    return time.perf_counter() - started


def kept(selection: RecallSelection | None, record: EntryRecord) -> bool:
    if selection is None:
        return True
    if selection.filter is not None:
        (key, wanted), = selection.filter.items()
        value = record.metadata[key]
        if value != (wanted["$eq"] if isinstance(wanted, dict) else wanted):
            return False
    when = record.occurred_at
    return ((selection.occurred_after is None or when >= selection.occurred_after)
            and (selection.occurred_before is None or when < selection.occurred_before))


async def timed_rounds(stores, chosen: dict[str, RecallSelection | None], queries, rounds: int) -> dict[str, list[float]]:
    names = list(chosen)
    timings: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds + 5):  # 5 untimed rounds first
        text, vector = queries[round_ % len(queries)]
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            await stores.vector_store.recall(SCOPE, vector, text, 10, 0, selection=chosen[name],
                                             lexical_weight=LEXICAL_WEIGHT)
            if round_ >= 5:
                timings[name].append((time.perf_counter() - started) * 1000)
    return timings


async def exactness(stores, chosen, queries, records: list[EntryRecord]) -> bool:
    """Each selection's top 10 equals the plain top 32 restricted to it, wherever that restriction holds 10."""
    by_id = {record.id: record for record in records}
    checked = 0
    for text, vector in queries:
        plain = (await stores.vector_store.recall(SCOPE, vector, text, 32, 0)).hits
        for name, selection in chosen.items():
            expected = [hit.id for hit in plain if kept(selection, by_id[hit.id])][:10]
            if len(expected) < 10:
                continue
            got = [hit.id for hit in (await stores.vector_store.recall(SCOPE, vector, text, 10, 0, selection=selection)).hits]
            if got != expected:
                log(f"not exact: {name} {text!r}: {got} != {expected}")
                return False
            checked += 1
    return checked > 0


def filtered_plan(dsn: str, schema: str, stores, query) -> str:
    """The plan of the 1% filtered recall's nested statements (auto_explain), from the last of 8 calls."""
    text, vector = query
    with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema},public") as conn:
        register_vector(conn)
        notices = auto_explain_notices(conn)
        for _ in range(8):
            notices.clear()
            conn.execute(stores.vector_store.queries.recall,
                         (SCOPE.tenant_id, SCOPE.resource_id, SCOPE.thread_id, vector, text, 10, 0, False, None, False, datetime.now(timezone.utc), None, None,
                          None, False, None, Jsonb({"bucket": 7}), None, None, None, None,
                          LEXICAL_WEIGHT)).fetchall()
    return "\n\n".join(notice for notice in notices if re.search(rf"\b{TABLE}\b", notice))


def plan_uses_scope_index(plan: str) -> bool:
    return (bool(re.search(rf"Index (Only )?Scan (Backward )?(using|on) {TABLE}_scope_idx\b", plan))
            and not re.search(rf"Seq Scan on (\S+\.)?{TABLE}\b", plan))


async def run(args: argparse.Namespace, dsn: str, schema: str) -> dict:
    records = build(args.entries, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    queries = []
    for n in range(16):
        vector = rng.standard_normal(DIMENSIONS).astype(np.float32)
        queries.append((" ".join(random.Random(n).sample(WORDS, 2)), (vector / np.linalg.norm(vector)).tolist()))
    stores = await create_postgres_memory_stores(dsn, dimensions=DIMENSIONS, schema=schema)
    try:
        loaded = await load(stores, records)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'analyze "{schema}".{TABLE}')
        log(f"loaded {len(records)} entries in {loaded:.1f} s")
        chosen = variants(args.entries)
        timings = await timed_rounds(stores, chosen, queries, args.rounds)
        exact = await exactness(stores, chosen, queries, records)
        plan = filtered_plan(dsn, schema, stores, queries[0])
    finally:
        await stores.close()
    p50 = {name: statistics.median(values) for name, values in timings.items()}
    log("1% filtered recall, nested plan (auto_explain, last of 8 calls):\n" + plan)
    return {
        "plain_recall_p50_ms": round(p50["plain"], 3),
        "filtered_1pct_recall_p50_ms": round(p50["filtered_1pct"], 3),
        "filtered_50pct_recall_p50_ms": round(p50["filtered_50pct"], 3),
        "window_recall_p50_ms": round(p50["window"], 3),
        "filtered_vs_plain_1pct": round(p50["filtered_1pct"] / p50["plain"], 3),
        "filtered_vs_plain_50pct": round(p50["filtered_50pct"] / p50["plain"], 3),
        "window_vs_plain": round(p50["window"] / p50["plain"], 3),
        "exact": exact,
        "plan_uses_scope_index": plan_uses_scope_index(plan),
        "entries": args.entries,
        "rounds": args.rounds,
        "lexical_weight": LEXICAL_WEIGHT,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=5000, help="entries in the thread (default 5,000)")
    parser.add_argument("--rounds", type=int, default=200, help="timed rounds of the four recalls (default 200)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dsn", help="local postgresql:// URL (default: a throw-away embedded server)")
    args = parser.parse_args()
    with local_postgres(args.dsn) as dsn, scratch_schema(dsn, "bench_filters") as schema:
        emit(asyncio.run(run(args, dsn, schema)))


if __name__ == "__main__":
    main()
