"""Loaders for conversation files: LoCoMo-format JSON and JSONL entry files.

LoCoMo (Maharana et al., ACL 2024) is a JSON list of samples. Each sample has a
``sample_id``, a ``conversation`` (``speaker_a``, ``speaker_b``, ``session_N``
lists of turns ``{speaker, dia_id, text, blip_caption?}`` and
``session_N_date_time``) and a ``qa`` list (``question``, ``answer``,
``evidence``: dia_ids, ``category`` 1-5; category 5 is adversarial and carries
``adversarial_answer`` instead of ``answer``).

Import rule: one sample is one thread (``thread_id = sample_id``); one turn is
one :class:`~prism_memory.types.MemoryEntry` with ``id = dia_id``,
``sequence`` = its 1-based position across all sessions (sessions in numeric
order), ``text = "<speaker>: <text>"`` (plus ``" [shares a photo: <caption>]"``
when the turn has a ``blip_caption``) and metadata
``{"speaker", "session", "session_date_time"}``. With ``occurred_at="session"``
each turn's ``occurred_at`` is its session's ``session_N_date_time`` (LoCoMo's
``"1:56 pm on 8 May, 2023"``, read as UTC: :func:`parse_session_date_time`);
by default turns have none (their event time is when they are written).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from .checks import check_unique_ids
from .entry_checks import to_entry
from .errors import InvalidEntryError, ValidationError
from .types import MemoryEntry

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SEPARATOR = re.compile(r"[;,\s]+")
_SESSION_DATE_TIME = re.compile(r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*",
                                re.IGNORECASE)
_MONTHS = {name: number for number, name in enumerate(
    "january february march april may june july august september october november december".split(), start=1)}
#: Where a turn's ``occurred_at`` comes from: ``"none"`` (it has none) or ``"session"`` (its session's date and time).
OccurredAt = Literal["none", "session"]


class DataFormatError(ValidationError):
    """A conversation or entry file does not have the expected shape (message says where)."""


@dataclass(frozen=True, slots=True)
class Question:
    """One LoCoMo ``qa`` item.

    ``answer`` is ``None`` for adversarial questions (category 5), which carry
    ``adversarial_answer`` instead; numeric answers are turned into strings.
    ``evidence`` lists the dia_ids (= entry ids) that support the answer.
    """

    question: str
    answer: str | None
    evidence: list[str]
    category: int
    adversarial_answer: str | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """One LoCoMo sample: the thread to import (``entries`` in sequence order) and its ``questions``."""

    thread_id: str
    speaker_a: str
    speaker_b: str
    entries: list[MemoryEntry]
    questions: list[Question]


def load_locomo(path: str | Path, *, occurred_at: OccurredAt = "none") -> list[Conversation]:
    """Read a LoCoMo JSON file and return its conversations, in file order.

    ``path``: a JSON list of samples (or a single sample object);
    ``occurred_at``: see the module docstring. Raises
    ``OSError`` when the file cannot be read and :class:`DataFormatError`
    when it is not JSON or a sample lacks a required field.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{path}: not valid JSON ({exc})") from exc
    return parse_locomo(data, str(path), occurred_at=occurred_at)


def parse_locomo(data: object, source: str = "<data>", *, occurred_at: OccurredAt = "none") -> list[Conversation]:
    """Turn already-parsed LoCoMo JSON (a list of samples, or one sample) into conversations.

    Raises :class:`DataFormatError` naming the sample and field at fault.
    """
    samples = [data] if isinstance(data, Mapping) else data
    if not isinstance(samples, list):
        raise DataFormatError(f"{source}: expected a JSON list of LoCoMo samples, got {type(data).__name__}")
    return [parse_sample(sample, f"{source}[{index}]", occurred_at=occurred_at) for index, sample in enumerate(samples)]


def parse_sample(sample: object, where: str = "sample", *, occurred_at: OccurredAt = "none") -> Conversation:
    """One LoCoMo sample to a :class:`Conversation` (see the module docstring for the rule)."""
    sample = _mapping(sample, where)
    thread_id = str(_field(sample, "sample_id", where))
    where = f"{where} ({thread_id})"
    conversation = _mapping(_field(sample, "conversation", where), f"{where}.conversation")
    qa = sample.get("qa", [])
    if not isinstance(qa, list):
        raise DataFormatError(f"{where}.qa: expected a list, got {type(qa).__name__}")
    return Conversation(
        thread_id=thread_id,
        speaker_a=str(conversation.get("speaker_a", "")),
        speaker_b=str(conversation.get("speaker_b", "")),
        entries=conversation_entries(conversation, f"{where}.conversation", occurred_at=occurred_at),
        questions=[parse_question(item, f"{where}.qa[{index}]") for index, item in enumerate(qa)],
    )


def conversation_entries(conversation: Mapping[str, Any], where: str = "conversation", *,
                         occurred_at: OccurredAt = "none") -> list[MemoryEntry]:
    """The turns of a LoCoMo ``conversation`` as entries, sessions in numeric order, sequences 1..n.

    With ``occurred_at="session"`` each turn's event time is its session's date and time
    (:class:`DataFormatError` for a session without a readable one)."""
    if occurred_at not in ("none", "session"):
        raise ValueError(f"occurred_at must be 'none' or 'session', got {occurred_at!r}")
    sessions = sorted(
        (int(match.group(1)), turns)
        for key, turns in conversation.items()
        if (match := _SESSION_KEY.fullmatch(key)) and isinstance(turns, list)
    )
    entries: list[MemoryEntry] = []
    for number, turns in sessions:
        date_time = conversation.get(f"session_{number}_date_time")
        when = (parse_session_date_time(date_time, f"{where}.session_{number}_date_time")
                if occurred_at == "session" and turns else None)
        for index, turn in enumerate(turns):
            spot = f"{where}.session_{number}[{index}]"
            turn = _mapping(turn, spot)
            speaker = str(_field(turn, "speaker", spot))
            text = f"{speaker}: {_field(turn, 'text', spot)}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            metadata = {"speaker": speaker, "session": number, "session_date_time": date_time}
            entries.append(MemoryEntry(str(_field(turn, "dia_id", spot)), text, metadata, len(entries) + 1,
                                       occurred_at=when))
    return entries


def parse_session_date_time(value: object, where: str = "session_date_time") -> datetime:
    """A LoCoMo session time (``"1:56 pm on 8 May, 2023"``: 12-hour clock, day, English month name, year) as a
    timezone-aware ``datetime`` in UTC. :class:`DataFormatError` (naming ``where``) for anything else, a missing
    value or an impossible date included."""
    match = _SESSION_DATE_TIME.fullmatch(value) if isinstance(value, str) else None
    month = _MONTHS.get(match.group(5).lower()) if match else None
    if match is None or month is None:
        raise DataFormatError(f"{where}: expected a time like '1:56 pm on 8 May, 2023', got {value!r}")
    hour, minute = int(match.group(1)), int(match.group(2))
    if not 1 <= hour <= 12:
        raise DataFormatError(f"{where}: hour {hour} is not on a 12-hour clock in {value!r}")
    hour = hour % 12 + (12 if match.group(3).lower() == "p" else 0)
    try:
        return datetime(int(match.group(6)), month, int(match.group(4)), hour, minute, tzinfo=timezone.utc)
    except ValueError as exc:
        raise DataFormatError(f"{where}: {exc} in {value!r}") from exc


def parse_question(item: object, where: str = "qa item") -> Question:
    """One ``qa`` item to a :class:`Question`.

    Evidence items holding several dia_ids (``"D8:6; D9:17"``, ``"D9:1 D4:4"``)
    are split into one id each; ids are otherwise kept as written.
    """
    item = _mapping(item, where)
    category = _field(item, "category", where)
    if isinstance(category, bool) or not isinstance(category, int):
        raise DataFormatError(f"{where}.category: expected an integer, got {category!r}")
    evidence = item.get("evidence", [])
    if not isinstance(evidence, list):
        raise DataFormatError(f"{where}.evidence: expected a list of dia_ids, got {type(evidence).__name__}")
    return Question(
        question=str(_field(item, "question", where)),
        answer=None if item.get("answer") is None else str(item["answer"]),
        evidence=[part for value in evidence for part in _EVIDENCE_SEPARATOR.split(str(value)) if part],
        category=category,
        adversarial_answer=None if item.get("adversarial_answer") is None else str(item["adversarial_answer"]),
    )


def load_jsonl_entries(path: str | Path, default_thread_id: str | None = None) -> dict[str, list[MemoryEntry]]:
    """Read a JSONL entry file: ``{thread_id: [MemoryEntry, ...]}`` in file order.

    Each non-blank line is a JSON object with ``id``, ``text`` and optional
    ``metadata``, ``sequence``, ``importance`` and ``thread_id`` (default:
    ``default_thread_id``). Raises ``OSError`` when the file cannot be read and
    :class:`DataFormatError` (with the line number) for a line that is not a
    JSON object, has unknown fields, lacks ``id``/``text``, has no thread, or
    repeats an id within its thread.
    """
    threads: dict[str, list[MemoryEntry]] = {}
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(f"{where}: not valid JSON ({exc})") from exc
            item = dict(_mapping(item, where))
            thread_id = item.pop("thread_id", default_thread_id)
            if not isinstance(thread_id, str) or not thread_id:
                raise DataFormatError(f"{where}: no thread_id on the line and no default thread (--thread)")
            try:
                entry = to_entry(item, number)
            except InvalidEntryError as exc:
                raise DataFormatError(f"{where}: {exc}") from exc
            threads.setdefault(thread_id, []).append(entry)
    for thread_id, entries in threads.items():
        try:
            check_unique_ids([entry.id for entry in entries])
        except InvalidEntryError as exc:
            raise DataFormatError(f"{path}: thread {thread_id!r}: {exc}") from exc
    return threads


def detect_format(path: str | Path) -> Literal["locomo", "jsonl"]:
    """``"jsonl"`` for ``*.jsonl``/``*.ndjson``, ``"locomo"`` for ``*.json``; otherwise by the first character.

    Raises ``OSError`` when the file cannot be read and :class:`DataFormatError`
    when the format cannot be told (empty file, not JSON-like).
    """
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "locomo"
    with Path(path).open(encoding="utf-8") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith("["):
        return "locomo"
    if head.startswith("{"):
        return "jsonl"
    raise DataFormatError(f"{path}: cannot tell the format (expected LoCoMo JSON or JSONL); pass --format")


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DataFormatError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def _field(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in mapping:
        raise DataFormatError(f"{where}: missing {key!r}")
    return mapping[key]


__all__ = [
    "Conversation",
    "DataFormatError",
    "OccurredAt",
    "Question",
    "conversation_entries",
    "detect_format",
    "load_jsonl_entries",
    "load_locomo",
    "parse_locomo",
    "parse_question",
    "parse_sample",
    "parse_session_date_time",
]
