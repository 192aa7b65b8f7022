"""In-memory emulator: the default stores, giving the same answers as Postgres."""

from .store import EmulatorVectorStore, create_memory_vector_store
from .working import EmulatorWorkingStore, create_memory_working_store

__all__ = ["EmulatorVectorStore", "EmulatorWorkingStore", "create_memory_vector_store", "create_memory_working_store"]
