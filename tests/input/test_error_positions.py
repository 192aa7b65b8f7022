"""One convention for where an error is, on both backends and in the facade.

A batch item is named by its 1-based position and, once its id is usable, the id: ``entry 2 (b)``,
``chunk 2 (c2)``; a field follows after a colon (``entry 2 (b): embedding[0] is not finite``). A
query's vector is ``the query embedding``. The SQL functions word their positions the same way.
"""

import pytest
from prism_memory import InvalidEmbeddingError, InvalidEntryError, RagChunk, create_hash_embedder
from prism_memory.types import EntryRecord, Scope

THREAD = Scope("t1", "user-ada", "thread-1")
ONE = [1.0] + [0.0] * 63
NAN = [float("nan")] + [0.0] * 63


class PoisonEmbedder:
    """The hash embedder, except that a text containing "poison" gets a NaN in its first component."""

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self._inner = create_hash_embedder(dimensions)

    async def embed(self, texts):
        return [NAN if "poison" in text else self._inner.embed_one(text) for text in texts]


def entry(entry_id, text="a note", embedding=ONE):
    return EntryRecord(entry_id, text, embedding, {}, None, None)


STORE_CALLS = [
    (lambda s: s.remember(THREAD, [entry("a"), entry("b", embedding=NAN)]),
     InvalidEmbeddingError, "entry 2 (b): embedding[0] is not finite"),
    (lambda s: s.remember(THREAD, [entry("a"), entry("b", embedding="x")]),
     InvalidEmbeddingError, "entry 2 (b): embedding must be a sequence of numbers"),
    (lambda s: s.remember(THREAD, [entry("a"), entry("b\x00")]), InvalidEntryError, "entry 2: id contains a NUL"),
    (lambda s: s.remember(THREAD, [entry("a"), EntryRecord("b", "t", ONE, {"k": {1}}, None, None)]),
     InvalidEntryError, "entry 2 (b): metadata holds a set"),
    (lambda s: s.remember_batch([(THREAD, [entry("a"), entry("b", embedding=NAN)])]),
     InvalidEmbeddingError, "entry 2 (b): embedding[0] is not finite"),
    (lambda s: s.recall(THREAD, NAN, "note", 4, 0), InvalidEmbeddingError, "the query embedding[0] is not finite"),
    (lambda s: s.reembed(THREAD, ["a", "b"], ["x", "y"], [ONE, NAN]),
     InvalidEmbeddingError, "entry 2 (b): embedding[0] is not finite"),
    (lambda s: s.upsert("t1", "kb", [RagChunk("c1", "s1", "text", ONE), RagChunk("c2", "s1", "text", NAN)]),
     InvalidEmbeddingError, "chunk 2 (c2): embedding[0] is not finite"),
    (lambda s: s.upsert("t1", "kb", [RagChunk("c1", "s1", "text", ONE), RagChunk("c2", 7, "text", ONE)]),
     InvalidEntryError, "chunk 2 (c2): source_id must be a string"),
    (lambda s: s.query("t1", "kb", NAN), InvalidEmbeddingError, "the query embedding[0] is not finite"),
]


@pytest.mark.parametrize(("call", "error", "message"), STORE_CALLS, ids=[case[2] for case in STORE_CALLS])
async def test_store_errors_name_the_position_the_same_way_on_both_backends(backends, call, error, message):
    for backend in backends.each:
        with pytest.raises(error) as raised:
            await call(backend.vector_store)
        assert str(raised.value).startswith(message), (backend.name, str(raised.value))


async def test_facade_errors_name_the_position_the_same_way_on_both_backends(backends):
    for backend in backends.each:
        memory = backend.memory(embedder=PoisonEmbedder(64), secrets=["s3cret"])  # redaction active
        with pytest.raises(InvalidEmbeddingError, match=r"^entry 2 \(b\): embedding\[0\] is not finite"):
            await memory.remember([{"id": "a", "text": "fine"}, {"id": "b", "text": "poison"}], wait=True)
        with pytest.raises(InvalidEmbeddingError, match=r"^the query embedding\[0\] is not finite"):
            await memory.recall("poison")
        with pytest.raises(InvalidEntryError, match=r"^entry 2 \(b\): metadata holds a set"):
            await memory.remember([{"id": "a", "text": "fine"}, {"id": "b", "text": "t", "metadata": {"k": {1}}}])
        await memory.remember([{"id": "a", "text": "fine"}], wait=True)
        with pytest.raises(InvalidEmbeddingError, match=r"^entry 1 \(a\): embedding\[0\] is not finite"):
            await memory.correct("a", "poison")
