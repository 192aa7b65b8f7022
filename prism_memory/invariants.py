"""The revoked-ids-absent invariant: no revoked id reaches a recall, an export or an injected context.

Hosts wrap :func:`revoked_ids_absent` in their eval harness's scorer. It is an
*invariant*: ``metadata["invariant"]`` is ``True`` and a score of 0 means the
run failed, whatever other scores it is averaged with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class InvariantResult:
    """``score`` is 1.0 when nothing leaked, else 0.0; ``metadata`` holds ``invariant: True`` and the leaks."""

    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


def _ids(value: Any, denied: frozenset[str], where: str, found: list[dict[str, str]], depth: int = 0) -> None:
    if depth > 64:
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        entry_id = getattr(value, "id", None)
        if entry_id in denied:
            found.append({"id": entry_id, "where": where})
        for item in dataclasses.fields(value):
            _ids(getattr(value, item.name), denied, f"{where}.{item.name}", found, depth + 1)
    elif isinstance(value, Mapping):
        if value.get("id") in denied:
            found.append({"id": value["id"], "where": where})
        for key, item in value.items():
            _ids(item, denied, f"{where}.{key}", found, depth + 1)
    elif isinstance(value, str):
        if value in denied:
            found.append({"id": value, "where": where})
    elif isinstance(value, Iterable) and not isinstance(value, (bytes, bytearray)):
        for index, item in enumerate(value):
            _ids(item, denied, f"{where}[{index}]", found, depth + 1)


def revoked_ids_absent(environment: Mapping[str, Any], denied_ids: Iterable[str]) -> InvariantResult:
    """Check that no denied entry id reaches any surface of ``environment``.

    ``environment`` maps surface names (``"prompt"``, ``"recall"``,
    ``"export"``, ``"events"``, ``"telemetry"``...) to what the run produced
    there: recall results, export pages, records, dicts, lists or strings.
    An entry counts as present when an object's ``id`` (attribute or key) is
    denied, or a string equals a denied id. Returns score 1.0 and
    ``{"invariant": True, "leaks": []}`` when none is present, else score 0.0
    with every leak's id and path.
    """
    denied = frozenset(denied_ids)
    leaks: list[dict[str, str]] = []
    for surface, value in environment.items():
        _ids(value, denied, str(surface), leaks)
    return InvariantResult(0.0 if leaks else 1.0, {"invariant": True, "leaks": leaks, "denied": sorted(denied)})
