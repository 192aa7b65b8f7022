"""PostgreSQL/pgvector adapter: thin typed callers of the versioned SQL functions."""

from .factories import PostgresMemoryStores, create_postgres_memory_stores, create_postgres_vector_store
from .rag import PostgresRagStore, PostgresRagTransaction
from .store import PostgresVectorStore, PostgresWorkingStore

__all__ = [
    "PostgresMemoryStores",
    "PostgresRagStore",
    "PostgresRagTransaction",
    "PostgresVectorStore",
    "PostgresWorkingStore",
    "create_postgres_memory_stores",
    "create_postgres_vector_store",
]
