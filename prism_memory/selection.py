"""What a read selects besides its gates: a metadata filter and time windows, applied before the ``top_k`` cut.

``recall_selection_v1`` (which checks and builds the selection) and ``selects_v1`` (which applies it to a row)
are its SQL side; :func:`check_selection` and :func:`selects` mirror them for the facade and the emulator.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from .checks import check_aware
from .errors import InvalidQueryError
from .filters import check_filter, matches
from .types import RecallSelection

#: The window bounds of a :class:`~prism_memory.types.RecallSelection`, in ``recall_selection_v1``'s order.
WINDOW_BOUNDS = ("occurred_after", "occurred_before", "created_after", "created_before")


def check_selection(selection: object) -> RecallSelection | None:
    """``selection`` checked, or ``None`` when it selects nothing (no filter, every bound open).

    Raises :class:`InvalidQueryError` when ``selection`` is not a :class:`RecallSelection` or a bound is not a
    timezone-aware ``datetime`` within years 1..9999 (``recall_selection_v1``: PM008), and
    :class:`~prism_memory.errors.InvalidFilterError` for a bad filter (:func:`prism_memory.filters.check_filter`).
    An empty window (``after >= before``) is allowed and keeps nothing.
    """
    if selection is None:
        return None
    if not isinstance(selection, RecallSelection):
        raise InvalidQueryError(f"a selection must be a RecallSelection, got {type(selection).__name__}")
    for bound in WINDOW_BOUNDS:
        check_aware(getattr(selection, bound), bound, InvalidQueryError)
    checked = dataclasses.replace(selection, filter=check_filter(selection.filter))
    if checked.filter is None and all(getattr(checked, bound) is None for bound in WINDOW_BOUNDS):
        return None
    return checked


def select(filter: object = None, occurred_after: object = None, occurred_before: object = None,
           created_after: object = None, created_before: object = None) -> RecallSelection | None:
    """The checked selection of a read's keyword arguments (:func:`check_selection`), ``None`` when it selects
    nothing; the errors are :func:`check_selection`'s."""
    return check_selection(RecallSelection(filter=filter, occurred_after=occurred_after,  # type: ignore[arg-type]
                                           occurred_before=occurred_before, created_after=created_after,
                                           created_before=created_before))


def selects(selection: RecallSelection | None, metadata: dict[str, Any], occurred_at: datetime | None,
            created_at: datetime) -> bool:
    """Whether an entry with these columns is one ``selection`` (checked) keeps: ``selects_v1``. The event time
    is ``occurred_at``, or ``created_at`` when the entry has none; each window is half-open."""
    if selection is None:
        return True
    event = created_at if occurred_at is None else occurred_at
    return ((selection.filter is None or matches(selection.filter, metadata))
            and (selection.occurred_after is None or event >= selection.occurred_after)
            and (selection.occurred_before is None or event < selection.occurred_before)
            and (selection.created_after is None or created_at >= selection.created_after)
            and (selection.created_before is None or created_at < selection.created_before))
