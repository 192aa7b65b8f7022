"""The shared conformance suite for store adapters (:func:`run_memory_conformance`).

An adapter author passes a factory that returns the three things a memory
needs::

    from prism_memory import create_hash_embedder, create_memory_vector_store, create_memory_working_store
    from prism_memory.conformance import run_memory_conformance

    report = await run_memory_conformance(lambda: {
        "embedder": create_hash_embedder(),
        "vector_store": create_memory_vector_store(),
        "working_store": create_memory_working_store(),
    })

The factory is called once per check (it may return new stores or the same
ones; each check writes under its own fresh tenant id). A check passes when the adapter
gives the answers the memory's rules require; the suite raises
:class:`ConformanceError` listing every failed check, or returns the
:class:`ConformanceReport` of the passed ones. It only uses the public API, so
it also tests that an adapter works behind :func:`create_memory`.
"""

from __future__ import annotations

import inspect
import traceback
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from .errors import (
    DimensionMismatchError,
    EmbeddingModelMismatchError,
    InvalidEmbeddingError,
    InvalidEntryError,
    InvalidScopeError,
    PrismMemoryError,
    WorkingMemoryVersionConflict,
)
from .memory import Memory, create_memory
from .types import MemoryConsent, RecallScoringOptions

Factory = Callable[[], "Mapping[str, Any] | Awaitable[Mapping[str, Any]]"]


class ConformanceError(AssertionError):
    """One or more conformance checks failed; ``failures`` maps check names to what went wrong."""

    def __init__(self, failures: dict[str, str]) -> None:
        super().__init__("; ".join(f"{name}: {reason}" for name, reason in failures.items()))
        self.failures = failures


@dataclass(frozen=True, slots=True)
class ConformanceReport:
    """The checks that passed, by name, in the order they ran."""

    passed: list[str]


class _Check:
    """One check's stores (the factory is called once per check) and its fresh tenant id."""

    def __init__(self, factory: Factory) -> None:
        self.factory = factory
        self.tenant = f"conformance-{uuid.uuid4().hex[:12]}"
        self._parts: Mapping[str, Any] | None = None

    async def parts(self) -> Mapping[str, Any]:
        if self._parts is None:
            parts = self.factory()
            self._parts = await parts if inspect.isawaitable(parts) else parts
        return self._parts

    async def memory(self, **options: Any) -> Memory:
        parts = await self.parts()
        options.setdefault("tenant_id", self.tenant)
        options.setdefault("resource_id", "user")
        options.setdefault("thread_id", "thread")
        return create_memory(
            embedder=parts["embedder"], vector_store=parts["vector_store"], working_store=parts["working_store"], **options
        )


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


async def _raises(error: type[BaseException], call: Awaitable[Any]) -> None:
    try:
        await call
    except error:
        return
    except Exception as exc:  # a different type is a failure too
        raise AssertionError(f"expected {error.__name__}, got {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"expected {error.__name__}, nothing was raised")


async def check_remember_and_recall(check: _Check) -> None:
    memory = await check.memory()
    await memory.remember([{"id": "a", "text": "Prefers concise answers"}, {"id": "b", "text": "Has a dog called Rex"}], wait=True)
    hits = (await memory.recall("concise answers", top_k=2)).hits
    _expect([hit.id for hit in hits][:1] == ["a"], f"the best hit for 'concise answers' should be 'a', got {[h.id for h in hits]}")
    _expect(hits[0].text == "Prefers concise answers", "text must come back byte for byte")
    _expect(all(hits[i].score >= hits[i + 1].score for i in range(len(hits) - 1)), "hits must be ordered by score")


async def check_scope_isolation(check: _Check) -> None:
    memory = await check.memory()
    await memory.remember([{"id": "secret", "text": "the vault code is 1234"}], wait=True)
    for other in ({"thread_id": "other"}, {"resource_id": "someone-else"}, {"tenant_id": check.tenant + "-other"}):
        hits = (await (await check.memory(**other)).recall("vault code")).hits
        _expect(hits == [], f"a memory with {other} must not see another scope's entries, got {[h.id for h in hits]}")


async def check_consent_gate(check: _Check) -> None:
    memory = await check.memory()
    await memory.remember([
        {"id": "shown", "text": "garden plans", "consent": MemoryConsent()},
        {"id": "hidden", "text": "garden plans hidden", "consent": MemoryConsent(visible=False)},
        {"id": "legacy", "text": "garden plans legacy"},
    ], wait=True)
    plain = {hit.id for hit in (await memory.recall("garden plans", top_k=8)).hits}
    _expect(plain == {"shown", "legacy"}, f"invisible entries must never be recalled, got {sorted(plain)}")
    strict = {hit.id for hit in (await memory.recall("garden plans", top_k=8, require_consent=True)).hits}
    _expect(strict == {"shown"}, f"require_consent must drop legacy entries, got {sorted(strict)}")
    await memory.set_consent("shown", visible=False)
    _expect((await memory.recall("garden plans", top_k=8, require_consent=True)).hits == [], "a revoke must take effect at once")


async def check_lineage_and_forget(check: _Check) -> None:
    memory = await check.memory()
    await memory.remember([
        {"id": "home", "text": "Ada lives in Lisbon", "consent": MemoryConsent()},
        {"id": "fact", "text": "Ada lives in Lisbon, a fact", "lineage": {"source_ids": ["home"]}},
    ], wait=True)
    _expect(await memory.forget(["home"]) == 1, "forget must delete the entry and return 1")
    hits = (await memory.recall("Ada Lisbon", top_k=8)).hits
    _expect(hits == [], f"a fact derived from a forgotten entry must not be recalled, got {[h.id for h in hits]}")
    page = await memory.export_memory(memory.config.scope)
    _expect(page.entries == [], "export must not contain forgotten entries")


async def check_working_memory_versions(check: _Check) -> None:
    memory = await check.memory()
    first = await memory.update_working({"name": "Ada"})
    _expect(first.version == 1, f"the first version must be 1, got {first.version}")
    second = await memory.update_working({"name": "Ada L."}, expected_version=1)
    _expect(second.version == 2 and (await memory.get_working()).data == {"name": "Ada L."}, "versions must count up")
    await _raises(WorkingMemoryVersionConflict, memory.update_working({"name": "stale"}, expected_version=1))
    _expect((await memory.get_working()).data == {"name": "Ada L."}, "a conflicting update must change nothing")


async def check_bad_input(check: _Check) -> None:
    memory = await check.memory()
    await memory.remember([{"id": "kept", "text": "kept entry"}], wait=True)
    await _raises(InvalidEntryError, memory.remember([{"id": "x", "text": "   "}], wait=True))
    await _raises(InvalidEntryError, memory.remember([{"id": "y", "text": "fine"}, {"id": "y", "text": "twice"}], wait=True))
    await _raises(InvalidScopeError, (await check.memory(thread_id=None)).recall("anything"))
    width = memory.config.embedder.dimensions

    class Broken:
        dimensions = width

        async def embed(self, texts: list[str]) -> list[list[float]]:
            return [[float("nan")] * width for _ in texts]

    class Narrow:
        dimensions = width + 1

        async def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0] * (width + 1) for _ in texts]

    parts = await check.parts()
    for embedder, error in ((Broken(), InvalidEmbeddingError), (Narrow(), DimensionMismatchError)):
        other = create_memory(tenant_id=check.tenant, resource_id="user", thread_id="thread", embedder=embedder,
                              vector_store=parts["vector_store"], working_store=parts["working_store"])
        await _raises(error, other.remember([{"id": "z", "text": "bad vector"}], wait=True))
    ids = [hit.id for hit in (await memory.recall("kept entry", top_k=8)).hits]
    _expect(ids == ["kept"], f"failed writes must leave the thread as it was, got {ids}")


async def check_embedding_model_guard(check: _Check) -> None:
    memory = await check.memory(thread_id="models")
    await memory.remember([{"id": "m1", "text": "walks the dog"}, {"id": "m2", "text": "files the taxes"}], wait=True)
    base = memory.config.embedder

    class Other:
        """Another model of the same width: the factory embedder's vectors reversed, under another model id."""

        dimensions = base.dimensions
        model_id = "conformance-other-model"

        async def embed(self, texts: list[str]) -> list[list[float]]:
            return [list(vector)[::-1] for vector in await base.embed(texts)]

    parts = await check.parts()
    other = create_memory(tenant_id=check.tenant, resource_id="user", thread_id="models", embedder=Other(),
                          vector_store=parts["vector_store"], working_store=parts["working_store"])
    if getattr(base, "model_id", None) is not None:  # a thread written by an identified model refuses another one
        await _raises(EmbeddingModelMismatchError, other.remember([{"id": "x", "text": "mixed"}], wait=True))
        await _raises(EmbeddingModelMismatchError, other.recall("dog"))
    page = await other.rebuild_index(batch_size=128)  # rebuild_index with the new model switches the thread
    _expect(page.rebuilt == 2 and page.next_cursor is None, f"the rebuild must re-embed both entries, got {page}")
    got = [hit.id for hit in (await other.recall("walks the dog", top_k=1)).hits]
    _expect(got == ["m1"], f"after the rebuild the new model must recall, got {got}")
    if getattr(base, "model_id", None) is not None:  # and from then on the old model is refused
        await _raises(EmbeddingModelMismatchError, memory.remember([{"id": "y", "text": "old model again"}], wait=True))


async def check_share_grants(check: _Check) -> None:
    parent = await check.memory(thread_id="parent")
    await parent.remember([{"id": "p1", "text": "shared plan"}, {"id": "p2", "text": "private plan"}], wait=True)
    child = await check.memory(thread_id="child")
    sibling = await check.memory(thread_id="sibling")
    _expect((await child.recall("plan", share_from_parent_thread_id="parent")).hits == [], "no grant: nothing shared")
    await parent.share_with("child", ["p1"])
    got = [hit.id for hit in (await child.recall("plan", top_k=8, share_from_parent_thread_id="parent")).hits]
    _expect(got == ["p1"], f"the child must read exactly the granted entries, got {got}")
    _expect((await sibling.recall("plan", share_from_parent_thread_id="parent")).hits == [], "siblings must not use a grant")
    await parent.revoke_share("child")
    _expect((await child.recall("plan", share_from_parent_thread_id="parent")).hits == [], "a revoked grant must end at once")


async def check_scoring(check: _Check) -> None:
    memory = await check.memory()
    await memory.remember([{"id": f"e{i}", "text": f"coffee note {i}", "importance": i / 4} for i in range(5)], wait=True)
    plain = [hit.id for hit in (await memory.recall("coffee note", top_k=5)).hits]
    zero = await memory.recall("coffee note", top_k=5, scoring=RecallScoringOptions(0.0, 0.0, 1000.0))
    _expect([hit.id for hit in zero.hits] == plain, "zero weights must keep the plain order")
    weighted = await memory.recall("coffee note", top_k=5, scoring=RecallScoringOptions(importance_weight=1.0))
    _expect([hit.id for hit in weighted.hits][0] == "e4", "importance weight 1 must rank the most important first")
    _expect(all(hit.importance is not None for hit in weighted.hits), "scored hits must expose importance")


async def check_top_k_and_adjacency(check: _Check) -> None:
    memory = await check.memory()
    await memory.remember([{"id": f"n{i}", "text": f"note {i} " + ("river " if i == 3 else "")} for i in range(7)], wait=True)
    result = await memory.recall("river", top_k=1, message_range=1)
    _expect([hit.id for hit in result.hits] == ["n3"], f"top_k=1 must return exactly the best hit, got {[h.id for h in result.hits]}")
    _expect([entry.id for entry in result.adjacent] == ["n2", "n4"], "message_range=1 must add the neighbours by sequence")
    _expect(len((await memory.recall("note", top_k=4)).hits) == 4, "top_k must cap the hits")


async def check_grant_expiry(check: _Check) -> None:
    now = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    parent = await check.memory(thread_id="parent", clock=lambda: now[0])
    child = await check.memory(thread_id="child", clock=lambda: now[0])
    await parent.remember([{"id": "p", "text": "expiring plan"}], wait=True)
    await parent.share_with("child", ["p"], expires_at=now[0] + timedelta(hours=1))
    _expect(len((await child.recall("plan", share_from_parent_thread_id="parent")).hits) == 1, "a live grant shares")
    now[0] += timedelta(hours=2)
    _expect((await child.recall("plan", share_from_parent_thread_id="parent")).hits == [], "an expired grant must share nothing")


async def check_legal_hold(check: _Check) -> None:
    memory = await check.memory()
    await memory.remember([{"id": "held", "text": "held record", "consent": MemoryConsent()},
                           {"id": "old", "text": "old record", "consent": MemoryConsent()}], wait=True)
    _expect(await memory.forget(["held"], hold=True) == 0, "forget(hold=True) deletes nothing")
    _expect([hit.id for hit in (await memory.recall("record", top_k=8)).hits] == ["old"], "a held entry is never recalled")
    await memory.apply_retention(max_entries=0)
    explained = await memory.recall("record", top_k=8, explain=True)
    _expect(explained.explanation.removed["hold"] == 1, "retention must skip a held entry, and explain must count it")


async def check_recency(check: _Check) -> None:
    now = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    memory = await check.memory(clock=lambda: now[0])
    await memory.remember([{"id": "old", "text": "coffee order"}], wait=True)
    now[0] += timedelta(days=10)
    await memory.remember([{"id": "new", "text": "coffee order"}], wait=True)
    hits = (await memory.recall("coffee order", scoring=RecallScoringOptions(1.0, half_life_ms=86_400_000.0))).hits
    _expect([hit.id for hit in hits] == ["new", "old"], f"recency weight 1 must rank the newer entry first, got {[h.id for h in hits]}")
    _expect(hits[0].recency == 1.0 and 0 < hits[1].recency < 0.001, "recency must halve every half-life")


async def check_across_threads(check: _Check) -> None:
    here = await check.memory(thread_id="here")
    there = await check.memory(thread_id="there")
    await here.remember([{"id": "h", "text": "travel plan here"}], wait=True)
    await there.remember([{"id": "u", "text": "travel plan for the user", "consent": MemoryConsent(scope="user")},
                          {"id": "t", "text": "travel plan of that thread", "consent": MemoryConsent(scope="thread")},
                          {"id": "l", "text": "travel plan without consent"}], wait=True)
    other = await check.memory(resource_id="user-2", thread_id="there")
    await other.remember([{"id": "o", "text": "travel plan of another user", "consent": MemoryConsent(scope="user")}],
                         wait=True)
    _expect([hit.id for hit in (await here.recall("travel plan", top_k=8)).hits] == ["h"],
            "without across_threads a recall must stay in its thread")
    got = sorted((hit.thread_id, hit.id) for hit in (await here.recall("travel plan", top_k=8, across_threads=True)).hits)
    _expect(got == [("here", "h"), ("there", "u")],
            f"across threads: only entries whose consent scope lets them travel, of this resource only, got {got}")
    await there.set_consent("u", scope="thread")
    got = [hit.id for hit in (await here.recall("travel plan", top_k=8, across_threads=True)).hits]
    _expect(got == ["h"], f"a consent scope change must apply at the next recall, got {got}")


async def check_expiry(check: _Check) -> None:
    now = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    memory = await check.memory(clock=lambda: now[0])
    await memory.remember([{"id": "brief", "text": "parking code", "ttl": timedelta(hours=1)},
                           {"id": "old", "text": "parking spot"}], wait=True)
    now[0] += timedelta(days=10)
    await memory.remember([{"id": "new", "text": "parking garage"}], wait=True)
    got = sorted(hit.id for hit in (await memory.recall("parking", top_k=8)).hits)
    _expect(got == ["new", "old"], f"an entry past its ttl must not be recalled before any sweep, got {got}")
    await memory.set_retention_policy(5)
    got = [hit.id for hit in (await memory.recall("parking", top_k=8)).hits]
    _expect(got == ["new"], f"a stored retention policy must apply at the next recall, got {got}")
    swept = await memory.apply_retention()
    _expect(swept.deleted == 2, f"the sweep must delete what has expired, got {swept}")


CHECKS: dict[str, Callable[[_Check], Awaitable[None]]] = {
    "remember_and_recall": check_remember_and_recall,
    "scope_isolation": check_scope_isolation,
    "consent_gate": check_consent_gate,
    "lineage_and_forget": check_lineage_and_forget,
    "working_memory_versions": check_working_memory_versions,
    "bad_input": check_bad_input,
    "embedding_model_guard": check_embedding_model_guard,
    "share_grants": check_share_grants,
    "scoring": check_scoring,
    "top_k_and_adjacency": check_top_k_and_adjacency,
    "grant_expiry": check_grant_expiry,
    "legal_hold": check_legal_hold,
    "recency": check_recency,
    "across_threads": check_across_threads,
    "expiry": check_expiry,
}


async def run_memory_conformance(factory: Factory) -> ConformanceReport:
    """Run every check against ``factory`` (returning a mapping with ``embedder``, ``vector_store``,
    ``working_store``; sync or async). Returns the report, or raises :class:`ConformanceError`
    naming each failed check and why."""
    passed: list[str] = []
    failures: dict[str, str] = {}
    for name, run in CHECKS.items():
        try:
            await run(_Check(factory))
        except AssertionError as exc:
            failures[name] = str(exc)
        except PrismMemoryError as exc:
            failures[name] = f"unexpected {type(exc).__name__}: {exc}"
        except Exception as exc:  # an adapter bug: report it with where it happened
            failures[name] = f"{type(exc).__name__}: {exc} ({traceback.format_exc(limit=-1).strip().splitlines()[-2]})"
        else:
            passed.append(name)
    if failures:
        raise ConformanceError(failures)
    return ConformanceReport(passed)
