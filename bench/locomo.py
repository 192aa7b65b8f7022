"""LoCoMo evidence-recall benchmark: prism-memory's score on both backends beside BM25, dense-only and fusion.

Imports every LoCoMo conversation (one thread each, one entry per turn, via
``prism_memory.locomo.load_locomo``) into the in-memory emulator and into
Postgres through the public ``Memory`` API, then asks every category 1-4
question with ``recall(top_k=25)`` on both backends. In the same run, on the
same questions and the same vectors, three baselines rank each thread's turns:

* ``bm25``: rank-bm25's ``BM25Okapi`` over lower-cased ``\\w+`` tokens of each turn's text;
* ``dense``: the cosine similarity of the query and turn embeddings alone;
* ``rrf``: reciprocal-rank fusion of the two, ``sum(1 / (60 + rank))``.

``--embedder hash`` (default, ``--dimensions`` wide) or ``--embedder minilm``
(all-MiniLM-L6-v2, the ``local`` extra: install ``torch==2.13.0`` first). Each
text is embedded once (entries with ``embed``, questions with ``embed_query``)
and both backends get the same vectors. ``--limit N`` keeps the first N
conversations (a slice for CI). ``--embed-text`` probes how the text given to
the model moves the dense leg (the stored text, and so the lexical leg, stays
``"Speaker: text"``): ``speaker`` (default) embeds the stored text, ``plain``
drops the ``"Speaker: "`` prefix, ``window`` puts the previous turn before the
turn, ``dated`` puts the session's date before it, ``dated-window`` both.
``--occurred-at session`` writes each turn with its session's date and time as
its ``occurred_at`` (``prism_memory.locomo.parse_session_date_time``, UTC), so
recall's lexical leg can match a query's date terms against it; by default
turns have none (their event time is when the benchmark writes them).

Evidence recall@k of one question = (distinct evidence turns among the top k
hits) / (distinct evidence turns of the question); the reported value is the
plain mean over questions (macro average). Evidence ids that match no turn even
after normalisation are left out of the denominators and counted in
``unmatched_evidence``; questions left with no evidence are not scored.

``--sweep`` adds an analysis, not a product setting: recall@1/@10 of the
default score's form, similarity + w x lexical (the share of query terms,
``prism_memory.lexical``), for other weights w than the product's 0.25,
computed in Python from the same vectors and terms.

The emulator scores in float64 what pgvector sums in float32: where the two
rankings of a question differ, the difference is checked to be a tie, every
swapped pair (and every id in only one top 25) within 1e-6 in score.

    .venv/bin/python bench/locomo.py [--embedder hash|minilm] [--limit N] [--input PATH] [--dimensions 256] [--dsn URL]

The last stdout line is a JSON object; progress and tables go to stderr. The exit code is 1 when a ranking
differs between the backends beyond a tie.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import time
from collections import defaultdict

import numpy as np
from prism_memory import create_hash_embedder, create_memory, create_memory_vector_store, create_postgres_memory_stores
from prism_memory.embedding import embed_query, embedding_model
from prism_memory.locomo import Conversation, load_locomo

from _common import REPO_ROOT, emit, local_postgres, log, scratch_schema

KS = (1, 5, 10, 25)
TOP_K = 25
BATCH = 128
CATEGORIES = (1, 2, 3, 4)
RRF_K = 60
TIE = 1e-6
RETRIEVERS = ("postgres", "memory", "bm25", "dense", "rrf")
_DIA_ID = re.compile(r"^D:?(\d+):0*(\d+)$")
_SPEAKER = re.compile(r"^[^:]{1,64}: ")
_TOKEN = re.compile(r"\w+")


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


def embedded_texts(conversations: list[Conversation], mode: str) -> dict[str, str]:
    """What the model is given for each stored turn text under ``--embed-text mode`` (the first turn wins when
    two turns share a text)."""
    rewrite: dict[str, str] = {}
    for conv in conversations:
        previous = ""
        for entry in conv.entries:
            date = f"[{entry.metadata.get('session_date_time')}]"
            text = {"speaker": entry.text, "plain": _SPEAKER.sub("", entry.text, count=1),
                    "window": f"{previous} {entry.text}".strip(), "dated": f"{date} {entry.text}",
                    "dated-window": f"{date} {previous} {entry.text}".replace("  ", " ")}[mode]
            rewrite.setdefault(entry.text, text)
            previous = entry.text
    return rewrite


class PrecomputedEmbedder:
    """The benchmark's embedder, computed once: the vectors of every turn and question, served to both backends
    and the dense baseline. It keeps the model's identity (``model_id``, ``dimensions``); ``rewrite`` maps a
    stored turn text to the text the model embeds (:func:`embedded_texts`)."""

    def __init__(self, model, rewrite: dict[str, str]) -> None:
        self.model = model
        self.dimensions = model.dimensions
        self.model_id = getattr(model, "model_id", None)
        self.rewrite = rewrite
        self.documents: dict[str, list[float]] = {}
        self.queries: dict[str, list[float]] = {}

    def document_text(self, text: str) -> str:
        return self.rewrite.get(text, text)

    async def compute(self, texts: list[str], questions: list[str]) -> None:
        started = time.perf_counter()
        todo = list(dict.fromkeys(self.document_text(text) for text in texts))
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            self.documents.update(zip(batch, await self.model.embed(batch)))
            log(f"  embedded {min(start + BATCH, len(todo))}/{len(todo)} turns ({time.perf_counter() - started:.0f} s)")
        unique = list(dict.fromkeys(questions))
        many = getattr(self.model, "embed_queries", None)  # one call for all (the local adapter), else one each
        vectors = await many(unique) if many else [await embed_query(self.model, question) for question in unique]
        self.queries.update(zip(unique, vectors))
        log(f"  embedded {len(unique)} questions ({time.perf_counter() - started:.0f} s in all)")

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.documents[self.document_text(text)] for text in texts]

    async def embed_query(self, text: str) -> list[float]:
        return self.queries[text]


def build_embedder(args: argparse.Namespace):
    if args.embedder == "hash":
        return create_hash_embedder(args.dimensions)
    from prism_memory.embedders import create_local_embedder

    return create_local_embedder()


def questions_of(conversations: list[Conversation]):
    for conv in conversations:
        for index, question in enumerate(conv.questions):
            if question.category in CATEGORIES:
                yield conv, index, question


async def run_backend(name, conversations, embedder, vector_store, working_store=None) -> dict:
    """Import every conversation, then recall every category 1-4 question; returns ranked (id, score) per question."""
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
    for conv, index, question in questions_of(conversations):
        result = await memories[conv.thread_id].recall(question.question, top_k=TOP_K)
        ranked[(conv.thread_id, index)] = [(hit.id, hit.score) for hit in result.hits]
    log(f"{name}: import {imported:.1f} s, {len(ranked)} recalls {time.perf_counter() - started:.1f} s")
    return ranked


def top(ids: list[str], scores: np.ndarray, sequences: list[int]) -> list[tuple[str, float]]:
    """The :data:`TOP_K` best by score, ties by sequence (as recall breaks them)."""
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], sequences[i]))[:TOP_K]
    return [(ids[i], float(scores[i])) for i in order]


def baselines(conversations: list[Conversation], embedder: PrecomputedEmbedder) -> dict[str, dict]:
    """BM25, dense-only and reciprocal-rank fusion rankings of every question, over the same turns and vectors."""
    from rank_bm25 import BM25Okapi

    ranked: dict[str, dict] = {"bm25": {}, "dense": {}, "rrf": {}}
    for conv in conversations:
        ids = [entry.id for entry in conv.entries]
        sequences = [entry.sequence for entry in conv.entries]
        bm25 = BM25Okapi([_TOKEN.findall(entry.text.lower()) for entry in conv.entries])
        matrix = np.array([embedder.documents[embedder.document_text(entry.text)] for entry in conv.entries])
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        for thread_conv, index, question in questions_of([conv]):
            key = (thread_conv.thread_id, index)
            lexical = np.asarray(bm25.get_scores(_TOKEN.findall(question.question.lower())))
            query = np.asarray(embedder.queries[question.question])
            dense = matrix @ (query / np.linalg.norm(query))
            fused = np.zeros(len(ids))
            for scores in (lexical, dense):
                for rank, i in enumerate(sorted(range(len(ids)), key=lambda i: (-scores[i], sequences[i])), start=1):
                    fused[i] += 1 / (RRF_K + rank)
            for name, scores in (("bm25", lexical), ("dense", dense), ("rrf", fused)):
                ranked[name][key] = top(ids, scores, sequences)
    return ranked


SWEEP_WEIGHTS = (0.0, 0.1, 0.25, 0.4, 0.5, 0.75, 1.0)


def weight_sweep(conversations: list[Conversation], embedder: PrecomputedEmbedder) -> dict[float, dict]:
    """Rankings by similarity + w * lexical (the default score's form) for each of :data:`SWEEP_WEIGHTS`."""
    from prism_memory.lexical import lexical_terms, query_terms

    ranked: dict[float, dict] = {weight: {} for weight in SWEEP_WEIGHTS}
    for conv in conversations:
        ids = [entry.id for entry in conv.entries]
        sequences = [entry.sequence for entry in conv.entries]
        terms = [frozenset(lexical_terms(entry.text)) for entry in conv.entries]
        matrix = np.array([embedder.documents[embedder.document_text(entry.text)] for entry in conv.entries])
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        for thread_conv, index, question in questions_of([conv]):
            query = np.asarray(embedder.queries[question.question])
            similarity = matrix @ (query / np.linalg.norm(query))
            wanted = set(query_terms(question.question))
            lexical = np.array([len(wanted & entry) / len(wanted) if wanted else 0.0 for entry in terms])
            for weight in SWEEP_WEIGHTS:
                ranked[weight][(thread_conv.thread_id, index)] = top(ids, similarity + weight * lexical, sequences)
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


def is_tie(pg_hits: list, mem_hits: list) -> bool:
    """Whether two rankings of one question differ only by float32/float64 ties: every pair the two order
    differently, and every id in only one of them (against the other's last hit), is within :data:`TIE`."""
    pg, mem = dict(pg_hits), dict(mem_hits)
    both = [hit_id for hit_id, _ in pg_hits if hit_id in mem]
    mem_rank = {hit_id: rank for rank, (hit_id, _) in enumerate(mem_hits)}
    for i, a in enumerate(both):
        for b in both[i + 1:]:
            if mem_rank[a] > mem_rank[b] and abs(pg[a] - pg[b]) > TIE and abs(mem[a] - mem[b]) > TIE:
                return False
    for hits, other in ((pg_hits, mem_hits), (mem_hits, pg_hits)):
        others = dict(other)
        for hit_id, score in hits:
            if hit_id not in others and abs(score - other[-1][1]) > TIE:
                return False
    return True


def compare(pg: dict, mem: dict) -> dict:
    """How the two backends' rankings compare: questions ranked differently, how many of those differ beyond a
    float32/float64 tie, and the largest score difference of a hit found by both."""
    differing, beyond, diff = 0, 0, 0.0
    for key, pg_hits in pg.items():
        if [hit_id for hit_id, _ in pg_hits] != [hit_id for hit_id, _ in mem[key]]:
            differing += 1
            beyond += not is_tie(pg_hits, mem[key])
        mem_scores = dict(mem[key])
        diff = max([diff] + [abs(score - mem_scores[hit_id]) for hit_id, score in pg_hits if hit_id in mem_scores])
    return {"identical_rankings": differing == 0, "rankings_differing": differing,
            "rankings_differing_beyond_ties": beyond, "max_score_diff": diff}


async def run(args: argparse.Namespace, dsn: str, schema: str) -> dict:
    conversations = load_locomo(args.input, occurred_at=args.occurred_at)[: args.limit]
    entries = sum(len(conv.entries) for conv in conversations)
    resolved, stats = resolve_evidence(conversations)
    categories = {(conv.thread_id, index): question.category for conv, index, question in questions_of(conversations)}
    log(f"{len(conversations)} conversations, {entries} turns, {len(resolved)} category 1-4 questions")
    log(
        f"evidence ids: {stats['evidence_ids']}, {stats['normalised_evidence']} matched after normalising "
        f"'D:N:M'/'DN:0M' to 'DN:M', {stats['unmatched_evidence']} match no turn: {', '.join(stats['unmatched_ids'])}"
    )
    embedder = PrecomputedEmbedder(build_embedder(args), embedded_texts(conversations, args.embed_text))
    model = embedding_model(embedder)
    log(f"embedder: {args.embedder} ({model.model_id if model else 'no model id'}, {embedder.dimensions} dimensions)")
    await embedder.compute([entry.text for conv in conversations for entry in conv.entries],
                           [question.question for _, _, question in questions_of(conversations)])
    dimensions = embedder.dimensions
    ranked = {"memory": await run_backend("memory", conversations, embedder, create_memory_vector_store(dimensions))}
    stores = await create_postgres_memory_stores(dsn, schema=schema, dimensions=dimensions)
    try:
        ranked["postgres"] = await run_backend("postgres", conversations, embedder, stores.vector_store, stores.working_store)
    finally:
        await stores.close()
    ranked.update(baselines(conversations, embedder))

    tables = {name: recall_table(ranked[name], resolved, categories) for name in RETRIEVERS}
    log(f"\nevidence recall@k (mean over questions), top_k={TOP_K}, {args.embedder} embedder ({dimensions} dims), "
        f"turns embedded as --embed-text {args.embed_text}")
    log(f"{'category':>9} {'questions':>9}  {'retriever':9} " + " ".join(f"{'@' + str(k):>6}" for k in KS))
    for group, (_, count) in tables["postgres"].items():
        for name in RETRIEVERS:
            values = tables[name][group][0]
            log(f"{group or 'all':>9} {count:>9}  {name:9} " + " ".join(f"{value:6.3f}" for value in values))
    comparison = compare(ranked["postgres"], ranked["memory"])
    log(f"rankings differing between Postgres and the emulator: {comparison['rankings_differing']} of {len(ranked['postgres'])}, "
        f"{comparison['rankings_differing_beyond_ties']} beyond a float32/float64 tie within {TIE:g}")
    result: dict = {}
    for name in RETRIEVERS:
        for k, value in zip(KS, tables[name][0][0]):
            result[f"recall_at_{k}_{name}"] = round(value, 4)
    result["per_category"] = {
        str(group): {name: [round(value, 4) for value in tables[name][group][0]] for name in RETRIEVERS}
        for group in tables["postgres"] if group
    }
    result["recall_at_1_10_by_category"] = {
        str(group): [round(tables["postgres"][group][0][KS.index(k)], 4) for k in (1, 10)]
        for group in tables["postgres"] if group
    }
    if args.sweep:
        sweep = {weight: recall_table(ranking, resolved, categories)[0][0] for weight, ranking in
                 weight_sweep(conversations, embedder).items()}
        log("similarity + w x lexical (analysis; the product's w is 0.25):")
        for weight, values in sweep.items():
            log(f"  w={weight:<5} " + " ".join(f"@{k} {value:.3f}" for k, value in zip(KS, values)))
        result["lexical_weight_sweep"] = {str(weight): [round(value, 4) for value in values] for weight, values in sweep.items()}
    result.update(
        questions=tables["postgres"][0][1],
        questions_without_evidence=sum(1 for evidence in resolved.values() if not evidence),
        entries=entries,
        conversations=len(conversations),
        evidence_ids=stats["evidence_ids"],
        normalised_evidence=stats["normalised_evidence"],
        unmatched_evidence=stats["unmatched_evidence"],
        **comparison,
        dimensions=dimensions,
        top_k=TOP_K,
        model_id=model.model_id if model else None,
        embed_text=args.embed_text,
        occurred_at=args.occurred_at,
        embedder=args.embedder,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--input", default=os.environ.get("PRISM_LOCOMO_PATH", str(REPO_ROOT.parent / "shared/data/locomo/locomo10.json")),
        help="LoCoMo JSON file (default: $PRISM_LOCOMO_PATH, else ../shared/data/locomo/locomo10.json)",
    )
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash",
                        help="hash (default) or minilm: all-MiniLM-L6-v2 (the local extra)")
    parser.add_argument("--dimensions", type=int, default=256, help="hash-embedder width (default 256)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N conversations (a CI slice)")
    parser.add_argument("--embed-text", choices=("speaker", "plain", "window", "dated", "dated-window"), default="speaker",
                        help="what the model embeds of a turn: as stored, 'Speaker: text' (default); without the "
                             "speaker; after the previous turn; after the session date; after both")
    parser.add_argument("--occurred-at", choices=("none", "session"), default="none",
                        help="each turn's occurred_at: none (default) or its session's date and time (UTC)")
    parser.add_argument("--sweep", action="store_true",
                        help="also rank by similarity + w x lexical for other weights w (an analysis)")
    parser.add_argument("--dsn", help="local postgresql:// URL (default: a throw-away embedded server)")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    with local_postgres(args.dsn) as dsn, scratch_schema(dsn, "bench_locomo") as schema:
        result = asyncio.run(run(args, dsn, schema))
    emit(result)
    if result["rankings_differing_beyond_ties"]:
        raise SystemExit("the emulator and Postgres ranked some questions differently beyond a float32/float64 tie")


if __name__ == "__main__":
    main()
