"""Property test: random lifecycle sequences on both backends against an independent model.

After every step the emulator and Postgres must give the same recall and export, and
both must equal the model: recall returns exactly the live entries, export exactly the
live, explicitly consented ones. Live = stored, not revoked, not invisible, not held,
and not invalidated through lineage (revoke, forget, hold, correct, retention of a
source, transitively, and sources already invalid when an entry is written).
"""

import asyncio
import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prism_memory import EntryNotFoundError, MemoryConsent

from conftest import TEST_CONFIG
from parity import Backends, assert_same, normalise

IDS = ["a", "b", "c", "d"]
WORDS = ["apple", "river", "stone", "cloud", "maple", "ember"]

remember = st.tuples(
    st.just("remember"),
    st.sampled_from(IDS),
    st.sampled_from(WORDS),
    st.sampled_from([None, "visible", "invisible", "revoked"]),
    st.lists(st.sampled_from(IDS), max_size=2, unique=True),
)
operation = st.one_of(
    remember,
    remember,
    st.tuples(st.just("revoke"), st.sampled_from(IDS)),
    st.tuples(st.just("grant"), st.sampled_from(IDS)),
    st.tuples(st.just("correct"), st.sampled_from(IDS), st.sampled_from(WORDS)),
    st.tuples(st.just("forget"), st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True), st.booleans()),
    st.tuples(st.just("retention"), st.integers(min_value=0, max_value=6)),
)


class Model:
    """The rules of the seed's "Consent + lifecycle", written independently of both stores."""

    def __init__(self):
        self.entries: dict[str, dict] = {}
        self.tombstoned: set[str] = set()
        self.retired: dict[str, int] = {}  # sequences of deleted entries: never handed out again

    def invalid_source(self, source):
        entry = self.entries.get(source)
        return source in self.tombstoned or (
            entry is not None and (entry["revoked"] or entry["invisible"] or entry["held"])
        )

    def dependents(self, roots):
        found, frontier = set(), list(roots)
        while frontier:
            current = frontier.pop()
            for entry_id, entry in self.entries.items():
                if current in entry["sources"] and entry_id != current and entry_id not in found:
                    found.add(entry_id)
                    frontier.append(entry_id)
        return found

    def rederive(self, entry_id):
        entry = self.entries[entry_id]
        if any(source != entry_id and self.invalid_source(source) for source in entry["sources"]):
            self.tombstoned.add(entry_id)

    def invalidate(self, ids, itself=True):
        self.tombstoned |= self.dependents(ids) | ({i for i in ids if i in self.entries} if itself else set())

    def apply(self, op):
        kind = op[0]
        if kind == "remember":
            _, entry_id, _, consent, sources = op
            old = self.entries.get(entry_id)
            entry = {
                "sources": [s for s in sources],
                "held": old["held"] if old else False,
                "sequence": old["sequence"] if old else max(
                    [0, *(e["sequence"] for e in self.entries.values()), *self.retired.values()]) + 1,
            }
            self.retired.pop(entry_id, None)
            if consent is None:
                entry.update({key: old[key] if old else False for key in ("revoked", "invisible", "explicit")})
            else:
                entry.update(revoked=consent == "revoked", invisible=consent == "invisible", explicit=True)
            self.entries[entry_id] = entry
            self.tombstoned.discard(entry_id)
            self.rederive(entry_id)
            if entry_id in self.tombstoned or entry["revoked"] or entry["invisible"] or entry["held"]:
                self.invalidate([entry_id])  # an entry written invalid takes its dependents with it
        elif kind in ("revoke", "grant", "correct") and op[1] not in self.entries:
            return
        elif kind == "revoke":
            self.invalidate([op[1]])
            self.entries[op[1]].update(revoked=True, invisible=True, explicit=True)
        elif kind == "grant":
            self.tombstoned.discard(op[1])
            self.entries[op[1]].update(revoked=False, invisible=False, explicit=True)
            self.rederive(op[1])
        elif kind == "correct":
            self.invalidate([op[1]], itself=False)
        elif kind == "forget":
            _, ids, hold = op
            self.invalidate(ids)
            for entry_id in ids:
                if entry_id in self.entries:
                    if hold:
                        self.entries[entry_id]["held"] = True
                    elif not self.entries[entry_id]["held"]:
                        self.retired[entry_id] = self.entries.pop(entry_id)["sequence"]
        elif kind == "retention":
            ordered = sorted(self.entries, key=lambda i: (self.entries[i]["sequence"], i))
            expired = [i for i in ordered[: max(0, len(ordered) - op[1])] if not self.entries[i]["held"]]
            if expired:
                self.invalidate(expired)
                for entry_id in expired:
                    self.retired[entry_id] = self.entries.pop(entry_id)["sequence"]

    def live(self):
        return {
            entry_id
            for entry_id, entry in self.entries.items()
            if entry_id not in self.tombstoned and not (entry["revoked"] or entry["invisible"] or entry["held"])
        }

    def exportable(self):
        live = self.live()
        return sorted((e["sequence"], i) for i, e in self.entries.items() if i in live and e["explicit"])


CONSENT = {
    None: None,
    "visible": MemoryConsent(),
    "invisible": MemoryConsent(visible=False),
    "revoked": MemoryConsent(revoked_at=__import__("datetime").datetime(2026, 1, 1, tzinfo=__import__("datetime").timezone.utc)),
}


async def run_op(memory, op):
    kind = op[0]
    try:
        if kind == "remember":
            _, entry_id, word, consent, sources = op
            entry = {"id": entry_id, "text": f"{word} note {entry_id}", "consent": CONSENT[consent]}
            if sources:
                entry["lineage"] = {"source_ids": sources}
            return (await memory.remember([entry], wait=True)).accepted
        if kind == "revoke":
            return (await memory.set_consent(op[1], visible=False)).id
        if kind == "grant":
            return (await memory.set_consent(op[1], visible=True)).id
        if kind == "correct":
            return (await memory.correct(op[1], f"{op[2]} corrected {op[1]}")).text
        if kind == "forget":
            return await memory.forget(op[1], hold=op[2])
        return await memory.apply_retention(max_entries=op[1])
    except EntryNotFoundError:
        return "not found"


async def observe(memory):
    recalled = await memory.recall("note corrected apple river stone cloud maple ember", top_k=32, message_range=4)
    exported = await memory.export_memory(memory.config.scope, limit=200)
    return recalled, [(record.sequence, record.id) for record in exported.entries]


async def check_sequence(dsn, ops):
    thread = f"prop-{uuid.uuid4().hex[:12]}"
    model = Model()
    async with Backends(dsn, TEST_CONFIG) as backends:
        memories = [backend.memory(thread_id=thread) for backend in backends.each]
        for step, op in enumerate(ops):
            outcomes = [normalise(await run_op(memory, op)) for memory in memories]
            assert_same(outcomes[0], outcomes[1], f"step {step} {op}")
            model.apply(op)
            views = [await observe(memory) for memory in memories]
            assert_same(normalise(views[0]), normalise(views[1]), f"after step {step} {op}")
            recalled, exported = views[0]
            assert {hit.id for hit in recalled.hits} == model.live(), f"recall after step {step} {op}"
            assert recalled.adjacent == []  # every live entry is already a hit
            assert exported == model.exportable(), f"export after step {step} {op}"


# derandomize: CI must replay the same 150 sequences (a landing cannot hinge on a
# lucky draw); widen the search by hand with max_examples=500 and derandomize=False.
@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operation, min_size=1, max_size=16))
# Granting an entry whose source is still invalid keeps it invalid.
@example(ops=[("remember", "a", "apple", "visible", []), ("remember", "b", "river", None, ["a"]),
              ("revoke", "a"), ("grant", "b")])
# A fact written after its source was put under hold is invalid from the start; the hold survives a re-write.
@example(ops=[("remember", "a", "apple", "visible", []), ("forget", ["a"], True), ("remember", "c", "stone", None, ["a"]),
              ("remember", "a", "maple", "visible", []), ("grant", "c")])
# Re-writing a source as invisible invalidates what was derived from it.
@example(ops=[("remember", "a", "apple", None, []), ("remember", "b", "apple", None, ["a"]),
              ("remember", "a", "apple", "invisible", [])])
# In one thread, a fact derived from a fact derived from a revoked entry is invalid too.
@example(ops=[("remember", "a", "apple", "revoked", []), ("remember", "b", "river", None, ["a"]),
              ("remember", "c", "stone", None, ["b"])])
# A deleted entry's sequence is not handed out again.
@example(ops=[("remember", "a", "apple", None, []), ("remember", "b", "river", "visible", []),
              ("forget", ["b"], False), ("remember", "c", "stone", "visible", [])])
# Lineage cycles and self-references terminate; forgetting one end invalidates the other.
@example(ops=[("remember", "a", "apple", None, ["b", "a"]), ("remember", "b", "river", None, ["a"]),
              ("forget", ["a"], False), ("retention", 0)])
# Correcting an entry in a lineage cycle invalidates its dependent, which is also one of its own sources.
@example(ops=[("remember", "a", "apple", None, []), ("remember", "c", "apple", None, ["a"]),
              ("remember", "a", "apple", None, ["a", "c"]), ("correct", "a", "apple")])
@pytest.mark.slow
def test_random_lifecycles_match_the_model_on_both_backends(pg_dsn, ops):
    asyncio.run(check_sequence(pg_dsn, ops))
