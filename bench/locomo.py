"""LoCoMo evidence-recall benchmark: the emulator and Postgres must rank identically.

Imports every LoCoMo conversation (one thread each, one entry per turn, via
``prism_memory.locomo.load_locomo``) into the in-memory emulator and into
Postgres through the public ``Memory`` API with the hash embedder, then asks
every category 1-4 question with ``recall(top_k=25)`` on both backends.

Evidence recall@k of one question = (distinct evidence turns among the top k
hits) / (distinct evidence turns of the question); the reported value is the
plain mean over questions (macro average: every question weighs the same,
whatever its number of evidence turns). Evidence ids that match no turn even
after normalisation are left out of the denominators and counted in
``unmatched_evidence``; questions left with no evidence are not scored.

    .venv/bin/python bench/locomo.py [--input PATH] [--dimensions 256] [--dsn URL]

The last stdout line is a JSON object; progress and tables go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections import defaultdict

from prism_memory import create_hash_embedder, create_memory, create_memory_vector_store, create_postgres_memory_stores
from prism_memory.locomo import Conversation, load_locomo

from _common import REPO_ROOT, emit, local_postgres, log, scratch_schema

KS = (1, 5, 10, 25)
TOP_K = 25
BATCH = 128
CATEGORIES = (1, 2, 3, 4)
_DIA_ID = re.compile(r"^D:?(\d+):0*(\d+)$")


def normalise(evidence_id: str) -> str:
    """``"D:11:26"`` -> ``"D11:26"``, ``"D30:05"`` -> ``"D30:5"``; anything else unchanged."""
    match = _DIA_ID.match(evidence_id.strip())
    return f"D{match.group(1)}:{match.group(2)}" if match else evidence_id


def resolve_evidence(conversations: list[Conversation]) -> tuple[dict, dict]:
    """Per (thread, question index): the set of evidence ids that are turns; plus counts of the fix-ups."""
    stats = {"evidence_ids": 0, "normalised_evidence": 0, "unmatched_evidence": 0, "unmatched_ids": []}
    resolved: dict[tuple[str, int], set[str]] = {}
    for conv in conversations:
        turn_ids = {entry.id for entry in conv.entries}
        for index, question in enumerate(conv.questions):
            if question.category not in CATEGORIES:
                continue
            found = set()
            for evidence_id in question.evidence:
                stats["evidence_ids"] += 1
                if evidence_id in turn_ids:
                    found.add(evidence_id)
                elif normalise(evidence_id) in turn_ids:
                    stats["normalised_evidence"] += 1
                    found.add(normalise(evidence_id))
                else:
                    stats["unmatched_evidence"] += 1
                    stats["unmatched_ids"].append(f"{conv.thread_id}:{evidence_id}")
            resolved[(conv.thread_id, index)] = found
    return resolved, stats


async def run_backend(name, conversations, embedder, vector_store, working_store=None) -> dict:
    """Import every conversation, then recall every category 1-4 question; returns ranked hits per question."""
    started = time.perf_counter()
    memories = {}
    for conv in conversations:
        memory = create_memory(
            tenant_id="locomo", resource_id="locomo", thread_id=conv.thread_id, embedder=embedder,
            vector_store=vector_store, working_store=working_store,
        )
        for start in range(0, len(conv.entries), BATCH):
            await memory.remember(conv.entries[start : start + BATCH], wait=True)
        memories[conv.thread_id] = memory
    imported = time.perf_counter() - started
    started = time.perf_counter()
    ranked = {}
    for conv in conversations:
        for index, question in enumerate(conv.questions):
            if question.category in CATEGORIES:
                result = await memories[conv.thread_id].recall(question.question, top_k=TOP_K)
                ranked[(conv.thread_id, index)] = [(hit.id, hit.score) for hit in result.hits]
    log(f"{name}: import {imported:.1f} s, {len(ranked)} recalls {time.perf_counter() - started:.1f} s")
    return ranked


def recall_table(ranked: dict, resolved: dict, categories: dict) -> dict:
    """Mean evidence recall@k per category (key 0 = all scored questions) and question counts."""
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0] * len(KS))
    counts: dict[int, int] = defaultdict(int)
    for key, evidence in resolved.items():
        if not evidence:
            continue
        ids = [hit_id for hit_id, _ in ranked[key]]
        for group in (0, categories[key]):
            counts[group] += 1
            for slot, k in enumerate(KS):
                sums[group][slot] += len(evidence & set(ids[:k])) / len(evidence)
    return {group: ([total / counts[group] for total in sums[group]], counts[group]) for group in sorted(counts)}


def compare(pg: dict, mem: dict) -> tuple[bool, float]:
    """Whether every ranking is identical, and the largest score difference of a hit found by both."""
    identical, diff = True, 0.0
    for key, pg_hits in pg.items():
        identical &= [hit_id for hit_id, _ in pg_hits] == [hit_id for hit_id, _ in mem[key]]
        mem_scores = dict(mem[key])
        diff = max([diff] + [abs(score - mem_scores[hit_id]) for hit_id, score in pg_hits if hit_id in mem_scores])
    return identical, diff


async def run(args: argparse.Namespace, dsn: str, schema: str) -> dict:
    conversations = load_locomo(args.input)
    entries = sum(len(conv.entries) for conv in conversations)
    resolved, stats = resolve_evidence(conversations)
    categories = {
        (conv.thread_id, index): question.category
        for conv in conversations
        for index, question in enumerate(conv.questions)
    }
    log(f"{len(conversations)} conversations, {entries} turns, {len(resolved)} category 1-4 questions")
    log(
        f"evidence ids: {stats['evidence_ids']}, {stats['normalised_evidence']} matched after normalising "
        f"'D:N:M'/'DN:0M' to 'DN:M', {stats['unmatched_evidence']} match no turn: {', '.join(stats['unmatched_ids'])}"
    )
    embedder = create_hash_embedder(args.dimensions)
    memory = await run_backend("memory", conversations, embedder, create_memory_vector_store(args.dimensions))
    stores = await create_postgres_memory_stores(dsn, schema=schema, dimensions=args.dimensions)
    try:
        postgres = await run_backend("postgres", conversations, embedder, stores.vector_store, stores.working_store)
    finally:
        await stores.close()

    tables = {name: recall_table(ranked, resolved, categories) for name, ranked in (("postgres", postgres), ("memory", memory))}
    log(f"\nevidence recall@k (mean over questions), top_k={TOP_K}, hash embedder {args.dimensions} dims")
    log(f"{'category':>9} {'questions':>9}  {'backend':8} " + " ".join(f"{'@' + str(k):>6}" for k in KS))
    for group, (_, count) in tables["postgres"].items():
        for name in ("postgres", "memory"):
            values = tables[name][group][0]
            log(f"{group or 'all':>9} {count:>9}  {name:8} " + " ".join(f"{value:6.3f}" for value in values))
    identical, max_diff = compare(postgres, memory)
    result: dict = {}
    for name in ("postgres", "memory"):
        for k, value in zip(KS, tables[name][0][0]):
            result[f"recall_at_{k}_{name}"] = round(value, 4)
    result.update(
        questions=tables["postgres"][0][1],
        questions_without_evidence=sum(1 for evidence in resolved.values() if not evidence),
        entries=entries,
        conversations=len(conversations),
        evidence_ids=stats["evidence_ids"],
        normalised_evidence=stats["normalised_evidence"],
        unmatched_evidence=stats["unmatched_evidence"],
        identical_rankings=identical,
        max_score_diff=max_diff,
        dimensions=args.dimensions,
        top_k=TOP_K,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--input", default=str(REPO_ROOT.parent / "shared/data/locomo/locomo10.json"), help="LoCoMo JSON file"
    )
    parser.add_argument("--dimensions", type=int, default=256, help="hash-embedder width (default 256)")
    parser.add_argument("--dsn", help="local postgresql:// URL (default: a throw-away embedded server)")
    args = parser.parse_args()
    with local_postgres(args.dsn) as dsn, scratch_schema(dsn, "bench_locomo") as schema:
        result = asyncio.run(run(args, dsn, schema))
    emit(result)


if __name__ == "__main__":
    main()
