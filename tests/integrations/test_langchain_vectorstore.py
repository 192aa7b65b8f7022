"""PrismVectorStore beyond LangChain's standard suite, on both backends, with langchain_core's
DeterministicFakeEmbedding. Sync calls run in a worker thread, as LangChain's executor runs them: document ACL per reader (and the refusal without one), the filter language,
scores, from_texts, look-alike tenants and knowledge bases, and bad input (a typed error, nothing written)."""

from __future__ import annotations

import asyncio
import math

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from prism_memory import (
    AccessVersionConflict,
    ConfigurationError,
    DimensionMismatchError,
    InvalidAuthorizationError,
    InvalidEntryError,
    InvalidFilterError,
    InvalidQueryError,
    InvalidScopeError,
    LimitExceededError,
    RagAccessConstraint,
)
from prism_memory.integrations.langchain import UNRESTRICTED, PrismVectorStore

from integration_stores import knowledge_base, loop_thread, rag_store  # noqa: F401 (fixtures)

EMBEDDING = DeterministicFakeEmbedding(size=16)
DOCS = {
    "handbook": ("Employees get 25 days of paid leave", {"dept": "hr", "year": 2026, "tags": ["policy"], "team": {"name": "people"}}),
    "salaries": ("Salary bands are confidential", {"dept": "hr", "year": 2025, "tags": ["confidential"]}),
    "roadmap": ("Vector search ships in March", {"dept": "product", "year": 2026.0, "tags": ["plan"], "team": {"name": "core"}}),
}
ADA = RagAccessConstraint("ada", ("staff",))
CFO = RagAccessConstraint("cfo")


def open_store(rag_store, scope="kb", tenant_id="acme", reader=None):
    store, loop = rag_store
    return PrismVectorStore(store, EMBEDDING, tenant_id=tenant_id, scope=scope, reader=reader, loop=loop)


async def add_docs(vector_store, docs=DOCS):
    texts = [text for text, _ in docs.values()]
    metadatas = [metadata for _, metadata in docs.values()]
    return await vector_store.aadd_texts(texts, metadatas, ids=list(docs))


async def grant(rag_store, tenant_id, document_id, **grants):
    await open_store(rag_store, tenant_id=tenant_id).aset_document_access(document_id, access_version=1, **grants)


def ids(documents):
    return sorted(document.id for document in documents)


async def test_reads_name_their_reader_and_see_only_granted_documents(rag_store):
    vector_store = open_store(rag_store)
    assert await add_docs(vector_store) == ["handbook", "salaries", "roadmap"]
    await grant(rag_store, "acme", "handbook", group_ids=["staff"])
    await grant(rag_store, "acme", "salaries", principal_ids=["cfo"])

    with pytest.raises(InvalidAuthorizationError):
        await vector_store.asimilarity_search("paid leave")
    with pytest.raises(InvalidAuthorizationError):
        await asyncio.to_thread(vector_store.get_by_ids, ["handbook"])
    with pytest.raises(InvalidAuthorizationError):
        await vector_store.asimilarity_search("paid leave", authorization="ada")

    assert ids(await vector_store.asimilarity_search("paid leave", k=32, authorization=ADA)) == ["handbook"]
    # Grants are the tenant's, per document id: a sync call (in a worker thread) adds ada to the salaries.
    assert await asyncio.to_thread(vector_store.set_document_access, "salaries", principal_ids=["cfo", "ada"],
                                   access_version=2) == 2
    assert ids(await vector_store.asimilarity_search("paid leave", k=32, authorization=ADA)) == ["handbook", "salaries"]
    with pytest.raises(AccessVersionConflict):
        await vector_store.aset_document_access("salaries", principal_ids=["cfo"], access_version=1)
    assert ids(await vector_store.asimilarity_search("paid leave", k=32, authorization=ADA)) == ["handbook", "salaries"]
    await vector_store.aset_document_access("salaries", principal_ids=["cfo"], access_version=3)
    assert ids(await asyncio.to_thread(vector_store.similarity_search, "paid leave", k=32, authorization=CFO)) == ["salaries"]
    assert ids(await vector_store.asimilarity_search("x", k=32, authorization=RagAccessConstraint("eve"))) == []
    assert ids(await vector_store.asimilarity_search("x", k=32, authorization=UNRESTRICTED)) == ["handbook", "roadmap", "salaries"]
    assert ids(await vector_store.for_reader(ADA).aget_by_ids(list(DOCS))) == ["handbook"]
    assert ids(await asyncio.to_thread(vector_store.for_reader(CFO).get_by_ids, list(DOCS))) == ["salaries"]
    everything = await vector_store.for_reader(UNRESTRICTED).aget_by_ids(["roadmap", "handbook", "roadmap", "nope"])
    assert [document.id for document in everything] == ["roadmap", "handbook"]
    assert everything[0].page_content == DOCS["roadmap"][0] and everything[0].metadata == DOCS["roadmap"][1]
    # A reader given to the store is its default; a call's authorization wins over it.
    ada_store = open_store(rag_store, reader=ADA)
    assert ids(await ada_store.asimilarity_search("x", k=32)) == ["handbook"]
    assert ids(await ada_store.asimilarity_search("x", k=32, authorization=CFO)) == ["salaries"]


async def test_look_alike_tenants_and_knowledge_bases_stay_apart(rag_store):
    await add_docs(open_store(rag_store, tenant_id="acme"))
    await grant(rag_store, "acme", "handbook", group_ids=["staff"])
    corp = open_store(rag_store, tenant_id="acme-corp")
    await corp.aadd_texts(["Contractors get no paid leave"], [{"dept": "hr"}], ids=["handbook"])
    # acme's grant on "handbook" is acme's: acme-corp's document of the same id stays closed to ada.
    assert await corp.asimilarity_search("paid leave", k=32, authorization=ADA) == []
    [document] = await corp.asimilarity_search("paid leave", k=32, authorization=UNRESTRICTED)
    assert document.page_content == "Contractors get no paid leave"

    for scope in ("user_1", "user-1", "user_10"):
        await open_store(rag_store, scope=scope).aadd_texts([f"note of {scope}"], ids=[f"note-{scope}"])
    for scope in ("user_1", "user-1", "user_10"):
        found = await open_store(rag_store, scope=scope).asimilarity_search("note", k=32, authorization=UNRESTRICTED)
        assert [document.page_content for document in found] == [f"note of {scope}"]


@pytest.mark.parametrize(("filter", "expected"), [
    ({"dept": "hr"}, ["handbook", "salaries"]),
    ({"year": 2026}, ["handbook", "roadmap"]),
    ({"year": {"$lt": 2026}}, ["salaries"]),
    ({"tags": ["plan"]}, ["roadmap"]),
    ({"tags": {"$contains": "policy"}}, ["handbook"]),
    ({"team.name": {"$in": ["core", "people"]}}, ["handbook", "roadmap"]),
    ({"$or": [{"dept": "product"}, {"year": 2025}]}, ["roadmap", "salaries"]),
    ({"$not": {"dept": "hr"}}, ["roadmap"]),
    ({"team": {"$exists": False}}, ["salaries"]),
])
async def test_filter_uses_the_metadata_filter_language(rag_store, filter, expected):
    vector_store = open_store(rag_store, reader=UNRESTRICTED)
    await add_docs(vector_store)
    assert ids(await vector_store.asimilarity_search("anything", k=32, filter=filter)) == expected
    assert ids(await asyncio.to_thread(vector_store.similarity_search, "anything", k=32, filter=filter)) == expected


async def test_scores_vectors_and_relevance(rag_store):
    vector_store = open_store(rag_store, reader=UNRESTRICTED)
    await add_docs(vector_store)
    text = DOCS["roadmap"][0]
    scored = await vector_store.asimilarity_search_with_score(text, k=3)
    assert scored[0][0].id == "roadmap" and math.isclose(scored[0][1], 1.0, abs_tol=1e-6)
    assert [score for _, score in scored] == sorted((score for _, score in scored), reverse=True)
    assert all(-1.0 <= score <= 1.0 for _, score in scored)
    relevance = await vector_store.asimilarity_search_with_relevance_scores(text, k=3)
    assert [document.id for document, _ in relevance] == [document.id for document, _ in scored]
    assert [score for _, score in relevance] == pytest.approx([(1 + score) / 2 for _, score in scored])
    vector = EMBEDDING.embed_query(text)
    assert [document.id for document in await asyncio.to_thread(vector_store.similarity_search_by_vector, vector, k=1)] == [
        "roadmap"]
    assert [document.id for document in await vector_store.asimilarity_search_by_vector(vector, k=2)] == [
        document.id for document, _ in scored[:2]]
    retriever = vector_store.as_retriever(search_kwargs={"k": 1, "filter": {"dept": "hr"}})
    assert [document.id for document in await retriever.ainvoke(DOCS["salaries"][0])] == ["salaries"]


async def test_from_texts_and_afrom_texts(rag_store, knowledge_base):
    store, loop = rag_store
    options = {"store": store, "tenant_id": "acme", "scope": knowledge_base, "reader": UNRESTRICTED, "loop": loop}
    built = await PrismVectorStore.afrom_texts(["alpha", "beta"], EMBEDDING, [{"n": 1}, {"n": 2}], ids=["a", "b"], **options)
    assert built.embeddings is EMBEDDING
    assert ids(await built.aget_by_ids(["a", "b"])) == ["a", "b"]
    again = await asyncio.to_thread(PrismVectorStore.from_texts, ["gamma"], EMBEDDING, ids=["c"], **options)
    assert ids(await asyncio.to_thread(again.get_by_ids, ["a", "b", "c"])) == ["a", "b", "c"]


async def test_bad_input_raises_a_typed_error_and_writes_nothing(rag_store):
    vector_store = open_store(rag_store, reader=UNRESTRICTED)
    bad_adds = [
        (lambda: vector_store.aadd_texts(["a", "b"], ids=["1"]), InvalidEntryError),
        (lambda: vector_store.aadd_texts(["a"], [{}, {}]), InvalidEntryError),
        (lambda: vector_store.aadd_texts(["a", "b"], ids=["1", "1"]), InvalidEntryError),
        (lambda: vector_store.aadd_texts(["a", " "], ids=["1", "2"]), InvalidEntryError),
        (lambda: vector_store.aadd_texts(["a"], [{"x": float("nan")}], ids=["1"]), InvalidEntryError),
        (lambda: vector_store.aadd_texts(["a"], ids=[" "]), InvalidEntryError),
        (lambda: vector_store.aadd_texts(["a"], ids=["1"], tenant="other"), InvalidEntryError),
        (lambda: vector_store.aadd_texts([f"text {n}" for n in range(1001)] + [" "]), InvalidEntryError),
        (lambda: vector_store.aadd_texts(["x"] * 1001, ids=["dup"] + [str(n) for n in range(1000)][:999] + ["dup"]),
         InvalidEntryError),
    ]
    for add, error in bad_adds:
        with pytest.raises(error):
            await add()
    assert await vector_store.asimilarity_search("a", k=32) == []
    assert await vector_store.aget_by_ids(["1", "2", "dup"]) == []

    await add_docs(vector_store)
    bad_reads = [
        (lambda: vector_store.asimilarity_search("paid leave", k=33), LimitExceededError),
        (lambda: vector_store.asimilarity_search("paid leave", k=0), LimitExceededError),
        (lambda: vector_store.asimilarity_search("  "), InvalidQueryError),
        (lambda: vector_store.asimilarity_search("paid leave", filter={"dept": {"$regex": "h"}}), InvalidFilterError),
        (lambda: vector_store.asimilarity_search("paid leave", filter=["dept"]), InvalidQueryError),
        (lambda: vector_store.asimilarity_search("paid leave", fetch_k=3), InvalidQueryError),
        (lambda: vector_store.asimilarity_search_by_vector([1.0] * 8), DimensionMismatchError),
        (lambda: vector_store.adelete(None), InvalidEntryError),
        (lambda: vector_store.adelete(["handbook"], generation=0), InvalidEntryError),
    ]
    for read, error in bad_reads:
        with pytest.raises(error):
            await read()
    assert ids(await vector_store.asimilarity_search("x", k=32)) == ["handbook", "roadmap", "salaries"]
    with pytest.raises(NotImplementedError):  # no MMR: the RAG query returns no candidate embeddings
        await vector_store.amax_marginal_relevance_search("paid leave")


async def test_constructor_checks_its_arguments(rag_store):
    store, loop = rag_store
    blank_tenant = PrismVectorStore(store, EMBEDDING, tenant_id=" ", scope="kb", loop=loop)
    with pytest.raises(InvalidScopeError):  # blank ids are the SQL functions' rule: refused at the first call
        await blank_tenant.aadd_texts(["a"])
    with pytest.raises(InvalidScopeError):
        PrismVectorStore(store, EMBEDDING, tenant_id="acme", scope=7)
    with pytest.raises(InvalidAuthorizationError):
        PrismVectorStore(store, EMBEDDING, tenant_id="acme", scope="kb", reader="ada")
    with pytest.raises(ConfigurationError):
        PrismVectorStore(store, object(), tenant_id="acme", scope="kb")
    with pytest.raises(ConfigurationError):
        PrismVectorStore(store, EMBEDDING, tenant_id="acme", scope="kb", loop="the loop")


async def test_a_sync_call_that_would_block_its_own_loop_is_refused(rag_store, loop_thread):
    vector_store = open_store(rag_store, reader=UNRESTRICTED)
    _, loop = rag_store

    async def sync_call_inside_the_home_loop():
        return vector_store.similarity_search("x")

    with pytest.raises(ConfigurationError):
        if loop is None:  # no home loop: a sync call from inside pytest's running loop
            vector_store.similarity_search("x")
        else:
            loop_thread.run(sync_call_inside_the_home_loop())
    assert await vector_store.asimilarity_search("x") == []
