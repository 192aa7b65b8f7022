"""Fixtures of the framework adapters' tests: a PrismStore factory on each backend."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from prism_memory import create_postgres_memory_stores
from prism_memory.emulator import create_memory_vector_store, create_memory_working_store
from prism_memory.integrations.langgraph import PrismStore
from conftest import TEST_CONFIG, TEST_DIMENSIONS


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic bag-of-words embedding, TEST_DIMENSIONS wide (never zero), shared by both stores."""
    vectors = []
    for text in texts:
        vector = [0.0] * TEST_DIMENSIONS
        vector[0] = 0.01
        for word in text.lower().split():
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % TEST_DIMENSIONS] += 1.0
        vectors.append(vector)
    return vectors


INDEX = {"dims": TEST_DIMENSIONS, "embed": embed, "fields": ["text"]}


@pytest.fixture(params=["memory", "postgres"])
async def make_store(request) -> AsyncIterator[Callable[..., PrismStore]]:
    """``make_store(**options)`` builds a PrismStore (tenant ``acme``, resource ``agents``, index :data:`INDEX`
    unless given) on the emulator or on Postgres; ``options`` go to :meth:`PrismStore.create`."""
    closers = []
    if request.param == "postgres":
        stores = await create_postgres_memory_stores(
            request.getfixturevalue("pg_dsn"), dimensions=TEST_CONFIG.dimensions, skip_migrations=True)
        closers.append(stores.close)
        backend = {"vector_store": stores.vector_store, "working_store": stores.working_store}
    else:
        backend = {"vector_store": create_memory_vector_store(TEST_DIMENSIONS),
                   "working_store": create_memory_working_store()}

    def make(**options: Any) -> PrismStore:
        options.setdefault("tenant_id", "acme")
        options.setdefault("resource_id", "agents")
        options.setdefault("index", INDEX)
        return PrismStore.create(**backend, **options)

    make.backend = request.param
    yield make
    for close in closers:
        await close()
