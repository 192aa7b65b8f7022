"""Property test: random grants, revokes, access-version changes, writes and reads on both backends.

After every step ``query``, ``lexical_query`` and ``get_by_source`` under ACL must return
exactly the chunks an independent model says the reader may read (never more, and,
with top_k above the number of chunks, never fewer), and both backends must agree.
"""

import asyncio
import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prism_memory import (
    AccessVersionConflict,
    RagAccessConstraint,
    RagChunk,
    create_hash_embedder,
    create_memory_vector_store,
    create_postgres_vector_store,
)

from parity import assert_same, normalise

SOURCES = ["s0", "s1", "s2"]
CHUNKS = ["c0", "c1", "c2", "c3", "c4"]
WORDS = ["apple", "river", "stone", "cloud", "maple"]
READERS = [
    RagAccessConstraint("ada"),
    RagAccessConstraint("ada", ("g1",)),
    RagAccessConstraint("bob", ("g2",)),
    RagAccessConstraint("bob", ("g1", "g2")),
    RagAccessConstraint("eve"),
]

operation = st.one_of(
    st.tuples(
        st.just("grant"),
        st.sampled_from(SOURCES),
        st.lists(st.sampled_from(["ada", "bob"]), unique=True),
        st.lists(st.sampled_from(["g1", "g2"]), unique=True),
        st.sampled_from([0, 1, 2, 3]),  # absolute versions: lower than the stored one is a stale update
    ),
    st.tuples(
        st.just("upsert"),
        st.sampled_from(CHUNKS),
        st.sampled_from(SOURCES),
        st.sampled_from([None, 0, 1, 2, 3]),
        st.sampled_from(WORDS),
    ),
    st.tuples(st.just("delete"), st.sampled_from(CHUNKS)),
)


class Model:
    """Document ACL as the seed states it, written independently of both stores."""

    def __init__(self):
        self.acl: dict[str, tuple[int, set[tuple[str, str]]]] = {}
        self.chunks: dict[str, tuple[str, int | None]] = {}

    def apply(self, op):
        if op[0] == "grant":
            _, source, principals, groups, version = op
            if source in self.acl and version < self.acl[source][0]:
                return "conflict"
            self.acl[source] = (version, {("principal", p) for p in principals} | {("group", g) for g in groups})
            return len(principals) + len(groups)
        if op[0] == "upsert":
            _, chunk_id, source, access_version, _ = op
            self.chunks[chunk_id] = (source, access_version)
            return 1
        return int(self.chunks.pop(op[1], None) is not None)

    def readable(self, reader):
        allowed = set()
        for chunk_id, (source, access_version) in self.chunks.items():
            version, grants = self.acl.get(source, (0, set()))
            holder = ("principal", reader.principal_id) in grants or any(("group", g) in grants for g in reader.group_ids)
            if holder and version >= (access_version or 0):
                allowed.add(chunk_id)
        return allowed


async def run_op(store, tenant, embedder, op):
    if op[0] == "grant":
        _, source, principals, groups, version = op
        try:
            return await store.set_source_access(tenant, source, principal_ids=principals, group_ids=groups, access_version=version)
        except AccessVersionConflict:
            return "conflict"
    if op[0] == "upsert":
        _, chunk_id, source, access_version, word = op
        [vector] = await embedder.embed([word])
        return await store.upsert(tenant, "kb", [RagChunk(chunk_id, source, f"{word} chunk", vector, {}, access_version)])
    return await store.delete(tenant, "kb", ids=[op[1]])


async def reads(store, tenant, embedder, reader):
    [vector] = await embedder.embed(["apple"])
    by_vector = await store.query(tenant, "kb", vector, top_k=32, authorization=reader)
    by_text = await store.lexical_query(tenant, "kb", " ".join(WORDS), top_k=32, authorization=reader)
    by_source = [chunk for source in SOURCES for chunk in await store.get_by_source(tenant, "kb", source, authorization=reader)]
    return [match.id for match in by_vector], [match.id for match in by_text], [chunk.id for chunk in by_source]


async def check_sequence(dsn, ops):
    tenant = f"acl-{uuid.uuid4().hex[:12]}"
    embedder = create_hash_embedder(64)
    model = Model()
    postgres = await create_postgres_vector_store(dsn, skip_migrations=True)
    stores = [create_memory_vector_store(64), postgres]
    try:
        for step, op in enumerate(ops):
            outcomes = [await run_op(store, tenant, embedder, op) for store in stores]
            assert outcomes[0] == outcomes[1] == model.apply(op), f"step {step} {op}: {outcomes}"
            for reader in READERS:
                seen = [await reads(store, tenant, embedder, reader) for store in stores]
                assert_same(normalise(seen[0]), normalise(seen[1]), f"after step {step} {op} as {reader}")
                allowed = model.readable(reader)
                for name, got in zip(("query", "lexical_query", "get_by_source"), seen[0]):
                    assert set(got) == allowed, f"{name} after step {step} {op} as {reader}: {got} vs {allowed}"
    finally:
        await postgres.close()


# derandomize: CI replays the same sequences; widen by hand with derandomize=False.
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operation, min_size=1, max_size=10))
# A chunk indexed under a newer permission version stays hidden until the grants catch up.
@example(ops=[("grant", "s0", ["ada"], [], 1), ("upsert", "c0", "s0", 2, "apple"), ("grant", "s0", ["ada"], [], 2)])
# A revoke at a newer version cannot be undone by a late update at the older one.
@example(ops=[("upsert", "c0", "s1", None, "river"), ("grant", "s1", [], ["g1"], 1), ("grant", "s1", [], [], 2),
              ("grant", "s1", ["ada"], ["g1"], 1)])
@pytest.mark.slow
def test_acl_reads_never_return_an_unreadable_source(pg_dsn, ops):
    asyncio.run(check_sequence(pg_dsn, ops))
