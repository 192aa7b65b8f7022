"""PostgreSQL/pgvector adapter: thin typed callers of the versioned SQL functions."""

from .store import PostgresMemoryStores, PostgresVectorStore, PostgresWorkingStore, create_postgres_memory_stores

__all__ = ["PostgresMemoryStores", "PostgresVectorStore", "PostgresWorkingStore", "create_postgres_memory_stores"]
