"""Fixtures of the framework adapters' tests (tests/integrations imports them: a conftest.py there would shadow
tests/conftest.py, which other tests import by name): each backend's stores, opened on an event loop thread of
their own so that sync framework calls and async ones (from pytest's loop) reach the same connections."""

from __future__ import annotations

import uuid

import pytest
from prism_memory import create_hash_embedder, create_memory, create_postgres_memory_stores, create_postgres_vector_store
from prism_memory.emulator import create_memory_vector_store, create_memory_working_store
from prism_memory.integrations.loop_bridge import EventLoopThread

#: The schema of the second, unpinned install the LangChain suites write to (their embeddings are 6 wide,
#: the test template's install is pinned to 64); a fresh knowledge base per test keeps tests apart on a
#: database the Citus lane shares.
UNPINNED_SCHEMA = "langchain_suite"

BACKENDS = ["memory", "postgres"]


@pytest.fixture
def loop_thread():
    """An event loop in a thread of its own, stopped after the test."""
    thread = EventLoopThread()
    yield thread
    thread.close()


@pytest.fixture
def knowledge_base() -> str:
    """A knowledge-base (RAG scope) name no other test uses."""
    return f"kb-{uuid.uuid4().hex}"


@pytest.fixture(params=BACKENDS)
def rag_store(request, loop_thread):
    """``(store, loop)``: the emulator's RAG store with no home loop, or a Postgres one (an unpinned install)
    living on ``loop_thread``."""
    if request.param == "memory":
        yield create_memory_vector_store(), None
        return
    dsn = request.getfixturevalue("pg_dsn")
    store = loop_thread.run(create_postgres_vector_store(dsn, schema=UNPINNED_SCHEMA))
    yield store, loop_thread.loop
    loop_thread.run(store.close())


@pytest.fixture(params=BACKENDS)
def memory_factory(request, loop_thread):
    """``(make, loop)``: ``make(**create_memory kwargs)`` builds a memory on the backend's stores, which live on
    ``loop_thread`` (64-wide hash embedder, tenant ``acme``); ``loop`` is that thread's loop."""
    if request.param == "memory":
        vector_store, working_store, closing = create_memory_vector_store(), create_memory_working_store(), None
    else:
        stores = loop_thread.run(create_postgres_memory_stores(request.getfixturevalue("pg_dsn"), skip_migrations=True))
        vector_store, working_store, closing = stores.vector_store, stores.working_store, stores
    embedder = create_hash_embedder(64)

    def make(**kwargs):
        kwargs.setdefault("tenant_id", "acme")
        kwargs.setdefault("embedder", embedder)
        return create_memory(vector_store=vector_store, working_store=working_store, **kwargs)

    yield make, loop_thread.loop
    if closing is not None:
        loop_thread.run(closing.close())
