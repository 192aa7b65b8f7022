"""Where an install lives and which revision this package needs.

:class:`SchemaConfig` validates the schema and table names of an install and
renders every name the SQL templates use (always double-quoted, never
interpolated raw); :data:`SCHEMA_VERSION` is the revision this package's
functions need; :func:`installed_revision` reads the revision a database
holds. Both :mod:`prism_memory.schema` (rendering, migrations, roles) and
:mod:`prism_memory.citus` (distribution) build on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import sql_source
from .errors import InvalidIdentifierError, LimitExceededError
from .lexical import stopwords_sql_literal

#: Revisions in order (``sql/migrations/NNNN_<name>.sql``; ``.down.sql`` reverts one).
REVISIONS: tuple[str, ...] = tuple(sql_source.revisions())
#: The schema revision this package's functions need and understand: the newest.
SCHEMA_VERSION = int(REVISIONS[-1])

DEFAULT_SCHEMA = "prism_memory"
DEFAULT_TABLE = "semantic_memory"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_LONGEST_SUFFIX = "_rag_scope_generations"
#: Widest pinned embedding kept in-line (STORAGE PLAIN); wider ones use pgvector's EXTERNAL.
PLAIN_STORAGE_MAX_DIMENSIONS = 1536
MAX_DIMENSIONS = 16000


def quote_identifier(name: str) -> str:
    """Double-quote an already validated identifier (``Mixed-Case`` -> ``"Mixed-Case"``)."""
    return '"' + name.replace('"', '""') + '"'


def validate_identifier(kind: str, name: object, max_bytes: int = 63) -> str:
    """Return ``name`` if it is a usable schema/table identifier, else raise :class:`InvalidIdentifierError`.

    Allowed: ASCII letters, digits, ``_`` and ``-``, not starting with a digit or
    ``-``, at most ``max_bytes`` bytes (Postgres truncates longer names at 63).
    Mixed case is kept (the name is always quoted).
    """
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise InvalidIdentifierError(
            f"{kind} name {name!r} is not allowed: use ASCII letters, digits, '_' and '-', starting with a letter or '_'"
        )
    if len(name.encode()) > max_bytes:
        raise InvalidIdentifierError(f"{kind} name {name!r} is longer than {max_bytes} bytes")
    return name


@dataclass(frozen=True, slots=True)
class SchemaConfig:
    """Where and how the memory tables live.

    ``schema``/``table`` are identifiers (validated, always quoted); the table
    name is at most 41 bytes so that ``<table>_rag_scope_generations`` fits in 63.
    ``dimensions`` pins the embedding column to ``vector(N)`` (and builds HNSW);
    ``None`` leaves it unpinned (``vector``), checked per thread instead.
    """

    schema: str = DEFAULT_SCHEMA
    table: str = DEFAULT_TABLE
    dimensions: int | None = None

    def __post_init__(self) -> None:
        validate_identifier("schema", self.schema)
        validate_identifier("table", self.table, 63 - len(_LONGEST_SUFFIX))
        if self.dimensions is not None and (
            isinstance(self.dimensions, bool)
            or not isinstance(self.dimensions, int)
            or not 1 <= self.dimensions <= MAX_DIMENSIONS
        ):
            raise LimitExceededError(f"dimensions must be an integer between 1 and {MAX_DIMENSIONS}, got {self.dimensions!r}")

    @property
    def names(self) -> dict[str, str]:
        """Every placeholder of the SQL templates, rendered for this config."""
        schema = quote_identifier(self.schema)

        def table(suffix: str = "") -> str:
            return f"{schema}.{quote_identifier(self.table + suffix)}"

        def index(suffix: str) -> str:
            return quote_identifier(self.table + suffix)

        dims = self.dimensions
        return {
            "schema": schema,
            "entries": table(),
            "working": table("_working"),
            "invalidation": table("_invalidation"),
            "share_grant": table("_share_grant"),
            "rag_source_acl": table("_rag_source_acl"),
            "rag_scope_generations": table("_rag_scope_generations"),
            "rag_chunk": table("_rag_chunk"),
            "rag_source_version": table("_rag_source_version"),
            "tenant_binding": table("_tenant_binding"),
            "embedding_model": table("_embedding_model"),
            "retention_policy": table("_retention_policy"),
            "entries_scope_idx": index("_scope_idx"),
            "entries_tsv_idx": index("_tsv_idx"),
            "entries_lineage_idx": index("_lineage_idx"),
            "entries_hnsw_idx": index("_hnsw_idx"),
            "entries_travel_idx": index("_travel_idx"),
            "entries_travel_hnsw_idx": index("_travel_hnsw_idx"),
            "rag_source_acl_grantee_idx": index("_rag_source_acl_grantee_idx"),
            "share_grant_child_idx": index("_share_grant_child_idx"),
            "tenant_binding_role_idx": index("_tenant_role_idx"),
            "rag_chunk_source_idx": index("_rag_chunk_source_idx"),
            "rag_chunk_tsv_idx": index("_rag_chunk_tsv_idx"),
            "rag_chunk_meta_idx": index("_rag_chunk_meta_idx"),
            "rag_chunk_hnsw_idx": index("_rag_chunk_hnsw_idx"),
            "rag_chunk_stats": f"{schema}.{quote_identifier(self.table + '_rag_chunk_stats')}",
            "entries_scope_stats": f"{schema}.{quote_identifier(self.table + '_scope_stats')}",
            "invalidation_scope_stats": f"{schema}.{quote_identifier(self.table + '_invalidation_scope_stats')}",
            "embedding_type": "vector" if dims is None else f"vector({dims})",
            "embedding_storage": "plain" if dims is not None and dims <= PLAIN_STORAGE_MAX_DIMENSIONS else "external",
            "dimensions": "null" if dims is None else str(dims),
            "schema_literal": "'" + self.schema + "'",
            "table_literal": "'" + self.table + "'",
            "stopwords": stopwords_sql_literal(),
            # Since revision 0002, every function created with "set search_path from current"
            # takes this path: built-ins first, the caller's temporary objects last.
            "pin_search_path": _set_search_path("pg_catalog, %I, %I, pg_temp", self.schema),
            # The path revision 0001 created its functions with (0004 replaced it).
            "search_path_0001": _set_search_path("%I, %I, pg_catalog", self.schema),
        }


def _set_search_path(pattern: str, schema: str) -> str:
    """A statement setting the session's search_path to ``pattern`` (``%I``: the schema, then pgvector's schema)."""
    return (
        f"select pg_catalog.set_config('search_path', pg_catalog.format('{pattern}', '{schema}', "
        "(select n.nspname from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace "
        "where x.extname = 'vector')), false);"
    )


def installed_revision(conn, schema: str) -> str | None:
    """The Alembic revision recorded in ``schema`` over the psycopg connection ``conn``, or ``None`` when it has none."""
    from psycopg import sql

    table = f"{quote_identifier(schema)}.alembic_version"
    if conn.execute("select pg_catalog.to_regclass(%s)", (table,)).fetchone()[0] is None:
        return None
    row = conn.execute(sql.SQL("select max(version_num) from {}.alembic_version").format(sql.Identifier(schema))).fetchone()
    return row[0] if row else None
