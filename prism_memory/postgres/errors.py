"""Map psycopg errors to the package's typed errors (the emulator raises the same types)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from ..errors import (
    SQLSTATE_ERRORS,
    DimensionMismatchError,
    InvalidEmbeddingError,
    PrismMemoryError,
    SchemaVersionError,
    StoreError,
)


def translate(error: psycopg.Error) -> PrismMemoryError:
    """The typed error for a psycopg error: by our SQLSTATEs, then pgvector's messages, else :class:`StoreError`."""
    state = error.sqlstate or ""
    message = (error.diag.message_primary if error.diag else None) or str(error)
    if state in SQLSTATE_ERRORS:
        return SQLSTATE_ERRORS[state](message)
    if state == "22000" and "dimensions" in message:
        return DimensionMismatchError(message)
    if state in ("22000", "22P02") and ("vector" in message or "NaN" in message or "infinite" in message):
        return InvalidEmbeddingError(message)
    if state in ("42883", "3F000", "42P01"):
        return SchemaVersionError(f"the prism-memory schema is not installed or out of date ({message}); run migrations")
    return StoreError(message)


@contextmanager
def wrap_exceptions() -> Iterator[None]:
    """Re-raise any ``psycopg.Error`` inside the block as its typed prism-memory error."""
    try:
        yield
    except psycopg.Error as exc:
        raise translate(exc) from exc
