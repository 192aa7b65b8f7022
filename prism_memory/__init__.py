"""prism-memory: durable agent memory in PostgreSQL.

Working memory (a versioned, schema-checked JSON profile per tenant/resource
or thread) and semantic recall over a thread's entries with pgvector. The
rules live in versioned SQL functions; the in-memory emulator gives the same
answers. Start with :func:`create_memory`.
"""

from .embedding import Embedder, HashEmbedder, assert_finite_vector, create_hash_embedder, embed_batched
from .emulator import MemoryVectorStore, MemoryWorkingStore, create_memory_vector_store, create_memory_working_store
from .errors import (
    ConfigurationError,
    DimensionMismatchError,
    EmbeddingFailedError,
    EntryNotFoundError,
    IdentityMismatchError,
    InvalidCursorError,
    InvalidEmbeddingError,
    InvalidEntryError,
    InvalidIdentifierError,
    InvalidQueryError,
    InvalidScopeError,
    LifecycleOrderError,
    LimitExceededError,
    LineageLimitError,
    OperationTimeoutError,
    PayloadTooLargeError,
    PrismMemoryError,
    SchemaVersionError,
    StoreError,
    ValidationError,
    WorkingMemoryValidationError,
    WorkingMemoryVersionConflict,
)
from .invariants import InvariantResult, revoked_ids_absent
from .memory import Memory, create_memory
from .postgres import PostgresMemoryStores, PostgresVectorStore, PostgresWorkingStore, create_postgres_memory_stores
from .redaction import REDACTED
from .schema import build_memory_ddl, build_vector_search_ddl
from .stores import VectorStore, WorkingStore
from .types import (
    AdjacentEntry,
    ConsentChange,
    ExportPage,
    MemoryConsent,
    MemoryEntry,
    MemoryLimits,
    MemoryLineage,
    MemoryRecord,
    RebuildResult,
    RecallHit,
    RecallResult,
    RememberResult,
    RetentionResult,
    Scope,
    WorkingMemoryRecord,
)
from .working import render_template

__version__ = "0.1.0"

__all__ = [
    "REDACTED",
    "ConsentChange",
    "EntryNotFoundError",
    "ExportPage",
    "IdentityMismatchError",
    "InvalidCursorError",
    "InvariantResult",
    "LifecycleOrderError",
    "LineageLimitError",
    "MemoryConsent",
    "MemoryLineage",
    "MemoryRecord",
    "OperationTimeoutError",
    "RebuildResult",
    "RetentionResult",
    "revoked_ids_absent",
    "AdjacentEntry",
    "ConfigurationError",
    "DimensionMismatchError",
    "Embedder",
    "EmbeddingFailedError",
    "HashEmbedder",
    "InvalidEmbeddingError",
    "InvalidEntryError",
    "InvalidIdentifierError",
    "InvalidQueryError",
    "InvalidScopeError",
    "LimitExceededError",
    "Memory",
    "MemoryEntry",
    "MemoryLimits",
    "MemoryVectorStore",
    "MemoryWorkingStore",
    "PayloadTooLargeError",
    "PostgresMemoryStores",
    "PostgresVectorStore",
    "PostgresWorkingStore",
    "PrismMemoryError",
    "RecallHit",
    "RecallResult",
    "RememberResult",
    "SchemaVersionError",
    "Scope",
    "StoreError",
    "ValidationError",
    "VectorStore",
    "WorkingMemoryRecord",
    "WorkingMemoryValidationError",
    "WorkingMemoryVersionConflict",
    "WorkingStore",
    "assert_finite_vector",
    "build_memory_ddl",
    "build_vector_search_ddl",
    "create_hash_embedder",
    "create_memory",
    "create_memory_vector_store",
    "create_memory_working_store",
    "create_postgres_memory_stores",
    "embed_batched",
    "render_template",
]
