"""LangChain's own standard suites, unmodified, on both backends: ``VectorStoreIntegrationTests`` for
:class:`PrismVectorStore` and ``RetrieversIntegrationTests`` for :class:`PrismRetriever` (subclassed as their
docs say: an empty vector store per test; the retriever's class, constructor parameters and a query)."""

from __future__ import annotations

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests, VectorStoreIntegrationTests
from prism_memory.integrations.langchain import UNRESTRICTED, PrismRetriever, PrismVectorStore

from integration_stores import knowledge_base, loop_thread, memory_factory, rag_store  # noqa: F401 (fixtures)

FACTS = [
    "Ada drinks green tea every morning",
    "Ada's tea of choice at work is jasmine tea",
    "Ada dislikes sweet iced tea",
    "Ada keeps a tea kettle on her desk",
    "Ada's favourite programming language is Python",
]


class TestPrismVectorStoreStandard(VectorStoreIntegrationTests):
    """The emulator's store runs with no home loop (sync calls in a loop of their own, async ones in pytest's);
    the Postgres store lives on a loop thread. Reads are ``UNRESTRICTED``: the suite grants no document ACL."""

    @pytest.fixture
    def vectorstore(self, rag_store, knowledge_base):
        store, loop = rag_store
        yield PrismVectorStore(store, self.get_embeddings(), tenant_id="acme", scope=knowledge_base,
                               reader=UNRESTRICTED, loop=loop)


class TestPrismRetrieverStandard(RetrieversIntegrationTests):
    """A thread holding five facts; the suite asks for 1 and 3 of them."""

    @pytest.fixture(autouse=True)
    def _thread(self, memory_factory, loop_thread):
        make, self.loop = memory_factory
        self.memory = make(resource_id="user_1", thread_id="chat-1")
        loop_thread.run(self.memory.remember([{"id": f"fact-{n}", "text": text} for n, text in enumerate(FACTS)], wait=True))

    @property
    def retriever_constructor(self) -> type[PrismRetriever]:
        return PrismRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"memory": self.memory, "loop": self.loop}

    @property
    def retriever_query_example(self) -> str:
        return "what tea does Ada drink"
