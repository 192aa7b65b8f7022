"""The MCP tools' contract: their argument and result models, the behaviour hints they publish, and how a
function becomes an SDK tool with a strict input schema and a compact output schema."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from ..types import MemoryRecord, RecallResult, WorkingMemoryRecord


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


class NewEntry(_Strict):
    """One entry to remember."""

    text: Annotated[str, Field(description="The fact, in one or a few sentences.")]
    metadata: Annotated[dict[str, Any] | None, Field(description="Optional JSON object stored with the entry.")] = None
    importance: Annotated[float | None, Field(ge=0, le=1, description="0..1; overrides the call's importance.")] = None
    derived_from: Annotated[
        list[str] | None,
        Field(max_length=32, description="Ids of entries (same thread) it derives from; it is retracted when they are."),
    ] = None
    occurred_at: Annotated[AwareDatetime | None, Field(
        description="When it happened or was said (ISO 8601 with an offset); default: now.")] = None


class ConsentChoice(_Strict):
    """The consent stored with new entries (their source is the server's, e.g. "agent")."""

    visible: Annotated[bool, Field(description="false stores the entries hidden from recall.")] = True
    scope: Annotated[
        Literal["thread", "profile", "user"], Field(description="How far the entries may travel: thread, profile or user.")
    ] = "thread"


Thread = Annotated[str | None, Field(description="A thread of this user's memory (default: the server's thread).")]
EntryThread = Annotated[str | None, Field(
    description="The thread the entries are in: a recall hit's thread (default: the server's thread).")]
EntryId = Annotated[str, Field(description="An entry id, as remember or recall returned it.")]
EntryIds = Annotated[list[str], Field(min_length=1, max_length=64, description="1 to 64 entry ids.")]
Cursor = Annotated[str | None, Field(description="next_cursor of the previous page; omit for the first page.")]
MetadataFilter = Annotated[dict[str, Any] | None, Field(
    description='Only entries whose metadata matches, e.g. {"tag": "billing"} or {"priority": {"$gte": 2}} '
                "(operators $eq $ne $gt $gte $lt $lte $in $nin $exists $contains, $and $or $not).")]


def _window_bound(description: str) -> Any:
    return Annotated[AwareDatetime | None, Field(description=description + " (ISO 8601 with an offset).")]


OccurredAfter = _window_bound("Only entries that happened at or after this time")
OccurredBefore = _window_bound("Only entries that happened before this time")
CreatedAfter = _window_bound("Only entries stored at or after this time")
CreatedBefore = _window_bound("Only entries stored before this time")


class ConsentState(BaseModel):
    source: str
    scope: str
    visible: bool
    granted_at: datetime | None
    revoked_at: datetime | None


class Entry(BaseModel):
    """A stored entry."""

    id: str
    text: str
    thread: str
    sequence: int
    importance: float | None
    metadata: dict[str, Any]
    consent: ConsentState | None
    legal_hold: bool
    created_at: datetime
    updated_at: datetime
    occurred_at: datetime | None

    @classmethod
    def of(cls, record: MemoryRecord, thread: str) -> Entry:
        consent = None if record.consent is None else ConsentState(**dataclasses.asdict(record.consent))
        return cls(
            id=record.id, text=record.text, thread=thread, sequence=record.sequence, importance=record.importance,
            metadata=record.metadata, consent=consent, legal_hold=record.legal_hold,
            created_at=record.created_at, updated_at=record.updated_at, occurred_at=record.occurred_at,
        )


class Hit(BaseModel):
    """A recalled entry: ``score = similarity + lexical_weight * lexical`` (0.75 unless the server sets another)."""

    id: str
    text: str
    thread: str
    sequence: int
    score: float
    similarity: float
    lexical: float
    importance: float | None
    metadata: dict[str, Any]


class Adjacent(BaseModel):
    """An entry next to a hit in its thread (within message_range sequences)."""

    id: str
    text: str
    thread: str
    sequence: int
    metadata: dict[str, Any]


class Recalled(BaseModel):
    thread: str
    hits: list[Hit]
    adjacent: list[Adjacent]

    @classmethod
    def of(cls, result: RecallResult, thread: str) -> Recalled:
        # One validation of the whole result from plain dicts: a third faster than a model built per hit.
        return cls.model_validate({
            "thread": thread,
            "hits": [{"id": h.id, "text": h.text, "thread": h.thread_id or thread, "sequence": h.sequence, "score": h.score,
                      "similarity": h.similarity, "lexical": h.lexical, "importance": h.importance, "metadata": h.metadata}
                     for h in result.hits],
            "adjacent": [{"id": a.id, "text": a.text, "thread": a.thread_id or thread, "sequence": a.sequence,
                          "metadata": a.metadata}
                         for a in result.adjacent],
        })


class Remembered(BaseModel):
    thread: str
    ids: list[str] = Field(description="The new entries' ids, in the order given.")
    stored: int


class WorkingMemory(BaseModel):
    """The user's working-memory document; version 0 and no data before the first update."""

    version: int
    data: dict[str, Any] | None
    updated_at: datetime | None

    @classmethod
    def of(cls, record: WorkingMemoryRecord | None) -> WorkingMemory:
        if record is None:
            return cls(version=0, data=None, updated_at=None)
        return cls(version=record.version, data=record.data, updated_at=record.updated_at)


class MemoryPage(BaseModel):
    thread: str
    entries: list[Entry]
    next_cursor: str | None


class Forgotten(BaseModel):
    thread: str
    deleted: int


class Held(BaseModel):
    thread: str
    ids: list[str] = Field(description="The ids given, tombstoned as held; the entries among them are kept under legal hold.")


class Swept(BaseModel):
    thread: str
    deleted: int
    scanned: int


class Exported(BaseModel):
    thread: str
    entries: list[dict[str, Any]]
    bytes: int
    next_cursor: str | None


class Rebuilt(BaseModel):
    thread: str
    rebuilt: int
    next_cursor: str | None


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
REPLACING = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
DESTRUCTIVE_IDEMPOTENT = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
IDEMPOTENT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def strict_tool(fn: Callable[..., Awaitable[BaseModel]], annotations: ToolAnnotations, description: str | None = None) -> Tool:
    """``fn`` (an async function returning a result model) as an SDK :class:`Tool` whose arguments refuse unknown
    names (``additionalProperties: false`` in its input schema): a ``tenant`` or ``resource`` argument is an
    error the model reads, not silently dropped; an argument's error never repeats its value.

    Both schemas are :func:`compact_schema`'s forms of pydantic's: no ``$ref`` or ``$defs``, and in the input
    schema an optional argument is one left out of ``required``, never an ``anyOf`` with ``null`` (forms some
    clients refuse). A result's text is its compact JSON (no indentation), next to the same structured content.
    ``description`` replaces the docstring as the tool's description."""
    tool = Tool.from_function(fn, annotations=annotations, structured_output=True, description=description)
    loose = tool.fn_metadata.arg_model
    # hide_input_in_errors: a refused argument's message names it and says why, without echoing its value (which
    # may hold a secret the server's redaction would take out of everything else it returns).
    config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    strict = type(loose.__name__, (loose,), {"model_config": config, "__module__": loose.__module__})
    tool.fn_metadata.arg_model = strict
    tool.parameters = compact_schema(strict.model_json_schema(by_alias=True), inputs=True)
    if tool.fn_metadata.output_schema is not None:
        tool.fn_metadata.output_schema = compact_schema(tool.fn_metadata.output_schema)
    # The structured content is the dump of a validated instance of the output model, so it passes that model by
    # construction: without the model the SDK does not check it again at each call (about 25 us of a recall);
    # the output schema it publishes, which clients check results against, stays.
    tool.fn_metadata.output_model = None

    @functools.wraps(fn)
    async def compact_result(**arguments: Any) -> CallToolResult:
        result = await fn(**arguments)
        return CallToolResult(content=[TextContent(type="text", text=result.model_dump_json())],
                              structured_content=result.model_dump(mode="json"))

    tool.fn = compact_result
    return tool


def compact_schema(schema: dict[str, Any], *, inputs: bool = False) -> dict[str, Any]:
    """``schema`` (a JSON Schema pydantic generated) in an equivalent form that validates faster and that every
    client reads: each local ``$ref`` replaced by the definition it names (no ``$defs`` left; the models here are
    not recursive), the generated ``title`` and the default ``additionalProperties: true`` left out. Descriptions
    stay.

    Output schemas (``inputs`` false): an ``anyOf`` of bare types (``T | None``) is written as one ``type`` list.
    A client checks every tool result against the published schema (the SDK's client with ``jsonschema``): for
    a recall of 8 hits this form takes about a third less time to check than pydantic's.

    Input schemas (``inputs`` true): ``null`` is taken out of every ``anyOf`` (an ``anyOf`` left with one choice
    becomes that choice) and a ``default`` of ``null`` goes: an optional argument is one that is not required,
    which is how clients that refuse ``anyOf [T, null]`` read it (the server still takes an explicit ``null``).
    Raises :class:`ValueError` for a schema nested over 32 levels (a recursive model)."""
    definitions = schema.get("$defs", {})

    def compact(node: Any, depth: int = 0) -> Any:
        if depth > 32:
            raise ValueError("the schema nests too deeply to inline (a recursive model?)")
        if isinstance(node, list):
            return [compact(item, depth + 1) for item in node]
        if not isinstance(node, dict):
            return node
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/$defs/"):
            target = definitions[reference.removeprefix("#/$defs/")]
            node = {**target, **{key: value for key, value in node.items() if key != "$ref"}}
        out = {}
        for key, value in node.items():
            if key in ("$defs", "title") or (key == "additionalProperties" and value is True):
                continue  # annotations and defaults; a property's own name is kept below
            if key in ("properties", "patternProperties") and isinstance(value, dict):
                out[key] = {name: compact(subschema, depth + 1) for name, subschema in value.items()}
            else:
                out[key] = compact(value, depth + 1)
        return without_null(out) if inputs else as_type_list(out)

    return compact(schema)


def without_null(node: dict[str, Any]) -> dict[str, Any]:
    """An input schema's ``node`` with ``null`` out of its ``anyOf`` and without a ``null`` default."""
    if "default" in node and node["default"] is None:
        del node["default"]
    choices = node.get("anyOf")
    if not choices or {"type": "null"} not in choices:
        return node
    kept = [choice for choice in choices if choice != {"type": "null"}]
    rest = {key: value for key, value in node.items() if key != "anyOf"}
    return {**kept[0], **rest} if len(kept) == 1 else {**rest, "anyOf": kept}


def as_type_list(node: dict[str, Any]) -> dict[str, Any]:
    """An output schema's ``node`` with an ``anyOf`` of bare types written as one ``type`` list."""
    choices = node.get("anyOf")
    if choices and all(set(choice) == {"type"} and isinstance(choice["type"], str) for choice in choices):
        del node["anyOf"]
        node["type"] = [choice["type"] for choice in choices]
    return node
