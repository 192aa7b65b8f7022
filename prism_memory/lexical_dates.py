"""The date terms of a query and the event date they match: the mirror of ``query_date_terms_v1``,
``names_event_date_v1``, ``held_terms_v2`` and ``lexical_score_v2``.

A query's term (:func:`prism_memory.lexical.query_terms`) names a part of a date when it is an English month
name or abbreviation (``jan`` ... ``dec``, ``sept``), a weekday name or one of ``mon``, ``tue``, ``tues``,
``thu``, ``thur``, ``thurs`` (``wed``, ``fri``, ``sat`` and ``sun`` are left out: they are the stems of
"wedding", "fried", "sat" and "sun"), each as tokenizer v2 stems it (``january`` gives ``januari``, ``may``
gives ``mai``: the modal verb names May too); four digits from 1000 to 9999 (a year); or one or two digits from
1 to 31, or such a number with an ordinal suffix (``7``, ``07``, ``7th``: a day of the month). An entry holds
such a term when the term names a part of its event date (``occurred_at``, else ``created_at``), the date taken
in UTC, as well as when its text holds it; each term counts once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Literal, NamedTuple

from .lexical import porter_stem

DatePart = Literal["month", "weekday", "year", "day"]

#: English month names, January first.
MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
               "november", "december")
#: Month abbreviations a query may use, with their month (1-12).
MONTH_ABBREVIATIONS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
                       "sept": 9, "oct": 10, "nov": 11, "dec": 12}
#: English weekday names, Monday first (ISO weekday 1).
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: Weekday abbreviations a query may use, with their ISO weekday (those whose stem is a common word are left out).
WEEKDAY_ABBREVIATIONS = {"mon": 1, "tue": 2, "tues": 2, "thu": 4, "thur": 4, "thurs": 4}

#: Each date word's stem (as tokenizer v2 gives it) and what it denotes.
NAMED_DATE_TERMS: dict[str, tuple[DatePart, int]] = {
    **{porter_stem(name): ("month", number) for number, name in enumerate(MONTH_NAMES, start=1)},
    **{porter_stem(name): ("month", number) for name, number in MONTH_ABBREVIATIONS.items()},
    **{porter_stem(name): ("weekday", number) for number, name in enumerate(WEEKDAY_NAMES, start=1)},
    **{porter_stem(name): ("weekday", number) for name, number in WEEKDAY_ABBREVIATIONS.items()},
}

_YEAR = re.compile(r"[1-9][0-9]{3}")
_DAY = re.compile(r"(0?[1-9]|[12][0-9]|3[01])(st|nd|rd|th)?")


class DateTerm(NamedTuple):
    """A query term naming a part of a date (``query_date_terms_v1``'s row): ``part`` and ``value``
    (month 1-12, ISO weekday 1-7, year 1000-9999, day of the month 1-31)."""

    term: str
    part: DatePart
    value: int

    @property
    def key(self) -> str:
        """The part as :func:`event_date_parts` writes it (``"month:5"``)."""
        return f"{self.part}:{self.value}"


def query_date_terms(terms: Iterable[str] | None) -> list[DateTerm]:
    """The terms of ``terms`` (a query's, as :func:`prism_memory.lexical.query_terms` gives them) that name a
    part of a date, in their order, with what each denotes (SQL ``query_date_terms_v1``); ``[]`` for ``None``."""
    found = []
    for term in terms or ():
        if term in NAMED_DATE_TERMS:
            found.append(DateTerm(term, *NAMED_DATE_TERMS[term]))
        elif _YEAR.fullmatch(term):
            found.append(DateTerm(term, "year", int(term)))
        elif match := _DAY.fullmatch(term):
            found.append(DateTerm(term, "day", int(match.group(1))))
    return found


def event_date_parts(event_at: datetime) -> frozenset[str]:
    """The parts of the date of ``event_at`` (timezone-aware; taken in UTC) a date term can name, as keys
    (what SQL ``names_event_date_v1`` reads of it): ``{"month:5", "weekday:7", "year:2023", "day:7"}`` for 2023-05-07."""
    day = event_at.astimezone(timezone.utc)
    return frozenset((f"month:{day.month}", f"weekday:{day.isoweekday()}", f"year:{day.year}", f"day:{day.day}"))


def held_terms(text_terms: Iterable[str], event_at: datetime, date_terms: Sequence[DateTerm]) -> frozenset[str]:
    """The terms an entry holds for a query (SQL ``held_terms_v2``): its text's and those of ``date_terms`` that
    name a part of its event date ``event_at``."""
    if not date_terms:
        return frozenset(text_terms)
    parts = event_date_parts(event_at)
    return frozenset(text_terms) | {date.term for date in date_terms if date.key in parts}


def lexical_score(query_terms: Iterable[str], text_terms: Iterable[str], event_at: datetime,
                  date_terms: Sequence[DateTerm] | None = None) -> float:
    """The share of ``query_terms`` (distinct) an entry holds in its text or its event date (SQL
    ``lexical_score_v2``); 0.0 without query terms. ``date_terms`` defaults to ``query_date_terms(query_terms)``;
    pass it to compute it once per query."""
    wanted = frozenset(query_terms)
    if not wanted:
        return 0.0
    dates = query_date_terms(sorted(wanted)) if date_terms is None else date_terms
    return len(wanted & held_terms(text_terms, event_at, dates)) / len(wanted)


__all__ = [
    "MONTH_ABBREVIATIONS",
    "MONTH_NAMES",
    "NAMED_DATE_TERMS",
    "WEEKDAY_ABBREVIATIONS",
    "WEEKDAY_NAMES",
    "DatePart",
    "DateTerm",
    "event_date_parts",
    "held_terms",
    "lexical_score",
    "query_date_terms",
]
