"""The MCP server's tools: what each one does with the caller's memory, in groups :func:`create_mcp_server` registers."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from ..errors import EntryNotFoundError, InvalidEntryError, WorkingMemoryValidationError
from ..export import export_json
from ..memory import Memory
from ..redaction import Redaction
from ..types import MemoryConsent, MemoryEntry, MemoryLineage, Scope
from .directory import MemoryDirectory
from .failures import tool_errors
from .models import (
    ADDITIVE,
    DESTRUCTIVE_IDEMPOTENT,
    IDEMPOTENT,
    READ_ONLY,
    REPLACING,
    ConsentChoice,
    CreatedAfter,
    CreatedBefore,
    Cursor,
    Entry,
    EntryId,
    EntryIds,
    EntryThread,
    Exported,
    Forgotten,
    Held,
    MemoryPage,
    MetadataFilter,
    NewEntry,
    OccurredAfter,
    OccurredBefore,
    Rebuilt,
    Recalled,
    Remembered,
    Swept,
    Thread,
    WorkingMemory,
    strict_tool,
)
from .prompts import WORKING_SCHEMA_URI
from .scopes import ServerScope

#: Entries one ``remember`` call may store.
MAX_NEW_ENTRIES = 100
#: ``list_memories``: default and largest page, and the page's JSON byte cap.
LIST_LIMIT = (20, 100)
LIST_MAX_BYTES = 256 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class ToolContext:
    """What the tools of one server share: the ``directory`` of memories, ``current_scope()`` (the scope of the
    call being served), the ``consent_source`` stored with new entries and ``entry_ids()``, their ids."""

    directory: MemoryDirectory
    current_scope: Callable[[], ServerScope]
    consent_source: Literal["agent", "user", "system"]
    entry_ids: Callable[[], str]

    @property
    def redaction(self) -> Redaction:
        """The redaction of the directory's memories, which tool errors get too."""
        return self.directory.redaction

    def thread(self, thread: str | None) -> Memory:
        """The memory of ``thread`` (default: the scope's thread) of the caller's resource."""
        return self.directory.thread(self.current_scope(), thread)

    def resource(self) -> Memory:
        """The memory of the caller's resource (working memory)."""
        return self.directory.resource(self.current_scope())


def new_entry_id() -> str:
    """A fresh entry id (32 hex digits): entries the server stores get ids it chose, never the caller's."""
    return uuid.uuid4().hex


#: The namespace of :func:`keyed_entry_id`'s UUIDs.
IDEMPOTENCY_NAMESPACE = uuid.UUID("5b0e7c1e-4f3a-5d8e-9c61-2a7d0f4b8e13")
#: The longest ``idempotency_key`` ``remember`` takes.
IDEMPOTENCY_KEY_CHARS = 200


def keyed_entry_id(scope: Scope, key: str, position: int, text: str) -> str:
    """The id (32 hex digits) of the entry at 1-based ``position`` of a ``remember`` call carrying idempotency
    ``key`` in the thread ``scope``: a UUID 5 over the scope, the key, the position and the entry's text, so a
    retried call writes the same ids (a re-write of an entry, not a copy), while a key used again for other
    texts, or in another thread, resource or tenant, names other entries and overwrites none."""
    name = json.dumps([scope.tenant_id, scope.resource_id, scope.thread_id, key, position, text], ensure_ascii=False)
    return uuid.uuid5(IDEMPOTENCY_NAMESPACE, name).hex


def working_document(data: dict[str, Any] | str) -> Any:
    """``data``, or the JSON document a string holds; :class:`WorkingMemoryValidationError` for invalid JSON."""
    if not isinstance(data, str):
        return data
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise WorkingMemoryValidationError(f"data is not valid JSON: {exc}") from None


def remembering_tools(context: ToolContext) -> list[Tool]:
    """The tools that store and find entries: ``remember`` and ``recall``."""

    async def remember(
        entries: Annotated[list[str | NewEntry], Field(
            min_length=1, max_length=MAX_NEW_ENTRIES,
            description="The facts to store: each a plain text, or an object with text and optional metadata, "
                        "importance, derived_from and occurred_at.")],
        thread: Thread = None,
        importance: Annotated[float | None, Field(ge=0, le=1, description="0..1 for every entry (default: neutral).")] = None,
        consent: Annotated[ConsentChoice | None, Field(description="Visibility and scope of the new entries.")] = None,
        idempotency_key: Annotated[str | None, Field(
            min_length=1, max_length=IDEMPOTENCY_KEY_CHARS,
            description="Any string unique to this call, sent again unchanged when the call is retried: a retry "
                        "stores the same entries again (same ids) instead of new copies.")] = None,
    ) -> Remembered:
        """Store durable facts about the user. Returns the new entries' ids. A call that timed out or was
        cancelled may have stored them: retry it with the same idempotency_key."""
        with tool_errors(context.redaction):
            memory = context.thread(thread)
            choice = consent or ConsentChoice()
            now = memory.config.now()
            granted_at = now if choice.visible else None
            stored_consent = MemoryConsent(context.consent_source, choice.scope, choice.visible, granted_at=granted_at)
            given = [NewEntry(text=entry) if isinstance(entry, str) else entry for entry in entries]
            scope = memory.config.scope
            ids = ([keyed_entry_id(scope, idempotency_key, position, entry.text) for position, entry in enumerate(given, 1)]
                   if idempotency_key is not None else [context.entry_ids() for _ in given])
            items = [
                MemoryEntry(
                    entry_id, entry.text, entry.metadata,
                    importance=importance if entry.importance is None else entry.importance,
                    consent=stored_consent,
                    lineage=MemoryLineage(tuple(entry.derived_from)) if entry.derived_from else None,
                    occurred_at=entry.occurred_at,
                )
                for entry_id, entry in zip(ids, given)
            ]
            result = await memory.remember(items, wait=True)
            return Remembered(thread=scope.thread_id, ids=ids, stored=result.accepted)

    async def recall(
        query: Annotated[str, Field(description="What to look for, in natural language.")],
        thread: Thread = None,
        top_k: Annotated[int | None, Field(ge=1, le=32, description="Hits to return (default 8).")] = None,
        message_range: Annotated[int | None, Field(ge=0, le=4, description="Also return entries N turns around hits.")] = None,
        across_threads: Annotated[bool, Field(
            description="Search all of the user's threads: other threads contribute only entries whose consent "
                        "scope is 'profile' or 'user'. Each hit names its thread.")] = False,
        filter: MetadataFilter = None,
        occurred_after: OccurredAfter = None,
        occurred_before: OccurredBefore = None,
        created_after: CreatedAfter = None,
        created_before: CreatedBefore = None,
    ) -> Recalled:
        """Find the stored entries most relevant to a query (revoked and forgotten ones never come back), among
        those the filter and the time windows keep."""
        with tool_errors(context.redaction):
            memory = context.thread(thread)
            result = await memory.recall(query, top_k=top_k, message_range=message_range, across_threads=across_threads,
                                         filter=filter, occurred_after=occurred_after, occurred_before=occurred_before,
                                         created_after=created_after, created_before=created_before)
            return Recalled.of(result, memory.config.scope.thread_id)

    return [strict_tool(remember, ADDITIVE), strict_tool(recall, READ_ONLY)]


def working_memory_tools(context: ToolContext) -> list[Tool]:
    """The tools over the resource's working-memory document: ``get_working_memory`` and
    ``update_working_memory``."""

    async def get_working_memory() -> WorkingMemory:
        """Read the user's working-memory document (a versioned JSON profile)."""
        with tool_errors(context.redaction):
            return WorkingMemory.of(await context.resource().get_working())

    async def update_working_memory(
        data: Annotated[dict[str, Any] | str, Field(description="The whole new document: a JSON object.")],
        expected_version: Annotated[
            int | None, Field(ge=0, description="Refuse unless the stored version is this (0: none yet; see get_working_memory).")
        ] = None,
    ) -> WorkingMemory:
        with tool_errors(context.redaction):
            return WorkingMemory.of(await context.resource().update_working(working_document(data), expected_version))

    update = strict_tool(update_working_memory, REPLACING, update_description(context.directory.working_schema))
    return [strict_tool(get_working_memory, READ_ONLY), update]


#: The longest working-memory schema (compact JSON characters) ``update_working_memory``'s description quotes.
SCHEMA_IN_DESCRIPTION_CHARS = 4000


def update_description(schema: Mapping[str, Any] | None) -> str:
    """``update_working_memory``'s description: what it does and, when the server has a working-memory schema,
    that schema as compact JSON (over :data:`SCHEMA_IN_DESCRIPTION_CHARS` characters, a pointer to the
    ``memory://working/schema`` resource instead), so the model can write a passing document the first time."""
    text = "Replace the user's working-memory document (a JSON object)"
    if schema is None:
        return text + "; any object is accepted."
    quoted = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    if len(quoted) > SCHEMA_IN_DESCRIPTION_CHARS:
        return text + f"; it must pass the JSON Schema of the resource {WORKING_SCHEMA_URI}."
    return text + f"; it must pass this JSON Schema: {quoted}"


def entry_tools(context: ToolContext) -> list[Tool]:
    """The tools over a thread's stored entries: ``list_memories``, ``correct``, ``forget`` and ``set_consent``."""

    async def list_memories(
        thread: Thread = None,
        cursor: Cursor = None,
        limit: Annotated[int, Field(ge=1, le=LIST_LIMIT[1], description="Entries per page.")] = LIST_LIMIT[0],
        filter: MetadataFilter = None,
        occurred_after: OccurredAfter = None,
        occurred_before: OccurredBefore = None,
        created_after: CreatedAfter = None,
        created_before: CreatedBefore = None,
    ) -> MemoryPage:
        """List a thread's visible, consented entries in order, a page at a time (only those the filter and the
        time windows keep; pass them again with the cursor)."""
        with tool_errors(context.redaction):
            memory = context.thread(thread)
            page = await memory.export_memory(memory.config.scope, cursor, limit=limit, max_bytes=LIST_MAX_BYTES,
                                              filter=filter, occurred_after=occurred_after,
                                              occurred_before=occurred_before, created_after=created_after,
                                              created_before=created_before)
            name = memory.config.scope.thread_id
            entries = [Entry.of(record, name) for record in page.entries]
            return MemoryPage(thread=name, entries=entries, next_cursor=page.next_cursor)

    async def correct(
        entry_id: EntryId,
        text: Annotated[str, Field(description="The corrected text.")],
        thread: EntryThread = None,
    ) -> Entry:
        """Replace an entry's text (facts derived from it are retracted). An id not in the thread is an error."""
        with tool_errors(context.redaction), thread_hint():
            memory = context.thread(thread)
            return Entry.of(await memory.correct(entry_id, text), memory.config.scope.thread_id)

    async def forget(ids: EntryIds, thread: EntryThread = None) -> Forgotten:
        """Delete entries of one thread for good (and retract what was derived from them). Returns how many were
        deleted; ids that name no entry of the thread are an error (the others are still forgotten)."""
        with tool_errors(context.redaction):
            memory = context.thread(thread)
            deleted = await memory.forget(ids)
            name = memory.config.scope.thread_id
            if deleted.not_found:
                rest = (f"the other ids were forgotten ({deleted} deleted)" if len(deleted.not_found) < len(set(ids))
                        else "nothing was forgotten")
                raise EntryNotFoundError(f"no entry {', '.join(deleted.not_found)} in thread {name!r}{THREAD_HINT}; {rest}")
            return Forgotten(thread=name, deleted=deleted)

    async def set_consent(
        entry_id: EntryId,
        visible: Annotated[bool | None, Field(description="false revokes (hidden from recall), true grants again.")] = None,
        scope: Annotated[Literal["thread", "profile", "user"] | None, Field(description="How far the entry may travel.")] = None,
        thread: EntryThread = None,
    ) -> Entry:
        """Grant or revoke the user's consent to use an entry, or change its scope. An id not in the thread is an
        error."""
        with tool_errors(context.redaction), thread_hint():
            memory = context.thread(thread)
            if visible is None and scope is None:
                raise InvalidEntryError("set_consent needs visible or scope")
            now = memory.config.now()
            record = await memory.set_consent(
                entry_id, visible=visible, source=context.consent_source, scope=scope,
                granted_at=now if visible is True else None, revoked_at=now if visible is False else None,
            )
            return Entry.of(record, memory.config.scope.thread_id)

    return [
        strict_tool(list_memories, READ_ONLY),
        strict_tool(correct, DESTRUCTIVE_IDEMPOTENT),
        strict_tool(forget, DESTRUCTIVE_IDEMPOTENT),
        strict_tool(set_consent, DESTRUCTIVE_IDEMPOTENT),
    ]


#: What an entry-not-found error adds: recall's hits across threads name theirs, which the tools take.
THREAD_HINT = " (a recall hit names its thread: pass it as thread)"


@contextmanager
def thread_hint() -> Iterator[None]:
    """An :class:`EntryNotFoundError` leaves with :data:`THREAD_HINT` added to its message."""
    try:
        yield
    except EntryNotFoundError as exc:
        raise EntryNotFoundError(f"{exc}{THREAD_HINT}") from None


def operator_tools(context: ToolContext) -> list[Tool]:
    """The operator's tools (``create_mcp_server(admin_tools=True)``): ``legal_hold``, ``apply_retention``,
    ``export_memory`` and ``rebuild_index``."""

    async def legal_hold(ids: EntryIds, thread: Thread = None) -> Held:
        """Operator: keep entries under legal hold (never deleted, never recalled or exported)."""
        with tool_errors(context.redaction):
            memory = context.thread(thread)
            await memory.forget(ids, hold=True)
            return Held(thread=memory.config.scope.thread_id, ids=list(dict.fromkeys(ids)))

    async def apply_retention(
        max_age_days: Annotated[float | None, Field(ge=0, le=36500, description="Delete entries older than this.")] = None,
        max_entries: Annotated[int | None, Field(ge=0, description="Keep only the newest N entries.")] = None,
        batch_size: Annotated[int, Field(ge=1, le=64, description="Deletes per call; call again while deleted > 0.")] = 64,
        thread: Thread = None,
    ) -> Swept:
        """Operator: one bounded retention sweep of a thread: deletes what has expired and, when given, entries
        older than max_age_days or beyond the newest max_entries (entries under legal hold are kept)."""
        with tool_errors(context.redaction):
            memory = context.thread(thread)
            swept = await memory.apply_retention(max_age_days, max_entries, batch_size)
            return Swept(thread=memory.config.scope.thread_id, deleted=swept.deleted, scanned=swept.scanned)

    async def export_memory(
        thread: Thread = None,
        cursor: Cursor = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Entries per page.")] = 100,
    ) -> Exported:
        """Operator: one page of a thread's exportable entries (consented, visible, redacted)."""
        with tool_errors(context.redaction):
            memory = context.thread(thread)
            page = await memory.export_memory(memory.config.scope, cursor, limit=limit)
            return Exported(thread=memory.config.scope.thread_id, entries=[export_json(record) for record in page.entries],
                            bytes=page.bytes, next_cursor=page.next_cursor)

    async def rebuild_index(
        thread: Thread = None,
        cursor: Cursor = None,
        batch_size: Annotated[int, Field(ge=1, le=128, description="Entries re-embedded per call.")] = 32,
    ) -> Rebuilt:
        """Operator: re-embed one page of a thread with the server's embedder; call again with next_cursor."""
        with tool_errors(context.redaction):
            memory = context.thread(thread)
            rebuilt = await memory.rebuild_index(cursor, batch_size)
            return Rebuilt(thread=memory.config.scope.thread_id, rebuilt=rebuilt.rebuilt, next_cursor=rebuilt.next_cursor)

    return [
        strict_tool(legal_hold, DESTRUCTIVE_IDEMPOTENT),
        strict_tool(apply_retention, REPLACING),
        strict_tool(export_memory, READ_ONLY),
        strict_tool(rebuild_index, IDEMPOTENT),
    ]
