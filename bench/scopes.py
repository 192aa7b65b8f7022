"""Big scopes, the part of ``bench/scale.py`` that measures recall against scope size.

Beside the main corpus it loads, each in a tenant of its own:

* one thread of each size in :data:`SIZES` (``bench/corpus.py``'s thread generator);
* one resource of each size in :data:`SIZES` (``corpus.ResourceSpec``: 200 entries per thread, a topic per
  thread out of 25, half of the entries with consent scope "user", 5% revoked). The 100,000-entry one is
  the resource the issue's targets name: 100,000 entries in 500 threads.

Then it times top-10 recalls from the client: thread recall on each thread, and ``across_threads`` recall
from a random thread of each resource. Every answer is compared with a numpy ranking of what the gate
allows (the thread's valid entries; for a resource, also the other threads' valid entries of consent scope
"user"), by similarity + lexical_weight x lexical (the default weight): ``exact`` for threads, and recall@10 for resources (the share of the
true top 10 returned, ties within 1e-6 allowed). ``per_row_us`` is p50 over the scope's entries.
"""

from __future__ import annotations

import time

import numpy as np
from prism_memory import Scope
from prism_memory.lexical import lexical_terms, query_terms
from prism_memory.lexical_dates import event_date_parts, query_date_terms
from prism_memory.scoring import LEXICAL_WEIGHT

from _common import log, remember_concurrently
from corpus import (
    EVENT_PERIOD,
    WORDS,
    CorpusSpec,
    ResourceSpec,
    Thread,
    resource_batches,
    resource_query,
    resource_thread_entries,
    resource_threads,
    thread_entries,
    event_time,
    thread_query,
)

SIZES = (1_000, 5_000, 20_000, 100_000)
TOP_K = 10
#: A column for each lexical term the corpus words make (tokenizer v2 stems them, so two words can share one) and
#: for each part of a date the corpus's event times have (``"month:5"``).
_COLUMNS = {column: n for n, column in enumerate(
    sorted({term for word in WORDS for term in lexical_terms(word)})
    + sorted(set().union(*(event_date_parts(event_time(n)) for n in range(EVENT_PERIOD)))))}


def size_thread(size: int) -> Thread:
    """The benchmark's thread of ``size`` entries, in a tenant of its own."""
    return Thread(1_000_000 + size, Scope(f"tenant-thread-{size}", "user-thread", f"thread-size-{size}"), size)


def size_resource(spec: CorpusSpec, size: int) -> ResourceSpec:
    """The benchmark's resource of ``size`` entries (200 per thread), in a tenant of its own."""
    return ResourceSpec(tenant_id=f"tenant-resource-{size}", resource_id=f"user-resource-{size}", entries=size,
                        threads=max(1, size // 200), dimensions=spec.dimensions, seed=spec.seed)


def _slices(thread: Thread, entries, batch: int):
    for start in range(0, thread.size, batch):
        yield [(thread.scope, entries.records[start : start + batch])]


async def load(stores, spec: CorpusSpec, sizes: tuple[int, ...], concurrency: int, batch: int = 1000) -> dict[str, float]:
    """Write every size's thread, then every size's resource; returns the largest resource's ingest rate (half
    of its entries go into the travellers' HNSW index)."""
    for size in sizes:
        thread = size_thread(size)
        await remember_concurrently(stores.vector_store, list(_slices(thread, thread_entries(spec, thread), batch)),
                                    concurrency)
        log(f"  thread of {size:,} entries written")
    rates = {}
    for size in sizes:
        rspec = size_resource(spec, size)
        calls = [[(thread.scope, rows.records) for thread, rows in writes] for writes in resource_batches(rspec, batch)]
        started = time.perf_counter()
        await remember_concurrently(stores.vector_store, calls, concurrency)
        rates[size] = size / (time.perf_counter() - started)
        log(f"  resource of {size:,} entries written, {rates[size]:,.0f} entries/s")
    return {"resource_ingest_entries_per_s": round(rates[max(sizes)], 1)}


def _word_matrix(records) -> np.ndarray:
    """Which of :data:`_COLUMNS` each record holds (the terms of its text, the parts of its event date), as a
    boolean matrix."""
    matrix = np.zeros((len(records), len(_COLUMNS)), dtype=bool)
    for row, record in enumerate(records):
        for column in (*lexical_terms(record.text), *event_date_parts(record.occurred_at)):
            matrix[row, _COLUMNS[column]] = True
    return matrix


def _truth(embeddings: np.ndarray, words: np.ndarray, vector: np.ndarray, text: str) -> np.ndarray:
    """The exact score of each candidate row: similarity + LEXICAL_WEIGHT x the share of the query's terms it
    holds, in its text or, for a term naming a part of a date, in its event date."""
    terms = query_terms(text)
    dates = {date.term: date.key for date in query_date_terms(terms)}
    held = np.zeros(len(words))
    for term in terms:
        holds = words[:, _COLUMNS[term]] if term in _COLUMNS else np.zeros(len(words), dtype=bool)
        if dates.get(term) in _COLUMNS:
            holds = holds | words[:, _COLUMNS[dates[term]]]
        held += holds
    lexical = held / len(terms) if terms else held
    return embeddings.astype(np.float64) @ vector.astype(np.float64) + LEXICAL_WEIGHT * lexical


def _recall_at_k(returned: list[tuple[str, str]], keys: list[tuple[str, str]], scores: np.ndarray) -> float:
    """The share of the true top k found, where a returned entry tied (within 1e-6) with the k-th counts."""
    k = min(TOP_K, len(keys))
    if k == 0:
        return 1.0
    cutoff = np.partition(-scores, k - 1)[k - 1] * -1
    good = {key for key, score in zip(keys, scores) if score >= cutoff - 1e-6}
    return min(k, len(set(returned) & good)) / k


async def _time(stores, calls, warmup: int) -> tuple[list[float], list[list[tuple[str, str]]]]:
    latencies, answers = [], []
    for n, (scope, vector, text, across) in enumerate(calls):
        started = time.perf_counter()
        result = await stores.vector_store.recall(scope, vector, text, TOP_K, 0, across_threads=across)
        elapsed = (time.perf_counter() - started) * 1000
        if n >= warmup:
            latencies.append(elapsed)
            answers.append([(hit.thread_id, hit.id) for hit in result.hits])
    return latencies, answers


async def measure(stores, spec: CorpusSpec, sizes: tuple[int, ...], queries: int, resource_queries: int,
                  warmup: int = 5) -> dict:
    """Time thread and resource recall at each size; returns the figures for scale.py's JSON line."""
    table, result = [], {}
    rng = np.random.default_rng([spec.seed, 16])
    for size in sizes:
        thread = size_thread(size)
        entries = thread_entries(spec, thread)
        valid = [n for n, record in enumerate(entries.records) if record.id not in entries.revoked]
        words = _word_matrix([entries.records[n] for n in valid])
        keys = [(thread.scope.thread_id, entries.records[n].id) for n in valid]
        asked = [(thread.scope, *thread_query(spec, thread, rng), False) for _ in range(warmup + queries)]
        latencies, answers = await _time(stores, asked, warmup)
        exact = all(_recall_at_k(answer, keys, _truth(entries.embeddings[valid], words, vector, text)) == 1.0
                    for answer, (_, vector, text, _) in zip(answers, asked[warmup:]))
        p50 = float(np.percentile(latencies, 50))
        table.append({"scope": "thread", "entries": size, "p50_ms": round(p50, 3),
                      "p99_ms": round(float(np.percentile(latencies, 99)), 3),
                      "per_row_us": round(p50 * 1000 / size, 3), "exact": exact})
        log(f"  thread of {size:,}: p50 {p50:.2f} ms, exact {exact}")
    for size in sizes:
        rspec = size_resource(spec, size)
        rthreads = resource_threads(rspec)
        generated = [resource_thread_entries(rspec, thread) for thread in rthreads]
        embeddings = np.concatenate([rows.embeddings for rows in generated])
        owner = np.concatenate([np.full(len(rows.records), n) for n, rows in enumerate(generated)])
        records = [record for rows in generated for record in rows.records]
        revoked = np.asarray([record.id in rows.revoked for rows in generated for record in rows.records])
        travels = np.asarray([record.id in rows.travelling for rows in generated for record in rows.records])
        words = _word_matrix(records)
        keys = [(rthreads[o].scope.thread_id, record.id) for o, record in zip(owner, records)]
        count = resource_queries if size == max(sizes) else queries
        picked = [rthreads[i] for i in rng.integers(0, len(rthreads), warmup + count)]
        asked = [(thread.scope, *resource_query(rspec, thread, rng), True) for thread in picked]
        latencies, answers = await _time(stores, asked, warmup)
        recalls = []
        for thread, answer, (_, vector, text, _) in zip(picked[warmup:], answers, asked[warmup:]):
            allowed = ~revoked & ((owner == thread.index) | travels)
            index = np.flatnonzero(allowed)
            scores = _truth(embeddings[index], words[index], vector, text)
            recalls.append(_recall_at_k(answer, [keys[i] for i in index], scores))
        p50, p99 = (float(np.percentile(latencies, q)) for q in (50, 99))
        row = {"scope": "resource", "entries": size, "threads": rspec.threads, "p50_ms": round(p50, 3),
               "p99_ms": round(p99, 3), "per_row_us": round(p50 * 1000 / size, 3),
               "recall_at_10": round(float(np.mean(recalls)), 4)}
        table.append(row)
        log(f"  resource of {size:,}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, recall@10 {row['recall_at_10']}")
        if size == max(sizes):
            result.update(resource_recall_p50_ms=row["p50_ms"], resource_recall_p99_ms=row["p99_ms"],
                          resource_recall_at_10=row["recall_at_10"], resource_entries=size,
                          resource_threads=rspec.threads)
    result["scope_table"] = table
    return result


