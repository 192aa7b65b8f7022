"""Redaction of text and JSON before anything is persisted or injected.

``secrets`` are literal strings replaced by :data:`REDACTED` wherever they
occur; the host ``redactor`` then maps each string to its redacted form. Both
apply to entry text, metadata (keys and string values, at any depth), lineage
reasons, working memory, recall queries, and again to everything recall and
export return. Entry ids (and lineage source ids) are identifiers and are never
rewritten: keep secrets out of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .checks import entry_label
from .errors import ConfigurationError
from .jsoncodec import json_document
from .types import MemoryEntry, MemoryLineage

REDACTED = "[REDACTED]"

#: Host hook: receives a string, returns it redacted.
Redactor = Callable[[str], str]

#: A returned entry: a dataclass with ``text`` and ``metadata`` (``MemoryRecord``, ``RecallHit``, ``AdjacentEntry``).
Returned = TypeVar("Returned")


class Redaction:
    """Applies ``secrets`` (non-empty strings, longest first) then ``redactor`` to strings and JSON values.

    Raises :class:`ConfigurationError` for an empty or non-string secret, and
    when the redactor returns something other than a ``str``.
    """

    def __init__(self, secrets: Sequence[str] | None = None, redactor: Redactor | None = None) -> None:
        secrets = list(secrets or [])
        if any(not isinstance(secret, str) or not secret for secret in secrets):
            raise ConfigurationError("secrets must be non-empty strings")
        self._secrets = sorted(set(secrets), key=len, reverse=True)
        self._redactor = redactor

    @property
    def active(self) -> bool:
        return bool(self._secrets) or self._redactor is not None

    def text(self, value: str) -> str:
        """``value`` with every secret replaced and the redactor applied."""
        for secret in self._secrets:
            value = value.replace(secret, REDACTED)
        if self._redactor is not None:
            redacted = self._redactor(value)
            if not isinstance(redacted, str):
                raise ConfigurationError(f"the redactor returned {type(redacted).__name__}, not str")
            value = redacted
        return value

    def metadata(self, value: Any) -> Any:
        """Entry metadata redacted, except ``_lineage.sourceIds``: entry ids are never redacted (keep secrets out of ids)."""
        if not self.active or not isinstance(value, dict):
            return self.value(value)
        lineage = value.get("_lineage")
        redacted = self.value({key: item for key, item in value.items() if key != "_lineage"})
        if "_lineage" in value:
            if isinstance(lineage, dict):
                lineage = {key: item if key == "sourceIds" else self.value(item) for key, item in lineage.items()}
            redacted["_lineage"] = lineage
        return redacted

    def entry(self, entry: MemoryEntry, position: int) -> MemoryEntry:
        """A copy of ``entry`` (the ``position``-th of its batch, from 1) with its text, metadata, lineage reason and
        reflection redacted (the entry itself when inactive).

        Its metadata and reflection are checked as JSON documents first (:class:`InvalidEntryError` for one
        that is not, or nests too deep), so that redaction walks only what may be stored.
        """
        if not self.active:
            return entry
        where = entry_label(position, entry.id if isinstance(entry.id, str) else None)
        for name, document in (("metadata", entry.metadata), ("reflection", entry.reflection)):
            if document is not None:  # shape and depth are checked before redaction walks them
                json_document(document, f"{where}: {name}")
        lineage = entry.lineage
        if isinstance(lineage, MemoryLineage) and isinstance(lineage.reason, str):
            lineage = dataclasses.replace(lineage, reason=self.text(lineage.reason))
        return dataclasses.replace(
            entry,
            text=self.value(entry.text),
            metadata=self.metadata(entry.metadata),
            lineage=lineage,
            reflection=None if entry.reflection is None else self.value(entry.reflection),
        )

    def record(self, record: Returned) -> Returned:
        """A copy of a returned entry with its ``text`` and :meth:`metadata` redacted (the entry itself when inactive).

        Raises :class:`ConfigurationError` when the redactor returns something other than a ``str``.
        """
        if not self.active:
            return record
        return dataclasses.replace(record, text=self.text(record.text), metadata=self.metadata(record.metadata))

    def value(self, value: Any) -> Any:
        """A JSON value with every string (object keys included) redacted; other values unchanged."""
        if not self.active:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(key) if isinstance(key, str) else key: self.value(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(item) for item in value]
        return value
