"""In-memory emulator: the default stores, giving the same answers as Postgres."""

from .store import MemoryVectorStore, MemoryWorkingStore, create_memory_vector_store, create_memory_working_store

__all__ = ["MemoryVectorStore", "MemoryWorkingStore", "create_memory_vector_store", "create_memory_working_store"]
