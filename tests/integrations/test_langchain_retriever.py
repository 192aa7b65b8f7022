"""PrismRetriever on both backends: recall hits as Documents (id, text, the entry's metadata and the hit's score),
across_threads within one resource only, and recall's rules unchanged underneath: consent, lineage, forget and
expiry. The LCEL chain at the end uses langchain_core's ParrotFakeChatModel: no real chat model runs offline
here, and a model that echoes its prompt shows exactly what the chain fed it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from prism_memory import InvalidFilterError, InvalidQueryError, LimitExceededError, MemoryConsent, MemoryLineage
from prism_memory.integrations.langchain import RECALL_KEY, PrismRetriever
from prism_memory.scoring import LEXICAL_WEIGHT

from integration_stores import loop_thread, memory_factory  # noqa: F401 (fixtures)
from parity import Clock

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PROFILE = MemoryConsent(source="user", scope="profile")
THREAD_ONLY = MemoryConsent(source="user", scope="thread")


def entry(entry_id, text, **fields):
    return {"id": entry_id, "text": text, **fields}


def ids(documents):
    return sorted(document.id for document in documents)


@pytest.fixture
def user_1(memory_factory, loop_thread):
    """``(make_thread, run, loop)`` for resource ``user_1`` (look-alikes ``user-1`` and ``user_10`` hold tea facts too)."""
    make, loop = memory_factory
    clock = Clock(START)

    def make_thread(thread_id, resource_id="user_1"):
        return make(resource_id=resource_id, thread_id=thread_id, clock=clock)

    for look_alike in ("user-1", "user_10"):
        loop_thread.run(make_thread("chat-1", look_alike).remember(
            [entry(f"{look_alike}-tea", f"{look_alike} drinks black tea", consent=PROFILE)], wait=True))
    return make_thread, loop_thread.run, loop, clock


async def test_hits_become_documents_with_id_score_and_metadata(user_1):
    make_thread, run, loop, _ = user_1
    chat = make_thread("chat-1")
    run(chat.remember([
        entry("tea", "Ada drinks green tea every morning", metadata={"kind": "preference", "topic": "tea"}),
        entry("code", "Ada writes Python at work", metadata={"kind": "fact"}),
    ], wait=True))
    retriever = PrismRetriever(memory=chat, k=2, loop=loop)
    documents = await retriever.ainvoke("what tea does Ada drink")
    assert [document.id for document in documents] == ["tea", "code"]
    first = documents[0]
    assert first.page_content == "Ada drinks green tea every morning"
    metadata = dict(first.metadata)
    place = metadata.pop(RECALL_KEY)
    assert metadata == {"kind": "preference", "topic": "tea"}
    assert place["thread_id"] == "chat-1" and place["resource_id"] == "user_1" and place["sequence"] >= 0
    assert place["score"] >= documents[1].metadata[RECALL_KEY]["score"]
    assert place["score"] == pytest.approx(place["similarity"] + LEXICAL_WEIGHT * place["lexical"])
    assert await asyncio.to_thread(retriever.invoke, "what tea does Ada drink") == documents
    assert ids(await retriever.ainvoke("tea", filter={"kind": "fact"})) == ["code"]
    assert ids(await retriever.ainvoke("tea", k=1)) == ["tea"]


async def test_across_threads_stays_in_the_resource_and_follows_consent_scope(user_1):
    make_thread, run, loop, _ = user_1
    chat_1, chat_2 = make_thread("chat-1"), make_thread("chat-2")
    run(chat_1.remember([entry("here", "Ada drinks green tea", consent=THREAD_ONLY)], wait=True))
    run(chat_2.remember([
        entry("profile-fact", "Ada likes jasmine tea", consent=PROFILE),
        entry("thread-fact", "Ada ordered iced tea in this chat", consent=THREAD_ONLY),
    ], wait=True))
    assert ids(await PrismRetriever(memory=chat_1, k=32, loop=loop).ainvoke("tea")) == ["here"]
    across = await PrismRetriever(memory=chat_1, k=32, across_threads=True, loop=loop).ainvoke("tea")
    assert ids(across) == ["here", "profile-fact"]
    assert {document.id: document.metadata[RECALL_KEY]["thread_id"] for document in across} == {
        "here": "chat-1", "profile-fact": "chat-2"}


async def test_consent_lineage_forget_and_expiry_apply_underneath(user_1):
    make_thread, run, loop, clock = user_1
    chat = make_thread("chat-1")
    run(chat.remember([
        entry("revoked", "Ada drinks oolong tea"),
        entry("source", "Ada visited a tea farm in Darjeeling"),
        entry("derived", "Ada likes Darjeeling tea", lineage=MemoryLineage(("source",), "summary")),
        entry("short-lived", "Ada is drinking mint tea today", ttl=timedelta(hours=1)),
        entry("kept", "Ada keeps a tea kettle on her desk"),
    ], wait=True))
    retriever = PrismRetriever(memory=chat, k=32, loop=loop)
    assert ids(await retriever.ainvoke("tea")) == ["derived", "kept", "revoked", "short-lived", "source"]
    run(chat.set_consent("revoked", visible=False))
    run(chat.forget(["source"]))
    clock.now = START + timedelta(hours=2)
    assert ids(await retriever.ainvoke("tea")) == ["kept"]


async def test_bad_options_raise_prism_memory_errors(user_1):
    make_thread, run, loop, _ = user_1
    chat = make_thread("chat-1")
    run(chat.remember([entry("tea", "Ada drinks green tea")], wait=True))
    retriever = PrismRetriever(memory=chat, loop=loop)
    with pytest.raises(LimitExceededError):
        await retriever.ainvoke("tea", k=33)
    with pytest.raises(InvalidFilterError):
        await retriever.ainvoke("tea", filter={"kind": {"$regex": "p"}})
    with pytest.raises(InvalidQueryError):
        await retriever.ainvoke("   ")
    with pytest.raises(InvalidQueryError):
        await retriever.ainvoke("tea", search_type="mmr")
    with pytest.raises(InvalidQueryError):
        PrismRetriever(memory=chat, loop=loop, recall_options={"fetch_k": 3}).invoke("tea")


async def test_an_lcel_chain_answers_from_the_retrieved_memories(user_1):
    """retriever | format -> prompt -> chat model -> parser. ParrotFakeChatModel stands in for a chat model (none runs
    offline): it answers with the prompt it was given, so the answer holds the memories the chain retrieved."""
    make_thread, run, loop, _ = user_1
    chat = make_thread("chat-1")
    run(chat.remember([
        entry("tea", "Ada drinks green tea every morning"),
        entry("code", "Ada writes Python at work"),
    ], wait=True))

    def as_context(documents: list[Document]) -> str:
        return "\n".join(f"- {document.page_content} (score {document.metadata[RECALL_KEY]['score']:.2f})"
                         for document in documents)

    prompt = ChatPromptTemplate.from_messages([("human", "Known about the user:\n{context}\n\nQuestion: {question}")])
    chain = (
        {"context": PrismRetriever(memory=chat, k=1, loop=loop) | as_context, "question": RunnablePassthrough()}
        | prompt | ParrotFakeChatModel() | StrOutputParser()
    )
    answer = await chain.ainvoke("Which tea does Ada drink?")
    assert answer.startswith("Known about the user:\n- Ada drinks green tea every morning (score ")
    assert "Python" not in answer and answer.endswith("Question: Which tea does Ada drink?")
    assert await asyncio.to_thread(chain.invoke, "Which tea does Ada drink?") == answer
