"""Soak engine shared by tests/resilience/test_soak.py (about 20 s in CI) and bench/soak.py (longer).

``clients`` concurrent clients run random operations for ``seconds`` against one
Postgres install through one pool. Each client owns a random set of scopes (tenant,
resource, thread), so operations on a scope happen in one order that can be replayed;
every client shares the same tables, indexes and pool. Every recalled hit must carry
its own scope's tag (zero cross-scope results). Afterwards the emulator replays each
scope's successful operations in order, and the final entries and working memory
must equal Postgres'.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from prism_memory import (
    EntryNotFoundError,
    MemoryConsent,
    create_hash_embedder,
    create_memory,
    create_memory_vector_store,
    create_memory_working_store,
    create_postgres_memory_stores,
)

T0 = datetime(2026, 6, 1, tzinfo=timezone.utc)
IDS = ["a", "b", "c", "d", "e", "f"]
WORDS = ["coffee", "river", "budget", "garden", "piano", "tax"]
EXPECTED = (EntryNotFoundError,)


@dataclass
class SoakResult:
    ops: int = 0
    errors: list[str] = field(default_factory=list)
    cross_scope: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    leaks: int = 0
    mismatches: list[str] = field(default_factory=list)
    log: dict[tuple[str, str, str], list[tuple[str, tuple]]] = field(default_factory=dict)

    @property
    def p99_ms(self) -> float:
        ordered = sorted(self.latencies_ms)
        return round(ordered[int(0.99 * (len(ordered) - 1))], 3) if ordered else 0.0


def tag(scope: tuple[str, str, str]) -> str:
    return "tag" + "x".join(scope).replace("-", "")


async def apply(memory, op: str, args: tuple) -> Any:
    """One operation on a memory; the same call for Postgres and for the replay."""
    if op == "remember":
        return (await memory.remember([{"id": i, "text": t, "consent": c} for i, t, c in args], wait=True)).accepted
    if op == "consent":
        return (await memory.set_consent(args[0], visible=args[1])).id
    if op == "correct":
        return (await memory.correct(args[0], args[1])).id
    if op == "forget":
        return await memory.forget([args[0]])
    if op == "working":
        return (await memory.update_working({"note": args[0]})).version
    raise AssertionError(op)


def random_op(rng: random.Random, scope: tuple[str, str, str]) -> tuple[str, tuple]:
    kind = rng.choices(["remember", "consent", "correct", "forget", "working", "recall"], [5, 2, 1, 1, 1, 6])[0]
    if kind == "remember":
        return kind, tuple((entry_id, f"{tag(scope)} {rng.choice(WORDS)} {rng.choice(WORDS)}",
                            rng.choice([None, MemoryConsent(), MemoryConsent(visible=False)]))
                           for entry_id in rng.sample(IDS, rng.randint(1, 3)))
    if kind == "consent":
        return kind, (rng.choice(IDS), rng.random() < 0.5)
    if kind == "correct":
        return kind, (rng.choice(IDS), f"{tag(scope)} corrected {rng.choice(WORDS)}")
    if kind == "forget":
        return kind, (rng.choice(IDS),)
    if kind == "working":
        return kind, (rng.choice(WORDS),)
    return kind, (rng.choice(WORDS),)


async def run_soak(dsn: str, *, clients: int = 16, seconds: float = 20.0, seed: int = 7) -> SoakResult:
    rng = random.Random(seed)
    scopes = [(f"t{t}", f"r{r}", f"th{h}") for t in range(4) for r in range(2) for h in range(4)]
    rng.shuffle(scopes)
    owned = [scopes[i::clients] for i in range(clients)]
    embedder = create_hash_embedder(64)
    stores = await create_postgres_memory_stores(dsn, dimensions=64, skip_migrations=True, min_pool_size=4,
                                                 max_pool_size=clients)
    result = SoakResult()
    deadline = time.monotonic() + seconds

    def memory_for(scope, vector_store, working_store):
        return create_memory(tenant_id=scope[0], resource_id=scope[1], thread_id=scope[2], embedder=embedder,
                             vector_store=vector_store, working_store=working_store, clock=lambda: T0)

    async def client(number: int) -> None:
        local = random.Random(seed * 1000 + number)
        memories = {scope: memory_for(scope, stores.vector_store, stores.working_store) for scope in owned[number]}
        while time.monotonic() < deadline and memories:
            scope = local.choice(list(memories))
            op, args = random_op(local, scope)
            started = time.perf_counter()
            try:
                if op == "recall":
                    hits = (await memories[scope].recall(args[0], top_k=8, message_range=2)).hits
                    result.cross_scope += [hit.id for hit in hits if tag(scope) not in hit.text]
                else:
                    await apply(memories[scope], op, args)
                    result.log.setdefault(scope, []).append((op, args))
            except EXPECTED:
                result.log.setdefault(scope, []).append(("failed " + op, args))
            except Exception as exc:  # counted, never hidden
                result.errors.append(f"{op}: {type(exc).__name__}: {exc}")
            result.latencies_ms.append((time.perf_counter() - started) * 1000)
            result.ops += 1

    try:
        await asyncio.gather(*(client(n) for n in range(clients)))
        stats = stores.pool.get_stats()
        result.leaks = stats.get("pool_size", 0) - stats.get("pool_available", 0)
        replay_vectors, replay_working = create_memory_vector_store(64), create_memory_working_store()
        for scope in scopes:
            real = memory_for(scope, stores.vector_store, stores.working_store)
            twin = memory_for(scope, replay_vectors, replay_working)
            for op, args in result.log.get(scope, []):
                if op.startswith("failed "):
                    try:
                        await apply(twin, op.removeprefix("failed "), args)
                        result.mismatches.append(f"{scope}: {op} {args} succeeded on replay")
                    except EXPECTED:
                        pass
                else:
                    await apply(twin, op, args)
            for label, state in (("entries", lambda m: m.config.vector_store.list_by_thread(m.config.scope, None, 200)),
                                 ("working", lambda m: m.get_working())):
                mine, theirs = await state(real), await state(twin)
                if _comparable(mine) != _comparable(theirs):
                    result.mismatches.append(f"{scope} {label}: {_comparable(mine)} != {_comparable(theirs)}")
    finally:
        await stores.close()
    return result


def _comparable(value: Any) -> Any:
    """Records without their row timestamps (each backend stamps its own)."""
    if value is None:
        return None
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    fields = {name: getattr(value, name) for name in getattr(value, "__dataclass_fields__", {})}
    return {name: item for name, item in fields.items() if name not in ("created_at", "updated_at")}
