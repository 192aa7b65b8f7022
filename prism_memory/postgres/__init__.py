"""PostgreSQL/pgvector adapter: thin typed callers of the versioned SQL functions."""

from .rag import PostgresRagStore, PostgresRagTransaction
from .store import (
    PostgresMemoryStores,
    PostgresVectorStore,
    PostgresWorkingStore,
    create_postgres_memory_stores,
    create_postgres_vector_store,
)

__all__ = [
    "PostgresMemoryStores",
    "PostgresRagStore",
    "PostgresRagTransaction",
    "PostgresVectorStore",
    "PostgresWorkingStore",
    "create_postgres_memory_stores",
    "create_postgres_vector_store",
]
