"""Deterministic synthetic memory corpus for the scale benchmarks.

The default shape: 1,000,000 entries of 384 dimensions over 10,000 tenants,
in threads of 10 to 5,000 entries. Thread sizes follow a truncated power law
(density proportional to n^-2 on [10, 5000], about 62 entries per thread on
average) and the first thread always has the maximum size, so the largest
scope is always measured. Thread ``k`` belongs to tenant ``k mod tenants``
(resource ``user-<k mod tenants>``), so every tenant has at least one thread.

Each thread has a topic: its entries' embeddings are unit vectors around a
topic centroid, and their texts draw words from the thread's vocabulary; entry n
happened at ``event_time(n)``, 7 hours after entry n - 1. 10%
of the entries are invalid: half are written with revoked consent (remember
tombstones them at write) and half are tombstoned by ``invalidate`` after the
load. Everything is a pure function of ``(spec, thread index)``, so a
benchmark can regenerate a thread's entries (for a brute-force answer) rather
than keep a million vectors in memory. Nothing is written to disk.

    python bench/corpus.py --entries 20000    # prints the shape as one JSON line
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import numpy as np
from prism_memory import MemoryConsent, Scope
from prism_memory.types import EntryRecord

#: Moment every synthetic revocation is dated (any fixed, aware instant keeps runs identical).
REVOKED_AT = datetime(2026, 1, 1, tzinfo=timezone.utc)
#: Entry n of a thread happened at EVENT_START + (n mod EVENT_PERIOD) x EVENT_STEP (its ``occurred_at``), so the
#: weekday and month words of :data:`WORDS` name the event date of some entries and not of others, and a
#: benchmark's exact ranking does not hang on the day it runs.
EVENT_START = datetime(2024, 1, 1, tzinfo=timezone.utc)
EVENT_STEP = timedelta(hours=7)
EVENT_PERIOD = 10_000

WORDS = (
    "alice bob carmen dmitri esha farid grace hiro ines jonah kemi luca lisbon osaka nairobi denver krakow montreal "
    "hanoi bristol lima tbilisi porridge ramen lentil sushi tacos coffee tea chocolate budget kubernetes marathon "
    "taxes birthday garden portuguese mortgage interview offsite sister manager landlord friend dentist grandfather "
    "coworker neighbour nurse engineer chef architect teacher pilot lawyer carpenter monday tuesday wednesday thursday "
    "friday saturday sunday morning evening weekend march april summer winter flight hotel dinner meeting invoice "
    "allergy recipe piano guitar novel podcast hiking cycling swimming yoga chess camera laptop phone car bicycle"
).split()


@dataclass(frozen=True)
class CorpusSpec:
    """The corpus shape; every field is part of the seed of what is generated."""

    entries: int = 1_000_000
    tenants: int = 10_000
    dimensions: int = 384
    min_thread: int = 10
    max_thread: int = 5_000
    invalid_share: float = 0.10
    seed: int = 7


@dataclass(frozen=True)
class Thread:
    """One generated thread: its index, scope and number of entries."""

    index: int
    scope: Scope
    size: int


@dataclass(frozen=True)
class ThreadEntries:
    """A thread's entries: records in write order, their unit embeddings (``float32[size, dimensions]``),
    and which entry ids are invalid (revoked at write, or to be tombstoned after the load)."""

    records: list[EntryRecord]
    embeddings: np.ndarray
    revoked: frozenset[str]
    tombstoned: frozenset[str]


def event_time(n: int) -> datetime:
    """The event time (``occurred_at``, UTC) of a thread's entry ``n`` (0-based)."""
    return EVENT_START + (n % EVENT_PERIOD) * EVENT_STEP


def thread_sizes(spec: CorpusSpec) -> list[int]:
    """Thread sizes summing to exactly ``spec.entries``: the first is ``max_thread``, the rest power-law draws."""
    rng = np.random.default_rng([spec.seed, 0])
    low, high = spec.min_thread, spec.max_thread
    sizes = [min(high, spec.entries)]
    total = sizes[0]
    while total < spec.entries:
        # Inverse CDF of p(n) ~ n^-2 on [low, high].
        u = rng.random(4096)
        draws = np.floor(1.0 / (1.0 / low - u * (1.0 / low - 1.0 / high))).astype(int)
        for size in np.clip(draws, low, high):
            size = int(min(size, spec.entries - total))
            if size < low and sizes[-1] + size <= high:
                sizes[-1] += size  # a short remainder joins the previous thread
            else:
                sizes.append(size)
            total += size
            if total >= spec.entries:
                break
    return sizes


def threads(spec: CorpusSpec) -> list[Thread]:
    """Every thread of the corpus, in generation order."""
    return [
        Thread(k, Scope(f"tenant-{k % spec.tenants:05d}", f"user-{k % spec.tenants:05d}", f"thread-{k:06d}"), size)
        for k, size in enumerate(thread_sizes(spec))
    ]


def thread_topic(spec: CorpusSpec, index: int) -> tuple[np.ndarray, list[str]]:
    """A thread's topic: a unit centroid (``float32[dimensions]``) and its 12-word vocabulary."""
    rng = np.random.default_rng([spec.seed, 1, index])
    centroid = rng.standard_normal(spec.dimensions).astype(np.float32)
    vocabulary = [WORDS[i] for i in rng.choice(len(WORDS), size=12, replace=False)]
    return centroid / np.linalg.norm(centroid), vocabulary


def _around(rng: np.random.Generator, centroid: np.ndarray, vocabulary: list[str], size: int) -> tuple[np.ndarray, list[str]]:
    """``size`` unit embeddings around ``centroid`` and texts of 10 words of ``vocabulary`` and 6 shared ones."""
    vectors = centroid + 0.6 * rng.standard_normal((size, len(centroid))).astype(np.float32) / np.sqrt(len(centroid))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    word_ids = rng.integers(0, len(vocabulary), size=(size, 10))
    filler = rng.integers(0, len(WORDS), size=(size, 6))
    return vectors, [" ".join([vocabulary[i] for i in word_ids[n]] + [WORDS[i] for i in filler[n]]) for n in range(size)]


def thread_entries(spec: CorpusSpec, thread: Thread) -> ThreadEntries:
    """Generate ``thread``'s entries (deterministic in ``spec`` and the thread index)."""
    rng = np.random.default_rng([spec.seed, 2, thread.index])
    vectors, texts = _around(rng, *thread_topic(spec, thread.index), thread.size)
    invalid = rng.random(thread.size) < spec.invalid_share
    revoked_flag = rng.random(thread.size) < 0.5
    records, revoked, tombstoned = [], set(), set()
    for n in range(thread.size):
        entry_id = f"m{n:05d}"
        consent = None
        if invalid[n] and revoked_flag[n]:
            consent = MemoryConsent("user", "thread", True, None, REVOKED_AT)
            revoked.add(entry_id)
        elif invalid[n]:
            tombstoned.add(entry_id)
        records.append(EntryRecord(entry_id, texts[n], vectors[n], {"turn": n}, None, None, consent,
                                   occurred_at=event_time(n)))
    return ThreadEntries(records, vectors, frozenset(revoked), frozenset(tombstoned))


def thread_query(spec: CorpusSpec, thread: Thread, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """A query for ``thread``: a unit vector near its topic (``float32[dimensions]``) and three words of its
    vocabulary, drawn from ``rng``."""
    centroid, vocabulary = thread_topic(spec, thread.index)
    vector = centroid + 0.8 * rng.standard_normal(spec.dimensions).astype(np.float32) / np.sqrt(spec.dimensions)
    text = " ".join(vocabulary[i] for i in rng.choice(len(vocabulary), size=3, replace=False))
    return (vector / np.linalg.norm(vector)).astype(np.float32), text


def tenant_batches(spec: CorpusSpec, batch_entries: int = 1000) -> Iterator[list[tuple[Thread, ThreadEntries]]]:
    """The corpus as ingest batches: one tenant's threads each, about ``batch_entries`` entries per batch
    (a thread larger than that goes in slices of its own, each a batch)."""
    by_tenant: dict[str, list[Thread]] = {}
    for thread in threads(spec):
        by_tenant.setdefault(thread.scope.tenant_id, []).append(thread)
    for tenant_threads in by_tenant.values():
        batch: list[tuple[Thread, ThreadEntries]] = []
        size = 0
        for thread in tenant_threads:
            entries = thread_entries(spec, thread)
            if thread.size > batch_entries:
                for start in range(0, thread.size, batch_entries):
                    part = slice(start, start + batch_entries)
                    yield [(thread, ThreadEntries(entries.records[part], entries.embeddings[part],
                                                  entries.revoked, entries.tombstoned))]
                continue
            if size + thread.size > batch_entries and batch:
                yield batch
                batch, size = [], 0
            batch.append((thread, entries))
            size += thread.size
        if batch:
            yield batch


@dataclass(frozen=True)
class ResourceSpec:
    """A big resource: ``entries`` in ``threads`` threads of one tenant and resource. Thread ``k`` talks
    about topic ``k mod topics`` (so a topic recurs in many threads); ``user_share`` of the entries have consent
    scope "user" (they may leave their thread), the rest "thread"; ``revoked_share`` are written revoked."""

    tenant_id: str = "tenant-big"
    resource_id: str = "user-big"
    entries: int = 100_000
    threads: int = 500
    topics: int = 25
    user_share: float = 0.5
    revoked_share: float = 0.05
    dimensions: int = 384
    seed: int = 7


@dataclass(frozen=True)
class ResourceThread:
    """One thread of a :class:`ResourceSpec`: its index, scope, size and topic."""

    index: int
    scope: Scope
    size: int
    topic: int


def resource_threads(spec: ResourceSpec) -> list[ResourceThread]:
    """Every thread of the resource, sizes as even as ``entries`` allows."""
    base, extra = divmod(spec.entries, spec.threads)
    return [ResourceThread(k, Scope(spec.tenant_id, spec.resource_id, f"{spec.resource_id}-thread-{k:04d}"),
                           base + (1 if k < extra else 0), k % spec.topics)
            for k in range(spec.threads)]


def resource_topic(spec: ResourceSpec, topic: int) -> tuple[np.ndarray, list[str]]:
    """A topic of the resource: a unit centroid and its 12-word vocabulary (shared by its threads)."""
    rng = np.random.default_rng([spec.seed, 11, topic])
    centroid = rng.standard_normal(spec.dimensions).astype(np.float32)
    vocabulary = [WORDS[i] for i in rng.choice(len(WORDS), size=12, replace=False)]
    return centroid / np.linalg.norm(centroid), vocabulary


@dataclass(frozen=True)
class ResourceEntries:
    """A resource thread's entries in write order, their unit embeddings, the ids written revoked, and the ids
    whose consent scope is "user" (the ones that may leave the thread)."""

    records: list[EntryRecord]
    embeddings: np.ndarray
    revoked: frozenset[str]
    travelling: frozenset[str]


def resource_thread_entries(spec: ResourceSpec, thread: ResourceThread) -> ResourceEntries:
    """A thread's entries, made as :func:`thread_entries` makes them, around its topic."""
    rng = np.random.default_rng([spec.seed, 12, thread.index])
    vectors, texts = _around(rng, *resource_topic(spec, thread.topic), thread.size)
    user = rng.random(thread.size) < spec.user_share
    revoked_flag = rng.random(thread.size) < spec.revoked_share
    records, revoked, travelling = [], set(), set()
    for n in range(thread.size):
        entry_id = f"r{n:05d}"
        consent = MemoryConsent("user", "user" if user[n] else "thread", True, None,
                                REVOKED_AT if revoked_flag[n] else None)
        if revoked_flag[n]:
            revoked.add(entry_id)
        if user[n]:
            travelling.add(entry_id)
        records.append(EntryRecord(entry_id, texts[n], vectors[n], {"turn": n}, None, None, consent,
                                   occurred_at=event_time(n)))
    return ResourceEntries(records, vectors, frozenset(revoked), frozenset(travelling))


def resource_query(spec: ResourceSpec, thread: ResourceThread, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """A query asked in ``thread``: near its topic, three words of the topic's vocabulary."""
    centroid, vocabulary = resource_topic(spec, thread.topic)
    vector = centroid + 0.8 * rng.standard_normal(spec.dimensions).astype(np.float32) / np.sqrt(spec.dimensions)
    text = " ".join(vocabulary[i] for i in rng.choice(len(vocabulary), size=3, replace=False))
    return (vector / np.linalg.norm(vector)).astype(np.float32), text


def resource_batches(spec: ResourceSpec, batch_entries: int = 1000) -> Iterator[list[tuple[ResourceThread, ResourceEntries]]]:
    """The resource as ingest batches of about ``batch_entries`` entries (whole threads)."""
    batch: list[tuple[ResourceThread, ResourceEntries]] = []
    size = 0
    for thread in resource_threads(spec):
        if size + thread.size > batch_entries and batch:
            yield batch
            batch, size = [], 0
        batch.append((thread, resource_thread_entries(spec, thread)))
        size += thread.size
    if batch:
        yield batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=CorpusSpec.entries)
    parser.add_argument("--tenants", type=int, default=None, help="default: entries / 100")
    parser.add_argument("--seed", type=int, default=CorpusSpec.seed)
    args = parser.parse_args()
    spec = CorpusSpec(entries=args.entries, tenants=args.tenants or max(1, args.entries // 100), seed=args.seed)
    sizes = np.asarray(thread_sizes(spec))
    print(json.dumps({
        "entries": int(sizes.sum()), "tenants": spec.tenants, "threads": len(sizes), "dimensions": spec.dimensions,
        "thread_size_min": int(sizes.min()), "thread_size_p50": int(np.median(sizes)), "thread_size_max": int(sizes.max()),
        "threads_over_1000": int((sizes > 1000).sum()),
    }))


if __name__ == "__main__":
    main()
