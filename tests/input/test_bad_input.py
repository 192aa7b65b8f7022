"""Bad input through the facade: a typed error before anything is written, on both backends, and stored data unchanged.

The facade checks types, encodings and the per-memory limits before it embeds; the same bad input sent to
the stores directly, where the SQL functions and the emulator's mirror of them are compared, is in
tests/input/test_store_bad_input.py.
"""

import asyncio
import math

import pytest
from prism_memory import (
    DimensionMismatchError,
    EmbeddingFailedError,
    InvalidEmbeddingError,
    InvalidEntryError,
    InvalidQueryError,
    InvalidScopeError,
    LimitExceededError,
    MemoryLimits,
    PayloadTooLargeError,
    WorkingMemoryValidationError,
    create_hash_embedder,
)

from parity import Raised


class FixedEmbedder:
    """Returns the same (possibly bad) vector for every text; with ``None``, raises like a broken model."""

    def __init__(self, vector, dimensions):
        self.vector = vector
        self.dimensions = dimensions

    async def embed(self, texts):
        if self.vector is None:
            raise RuntimeError("model server unavailable")
        return [list(self.vector) for _ in texts]


SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

# (label, memory options, operation on the memory, expected error)
CASES = [
    ("nan embedding", {"embedder": FixedEmbedder([math.nan] + [1.0] * 63, 64)}, "remember", InvalidEmbeddingError),
    ("infinite embedding", {"embedder": FixedEmbedder([math.inf] + [1.0] * 63, 64)}, "remember", InvalidEmbeddingError),
    ("non-number embedding", {"embedder": FixedEmbedder(["x"] + [1.0] * 63, 64)}, "remember", InvalidEmbeddingError),
    ("zero embedding", {"embedder": FixedEmbedder([0.0] * 64, 64)}, "remember", InvalidEmbeddingError),
    ("short embedding", {"embedder": FixedEmbedder([1.0] * 8, 64)}, "remember", DimensionMismatchError),
    ("wrong embedder width", {"embedder": create_hash_embedder(32)}, "remember", DimensionMismatchError),
    ("wrong width at recall", {"embedder": create_hash_embedder(32)}, "recall", DimensionMismatchError),
    ("empty text", {}, "remember_empty", InvalidEntryError),
    ("whitespace text", {}, "remember_blank", InvalidEntryError),
    ("duplicate ids", {}, "remember_duplicate", InvalidEntryError),
    ("nul in text", {}, "remember_nul", InvalidEntryError),
    ("lone surrogate", {}, "remember_surrogate", InvalidEntryError),
    ("non-object metadata", {}, "remember_list_metadata", InvalidEntryError),
    ("non-finite importance", {}, "remember_nan_importance", InvalidEntryError),
    ("oversized entry", {"limits": MemoryLimits(entry_bytes=64)}, "remember_big", PayloadTooLargeError),
    ("too many entries", {"limits": MemoryLimits(remember_entries=2)}, "remember_three", LimitExceededError),
    ("missing thread", {"thread_id": None}, "remember", InvalidScopeError),
    ("missing thread at recall", {"thread_id": None}, "recall", InvalidScopeError),
    ("top_k over cap", {}, "recall_top_k_33", LimitExceededError),
    ("top_k zero", {}, "recall_top_k_0", LimitExceededError),
    ("top_k not an int", {}, "recall_top_k_float", LimitExceededError),
    ("message_range over cap", {}, "recall_range_5", LimitExceededError),
    ("negative message_range", {}, "recall_range_negative", LimitExceededError),
    ("blank query", {}, "recall_blank", InvalidQueryError),
    ("oversized query", {"limits": MemoryLimits(query_bytes=16)}, "recall_long", PayloadTooLargeError),
    ("schema failure", {"schema": SCHEMA}, "working_no_name", WorkingMemoryValidationError),
    ("nul in working memory", {}, "working_nul", WorkingMemoryValidationError),
    ("non-string working memory key", {}, "working_int_key", WorkingMemoryValidationError),
    ("nul in metadata value", {}, "remember_nul_metadata", InvalidEntryError),
    ("nul in metadata key", {}, "remember_nul_key", InvalidEntryError),
    ("non-string metadata key", {}, "remember_int_key", InvalidEntryError),
    ("metadata nested too deep", {}, "remember_deep_metadata", InvalidEntryError),
    ("non-JSON metadata value", {}, "remember_set_metadata", InvalidEntryError),
    ("importance too large for a float", {}, "remember_huge_importance", InvalidEntryError),
    ("negative sequence", {}, "remember_negative_sequence", InvalidEntryError),
    ("sequence past 2^53", {}, "remember_huge_sequence", InvalidEntryError),
    ("embedding wider than pgvector allows", {"embedder": FixedEmbedder([1.0] * 16001, 16001)}, "remember", InvalidEmbeddingError),
    ("embedding norm underflows float32", {"embedder": FixedEmbedder([1e-20] * 64, 64)}, "remember", InvalidEmbeddingError),
    ("embedding norm overflows float32", {"embedder": FixedEmbedder([1e19] * 64, 64)}, "remember", InvalidEmbeddingError),
    ("embedder raises", {"embedder": FixedEmbedder(None, 64)}, "remember", EmbeddingFailedError),
    ("nul in query", {}, "recall_nul", InvalidQueryError),
    # A flag of another type than bool is a LimitExceededError wherever it is given.
    ("require_consent not a bool", {"require_consent": "yes"}, "recall", LimitExceededError),
    ("require_consent not a bool at recall", {}, "recall_require_consent_int", LimitExceededError),
    ("explain not a bool", {}, "recall_explain_int", LimitExceededError),
    ("across_threads not a bool", {}, "recall_across_string", LimitExceededError),
    ("hold not a bool", {}, "forget_hold_int", LimitExceededError),
    ("resource_wide not a bool", {}, "retention_resource_wide_int", LimitExceededError),
    ("provider across_threads not a bool", {}, "provider_across_int", LimitExceededError),
]

OPERATIONS = {
    "remember": lambda m: m.remember([{"id": "new", "text": "a new note"}], wait=True),
    "recall": lambda m: m.recall("note"),
    "remember_empty": lambda m: m.remember([{"id": "ok", "text": "fine"}, {"id": "new", "text": ""}], wait=True),
    "remember_blank": lambda m: m.remember([{"id": "new", "text": " \n\t "}], wait=True),
    "remember_duplicate": lambda m: m.remember([{"id": "d", "text": "one"}, {"id": "d", "text": "two"}], wait=True),
    "remember_nul": lambda m: m.remember([{"id": "new", "text": "bad\x00text"}], wait=True),
    "remember_surrogate": lambda m: m.remember([{"id": "new", "text": "bad \ud800 text"}], wait=True),
    "remember_list_metadata": lambda m: m.remember([{"id": "new", "text": "t", "metadata": [1]}], wait=True),
    "remember_nan_importance": lambda m: m.remember([{"id": "new", "text": "t", "importance": math.nan}], wait=True),
    "remember_big": lambda m: m.remember([{"id": "new", "text": "x" * 65}], wait=True),
    "remember_three": lambda m: m.remember([{"id": str(i), "text": "t"} for i in range(3)], wait=True),
    "recall_top_k_33": lambda m: m.recall("note", top_k=33),
    "recall_top_k_0": lambda m: m.recall("note", top_k=0),
    "recall_top_k_float": lambda m: m.recall("note", top_k=2.5),
    "recall_range_5": lambda m: m.recall("note", message_range=5),
    "recall_range_negative": lambda m: m.recall("note", message_range=-1),
    "recall_blank": lambda m: m.recall("   "),
    "recall_long": lambda m: m.recall("a much longer query than sixteen bytes"),
    "working_no_name": lambda m: m.update_working({"nick": "A"}),
    "working_nul": lambda m: m.update_working({"name": "A\x00da"}),
    "working_int_key": lambda m: m.update_working({"name": "Ada", 1: "one"}),
    "remember_nul_metadata": lambda m: m.remember([{"id": "new", "text": "t", "metadata": {"k": ["a\x00"]}}], wait=True),
    "remember_nul_key": lambda m: m.remember([{"id": "new", "text": "t", "metadata": {"k\x00": 1}}], wait=True),
    "remember_int_key": lambda m: m.remember([{"id": "new", "text": "t", "metadata": {1: "a"}}], wait=True),
    "remember_deep_metadata": lambda m: m.remember([{"id": "new", "text": "t", "metadata": nested(100)}], wait=True),
    "remember_set_metadata": lambda m: m.remember([{"id": "new", "text": "t", "metadata": {"s": {1, 2}}}], wait=True),
    "remember_huge_importance": lambda m: m.remember([{"id": "new", "text": "t", "importance": 10**400}], wait=True),
    "remember_negative_sequence": lambda m: m.remember([{"id": "new", "text": "t", "sequence": -1}], wait=True),
    "remember_huge_sequence": lambda m: m.remember([{"id": "new", "text": "t", "sequence": 2**53}], wait=True),
    "recall_nul": lambda m: m.recall("note\x00"),
    "recall_require_consent_int": lambda m: m.recall("note", require_consent=1),
    "recall_explain_int": lambda m: m.recall("note", explain=1),
    "recall_across_string": lambda m: m.recall("note", across_threads="yes"),
    "forget_hold_int": lambda m: m.forget(["kept"], hold=1),
    "retention_resource_wide_int": lambda m: m.set_retention_policy(30, resource_wide=1),
    "provider_across_int": lambda m: asyncio.to_thread(m.create_context_provider, across_threads=1),
}


def nested(depth):
    value = {"leaf": 1}
    for _ in range(depth):
        value = {"d": value}
    return value


async def snapshot(backend):
    """Everything stored for the default scope: recall of all entries and the working memory."""
    memory = backend.memory()
    result = await memory.recall("note", top_k=32)
    working = await memory.get_working()
    return sorted((hit.id, hit.text, hit.sequence) for hit in result.hits), None if working is None else (working.version, working.data)


@pytest.mark.parametrize(("label", "options", "operation", "error"), CASES, ids=[case[0] for case in CASES])
async def test_bad_input_raises_typed_error_and_changes_nothing(backends, label, options, operation, error):
    async def scenario(backend):
        seeded = backend.memory()
        await seeded.remember([{"id": "kept", "text": "a kept note"}], wait=True)
        await seeded.update_working({"name": "Ada"})
        before = await snapshot(backend)
        try:
            await OPERATIONS[operation](backend.memory(**options))
        except Exception as exc:
            raised = type(exc)
        else:
            raised = None
        return raised, before == await snapshot(backend), before

    outcome = await backends.run(scenario)
    assert not isinstance(outcome, Raised), outcome
    raised, unchanged, before = outcome
    assert raised is error
    assert unchanged is True
    assert before == [[["kept", "a kept note", 1]], [1, {"name": "Ada"}]]


async def test_background_failure_writes_nothing_and_flush_raises(backends):
    async def scenario(backend):
        memory = backend.memory(embedder=FixedEmbedder([0.0] * 64, 64))
        started = await memory.remember([{"id": "z", "text": "zero"}])
        try:
            await memory.flush()
        except InvalidEmbeddingError:
            failed = True
        else:
            failed = False
        return started.accepted, failed, await snapshot(backend)

    accepted, failed, state = await backends.run(scenario)
    assert (accepted, failed) == (1, True)
    assert state == [[], None]


async def test_sql_functions_enforce_the_same_rules_for_direct_callers(pg_dsn):
    """A psql caller gets the same checks: scope, caps and embeddings are validated inside SQL."""
    import psycopg
    from prism_memory.errors import SQLSTATE_ERRORS

    calls = {
        "PM001": "select prism_memory.recall_v3('', 'r', 't', '[1,0]'::vector)",
        "PM005": "select prism_memory.recall_v3('t', 'r', 't', '[1,0]'::vector, 'q', 99)",
        "PM003": "select prism_memory.remember_v3('t', 'r', 't', array['a'], array['x'], array[array_fill(0::real, array[64])::vector])",
        "PM004": "select prism_memory.remember_v3('t', 'r', 't', array['a'], array['x'], array['[1,2]'::vector])",
        "PM002": "select prism_memory.remember_v3('t', 'r', 't', array['a', 'a'], array['x', 'y'], array[array_fill(1::real, array[64])::vector, array_fill(1::real, array[64])::vector])",
    }
    more = [
        ("PM001", "select * from prism_memory.get_working_v1(E'\\t', 'r')"),
        ("PM001", "select prism_memory.recall_v3('t', E'\\u3000', 't', '[1,0]'::vector)"),
        ("PM002", "select prism_memory.remember_v3('t', 'r', 't', array['a'], array[E'\\t\\n'], array[array_fill(1::real, array[64])::vector])"),
        ("PM002", "select prism_memory.remember_v3('t', 'r', 't', array['a'], array['x'], array[array_fill(1::real, array[64])::vector], p_sequences => array[-1::bigint])"),
        ("PM003", "select prism_memory.remember_v3('t', 'r', 't', array['a'], array['x'], array[array_fill(1e-20::real, array[64])::vector])"),
        ("PM003", "select prism_memory.recall_v3('t', 'r', 't', array_fill(1e19::real, array[64])::vector, 'q')"),
        ("PM008", "select prism_memory.recall_v3('t', 'r', 't', array_fill(1::real, array[64])::vector)"),
        ("PM008", "select prism_memory.recall_v3('t', 'r', 't', array_fill(1::real, array[64])::vector, E' \\t')"),
        ("PM008", "select prism_memory.recall_v3('t', 'r', 't', array_fill(1::real, array[64])::vector, null)"),
        ("PM005", "select * from prism_memory.update_working_v1('t', 'r', null, '{}', p_expected_version => -1)"),
        ("PM006", "select prism_memory.recall_v3('t', 'r', 't', array_fill(1::real, array[64])::vector, repeat('q', 70000))"),
        ("PM007", "select * from prism_memory.update_working_v1('t', 'r', null, '[1]')"),
        ("PM001", "select prism_memory.recall_v3('t', 'r', 't', array_fill(1::real, array[64])::vector, 'q', "
                  "p_share_parent_thread_id => repeat('p', 257))"),
        ("PM001", "select prism_memory.remember_batch_v2(repeat('t', 257), array['r'], array['t'], array['a'], "
                  "array['x'], array[array_fill(1::real, array[64])::vector])"),
    ]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for state, statement in [*calls.items(), *more]:
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(statement)
            assert caught.value.sqlstate == state, (state, caught.value)
            assert state in SQLSTATE_ERRORS
        assert conn.execute("select count(*) from prism_memory.semantic_memory").fetchone()[0] == 0
