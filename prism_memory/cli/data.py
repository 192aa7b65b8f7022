"""The commands that put entries and working memory into a memory and read them back: ``import``, ``recall``,
``working get|set``, and ``demo``, which does all of it on a conversation file."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..errors import WorkingMemoryValidationError
from ..locomo import Conversation, detect_format, load_jsonl_entries, load_locomo
from ..memory import Memory
from ..types import MemoryEntry, RecallResult, WorkingMemoryRecord
from .options import Backend, Commands, UsageError, open_backend

#: Entries per ``remember(..., wait=True)`` call during an import (the embed batch hard cap).
IMPORT_BATCH = 128

#: The demo's working-memory profile: its JSON Schema and ``{{path}}`` template.
PROFILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "user": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]},
        "contacts": {"type": "array", "items": {"type": "string"}},
        "preferences": {
            "type": "object",
            "properties": {
                "answer_style": {"enum": ["concise", "detailed"]},
                "cite_evidence": {"type": "boolean"},
            },
            "additionalProperties": False,
        },
        "current_thread": {"type": "string"},
    },
    "required": ["user", "preferences"],
    "additionalProperties": False,
}
PROFILE_TEMPLATE = (
    "User: {{user.name}} (talks with {{contacts.0}})\n"
    "Answer style: {{preferences.answer_style}}; cite evidence: {{preferences.cite_evidence}}\n"
    "Current thread: {{current_thread}}"
)


def register(commands: Commands) -> None:
    """Add ``import``, ``recall``, ``working`` and ``demo`` to ``commands``."""
    sub = commands.add("import", cmd_import, "import a LoCoMo JSON or JSONL entry file (upserts by id)")
    sub.add_argument("path", metavar="PATH")
    sub.add_argument("--format", choices=("auto", "locomo", "jsonl"), default="auto",
                     help="file format (default: by extension, then by content)")

    sub = commands.add("recall", cmd_recall, "recall entries of --thread for QUERY")
    sub.add_argument("query", metavar="QUERY")
    sub.add_argument("--top-k", type=int, default=None, metavar="N", help="hits to return (1..32, default 8)")
    sub.add_argument("--message-range", type=int, default=None, metavar="N",
                     help="adjacent entries within N sequences of a hit (0..4, default 0)")
    sub.add_argument("--json", action="store_true", help="print the result as JSON")

    working = commands.group("working", "read or replace working memory")
    sub = working.add("get", cmd_working, "print the working-memory record (version + data)")
    sub.add_argument("--template", default=None, metavar="T", help="also render the record through this {{path}} template")
    sub = working.add("set", cmd_working, "replace the working-memory document")
    sub.add_argument("data", metavar="JSON", help="the new document, a JSON object")
    sub.add_argument("--expected-version", type=int, default=None, metavar="N",
                     help="fail unless the stored version is N (0: no record yet)")
    sub.add_argument("--template", default=None, metavar="T", help="also render the record through this {{path}} template")

    sub = commands.add("demo", cmd_demo, "import a conversation, set a profile, ask its questions")
    sub.add_argument("--input", default=None, metavar="PATH",
                     help="LoCoMo JSON file (default: the shipped sample); all conversations are imported, "
                          "questions come from the first")
    sub.add_argument("--questions", type=int, default=4, metavar="N", help="questions to ask (default 4)")
    sub.add_argument("--top-k", type=int, default=5, metavar="N", help="hits per question (default 5)")


def sample_conversation_path() -> Path:
    """Path of the LoCoMo-format sample conversation shipped in ``prism_memory/data``."""
    return Path(str(resources.files("prism_memory.data").joinpath("sample_conversation.json")))


def load_threads(path: str, fmt: str, default_thread: str | None) -> list[tuple[str, list[MemoryEntry]]]:
    """``[(thread_id, entries)]`` from a LoCoMo or JSONL file (``fmt``: ``auto``, ``locomo`` or ``jsonl``).

    Raises :class:`UsageError` when the file cannot be read and
    :class:`~prism_memory.locomo.DataFormatError` when it is malformed.
    """
    try:
        if fmt == "auto":
            fmt = detect_format(path)
        if fmt == "jsonl":
            return list(load_jsonl_entries(path, default_thread).items())
        return [(conversation.thread_id, conversation.entries) for conversation in load_locomo(path)]
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc


async def import_threads(
    backend: Backend, args: argparse.Namespace, threads: Sequence[tuple[str, list[MemoryEntry]]], out: Console
) -> int:
    """Embed and remember every thread's entries in batches of :data:`IMPORT_BATCH` with a progress bar (rich) that
    advances as each batch is embedded and stored; returns the count."""
    total = sum(len(entries) for _, entries in threads)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=out) as progress:
        task = progress.add_task("importing", total=total)
        for thread_id, entries in threads:
            progress.update(task, description=f"embedding {thread_id}")
            memory = backend.memory(args, thread_id)
            for start in range(0, len(entries), IMPORT_BATCH):
                result = await memory.remember(entries[start : start + IMPORT_BATCH], wait=True)
                progress.advance(task, result.accepted)
        progress.update(task, description="imported")
    return total


async def cmd_import(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Import a LoCoMo or JSONL file (upserts by entry id)."""
    threads = load_threads(args.path, args.format, args.thread)
    async with open_backend(args, status, migrate=False) as backend:
        out.print(f"backend: {backend.description}", markup=False)
        out.print(f"embedder: {backend.embedder_description}", markup=False)
        total = await import_threads(backend, args, threads, out)
    per_thread = ", ".join(f"{thread_id}: {len(entries)}" for thread_id, entries in threads[:5])
    more = ", ..." if len(threads) > 5 else ""
    out.print(f"imported {total} entries into {len(threads)} thread(s) ({per_thread}{more})", markup=False)


def recall_table(result: RecallResult, evidence: Sequence[str] = ()) -> Table:
    """The hits as a table (rank, score, similarity, lexical, id, sequence, text); ``evidence`` ids get a check mark."""
    table = Table(show_edge=False)
    for name in ("#", "score", "sim", "lex"):
        table.add_column(name, justify="right", no_wrap=True)
    if evidence:
        table.add_column("ev", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("text", overflow="fold")
    for rank, hit in enumerate(result.hits, start=1):
        mark = ["✓" if hit.id in evidence else ""] if evidence else []
        cells = [str(rank), f"{hit.score:.3f}", f"{hit.similarity:.3f}", f"{hit.lexical:.3f}", *mark, hit.id, str(hit.sequence)]
        table.add_row(*cells, Text(hit.text))
    return table


def _isoformat(value: object) -> str:
    """A recall's times in its JSON output (ISO 8601); ``TypeError`` for anything else json cannot write."""
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


async def cmd_recall(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Recall ``QUERY`` in ``--thread`` and print the hits and adjacent entries."""
    if not args.thread:
        raise UsageError("recall needs --thread ID (a LoCoMo import names each thread after its sample_id)")
    async with open_backend(args, status, migrate=False) as backend:
        result = await backend.memory(args, args.thread).recall(args.query, args.top_k, args.message_range)
        if args.json:
            payload = {"backend": backend.description, "embedder": backend.embedder_description, "thread_id": args.thread,
                       "query": args.query, **dataclasses.asdict(result)}
            sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2, default=_isoformat) + "\n")
            return
        out.print(f"backend: {backend.description}", markup=False)
        out.print(f"embedder: {backend.embedder_description}", markup=False)
    out.print(recall_table(result))
    if result.adjacent:
        out.print(Text("adjacent entries:"))
        for entry in result.adjacent:
            out.print(Text(f"  {entry.sequence:>5}  {entry.id}  {entry.text}"))


def print_record(out: Console, record: WorkingMemoryRecord | None, rendered: str | None) -> None:
    """Print a working-memory record: version, timestamps, JSON data, then the rendered template if any."""
    if record is None:
        out.print("no working memory for this scope (version 0)")
        return
    out.print(f"version {record.version} (updated {record.updated_at:%Y-%m-%d %H:%M:%S %Z})", markup=False)
    out.print(Text(json.dumps(record.data, ensure_ascii=False, indent=2)))
    if rendered is not None:
        out.print(Text("rendered:\n" + rendered))


async def cmd_working(args: argparse.Namespace, out: Console, status: Console) -> None:
    """``working get`` / ``working set JSON``: read or replace the scope's working memory."""
    if args.action == "set":
        try:
            data = json.loads(args.data)
        except json.JSONDecodeError as exc:
            raise UsageError(f"working set: the document is not valid JSON ({exc})") from exc
    async with open_backend(args, status, migrate=False) as backend:
        memory = backend.memory(args, args.thread, working_memory_template=args.template)
        if args.action == "set":
            record = await memory.update_working(data, args.expected_version)
        else:
            record = await memory.get_working()
        rendered = await memory.render_working() if args.template is not None else None
    print_record(out, record, rendered)


async def cmd_demo(args: argparse.Namespace, out: Console, status: Console) -> None:
    """Import a conversation file, set a schema-checked profile, ask its questions, show the evidence hits."""
    if args.questions < 1:
        raise UsageError(f"--questions must be at least 1, got {args.questions}")
    path = args.input or str(sample_conversation_path())
    try:
        conversations = load_locomo(path)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not conversations:
        raise UsageError(f"{path} holds no conversations")
    first = conversations[0]
    async with open_backend(args, status, migrate=True) as backend:
        out.rule("prism-memory demo")
        out.print(Text(f"backend: {backend.description}", style="bold"))
        out.print(Text(f"embedder: {backend.embedder_description}", style="bold"))
        out.print(Text(f"input: {path} ({len(conversations)} conversation(s))"))
        total = await import_threads(backend, args, [(c.thread_id, c.entries) for c in conversations], out)
        out.print(Text(f"imported {total} entries into {len(conversations)} thread(s), upserted by id"))

        profile = backend.memory(args, None, schema=PROFILE_SCHEMA, working_memory_template=PROFILE_TEMPLATE)
        record = await set_demo_profile(profile, first, out)

        questions = [q for q in first.questions if q.evidence and q.answer is not None][: args.questions]
        memory = backend.memory(args, first.thread_id)
        found = 0
        for number, question in enumerate(questions, start=1):
            result = await memory.recall(question.question, args.top_k)
            hit = any(h.id in question.evidence for h in result.hits)
            found += hit
            out.print()
            out.print(Text(f"Q{number} [{first.thread_id}] {question.question}", style="bold"))
            out.print(Text(f"   answer: {question.answer}; evidence: {', '.join(question.evidence)}"))
            out.print(recall_table(result, question.evidence))
        out.print()
        out.print(Text(f"evidence turn in the top {args.top_k} for {found} of {len(questions)} questions", style="bold"))
        out.rule(f"working memory (resource {args.resource}, version {record.version}, rendered)")
        out.print(Text(await profile.render_working()))
        out.print(Text(f"served by: {backend.description}; answers embedded by {backend.embedder_description}", style="dim"))


async def set_demo_profile(profile: Memory, conversation: Conversation, out: Console) -> WorkingMemoryRecord:
    """Write the demo profile (compare-and-set on the current version), then show the schema rejecting a bad update."""
    current = await profile.get_working()
    data = {
        "user": {"name": conversation.speaker_a or "user"},
        "contacts": [conversation.speaker_b] if conversation.speaker_b else [],
        "preferences": {"answer_style": "concise", "cite_evidence": True},
        "current_thread": conversation.thread_id,
    }
    record = await profile.update_working(data, expected_version=current.version if current else 0)
    out.print(Text(f"working memory: profile set, version {record.version} (schema-checked)"))
    try:
        await profile.update_working({**data, "preferences": {"answer_style": "rambling"}}, expected_version=record.version)
    except WorkingMemoryValidationError as exc:
        out.print(Text(f"working memory: a bad update was rejected, version stays {record.version}: {exc}", style="dim"))
    return record
