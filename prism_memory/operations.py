"""The one registry of store operations.

Each operation of the store contract appears in four places, and this table
ties them together: the store Protocol method (``prism_memory.stores``), which
both the emulator and the Postgres adapter implement; the named query that
the Postgres adapter sends (``prism_memory.postgres.queries.Queries``); and
the versioned SQL function it calls, whose live definition is
``sql/schema/functions/<function>.sql``. :data:`GUARDS` lists the checks sent
before some operations in the same transaction (the embedding-model guard). ``tests/schema/test_operations.py`` checks
that all four name the same operations, and :data:`API_FUNCTIONS` (what an
application role may execute) is derived from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Operation:
    """One store operation.

    ``protocol``: the Protocol in ``prism_memory.stores`` that declares
    ``method``; ``query``: the field of ``Queries`` holding its statement;
    ``function``: the SQL function that statement calls (tenant first), with
    its identity argument types in ``arguments`` (as ``GRANT EXECUTE`` names
    them).
    """

    protocol: str
    method: str
    query: str
    function: str
    arguments: str


_SCOPE = "text, text, text"
_RAG_READ = "jsonb, boolean, text, text[], bigint"
#: A read's selection (``recall_selection_v1``): the filter, then the event-time and write-time windows.
_SELECTION = "jsonb, timestamptz, timestamptz, timestamptz, timestamptz"

OPERATIONS: tuple[Operation, ...] = (
    Operation("WorkingStore", "get_working", "get_working", "get_working_v1", _SCOPE),
    Operation("WorkingStore", "update_working", "update_working", "update_working_v1", f"{_SCOPE}, jsonb, bigint"),
    Operation("VectorStore", "remember", "remember", "remember_v3",
              f"{_SCOPE}, text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz[], "
              "interval[], timestamptz, timestamptz[]"),
    Operation("VectorStore", "remember_batch", "remember_batch", "remember_batch_v3",
              "text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], "
              "timestamptz[], interval[], timestamptz, timestamptz[]"),
    Operation("VectorStore", "recall", "recall", "recall_v4",
              f"{_SCOPE}, vector, text, integer, integer, boolean, text, boolean, timestamptz, "
              f"double precision, double precision, double precision, boolean, text, {_SELECTION}, double precision"),
    Operation("VectorStore", "share_with", "share_with", "share_with_v1",
              f"{_SCOPE}, text, text, text[], timestamptz, timestamptz"),
    Operation("VectorStore", "invalidate", "invalidate", "invalidate_v1", f"{_SCOPE}, text[], text, timestamptz"),
    Operation("VectorStore", "purge", "purge", "purge_v1", f"{_SCOPE}, text[]"),
    Operation("VectorStore", "erase_walk", "erase_walk", "erase_walk_v1", f"{_SCOPE}, text[], text, timestamptz"),
    Operation("VectorStore", "purge_tombstoned", "purge_tombstoned", "purge_v2", f"{_SCOPE}, text[]"),
    Operation("VectorStore", "set_consent", "set_consent", "set_consent_v2",
              f"{_SCOPE}, text, boolean, text, text, timestamptz, timestamptz, timestamptz"),
    Operation("VectorStore", "correct", "correct", "correct_v3", f"{_SCOPE}, text, text, vector, timestamptz"),
    Operation("VectorStore", "retention_candidates", "retention_candidates", "retention_candidates_v2",
              f"{_SCOPE}, double precision, integer, integer, timestamptz"),
    Operation("VectorStore", "list_by_thread", "list_entries", "list_entries_v3",
              f"{_SCOPE}, bigint, text, integer, boolean, timestamptz, {_SELECTION}"),
    Operation("VectorStore", "count_by_thread", "count_entries", "count_entries_v1", _SCOPE),
    Operation("VectorStore", "list_by_resource", "list_resource_entries", "list_resource_entries_v2",
              f"text, text, text, bigint, text, integer, boolean, timestamptz, {_SELECTION}"),
    Operation("VectorStore", "count_by_resource", "count_resource_entries", "count_resource_entries_v1", "text, text"),
    Operation("VectorStore", "invalidate_resource", "invalidate_resource", "invalidate_resource_v1",
              "text, text, text, bigint, text, integer, boolean, timestamptz"),
    Operation("VectorStore", "purge_resource", "purge_resource", "purge_resource_v1", "text, text, text[], text[]"),
    Operation("VectorStore", "set_retention_policy", "set_retention_policy", "set_retention_policy_v1",
              f"{_SCOPE}, double precision, timestamptz"),
    Operation("VectorStore", "get_retention_policy", "get_retention_policy", "get_retention_policy_v1", _SCOPE),
    Operation("VectorStore", "reembed", "reembed", "reembed_v1", f"{_SCOPE}, text[], text[], vector[]"),
    Operation("RagVectorStore", "upsert", "rag_upsert", "rag_upsert_v1",
              "text, text, text[], text[], text[], vector[], jsonb[], bigint[], bigint"),
    Operation("RagVectorStore", "query", "rag_query", "rag_query_v1", f"text, text, vector, integer, {_RAG_READ}"),
    Operation("RagVectorStore", "lexical_query", "rag_lexical_query", "rag_lexical_query_v1",
              f"text, text, text, integer, {_RAG_READ}"),
    Operation("RagVectorStore", "get_by_source", "rag_get_by_source", "rag_get_by_source_v1",
              "text, text, text, text, integer, boolean, text, text[], bigint"),
    Operation("RagVectorStore", "delete", "rag_delete", "rag_delete_v1", "text, text, text[], text, bigint"),
    Operation("RagVectorStore", "get_current_generation", "rag_get_generation", "rag_get_generation_v1", "text, text"),
    Operation("RagVectorStore", "set_current_generation", "rag_set_generation", "rag_set_generation_v1",
              "text, text, bigint"),
    Operation("RagVectorStore", "set_source_access", "rag_set_source_access", "rag_set_source_access_v1",
              "text, text, text[], text[], bigint"),
    Operation("RagVectorStore", "check_source_access", "rag_check_source_access", "rag_check_source_access_v1",
              "text, text, text, text[], bigint"),
)



@dataclass(frozen=True, slots=True)
class Guard:
    """The embedding-model guard of the ``VectorStore`` writes, which the Postgres store sends only when the
    call names an :class:`~prism_memory.types.EmbeddingModel` (an embedder with a ``model_id``).

    ``query``: the field of ``Queries`` holding its statement; ``function``: the SQL function it calls
    (tenant first), with its identity argument types in ``arguments``; ``methods``: the operations it
    guards. Its statement is sent first, in the operation's transaction, so what it checked holds until
    the write commits. A recall needs no guard of its own: ``recall_v4`` takes the model
    (``p_model_id``) and checks it in the same call.
    """

    query: str
    function: str
    arguments: str
    methods: tuple[str, ...]


GUARDS: tuple[Guard, ...] = (
    Guard("use_embedding_model", "use_embedding_model_v1", "text, text[], text[], text, integer, boolean",
          ("remember", "remember_batch", "correct", "reembed")),
)

#: API functions no store operation calls any more, kept (granted and delegated like the others) for the
#: application servers of the release before during a rolling upgrade and for direct SQL callers:
#: ``recall_v3`` is ``recall_v4`` without a selection, ranked with the lexical weight 0.25; ``remember_v2`` and
#: ``remember_batch_v2`` are the v3 functions without ``occurred_at``, which answer them; ``list_entries_v2`` and
#: ``list_resource_entries_v1`` the selecting lists without a selection or ``occurred_at``; ``set_consent_v1`` and
#: ``correct_v2`` their successors less the record's ``occurred_at``.
RETAINED_FUNCTIONS: tuple[tuple[str, str], ...] = (
    ("recall_v3", f"{_SCOPE}, vector, text, integer, integer, boolean, text, boolean, timestamptz, "
                  "double precision, double precision, double precision, boolean, text"),
    ("remember_v2", f"{_SCOPE}, text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], "
                    "timestamptz[], interval[], timestamptz"),
    ("remember_batch_v2", "text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], "
                          "jsonb[], timestamptz[], interval[], timestamptz"),
    ("list_entries_v2", f"{_SCOPE}, bigint, text, integer, boolean, timestamptz"),
    ("list_resource_entries_v1", "text, text, text, bigint, text, integer, boolean, timestamptz"),
    ("set_consent_v1", f"{_SCOPE}, text, boolean, text, text, timestamptz, timestamptz, timestamptz"),
    ("correct_v2", f"{_SCOPE}, text, text, vector, timestamptz"),
)

#: The functions an application calls, with their argument types: ``install_info_v1`` (which the
#: Python caller checks first, executable by anyone), every operation's function, every guard's and the
#: retained ones (SECURITY DEFINER). A replaced one that no operation, guard or live function calls is
#: retired: the first revision after the one that replaced it was released drops it (docs/architecture.md).
API_FUNCTIONS: tuple[tuple[str, str], ...] = (
    (("install_info_v1", ""),)
    + tuple((operation.function, operation.arguments) for operation in OPERATIONS)
    + tuple((guard.function, guard.arguments) for guard in GUARDS)
    + RETAINED_FUNCTIONS
)
