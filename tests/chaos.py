"""Chaos engine shared by tests/resilience/test_chaos.py (a few seconds in CI) and bench/chaos.py (60 s).

``clients`` concurrent clients call the public API (remember, recall, forget,
working memory) against their own embedded PostgreSQL, through one pool, while
a controller restarts the server and terminates every backend. Each client owns
look-alike scopes (tenants ``acme-N`` and ``acme-N-corp``) and writes ids no
other write reuses, so what must have survived is exact:

- ``lost_writes``: acknowledged remembers missing afterwards (or acknowledged
  forgets still there), checked against the emulator replaying every
  acknowledged operation per scope in order. A write that failed may still have
  committed (its reply was lost with the connection): such entries are counted
  as ``unacknowledged_commits``, never as lost.
- ``cross_scope_hits``: recalled hits whose text carries another scope's tag.
- ``untyped_errors``: errors that are not a :class:`PrismMemoryError`.
- ``failed_after_recovery``: calls started once the server accepted
  connections again (and ended before the next outage) that failed.
- ``recovery_p99_ms``: from the server accepting connections to each
  client's first successful call, p99.

With ``outage_s`` the controller instead stops the server once, 5 s in, for
``outage_s`` seconds, and each client starts a call at most once a second
(``pace_s``); ``recovery_after_long_outage_ms`` is then the worst client's
time from the server accepting connections again to its first successful call.

:func:`query_cost` measures the worst allowed query against a typical one.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from prism_memory import (
    PrismMemoryError,
    RagChunk,
    Scope,
    create_hash_embedder,
    create_memory,
    create_memory_vector_store,
    create_memory_working_store,
    create_postgres_memory_stores,
)
from prism_memory.embedded import database_url, ensure_database, start_embedded_server, stop_embedded_server
from prism_memory.schema import SchemaConfig, migrate
from prism_memory.types import HARD_CAPS, EntryRecord

WORDS = ["coffee", "river", "budget", "garden", "piano", "tax", "lisbon", "violin"]
DIMENSIONS = 64


@dataclass
class ChaosResult:
    ops: int = 0
    lost_writes: list[str] = field(default_factory=list)
    unacknowledged_commits: int = 0
    cross_scope_hits: list[str] = field(default_factory=list)
    untyped_errors: list[str] = field(default_factory=list)
    failed_after_recovery: list[str] = field(default_factory=list)
    typed_failures: int = 0
    recoveries_ms: list[float] = field(default_factory=list)
    outages: list[tuple[str, float, float]] = field(default_factory=list)

    @property
    def recovery_p99_ms(self) -> float:
        ordered = sorted(self.recoveries_ms)
        return round(ordered[int(0.99 * (len(ordered) - 1))], 1) if ordered else 0.0

    @property
    def recovery_max_ms(self) -> float:
        return round(max(self.recoveries_ms), 1) if self.recoveries_ms else 0.0


@dataclass
class Call:
    client: int
    started: float
    ended: float
    ok: bool
    description: str


def tag(scope: tuple[str, str, str]) -> str:
    return "tag" + "x".join(scope).replace("-", "")


class EmbeddedServer:
    """An embedded PostgreSQL in its own data directory that can be stopped and started again."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="prism-memory-chaos-"))
        self.data_dir = self.directory / "pgdata"
        self.server = start_embedded_server(self.data_dir)
        self.dsn = ensure_database(self.server, "chaos")
        self.admin_dsn = database_url(self.server, "postgres")

    def stop(self) -> None:
        stop_embedded_server(self.data_dir)

    def start(self) -> None:
        self.server = start_embedded_server(self.data_dir)

    def restart(self) -> None:
        self.stop()
        self.start()

    def terminate_backends(self) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute("select pg_terminate_backend(pid) from pg_stat_activity "
                         "where datname = 'chaos' and pid <> pg_backend_pid()")

    def wait_until_accepting(self, timeout: float = 30.0) -> float:
        """Poll until a new connection succeeds; returns that moment (``time.monotonic()``)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.dsn, connect_timeout=2) as conn:
                    conn.execute("select 1")
                return time.monotonic()
            except psycopg.Error:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def close(self) -> None:
        stop_embedded_server(self.data_dir)
        shutil.rmtree(self.directory, ignore_errors=True)


async def run_chaos(
    *, clients: int = 16, seconds: float = 60.0, restarts: int = 3, terminations: int = 2, seed: int = 7,
    outage_s: float = 0.0, pace_s: float = 0.0,
) -> ChaosResult:
    """Run the chaos scenario on a fresh embedded server (removed afterwards); see the module docstring.

    ``outage_s``: one stop of that many seconds instead of the restarts and terminations. ``pace_s``: the
    least time between the starts of a client's calls (0: back to back)."""
    server = EmbeddedServer()
    result = ChaosResult()
    try:
        await asyncio.to_thread(migrate, server.dsn, SchemaConfig(dimensions=DIMENSIONS))
        stores = await create_postgres_memory_stores(server.dsn, dimensions=DIMENSIONS, skip_migrations=True,
                                                     min_pool_size=4, max_pool_size=clients)
        try:
            events = _events(seconds, restarts, terminations, seed, outage_s)
            await _run(server, stores, result, clients, seconds, events, outage_s, pace_s, seed)
        finally:
            await stores.close()
    finally:
        server.close()
    return result


def _events(seconds: float, restarts: int, terminations: int, seed: int, outage_s: float) -> list[tuple[float, str]]:
    """``(seconds from the start, event)``: the restarts and terminations shuffled and spread evenly, or the outage."""
    if outage_s:
        return [(5.0, "outage")]
    events = ["restart"] * restarts + ["terminate"] * terminations
    random.Random(seed).shuffle(events)
    gap = seconds / (len(events) + 1)
    return [(index * gap, event) for index, event in enumerate(events, start=1)]


async def _run(server, stores, result: ChaosResult, clients: int, seconds: float, events: list[tuple[float, str]],
               outage_s: float, pace_s: float, seed: int) -> None:
    embedder = create_hash_embedder(DIMENSIONS)
    scopes = {n: [(f"acme-{n}", "user", "main"), (f"acme-{n}-corp", "user", "main")] for n in range(clients)}
    acknowledged: dict[tuple[str, str, str], list[tuple[str, Any]]] = {}
    calls: list[Call] = []
    start = time.monotonic()
    deadline = start + seconds

    def memory_for(scope, vector_store, working_store):
        return create_memory(tenant_id=scope[0], resource_id=scope[1], thread_id=scope[2], embedder=embedder,
                             vector_store=vector_store, working_store=working_store)

    async def client(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        memories = {scope: memory_for(scope, stores.vector_store, stores.working_store) for scope in scopes[number]}
        written: dict[tuple[str, str, str], list[str]] = {scope: [] for scope in memories}
        counter = 0
        began = -pace_s
        while time.monotonic() < deadline:
            await asyncio.sleep(max(0.0, began + pace_s - time.monotonic()))
            scope = rng.choice(list(memories))
            memory = memories[scope]
            kind = rng.choices(["remember", "recall", "forget", "working"], [5, 6, 1, 1])[0]
            began = time.monotonic()
            description = f"{kind} {scope}"
            try:
                if kind == "remember":
                    counter += 1
                    entry_id = f"c{number}-{counter}"
                    text = f"{tag(scope)} {rng.choice(WORDS)} {rng.choice(WORDS)}"
                    await memory.remember([{"id": entry_id, "text": text}], wait=True)
                    written[scope].append(entry_id)
                    acknowledged.setdefault(scope, []).append(("remember", (entry_id, text)))
                elif kind == "recall":
                    hits = (await memory.recall(rng.choice(WORDS), top_k=8)).hits
                    result.cross_scope_hits += [f"{scope}: {hit.id}" for hit in hits if tag(scope) not in hit.text]
                elif kind == "forget" and written[scope]:
                    entry_id = written[scope].pop(rng.randrange(len(written[scope])))
                    await memory.forget([entry_id])
                    acknowledged.setdefault(scope, []).append(("forget", entry_id))
                elif kind == "working":
                    record = await memory.update_working({"note": rng.choice(WORDS), "client": number})
                    acknowledged.setdefault(scope, []).append(("working", record.data))
                calls.append(Call(number, began, time.monotonic(), True, description))
            except PrismMemoryError as exc:
                result.typed_failures += 1
                calls.append(Call(number, began, time.monotonic(), False, f"{description}: {type(exc).__name__}: {exc}"))
                await asyncio.sleep(0.01)
            except Exception as exc:  # counted, never hidden
                result.untyped_errors.append(f"{description}: {type(exc).__name__}: {exc}")
                calls.append(Call(number, began, time.monotonic(), False, description))
            result.ops += 1

    async def controller() -> None:
        for at, event in events:
            await asyncio.sleep(max(0.0, start + at - time.monotonic()))
            began = time.monotonic()
            if event == "outage":
                await asyncio.to_thread(server.stop)
                await asyncio.sleep(outage_s)
                await asyncio.to_thread(server.start)
            else:
                await asyncio.to_thread(server.restart if event == "restart" else server.terminate_backends)
            accepting = await asyncio.to_thread(server.wait_until_accepting)
            result.outages.append((event, began, accepting))

    await asyncio.gather(controller(), *(client(n) for n in range(clients)))
    _judge_recovery(result, calls, clients)
    await _check_writes(result, acknowledged, stores, memory_for)


def _judge_recovery(result: ChaosResult, calls: list[Call], clients: int) -> None:
    by_end = sorted(calls, key=lambda call: call.ended)
    for index, (_event, _began, accepting) in enumerate(result.outages):
        next_outage = result.outages[index + 1][1] if index + 1 < len(result.outages) else float("inf")
        window = [call for call in calls if accepting <= call.started and call.ended < next_outage]
        result.failed_after_recovery += [call.description for call in window if not call.ok]
        for number in range(clients):
            first = next((call for call in by_end
                          if call.client == number and call.ok and call.ended >= accepting), None)
            if first is not None and first.ended < next_outage:
                result.recoveries_ms.append((first.ended - accepting) * 1000)


async def _check_writes(result: ChaosResult, acknowledged, stores, memory_for) -> None:
    """Replay every scope's acknowledged operations on the emulator and compare the entries that must exist."""
    replay_vectors, replay_working = create_memory_vector_store(DIMENSIONS), create_memory_working_store()
    for scope, operations in acknowledged.items():
        twin = memory_for(scope, replay_vectors, replay_working)
        for kind, argument in operations:
            if kind == "remember":
                await twin.remember([{"id": argument[0], "text": argument[1]}], wait=True)
            elif kind == "forget":
                await twin.forget([argument])
            else:
                await twin.update_working(argument)
        real = memory_for(scope, stores.vector_store, stores.working_store)
        expected = {record.id: record.text for record in await all_entries(twin)}
        actual = {record.id: record.text for record in await all_entries(real)}
        forgotten = {argument for kind, argument in operations if kind == "forget"}
        result.lost_writes += [f"{scope}: {entry_id} missing" for entry_id in expected if actual.get(entry_id) != expected[entry_id]]
        result.lost_writes += [f"{scope}: {entry_id} forgotten but stored" for entry_id in forgotten if entry_id in actual]
        result.unacknowledged_commits += len(set(actual) - set(expected) - forgotten)
        working = [argument for kind, argument in operations if kind == "working"]
        stored = await real.get_working()
        if working and (stored is None or stored.version < len(working)):
            result.lost_writes.append(f"{scope}: working memory at version {stored and stored.version}, "
                                      f"{len(working)} updates acknowledged")


async def all_entries(memory) -> list:
    """Every entry of ``memory``'s thread, through its store's ``list_by_thread``, page by page."""
    records, after = [], None
    while True:
        page = await memory.config.vector_store.list_by_thread(memory.config.scope, after, 200)
        records += page
        if len(page) < 200:
            return records
        after = (page[-1].sequence, page[-1].id)


async def query_cost(entries: int = 2000, chunks: int = 5000, repeats: int = 15) -> dict[str, float]:
    """p50 of a typical two-term query and of the worst allowed one (64 KiB, about 10,900 distinct terms), on
    a thread of ``entries`` entries (``recall``) and a RAG scope of ``chunks`` chunks (``lexical_query``), on a
    fresh embedded server, through the store (the query's embedding is the host's model's cost, not the
    store's, so it is computed once, outside the timing). Returns each p50 in ms and
    ``worst_query_cost_ratio``, the larger worst/typical ratio."""
    server = EmbeddedServer()
    rng = random.Random(11)
    vocabulary = [f"w{n:05d}" for n in range(20000)]
    typical = "budget river"
    worst = " ".join(f"q{n:05d}" for n in range(20000))[: HARD_CAPS["query_bytes"]]
    embedder = create_hash_embedder(DIMENSIONS)
    scope = Scope("cost", "user", "main")
    try:
        await asyncio.to_thread(migrate, server.dsn, SchemaConfig(dimensions=DIMENSIONS))
        stores = await create_postgres_memory_stores(server.dsn, dimensions=DIMENSIONS, skip_migrations=True)
        store = stores.vector_store
        try:
            texts = [" ".join(rng.choice(vocabulary) for _ in range(12)) + " budget" for _ in range(entries)]
            vectors = await embedder.embed(texts)
            for begin in range(0, entries, 500):
                await store.remember(scope, [EntryRecord(f"e{n}", texts[n], vectors[n], {}, None, None, None)
                                             for n in range(begin, min(entries, begin + 500))])
            for begin in range(0, chunks, 500):
                await store.upsert("cost", "kb", [
                    RagChunk(id=f"k{n}", source_id=f"s{n % 50}", text=texts[n % entries], embedding=vectors[n % entries])
                    for n in range(begin, min(chunks, begin + 500))])
            [query_vector] = await embedder.embed([typical])

            async def p50(call) -> float:
                await call()
                timings = []
                for _ in range(repeats):
                    began = time.perf_counter()
                    await call()
                    timings.append((time.perf_counter() - began) * 1000)
                return statistics.median(timings)

            figures = {
                "recall_typical_ms": await p50(lambda: store.recall(scope, query_vector, typical, 8, 0)),
                "recall_worst_ms": await p50(lambda: store.recall(scope, query_vector, worst, 8, 0)),
                "lexical_typical_ms": await p50(lambda: store.lexical_query("cost", "kb", typical)),
                "lexical_worst_ms": await p50(lambda: store.lexical_query("cost", "kb", worst)),
            }
        finally:
            await stores.close()
    finally:
        server.close()
    figures = {name: round(value, 2) for name, value in figures.items()}
    figures["worst_query_cost_ratio"] = round(max(figures["recall_worst_ms"] / figures["recall_typical_ms"],
                                                  figures["lexical_worst_ms"] / figures["lexical_typical_ms"]), 2)
    return figures
