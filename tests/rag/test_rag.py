"""The RAG vector store on both backends: upsert, query, lexical query, get_by_source, delete,
generations, transactions, filters, dimensions and document ACL (seed: "Standalone durable
vector store for RAG"). Every scenario runs on the emulator and on Postgres and must agree."""

import asyncio

import pytest
from prism_memory import (
    AccessVersionConflict,
    DimensionMismatchError,
    InvalidEmbeddingError,
    RagAccessConstraint,
    RagChunk,
    SchemaVersionError,
    StoreError,
    create_memory_vector_store,
    create_postgres_vector_store,
)

from parity import Raised
from rag_calls import BAD_CALLS, chunk

DOCS = {
    "handbook": ["Vacation policy: employees get 25 days of paid leave", "Expense reports are due monthly"],
    "roadmap": ["The roadmap ships vector search in March", "Pricing changes are planned for April"],
    "salaries": ["Salary bands for engineers are confidential", "Bonus payouts happen in December"],
}
META = {
    "handbook": {"dept": "hr", "tags": ["policy", "public"], "year": 2026, "draft": False},
    "roadmap": {"dept": "product", "tags": ["plan"], "year": 2026.0, "nested": {"level": 1, "team": "core"}},
    "salaries": {"dept": "hr", "tags": ["confidential"], "year": 2025, "draft": True},
}


async def chunks_of(embedder, docs=DOCS, meta=META, access_version=None):
    chunks = []
    for source, texts in docs.items():
        vectors = await embedder.embed(texts)
        chunks += [
            RagChunk(f"{source}#{i}", source, text, vector, meta.get(source), access_version)
            for i, (text, vector) in enumerate(zip(texts, vectors))
        ]
    return chunks


def ids(matches):
    return [match.id for match in matches]


async def test_query_lexical_get_by_source_and_isolation(backends):
    async def scenario(backend):
        store, embedder = backend.vector_store, backend.embedder
        assert await store.upsert("t1", "kb", await chunks_of(embedder)) == 6
        await store.upsert("t1", "other-kb", (await chunks_of(embedder))[:2])
        await store.upsert("t2", "kb", (await chunks_of(embedder))[2:4])
        question = (await embedder.embed(["how many days of paid leave"]))[0]
        return {
            "top3": await store.query("t1", "kb", question, top_k=3),
            "all": ids(await store.query("t1", "kb", question, top_k=32)),
            "tenant2": ids(await store.query("t2", "kb", question, top_k=32)),
            "unknown_scope": await store.query("t1", "nope", question),
            "lexical": await store.lexical_query("t1", "kb", "paid leave vacation days", top_k=5),
            "lexical_metachars": ids(await store.lexical_query("t1", "kb", "leave & | ! : * ( ) ' < > \\ roadmap")),
            "lexical_blank": await store.lexical_query("t1", "kb", "   "),
            "lexical_stopwords": await store.lexical_query("t1", "kb", "the and of"),
            "by_source": await store.get_by_source("t1", "kb", "roadmap"),
            "by_source_page": ids(await store.get_by_source("t1", "kb", "roadmap", after_id="roadmap#0", limit=1)),
            "by_source_other_tenant": await store.get_by_source("t2", "kb", "handbook"),
        }

    outcome = await backends.run(scenario)
    assert [hit["id"] for hit in outcome["top3"]][0] == "handbook#0"
    assert len(outcome["all"]) == 6 and sorted(outcome["tenant2"]) == ["roadmap#0", "roadmap#1"]
    assert outcome["unknown_scope"] == []
    assert outcome["lexical"][0]["id"] == "handbook#0" and outcome["lexical"][0]["score"] == 1.0
    assert outcome["lexical_metachars"] == ["handbook#0", "roadmap#0"]
    assert outcome["lexical_blank"] == [] and outcome["lexical_stopwords"] == []
    assert [chunk["id"] for chunk in outcome["by_source"]] == ["roadmap#0", "roadmap#1"]
    assert len(outcome["by_source"][0]["embedding"]) == 64 and outcome["by_source"][0]["generation"] == 0
    assert outcome["by_source_page"] == ["roadmap#1"] and outcome["by_source_other_tenant"] == []


async def test_metadata_filters_follow_jsonb_containment_and_only_narrow(backends):
    """Operator-free filters (docs/api.md, "Metadata filters") mean what ``metadata @> filter`` means."""
    filters = [
        {"dept": "hr"},
        {"tags": ["policy"]},
        {"tags": "policy"},  # a scalar never matches an array below the top level
        {"year": 2026},  # 2026 == 2026.0, as jsonb numbers compare
        {"draft": False},
        {"draft": 0},  # false is not 0
        {"nested": {"team": "core"}},
        {"nested": {}},
        {"dept": "hr", "draft": True},
        {},
        {"dept') or true --": "x"},
        {"' OR 1=1; drop table x; --": {"$eq": None}},
        {"dept": None},
        {"' OR 1=1; drop table x; --": {"$ne": None}},  # an exact negation: no chunk has the field
    ]

    async def scenario(backend):
        store, embedder = backend.vector_store, backend.embedder
        await store.upsert("t1", "kb", await chunks_of(embedder))
        question = (await embedder.embed(["policy"]))[0]
        everything = set(ids(await store.query("t1", "kb", question, top_k=32)))
        results = {}
        for position, wanted in enumerate(filters):
            by_vector = ids(await store.query("t1", "kb", question, top_k=32, filter=wanted))
            by_text = ids(await store.lexical_query("t1", "kb", "policy roadmap salary bonus expense pricing", top_k=32, filter=wanted))
            assert set(by_vector) <= everything
            results[position] = (sorted(by_vector), sorted(by_text))
        return results

    outcome = await backends.run(scenario)
    handbook, roadmap, salaries = ["handbook#0", "handbook#1"], ["roadmap#0", "roadmap#1"], ["salaries#0", "salaries#1"]
    assert outcome[0][0] == sorted(handbook + salaries)
    assert outcome[1][0] == handbook and outcome[2][0] == []
    assert outcome[3][0] == sorted(handbook + roadmap)
    assert outcome[4][0] == handbook and outcome[5][0] == []
    assert outcome[6][0] == roadmap and outcome[7][0] == roadmap
    assert outcome[8][0] == salaries and len(outcome[9][0]) == 6
    assert outcome[10] == outcome[11] == outcome[12] == [[], []]
    assert outcome[13][0] == outcome[9][0]


async def test_generations_switch_atomically_and_roll_back(backends):
    async def scenario(backend):
        store, embedder = backend.vector_store, backend.embedder
        question = (await embedder.embed(["roadmap vector search"]))[0]
        steps = {}
        await store.upsert("t1", "kb", await chunks_of(embedder))
        steps["initial"] = await store.get_current_generation("t1", "kb")
        rebuilt = await chunks_of(embedder, {"roadmap": ["The roadmap now ships vector search in May"]})
        await store.upsert("t1", "kb", rebuilt, generation=1)
        steps["live_before_switch"] = ids(await store.query("t1", "kb", question, top_k=32))
        steps["staged"] = ids(await store.query("t1", "kb", question, top_k=32, generation=1))
        steps["switched"] = await store.set_current_generation("t1", "kb", 1)
        steps["live_after_switch"] = await store.query("t1", "kb", question, top_k=32)
        steps["other_scope_untouched"] = await store.get_current_generation("t1", "kb2")
        await store.upsert("t1", "kb", await chunks_of(embedder, {"handbook": ["Remote work is allowed"]}))
        steps["plain_upsert_lands_in_current"] = ids(await store.get_by_source("t1", "kb", "handbook"))
        await store.set_current_generation("t1", "kb", 0)
        steps["rolled_back"] = ids(await store.query("t1", "kb", question, top_k=32))
        steps["deleted_generation_1"] = await store.delete("t1", "kb", generation=1)
        steps["deleted_source_everywhere"] = await store.delete("t1", "kb", source_id="handbook")
        steps["deleted_ids"] = await store.delete("t1", "kb", ids=["roadmap#0", "missing"])
        steps["left"] = ids(await store.query("t1", "kb", question, top_k=32))
        return steps

    steps = await backends.run(scenario)
    assert steps["initial"] == 0 and steps["switched"] == 1 and steps["other_scope_untouched"] == 0
    assert len(steps["live_before_switch"]) == 6 and steps["staged"] == ["roadmap#0"]
    assert [(hit["id"], hit["generation"]) for hit in steps["live_after_switch"]] == [("roadmap#0", 1)]
    assert steps["plain_upsert_lands_in_current"] == ["handbook#0"]
    assert len(steps["rolled_back"]) == 6
    assert (steps["deleted_generation_1"], steps["deleted_source_everywhere"], steps["deleted_ids"]) == (2, 2, 1)
    assert sorted(steps["left"]) == ["roadmap#1", "salaries#0", "salaries#1"]


async def test_transactions_are_all_or_nothing(backends):
    async def scenario(backend):
        store, embedder = backend.vector_store, backend.embedder
        chunks = await chunks_of(embedder)
        steps = {}
        async with store.transaction() as tx:
            await tx.upsert("t1", "kb", chunks[:2], generation=3)
            await tx.set_current_generation("t1", "kb", 3)
            await tx.set_source_access("t1", "handbook", group_ids=["staff"], access_version=1)
            steps["inside"] = ids(await tx.get_by_source("t1", "kb", "handbook"))
        steps["committed"] = (await store.get_current_generation("t1", "kb"), ids(await store.get_by_source("t1", "kb", "handbook")))
        try:
            async with store.transaction() as tx:
                await tx.upsert("t1", "kb", chunks[2:4])
                await tx.set_current_generation("t1", "kb", 9)
                await tx.upsert("t1", "kb", [RagChunk("bad", "roadmap", "text", [0.0] * 64)])
        except InvalidEmbeddingError:
            steps["failed_call"] = "rolled back"
        try:
            async with store.transaction() as tx:
                await tx.delete("t1", "kb", source_id="handbook")
                await tx.set_source_access("t1", "handbook", access_version=2)
                raise RuntimeError("host code failed")
        except RuntimeError:
            steps["host_error"] = "rolled back"
        steps["after"] = (
            await store.get_current_generation("t1", "kb"),
            ids(await store.get_by_source("t1", "kb", "handbook")),
            ids(await store.get_by_source("t1", "kb", "roadmap")),
            await store.check_source_access("t1", "handbook", RagAccessConstraint("ada", ("staff",))),
        )
        try:
            await tx.get_by_source("t1", "kb", "handbook")
        except StoreError:
            steps["used_after_end"] = "refused"
        return steps

    steps = await backends.run(scenario)
    assert steps["inside"] == ["handbook#0", "handbook#1"]
    assert steps["committed"] == [3, ["handbook#0", "handbook#1"]]
    assert steps["failed_call"] == steps["host_error"] == "rolled back"
    assert steps["after"] == [3, ["handbook#0", "handbook#1"], [], True]
    assert steps["used_after_end"] == "refused"


async def test_an_open_transaction_is_invisible_to_others_and_holds_off_their_writes(backends):
    async def scenario(backend):
        store, embedder = backend.vector_store, backend.embedder
        [first, second] = await embedder.embed(["first chunk", "second chunk"])
        async with store.transaction() as tx:
            await tx.upsert("t1", "kb", [RagChunk("inside", "doc", "first chunk", first)])
            seen_inside = ids(await tx.get_by_source("t1", "kb", "doc"))
            seen_outside = ids(await store.get_by_source("t1", "kb", "doc"))
            writer = asyncio.create_task(store.upsert("t1", "kb", [RagChunk("outside", "doc", "second chunk", second)]))
            await asyncio.sleep(0.3)
            writer_waited = not writer.done()
        await writer
        return seen_inside, seen_outside, writer_waited, ids(await store.get_by_source("t1", "kb", "doc"))

    assert await backends.run(scenario) == [["inside"], [], True, ["inside", "outside"]]


async def test_a_failed_call_inside_a_transaction_changes_nothing_and_the_rest_commits(backends):
    async def scenario(backend):
        store, embedder = backend.vector_store, backend.embedder
        [vector] = await embedder.embed(["kept chunk"])
        await store.set_source_access("t1", "doc", principal_ids=["ada"], access_version=5)
        async with store.transaction() as tx:
            await tx.upsert("t1", "kb", [RagChunk("a", "doc", "kept chunk", vector)])
            try:
                await tx.set_source_access("t1", "doc", principal_ids=["mallory"], access_version=1)
            except AccessVersionConflict:
                conflict = "raised"
            await tx.upsert("t1", "kb", [RagChunk("b", "doc", "kept chunk", vector)])
            try:
                tx.transaction()
            except StoreError:
                nested = "refused"
        return conflict, nested, ids(await store.get_by_source("t1", "kb", "doc", authorization=RagAccessConstraint("ada")))

    assert await backends.run(scenario) == ["raised", "refused", ["a", "b"]]


async def test_writing_through_the_emulator_store_inside_its_own_transaction_raises_instead_of_waiting():
    store = create_memory_vector_store(2)
    async with store.transaction() as tx:
        await tx.upsert("t1", "kb", [RagChunk("a", "doc", "text", [1.0, 0.0])])
        with pytest.raises(StoreError):
            await store.upsert("t1", "other", [RagChunk("b", "doc", "text", [1.0, 0.0])])
    assert ids(await store.get_by_source("t1", "kb", "doc")) == ["a"]


async def test_metadata_numbers_read_back_as_jsonb_gives_them_on_both_backends(backends):
    metadata = {"exponent": 1e16, "small": 1.5e-7, "plain": 2.5, "huge": 1.2345678901234568e29, "int": 7, "whole": 3.0}

    async def scenario(backend):
        store, embedder = backend.vector_store, backend.embedder
        [vector] = await embedder.embed(["numbers"])
        await store.upsert("t1", "kb", [RagChunk("n", "doc", "numbers", vector, metadata)])
        memory = backend.memory()
        await memory.remember([{"id": "m", "text": "numbers", "metadata": metadata}], wait=True)
        [stored] = await store.get_by_source("t1", "kb", "doc")
        [hit] = (await memory.recall("numbers")).hits
        return stored.metadata, hit.metadata

    chunk_metadata, entry_metadata = await backends.run(scenario)
    assert chunk_metadata == entry_metadata
    assert chunk_metadata["exponent"] == 10**16 and isinstance(chunk_metadata["exponent"], int)
    assert chunk_metadata["huge"] == 123456789012345680000000000000 and isinstance(chunk_metadata["whole"], float)


ADA = RagAccessConstraint("ada", ("engineering",))
BOB = RagAccessConstraint("bob", ("sales", "all-staff"))
EVE = RagAccessConstraint("eve")


async def test_document_acl_inside_every_read(backends):
    async def scenario(backend):
        store, embedder = backend.vector_store, backend.embedder
        chunks = await chunks_of(embedder, access_version=2)
        chunks[-1] = RagChunk(chunks[-1].id, "salaries", chunks[-1].text, chunks[-1].embedding, META["salaries"], 3)
        await store.upsert("t1", "kb", chunks)
        await store.upsert("t2", "kb", chunks)
        question = (await embedder.embed(["engineers salary bands and bonus"]))[0]

        async def readable(reader, **read):
            return {
                "query": sorted(ids(await store.query("t1", "kb", question, top_k=32, authorization=reader, **read))),
                "lexical": sorted(ids(await store.lexical_query(
                    "t1", "kb", "salary bonus roadmap vacation expense pricing", top_k=32, authorization=reader, **read))),
                "by_source": ids(await store.get_by_source("t1", "kb", "salaries", authorization=reader)),
            }

        steps = {"no_grants": await readable(ADA), "no_acl": await readable(None)}
        assert await store.set_source_access("t1", "handbook", group_ids=["all-staff", "engineering"], access_version=2) == 2
        assert await store.set_source_access("t1", "salaries", principal_ids=["ada"], access_version=2) == 1
        assert await store.set_source_access("t2", "roadmap", principal_ids=["ada", "bob", "eve"], access_version=9) == 3
        steps["ada"] = await readable(ADA)
        steps["bob"] = await readable(BOB)
        steps["eve"] = await readable(EVE)
        steps["filter_is_not_acl"] = await readable(EVE, filter={"dept": "hr"})
        steps["check"] = [
            await store.check_source_access("t1", "salaries", ADA),
            await store.check_source_access("t1", "salaries", ADA, access_version=3),
            await store.check_source_access("t1", "salaries", BOB),
            await store.check_source_access("t1", "roadmap", ADA),
            await store.check_source_access("t2", "roadmap", EVE),
            await store.check_source_access("t2", "handbook", ADA),
        ]
        await store.set_source_access("t1", "salaries", principal_ids=["ada"], access_version=3)
        steps["resolved"] = await readable(ADA)
        try:
            await store.set_source_access("t1", "salaries", principal_ids=["ada", "bob"], access_version=2)
        except AccessVersionConflict:
            steps["stale_update"] = "refused"
        steps["bob_after_stale"] = await readable(BOB)
        assert await store.set_source_access("t1", "salaries", access_version=4) == 0
        steps["revoked"] = await readable(ADA)
        try:
            await store.set_source_access("t1", "salaries", principal_ids=["ada"], access_version=3)
        except AccessVersionConflict:
            steps["resurrect_after_revoke"] = "refused"
        return steps

    steps = await backends.run(scenario)
    nothing = {"query": [], "lexical": [], "by_source": []}
    assert steps["no_grants"] == nothing and len(steps["no_acl"]["query"]) == 6
    # salaries#1 was indexed under access version 3, newer than the grants (2): unresolved, denied.
    assert steps["ada"]["query"] == ["handbook#0", "handbook#1", "salaries#0"]
    assert steps["ada"]["by_source"] == ["salaries#0"]
    assert steps["bob"]["query"] == ["handbook#0", "handbook#1"] and steps["bob"]["by_source"] == []
    assert steps["eve"] == nothing and steps["filter_is_not_acl"] == nothing
    assert steps["check"] == [True, False, False, False, True, False]
    assert steps["resolved"]["query"] == ["handbook#0", "handbook#1", "salaries#0", "salaries#1"]
    assert steps["resolved"]["lexical"] == steps["resolved"]["query"]
    assert steps["stale_update"] == "refused" and steps["bob_after_stale"] == steps["bob"]
    assert steps["revoked"]["query"] == ["handbook#0", "handbook#1"] and steps["revoked"]["by_source"] == []
    assert steps["resurrect_after_revoke"] == "refused"


@pytest.mark.parametrize("name, call, error", BAD_CALLS, ids=[name for name, _, _ in BAD_CALLS])
async def test_bad_input_raises_a_typed_error_and_writes_nothing(backends, name, call, error):
    async def scenario(backend):
        store = backend.vector_store
        await store.upsert("t1", "kb", [chunk(id="kept", text="kept text")])
        await store.set_source_access("t1", "s1", principal_ids=["ada"], access_version=5)
        try:
            await call(store)
        except Exception as exc:  # compared by type across backends
            outcome = Raised(type(exc))
        else:
            outcome = "no error"
        after = await store.get_by_source("t1", "kb", "s1")
        granted = await store.check_source_access("t1", "s1", RagAccessConstraint("ada"))
        return outcome, ids(after), granted, await store.get_current_generation("t1", "kb")

    outcome = await backends.run(scenario)
    assert outcome == [{"error": error}, ["kept"], True, 0]


async def test_unpinned_store_fixes_each_scopes_width_and_a_pinned_mismatch_fails_closed(server_dsn, pg_dsn):
    dsn = server_dsn("rag_unpinned")
    postgres = await create_postgres_vector_store(dsn)
    try:
        for store in (create_memory_vector_store(), postgres):
            assert await store.upsert("t1", "kb", [chunk(embedding=[1.0, 2.0, 3.0])]) == 1
            assert await store.upsert("t1", "kb2", [chunk(embedding=[1.0] * 5)]) == 1
            with pytest.raises(DimensionMismatchError):
                await store.upsert("t1", "kb", [chunk(id="c2", embedding=[1.0] * 4)])
            with pytest.raises(DimensionMismatchError):
                await store.query("t1", "kb", [1.0] * 5)
            assert ids(await store.query("t1", "kb2", [1.0] * 5)) == ["c1"]
    finally:
        await postgres.close()
    with pytest.raises(SchemaVersionError, match="dimensions"):
        await create_postgres_vector_store(pg_dsn, dimensions=32, skip_migrations=True)
    pinned = await create_postgres_vector_store(pg_dsn, skip_migrations=True)  # unpinned request: the install's 64 apply
    try:
        with pytest.raises(DimensionMismatchError):
            await pinned.upsert("t1", "kb", [chunk(embedding=[1.0] * 3)])
    finally:
        await pinned.close()


async def test_same_outcomes_through_the_sql_functions_directly(pg_dsn):
    """A psql caller gets the same checks: the Python layer is not the only guard."""
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        def fails(statement, sqlstate):
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(statement)
            assert caught.value.sqlstate == sqlstate, caught.value

        vector = "array_fill(1, array[64])::vector"
        conn.execute(
            "select prism_memory.rag_upsert_v1('t1', 'kb', array['a'], array['s'], array['alpha text'], "
            f"array[{vector}])"
        )
        fails(f"select * from prism_memory.rag_query_v1('t1', 'kb', {vector}, 0)", "PM005")
        fails(f"select * from prism_memory.rag_query_v1('t1', 'kb', {vector}, 5, '[1]')", "PM008")
        fails(f"select * from prism_memory.rag_query_v1('t1', 'kb', {vector}, 5, null, true, null)", "PM013")
        fails("select * from prism_memory.rag_query_v1('t1', 'kb', array_fill(1, array[3])::vector, 5)", "PM004")
        fails("select prism_memory.rag_set_source_access_v1('t1', 's', array['a'], null, -1)", "PM002")
        conn.execute("select prism_memory.rag_set_source_access_v1('t1', 's', array['a'], null, 2)")
        fails("select prism_memory.rag_set_source_access_v1('t1', 's', array['a', 'b'], null, 1)", "PM014")
        rows = conn.execute(
            f"select id, score from prism_memory.rag_query_v1('t1', 'kb', {vector}, 5, '{{}}', true, 'a')"
        ).fetchall()
        assert rows == [("a", pytest.approx(1.0))]
        assert conn.execute(
            f"select count(*) from prism_memory.rag_query_v1('t1', 'kb', {vector}, 5, null, true, 'b', array['x'])"
        ).fetchone() == (0,)

