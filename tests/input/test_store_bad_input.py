"""Bad input sent to the two stores directly, with no facade in front: the emulator's mirror of a
rule and the SQL function itself are compared.

Each case names where the rule lives: a SQLSTATE when the Postgres store must
pass the input through to the SQL function (the typed error's ``__cause__``
is the psycopg error with that SQLSTATE), or ``PYTHON`` when the input cannot
be sent (a type or an encoding) or the rule is one the SQL function lacks. In
every case both stores raise the same error type and nothing is written,
and where both messages name the failing entry or chunk by its position in
the batch, they name the same one.
"""

import re
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from prism_memory import (
    DimensionMismatchError,
    EntryNotFoundError,
    InvalidAuthorizationError,
    InvalidCursorError,
    InvalidEmbeddingError,
    InvalidEntryError,
    InvalidQueryError,
    InvalidScopeError,
    InvalidScoringError,
    LifecycleOrderError,
    LimitExceededError,
    MemoryConsent,
    PayloadTooLargeError,
    RagAccessConstraint,
    RecallScoringOptions,
    WorkingMemoryValidationError,
)
from prism_memory.errors import SQLSTATE_ERRORS, PrismMemoryError
from prism_memory.types import ConsentChange, EntryRecord, Scope

from rag_calls import BAD_CALLS, chunk

PYTHON = "python"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
NAIVE = datetime(2026, 1, 1, 6, 0)
THREAD = Scope("t1", "user-ada", "thread-1")
ONE = [1.0] + [0.0] * 63


def record(**fields):
    base = {"id": "new", "text": "a new note", "embedding": ONE, "metadata": {}, "sequence": None, "importance": None}
    return EntryRecord(**{**base, **fields})


def remember(**fields):
    return lambda s, w: s.remember(THREAD, [record(**fields)], now=NOW)


def recall(scope=THREAD, embedding=ONE, text="note", top_k=8, message_range=0, **options):
    return lambda s, w: s.recall(scope, embedding, text, top_k, message_range, now=NOW, **options)


def share(ids=("kept",), child=("user-ada", "thread-2"), expires_at=None):
    return lambda s, w: s.share_with(THREAD, *child, list(ids), expires_at, now=NOW)


# (label, call on (vector store, working store), error, where the rule lives)
CASES = [
    # assert_scope_v2 (PM001)
    ("blank tenant", lambda s, w: s.remember(Scope(" ", "r", "t"), [record()], now=NOW), InvalidScopeError, "PM001"),
    ("tenant over 256 bytes", recall(Scope("é" * 129, "r", "t")), InvalidScopeError, "PM001"),
    ("no thread", lambda s, w: s.remember(Scope("t1", "r"), [record()], now=NOW), InvalidScopeError, "PM001"),
    ("blank thread, no records", lambda s, w: s.remember(Scope("t1", "r", "\u3000"), [], now=NOW), InvalidScopeError, "PM001"),
    ("blank resource, working", lambda s, w: w.get_working(Scope("t1", "\t")), InvalidScopeError, "PM001"),
    ("blank child thread", share(child=("user-ada", " ")), InvalidScopeError, "PM001"),
    ("tenant not a string", lambda s, w: s.count_by_thread(Scope(7, "r", "t")), InvalidScopeError, PYTHON),
    ("NUL in resource", recall(Scope("t1", "r\x00", "t")), InvalidScopeError, PYTHON),
    # remember_v2 (PM002, PM003, PM004)
    ("blank id", remember(id=" "), InvalidEntryError, "PM002"),
    ("id over 512 bytes", remember(id="x" * 513), InvalidEntryError, "PM002"),
    ("blank text", remember(text="\u2028 "), InvalidEntryError, "PM002"),
    ("metadata not an object", remember(metadata=[1]), InvalidEntryError, "PM002"),
    ("negative sequence", remember(sequence=-1), InvalidEntryError, "PM002"),
    ("sequence past 2^53", remember(sequence=2**53), InvalidEntryError, "PM002"),
    ("infinite importance", remember(importance=float("inf")), InvalidEntryError, "PM002"),
    ("33 lineage sources", remember(metadata={"_lineage": {"sourceIds": [str(i) for i in range(33)]}}), InvalidEntryError, "PM002"),
    ("blank lineage source", remember(metadata={"_lineage": {"sourceIds": [" "]}}), InvalidEntryError, "PM002"),
    ("unknown consent source", remember(consent=MemoryConsent(source="robot")), InvalidEntryError, "PM002"),
    ("consent before year 1", remember(consent=MemoryConsent(granted_at=datetime(1, 1, 1, tzinfo=timezone.utc))), InvalidEntryError, PYTHON),
    ("second entry blank", lambda s, w: s.remember(THREAD, [record(), record(id="b", text=" ")], now=NOW), InvalidEntryError, "PM002"),
    ("duplicate ids", lambda s, w: s.remember(THREAD, [record(), record()], now=NOW), InvalidEntryError, "PM002"),
    ("zero embedding", remember(embedding=[0.0] * 64), InvalidEmbeddingError, "PM003"),
    ("widths differ in a batch", lambda s, w: s.remember(THREAD, [record(), record(id="b", embedding=[1.0] * 3)], now=NOW), DimensionMismatchError, "PM004"),
    ("wrong width", remember(embedding=[1.0] * 32), DimensionMismatchError, "PM004"),
    ("NUL in text", remember(text="a\x00b"), InvalidEntryError, PYTHON),
    ("lone surrogate in id", remember(id="a\ud800"), InvalidEntryError, PYTHON),
    ("set in metadata", remember(metadata={"s": {1}}), InvalidEntryError, PYTHON),
    ("int metadata key", remember(metadata={1: "a"}), InvalidEntryError, PYTHON),
    ("importance too large for a float", remember(importance=10**400), InvalidEntryError, PYTHON),
    ("naive consent time", remember(consent=MemoryConsent(granted_at=datetime(2026, 1, 1))), InvalidEntryError, PYTHON),
    ("text embedding", remember(embedding="1,2"), InvalidEmbeddingError, PYTHON),
    # recall_v3 and scoring_weights_v1 (PM001, PM003, PM004, PM005, PM006, PM015)
    ("top_k 0", recall(top_k=0), LimitExceededError, "PM005"),
    ("top_k 33", recall(top_k=33), LimitExceededError, "PM005"),
    ("message_range 5", recall(message_range=5), LimitExceededError, "PM005"),
    ("query over 64 KiB", recall(text="q" * 70000), PayloadTooLargeError, "PM006"),
    ("empty query", recall(text=""), InvalidQueryError, "PM008"),
    ("blank query", recall(text=" \t\u3000"), InvalidQueryError, "PM008"),
    # recall_v3 checks the parent thread too (PM001), but after the scoring weights: the stores check it first
    ("blank parent thread", recall(share_from_parent_thread_id=" "), InvalidScopeError, PYTHON),
    ("recency weight 2", recall(scoring=RecallScoringOptions(2.0, half_life_ms=1.0)), InvalidScoringError, "PM015"),
    ("recency without half-life", recall(scoring=RecallScoringOptions(0.5)), InvalidScoringError, "PM015"),
    ("NaN importance weight", recall(scoring=RecallScoringOptions(importance_weight=float("nan"))), InvalidScoringError, "PM015"),
    ("zero query embedding", recall(embedding=[0.0] * 64), InvalidEmbeddingError, "PM003"),
    ("wrong query width", recall(embedding=[1.0] * 65), DimensionMismatchError, "PM004"),
    ("parent thread over 256 bytes", recall(share_from_parent_thread_id="p" * 257), InvalidScopeError, PYTHON),
    ("bool scoring weight", recall(scoring=RecallScoringOptions(True, half_life_ms=1.0)), InvalidScoringError, PYTHON),
    ("explain not a bool", recall(explain="yes"), LimitExceededError, PYTHON),
    ("NUL in query", recall(text="q\x00"), InvalidQueryError, PYTHON),
    # share_with_v1 (PM002, PM005)
    ("share with itself", share(child=("user-ada", "thread-1")), InvalidEntryError, "PM002"),
    ("257 shared ids", share(ids=[str(i) for i in range(257)]), LimitExceededError, "PM005"),
    ("blank shared id", share(ids=[" "]), InvalidEntryError, "PM002"),
    ("expiry in the past", share(expires_at=NOW - timedelta(seconds=1)), LimitExceededError, "PM005"),
    ("naive expiry", share(expires_at=datetime(2030, 1, 1)), InvalidEntryError, PYTHON),
    # lifecycle functions
    ("invalidate no ids", lambda s, w: s.invalidate(THREAD, [], "deleted", now=NOW), LimitExceededError, "PM005"),
    ("invalidate unknown reason", lambda s, w: s.invalidate(THREAD, ["kept"], "bored", now=NOW), InvalidEntryError, "PM002"),
    ("purge 65 ids", lambda s, w: s.purge(THREAD, [str(i) for i in range(65)]), LimitExceededError, "PM005"),
    ("purge before invalidate", lambda s, w: s.purge(THREAD, ["kept"]), LifecycleOrderError, "PM012"),
    ("consent source", lambda s, w: s.set_consent(THREAD, "kept", ConsentChange(source="robot"), now=NOW), InvalidEntryError, "PM002"),
    ("consent on unknown entry", lambda s, w: s.set_consent(THREAD, "nope", ConsentChange(visible=False), now=NOW), EntryNotFoundError, "PM011"),
    ("correct to blank", lambda s, w: s.correct(THREAD, "kept", " ", ONE, now=NOW), InvalidEntryError, "PM002"),
    ("correct unknown entry", lambda s, w: s.correct(THREAD, "nope", "text", ONE, now=NOW), EntryNotFoundError, "PM011"),
    ("retention batch 0", lambda s, w: s.retention_candidates(THREAD, 1.0, None, 0, now=NOW), LimitExceededError, "PM005"),
    ("retention age out of range", lambda s, w: s.retention_candidates(THREAD, 36501.0, None, 8, now=NOW), LimitExceededError, "PM005"),
    ("retention policy out of range", lambda s, w: s.set_retention_policy(THREAD, -1.0, now=NOW), LimitExceededError, "PM005"),
    ("resource sweep flag", lambda s, w: s.invalidate_resource(THREAD, None, 8, expired_only=1), LimitExceededError, PYTHON),
    ("list limit 201", lambda s, w: s.list_by_thread(THREAD, None, 201), LimitExceededError, "PM005"),
    ("reembed pairs differ", lambda s, w: s.reembed(THREAD, ["kept"], [], [ONE]), LimitExceededError, "PM005"),
    # store calls' own arguments, refused in Python on both stores: a naive or non-datetime
    # `now` (Postgres would read it in the session's TimeZone), a NUL (Postgres text cannot hold it), a wrong type
    ("naive now, remember", lambda s, w: s.remember(THREAD, [record()], now=NAIVE), InvalidEntryError, PYTHON),
    ("naive now, remember_batch", lambda s, w: s.remember_batch([(THREAD, [record()])], now=NAIVE), InvalidEntryError, PYTHON),
    ("naive now, recall", lambda s, w: s.recall(THREAD, ONE, "note", 8, 0, now=NAIVE), InvalidEntryError, PYTHON),
    ("naive now, recency scoring", lambda s, w: s.recall(THREAD, ONE, "note", 8, 0, now=NAIVE,
                                                         scoring=RecallScoringOptions(0.5, half_life_ms=1.0)), InvalidEntryError, PYTHON),
    ("naive now, share", lambda s, w: s.share_with(THREAD, "user-ada", "thread-2", ["kept"], now=NAIVE), InvalidEntryError, PYTHON),
    ("naive now, invalidate", lambda s, w: s.invalidate(THREAD, ["kept"], "deleted", now=NAIVE), InvalidEntryError, PYTHON),
    ("naive now, set_consent", lambda s, w: s.set_consent(THREAD, "kept", ConsentChange(visible=False), now=NAIVE), InvalidEntryError, PYTHON),
    ("naive now, correct", lambda s, w: s.correct(THREAD, "kept", "new text", ONE, now=NAIVE), InvalidEntryError, PYTHON),
    ("naive now, retention", lambda s, w: s.retention_candidates(THREAD, 0.0, None, 8, now=NAIVE), InvalidEntryError, PYTHON),
    ("now a string", lambda s, w: s.remember(THREAD, [record()], now="2026-01-01"), InvalidEntryError, PYTHON),
    ("naive consent change", lambda s, w: s.set_consent(THREAD, "kept", ConsentChange(revoked_at=NAIVE), now=NOW), InvalidEntryError, PYTHON),
    ("NUL in invalidated id", lambda s, w: s.invalidate(THREAD, ["kept\x00"], "deleted", now=NOW), InvalidEntryError, PYTHON),
    ("NUL in reason", lambda s, w: s.invalidate(THREAD, ["kept"], "deleted\x00", now=NOW), InvalidEntryError, PYTHON),
    ("NUL in purged id", lambda s, w: s.purge(THREAD, ["kept\x00"]), InvalidEntryError, PYTHON),
    ("purge ids a string", lambda s, w: s.purge(THREAD, "kept"), InvalidEntryError, PYTHON),
    ("NUL in consent entry id", lambda s, w: s.set_consent(THREAD, "kept\x00", ConsentChange(visible=False), now=NOW), InvalidEntryError, PYTHON),
    ("NUL in consent source", lambda s, w: s.set_consent(THREAD, "kept", ConsentChange(source="user\x00"), now=NOW), InvalidEntryError, PYTHON),
    ("NUL in corrected text", lambda s, w: s.correct(THREAD, "kept", "new\x00", ONE, now=NOW), InvalidEntryError, PYTHON),
    ("NUL in corrected id", lambda s, w: s.correct(THREAD, "kept\x00", "new", ONE, now=NOW), InvalidEntryError, PYTHON),
    ("text corrected embedding", lambda s, w: s.correct(THREAD, "kept", "new", "1,2", now=NOW), InvalidEmbeddingError, PYTHON),
    ("NUL in reembedded id", lambda s, w: s.reembed(THREAD, ["kept\x00"], ["a kept note"], [ONE]), InvalidEntryError, PYTHON),
    ("NUL in reembedded text", lambda s, w: s.reembed(THREAD, ["kept"], ["a kept\x00"], [ONE]), InvalidEntryError, PYTHON),
    ("NaN reembedded", lambda s, w: s.reembed(THREAD, ["kept"], ["a kept note"], [[float("nan")] * 64]), InvalidEmbeddingError, PYTHON),
    ("NUL in cursor id", lambda s, w: s.list_by_thread(THREAD, (1, "kept\x00"), 10), InvalidCursorError, PYTHON),
    ("limit a string", lambda s, w: s.list_by_thread(THREAD, None, "10"), LimitExceededError, PYTHON),
    ("retention batch a string", lambda s, w: s.retention_candidates(THREAD, 1.0, None, "8", now=NOW), LimitExceededError, PYTHON),
    ("NUL in counted thread", lambda s, w: s.count_by_thread(Scope("t1", "user-ada", "t\x00")), InvalidScopeError, PYTHON),
    # remember_v2's expiry: both given (PM002, and Python's types), out of range (PM005)
    ("expiry and ttl", lambda s, w: s.remember(THREAD, [EntryRecord("x", "t", ONE, {}, None, None, None, NOW + timedelta(days=1),
                                                                    timedelta(days=1))], now=NOW), InvalidEntryError, PYTHON),
    ("naive expiry", lambda s, w: s.remember(THREAD, [EntryRecord("x", "t", ONE, {}, None, None, None, datetime(2030, 1, 1))],
                                            now=NOW), InvalidEntryError, PYTHON),
    ("expiry in the past", lambda s, w: s.remember(THREAD, [EntryRecord("x", "t", ONE, {}, None, None, None, NOW)], now=NOW),
     LimitExceededError, "PM005"),
    ("ttl of 0", lambda s, w: s.remember(THREAD, [EntryRecord("x", "t", ONE, {}, None, None, None, None, timedelta(0))], now=NOW),
     LimitExceededError, "PM005"),
    ("ttl over 100 years", lambda s, w: s.remember(THREAD, [EntryRecord("x", "t", ONE, {}, None, None, None, None,
                                                                         timedelta(days=36501))], now=NOW), LimitExceededError, "PM005"),
    # update_working_v1 (PM005, PM007)
    ("working not an object", lambda s, w: w.update_working(THREAD, [1], None), WorkingMemoryValidationError, "PM007"),
    ("negative expected version", lambda s, w: w.update_working(THREAD, {"a": 1}, -1), LimitExceededError, "PM005"),
    ("NaN in working memory", lambda s, w: w.update_working(THREAD, {"a": float("nan")}, None), WorkingMemoryValidationError, PYTHON),
]

#: Where each rule of test_rag.py's bad RAG calls lives (the SQLSTATE the Postgres store passes through).
RAG_RULES = {
    "blank tenant": "PM001", "blank scope": "PM001", "scope not a string": PYTHON, "blank id": "PM002",
    "blank source": "PM002", "blank text": "PM002", "NUL in text": PYTHON, "lone surrogate": PYTHON,
    "metadata not an object": "PM002", "metadata NaN": PYTHON, "duplicate ids": "PM002",
    "negative access version": "PM002", "too big": "PM006", "too many": "PM005", "NaN embedding": PYTHON,
    "zero embedding": "PM003", "text embedding": PYTHON, "dict embedding": PYTHON, "2-D embedding": PYTHON,
    "huge int in embedding": PYTHON, "wrong width write": "PM004", "wrong width query": "PM004",
    "negative generation": "PM002", "bool generation": PYTHON, "top_k 0": "PM005", "top_k 33": "PM005",
    "filter not an object": "PM008", "filter with a set": PYTHON, "filter operator unknown": "PM019",
    "filter $in empty": "PM019", "filter over 16 KiB": "PM019", "query text not str": PYTHON,
    "query too long": "PM006", "authorization a string": PYTHON, "blank principal": "PM013",
    "blank group": "PM013", "groups a string": PYTHON, "grant version bool": PYTHON, "grant blank id": "PM013",
    "too many grants": "PM005", "delete without criteria": "PM002", "get_by_source limit": "PM005",
    "check without reader": "PM013",
}
RAG_CASES = [(name, lambda s, w, call=call: call(s), error, RAG_RULES[name]) for name, call, error in BAD_CALLS]
RAG_CASES += [
    ("rag blank after_id", lambda s, w: s.get_by_source("t1", "kb", "s1", after_id=" "), InvalidEntryError, PYTHON),
    ("rag blank delete id", lambda s, w: s.delete("t1", "kb", ids=[" "]), InvalidEntryError, PYTHON),
    ("rag negative checked version", lambda s, w: s.check_source_access("t1", "s1", RagAccessConstraint("ada"), access_version=-1), InvalidEntryError, PYTHON),
    ("rag second chunk blank", lambda s, w: s.upsert("t1", "kb", [chunk(), chunk(id="c2", source_id=" ")]), InvalidEntryError, "PM002"),
    ("rag empty upsert, blank scope", lambda s, w: s.upsert("t1", " ", []), InvalidScopeError, "PM001"),
    ("rag 1025 groups", lambda s, w: s.query("t1", "kb", ONE, authorization=RagAccessConstraint("a", tuple(map(str, range(1025))))), InvalidAuthorizationError, "PM013"),
    ("rag filter over 64 KiB", lambda s, w: s.query("t1", "kb", ONE, filter={"k": "v" * 70000}), PayloadTooLargeError, "PM006"),
]


#: "entry 2", "chunk 1": a batch position, as remember_v2 / rag_upsert_v1 and the emulator word it.
POSITION = re.compile(r"\b(entry|chunk) (\d+)\b")


async def _state(store, working):
    """What the stores hold for the default thread and RAG scope."""
    rows = await store.list_by_thread(THREAD, None, 200)
    record_ = await working.get_working(THREAD)
    chunks = await store.get_by_source("t1", "kb", "s1")
    return [(row.id, row.text, row.sequence) for row in rows], record_ and (record_.version, record_.data), [c.id for c in chunks]


async def _raised(backend, call):
    store, working = backend.vector_store, backend.working_store
    await store.remember(THREAD, [record(id="kept", text="a kept note")], now=NOW)
    await working.update_working(THREAD, {"name": "Ada"}, None)
    await store.upsert("t1", "kb", [chunk(id="kept", text="kept text")])
    before = await _state(store, working)
    try:
        await call(store, working)
    except Exception as exc:  # compared across backends below
        raised = exc
    else:
        raised = None
    assert await _state(store, working) == before, "bad input changed stored data"
    return raised


@pytest.mark.parametrize(("label", "call", "error", "rule"), CASES + RAG_CASES, ids=[c[0] for c in CASES + RAG_CASES])
async def test_bad_input_to_the_stores_raises_the_same_type_from_sql_and_from_the_emulator(backends, label, call, error, rule):
    emulated = await _raised(backends.emulator, call)
    postgres = await _raised(backends.postgres, call)
    assert type(emulated) is error and type(postgres) is error, (emulated, postgres)
    assert isinstance(postgres, PrismMemoryError)
    positions = [POSITION.search(str(exc)) for exc in (emulated, postgres)]
    if all(positions):
        assert positions[0].groups() == positions[1].groups(), (str(emulated), str(postgres))
    cause = postgres.__cause__
    if rule == PYTHON:  # refused before anything was sent
        assert not isinstance(cause, psycopg.Error), cause
    else:  # the SQL function raised it: its SQLSTATE maps to the type the emulator raised
        assert isinstance(cause, psycopg.Error) and cause.sqlstate == rule, (cause, rule)
        assert SQLSTATE_ERRORS[rule] in type(postgres).__mro__
