"""Map psycopg errors to the package's typed errors (the emulator raises the same types)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import PoolClosed

from ..errors import (
    SQLSTATE_ERRORS,
    DimensionMismatchError,
    InvalidEmbeddingError,
    PrismMemoryError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
    StoreUnavailableError,
)

#: SQLSTATEs of a session the server ended or refused: ``admin_shutdown`` (``pg_terminate_backend``, a
#: fast shutdown), ``crash_shutdown``, ``cannot_connect_now`` (the server is starting or stopping).
_SERVER_GONE = frozenset({"57P01", "57P02", "57P03"})
#: ``read_only_sql_transaction``: the connection reached a server that takes no writes (a standby, or an
#: old primary fenced read-only); the transaction was refused before it changed anything.
READ_ONLY_SERVER = "25006"


def database_unavailable(error: psycopg.Error) -> bool:
    """Whether ``error`` means the database cannot be reached now (raised as :class:`StoreUnavailableError`).

    That is: an ``OperationalError`` the client raised itself (no SQLSTATE: the
    connection failed, was closed or broke; psycopg_pool's ``PoolTimeout`` and
    ``TooManyRequests``), a ``08`` connection exception, or a session the
    server ended (:data:`_SERVER_GONE`). ``PoolClosed`` is not: it is final.
    """
    if not isinstance(error, psycopg.OperationalError) or isinstance(error, PoolClosed):
        return False
    state = error.sqlstate
    return state is None or state.startswith("08") or state in _SERVER_GONE


def translate(error: psycopg.Error) -> PrismMemoryError:
    """The typed error for a psycopg error: a closed pool, a lost connection or a read-only server, then our
    SQLSTATEs, then pgvector's messages, else :class:`StoreError`."""
    state = error.sqlstate or ""
    message = (error.diag.message_primary if error.diag else None) or str(error)
    if isinstance(error, PoolClosed):
        return StoreClosedError(f"the store is closed ({message})")
    if database_unavailable(error):
        return StoreUnavailableError(f"the database is unavailable ({message}); retry later")
    if state == READ_ONLY_SERVER:
        return StoreUnavailableError(
            f"the database refused a write as read-only ({message}): the connection reached a standby or a fenced "
            "old primary; nothing was written. List every server in the DSN with target_session_attrs=read-write "
            "(docs/operations.md) and retry later"
        )
    if state in SQLSTATE_ERRORS:
        return SQLSTATE_ERRORS[state](message)
    if state == "22000" and "dimensions" in message:
        return DimensionMismatchError(message)
    if state in ("22000", "22P02") and ("vector" in message or "NaN" in message or "infinite" in message):
        return InvalidEmbeddingError(message)
    if state in ("42883", "3F000", "42P01"):
        return SchemaVersionError(f"the prism-memory schema is not installed or out of date ({message}); run migrations: prism-memory --dsn URL migrate, or prism_memory.schema.migrate")
    return StoreError(message)


@contextmanager
def wrap_exceptions() -> Iterator[None]:
    """Re-raise any ``psycopg.Error`` inside the block as its typed prism-memory error."""
    try:
        yield
    except psycopg.Error as exc:
        raise translate(exc) from exc
