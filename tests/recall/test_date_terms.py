"""The lexical leg sees an entry's event date, on both backends: a query's term naming a month, weekday, year or
day of the month is held by an entry whose event date (occurred_at, else created_at; in UTC) has that part, once
however many ways it is held. The lexical value of each hit is checked against a small oracle written here, apart
from prism_memory.lexical_dates; the SQL helpers are checked against that module directly."""

from datetime import datetime, timedelta, timezone

import numpy as np
import psycopg
import pytest
from prism_memory import MemoryConsent
from prism_memory.lexical import lexical_terms, porter_stem, query_terms
from prism_memory.lexical_dates import event_date_parts, lexical_score, query_date_terms

from parity import Clock

WRITTEN = datetime(2024, 1, 10, 12, tzinfo=timezone.utc)  # a Wednesday: the created_at of the entries below
#: id -> (text, occurred_at or None: its created_at, WRITTEN, is its event time)
ENTRIES = {
    "e1": ("Booked the flight to Lisbon", datetime(2023, 5, 7, 9, tzinfo=timezone.utc)),       # Sunday 7 May 2023
    "e2": ("Paid the Lisbon hotel in May", datetime(2023, 6, 2, 18, tzinfo=timezone.utc)),      # Friday 2 June 2023
    "e3": ("Lisbon trip was cancelled", datetime(2022, 5, 21, 23, 30, tzinfo=timezone(timedelta(hours=-2)))),
    "e4": ("Chess club met about Lisbon", None),                                               # Wednesday 10 Jan 2024
    "e5": ("Tea in the garden, 7 notes on Lisbon", datetime(2023, 12, 7, tzinfo=timezone.utc)),  # Thursday 7 Dec 2023
}
MONTHS = "january february march april may june july august september october november december".split()
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()


def oracle_names(event_at: datetime) -> set[str]:
    """Every word a query may name the event's UTC date with, before stemming (the rule of docs/api.md)."""
    day = event_at.astimezone(timezone.utc)
    month, weekday = MONTHS[day.month - 1], WEEKDAYS[day.weekday()]
    names = {month, month[:3], str(day.year), str(day.day), f"{day.day:02d}",
             f"{day.day}{ {1: 'st', 2: 'nd', 3: 'rd', 21: 'st', 22: 'nd', 23: 'rd', 31: 'st'}.get(day.day, 'th')}"}
    names |= {"sept"} if day.month == 9 else set()
    names |= {weekday} | ({weekday[:3]} if weekday[:3] in ("mon", "tue", "thu") else set())
    names |= {"tues"} if weekday == "tuesday" else {"thur", "thurs"} if weekday == "thursday" else set()
    return names


def oracle_lexical(query: str, text: str, event_at: datetime) -> float:
    """(query terms held by the text or naming the event date) / (query terms), each term once."""
    terms = set(query_terms(query))
    dated = {porter_stem(name) if name.isalpha() else name for name in oracle_names(event_at)}
    return len(terms & (set(lexical_terms(text)) | dated)) / len(terms) if terms else 0.0


async def dated_memory(backend, **options):
    clock = Clock(WRITTEN)
    memory = backend.memory(clock=clock, **options)
    await memory.remember([{"id": entry_id, "text": text, "occurred_at": occurred_at}
                           for entry_id, (text, occurred_at) in ENTRIES.items()], wait=True)
    clock.now = WRITTEN + timedelta(days=1)
    return memory


QUERIES = [
    "Lisbon in May",           # May: e1 (7 May), e3 (21 May in UTC, 20 May at -02:00); e2 holds "may" in its text
    "Lisbon in May 2023",      # e2 holds may by text only: not counted twice
    "what happened on Sunday",  # e1
    "Lisbon on a Wednesday",   # e4 by its created_at
    "trip in 2022",            # e3: 2022 in UTC
    "Lisbon on the 7th",       # e1, e5
    "on 7 Dec",                # e5: day 7 and December; e1: day 7
    "Thurs 07 Lisbon",         # e5: Thursday and day 07
    "jan jun aug sept oct nov feb mar apr jul monday tue tues thu thur",
    "Lisbon hotel flight",     # no date terms: as before
    "Lisbon wedding on sat",   # wed/sat stems are not weekdays
]


@pytest.mark.parametrize("query", QUERIES)
async def test_a_date_term_is_held_by_the_event_date_once(backends, query):
    async def scenario(backend):
        memory = await dated_memory(backend)
        result = await memory.recall(query, top_k=8, explain=True)
        return ([(hit.id, hit.lexical, hit.score) for hit in result.hits],
                [(hit.id, hit.lexical) for hit in result.explanation.hits])

    hits, explained = await backends.run(scenario)
    assert len(hits) == len(ENTRIES)
    for entry_id, lexical, _ in hits:
        text, occurred_at = ENTRIES[entry_id]
        assert lexical == pytest.approx(oracle_lexical(query, text, occurred_at or WRITTEN), abs=1e-12), entry_id
    assert explained == [[entry_id, lexical] for entry_id, lexical, _ in hits]
    assert [score for *_, score in hits] == sorted((score for *_, score in hits), reverse=True)


async def test_the_date_decides_the_ranking_between_equal_texts(backends):
    async def scenario(backend):
        clock = Clock(datetime(2023, 3, 3, tzinfo=timezone.utc))  # a Friday in March
        memory = backend.memory(clock=clock)
        await memory.remember([{"id": "a", "text": "Dinner with Ana"},
                               {"id": "b", "text": "Dinner with Ana", "occurred_at": datetime(2023, 5, 7, tzinfo=timezone.utc)},
                               {"id": "c", "text": "Dinner with Ana", "occurred_at": datetime(2022, 3, 3, tzinfo=timezone.utc)}],
                              wait=True)
        return {query: [(hit.id, hit.lexical) for hit in (await memory.recall(query, top_k=3)).hits]
                for query in ("dinner in May", "dinner on Friday", "dinner in March 2023", "dinner with Ana")}

    outcome = await backends.run(scenario)
    assert outcome["dinner in May"] == [["b", 1.0], ["a", 0.5], ["c", 0.5]]
    assert outcome["dinner on Friday"] == [["a", 1.0], ["b", 0.5], ["c", 0.5]]  # c: 3 March 2022 was a Thursday
    assert outcome["dinner in March 2023"] == [["a", 1.0], ["b", pytest.approx(2 / 3)], ["c", pytest.approx(2 / 3)]]
    assert [entry_id for entry_id, _ in outcome["dinner with Ana"]] == ["a", "b", "c"]  # equal: by sequence


async def test_a_date_term_alone_lifts_a_row_past_the_first_pass(backends):
    """The exact first pass bounds a row that holds a date term but no text term by similarity + weight too: the
    one May entry among 600, whose text holds no query term and whose vector is only the 451st nearest the
    query's, comes first in its thread and across threads (past the 256 rows either first pass reads)."""
    words = "tea coffee lisbon porto garden piano chess yoga budget invoice flight hotel".split()
    texts = [f"{words[n % 12]} {words[(n * 5) % 12]} {words[(n * 7) % 12]} note{n}" for n in range(600)]
    query = "May 30"

    async def scenario(backend):
        vectors = np.asarray(await backend.embedder.embed(texts))
        [probe] = await backend.embedder.embed([query])
        farthest = int(np.argsort(-(vectors @ np.asarray(probe) / np.linalg.norm(vectors, axis=1)), kind="stable")[450])
        entries = [{"id": f"e{n:03d}", "text": text, "consent": MemoryConsent(scope="user"),
                    "occurred_at": datetime(2024, 1 + n % 4, 1 + n % 28, tzinfo=timezone.utc)}
                   for n, text in enumerate(texts)]
        entries[farthest]["occurred_at"] = datetime(2023, 5, 30, tzinfo=timezone.utc)
        clock = Clock(datetime(2024, 7, 1, tzinfo=timezone.utc))
        others = backend.memory(thread_id="others", clock=clock)
        await others.remember(entries, wait=True)
        reader = backend.memory(thread_id="reader", clock=clock)
        await reader.remember([{"id": "own", "text": "tea lisbon", "consent": MemoryConsent(scope="user")}], wait=True)
        own = [(hit.id, hit.lexical) for hit in (await others.recall(query, top_k=3)).hits]
        across = [(hit.thread_id, hit.id) for hit in (await reader.recall(query, top_k=3, across_threads=True)).hits]
        return farthest, own, across

    farthest, own, across = await backends.run(scenario)
    assert own[0] == [f"e{farthest:03d}", 1.0] and own[1][1] == 0.0
    assert across[0] == ["others", f"e{farthest:03d}"]


async def test_without_date_terms_the_lexical_leg_is_the_texts(backends):
    async def scenario(backend):
        memory = await dated_memory(backend)
        return [(hit.id, hit.lexical) for hit in (await memory.recall("Lisbon hotel", top_k=8)).hits]

    hits = await backends.run(scenario)
    assert {entry_id: lexical for entry_id, lexical in hits} == {
        entry_id: len({"lisbon", "hotel"} & set(lexical_terms(text))) / 2 for entry_id, (text, _) in ENTRIES.items()}


# Direct SQL: the helpers against prism_memory.lexical_dates.

def sql(pg_dsn, statement: str, *arguments):
    """Rows of one statement; its arguments positional, or one dict of named ones."""
    with psycopg.connect(pg_dsn) as conn:
        named = len(arguments) == 1 and isinstance(arguments[0], dict)
        return conn.execute(statement, arguments[0] if named else arguments).fetchall()


def test_query_date_terms_v1_is_what_lexical_dates_says(pg_dsn):
    words = (MONTHS + [m[:3] for m in MONTHS] + WEEKDAYS + [w[:3] for w in WEEKDAYS]
             + ["sept", "tues", "thur", "thurs", "wedding", "fried", "may", "mays", "marched"])
    numbers = [str(n) for n in range(0, 40)] + ["00", "01", "07", "09", "31st", "1st", "2nd", "3rd", "7th", "32nd",
                                                "999", "0999", "1000", "2023", "9999", "10000", "5pm", "7a"]
    terms = sorted({porter_stem(word) for word in words} | set(numbers))
    rows = sql(pg_dsn, "select term, part, value from prism_memory.query_date_terms_v1(%s::text[])", terms)
    assert rows == [tuple(date) for date in query_date_terms(terms)]
    assert {date.term: date.key for date in query_date_terms(terms)}.items() >= {
        "januari": "month:1", "mai": "month:5", "sept": "month:9", "sundai": "weekday:7", "tue": "weekday:2",
        "thur": "weekday:4", "2023": "year:2023", "07": "day:7", "31st": "day:31", "1": "day:1"}.items()
    assert not {"wed", "fri", "sat", "sun", "0", "00", "32", "32nd", "999", "0999", "10000", "5pm", "7a"} & {
        date.term for date in query_date_terms(terms)}


def test_might_name_a_date_v1_never_misses_a_date_term(pg_dsn):
    """The test that spares a query query_dates_v1 is true for every term query_date_terms_v1 reads as a date,
    and false for plain words."""
    words = MONTHS + WEEKDAYS + [m[:3] for m in MONTHS] + ["sept", "tues", "thurs", "may", "lisbon", "wedding", "sun"]
    terms = sorted({porter_stem(word) for word in words} | {"7", "07", "31st", "2023", "5pm", "0", "x7"})
    rows = sql(pg_dsn, "select t.term, prism_memory.might_name_a_date_v1(array[t.term]), "
                       "exists (select from prism_memory.query_date_terms_v1(array[t.term])) "
                       "from unnest(%s::text[]) as t(term)", terms)
    assert all(might for _, might, named in rows if named)
    assert {term for term, might, _ in rows if not might} == {"lisbon", "wed", "sun", "x7"}


@pytest.mark.parametrize("terms", [None, [], [""], ["mai", "mai"], [str(n) for n in range(1, 33)]])
def test_query_date_terms_v1_edge_inputs(pg_dsn, terms):
    rows = sql(pg_dsn, "select term, part, value from prism_memory.query_date_terms_v1(%s::text[])", terms)
    assert rows == [tuple(date) for date in query_date_terms(terms)]
    assert len(rows) == {None: 0, 0: 0, 1: 0, 2: 2, 32: 31}[None if terms is None else len(terms)]


def test_the_sql_query_terms_of_a_dated_query(pg_dsn):
    query = "What did we do on Sunday, 7 May 2023, or may we say the 7th? Not in Sept or on Tues"
    [(rows,)] = sql(pg_dsn, "select array(select row(d.term, d.part, d.value)::text "
                            "from prism_memory.query_date_terms_v1(prism_memory.query_terms_v2(%s)) as d)", query)
    assert rows == [f"({date.term},{date.part},{date.value})" for date in query_date_terms(query_terms(query))]
    assert [date.key for date in query_date_terms(query_terms(query))] == [
        "year:2023", "day:7", "day:7", "month:5", "month:9", "weekday:7", "weekday:2"]  # 2023 7 7th mai sept sundai tue


@pytest.mark.parametrize("event_at", [
    datetime(2023, 5, 7, 23, 59, tzinfo=timezone.utc),
    datetime(2023, 5, 7, 23, 30, tzinfo=timezone(timedelta(hours=-2))),  # 8 May in UTC
    datetime(2024, 2, 29, 0, 0, tzinfo=timezone(timedelta(hours=5))),   # 28 Feb in UTC
    datetime(1000, 1, 1, 12, tzinfo=timezone.utc),
    datetime(9999, 12, 31, tzinfo=timezone.utc),
])
def test_names_event_date_v1_takes_the_date_in_utc(pg_dsn, event_at):
    """Each date term alone, and all of them together, name the event date exactly when lexical_dates says so."""
    terms = sorted({porter_stem(word) for word in MONTHS + WEEKDAYS} | {str(n) for n in range(1, 32)}
                   | {"2023", "2024", "1000", "9999", "5th", "07"})
    rows = sql(pg_dsn, "select t.term, prism_memory.names_event_date_v1(%s, prism_memory.query_dates_v1(array[t.term])) "
                       "from unnest(%s::text[]) as t(term)", event_at, terms)
    parts = event_date_parts(event_at)
    assert dict(rows) == {term: query_date_terms([term])[0].key in parts for term in terms}
    assert sum(named for _, named in rows) >= 4  # its month, weekday, day and year at least
    [(none, everything)] = sql(pg_dsn, "select prism_memory.names_event_date_v1(%s, null), "
                                       "prism_memory.names_event_date_v1(%s, prism_memory.query_dates_v1(%s))",
                               event_at, event_at, terms)
    assert (none, everything) == (False, True)


@pytest.mark.parametrize(("query", "text", "event_at"), [
    ("Lisbon in May", "Lisbon trip", datetime(2023, 5, 7, tzinfo=timezone.utc)),
    ("Lisbon in May", "Lisbon in may", datetime(2023, 5, 7, tzinfo=timezone.utc)),  # once, not twice
    ("Lisbon in May", "Lisbon in may", datetime(2023, 6, 7, tzinfo=timezone.utc)),
    ("7 May 2023 Sunday", "nothing", datetime(2023, 5, 7, tzinfo=timezone.utc)),
    ("7 May 2023 Sunday", "7 2023", datetime(2023, 5, 7, tzinfo=timezone.utc)),
    ("Lisbon hotel", "Lisbon", datetime(2023, 5, 7, tzinfo=timezone.utc)),
    ("the of and", "anything", datetime(2023, 5, 7, tzinfo=timezone.utc)),  # no terms: 0
    (" ".join(str(n) for n in range(1, 40)), "nothing", datetime(2023, 5, 7, tzinfo=timezone.utc)),  # 32 terms
])
def test_lexical_score_v2_is_lexical_dates_lexical_score(pg_dsn, query, text, event_at):
    [(score, plain)] = sql(
        pg_dsn,
        "with q as (select prism_memory.query_terms_v2(%(query)s) as terms), "
        "a as (select q.terms, (select string_agg(quote_literal(t), ' | ')::tsquery from unnest(q.terms) t) as any_term, "
        "prism_memory.query_dates_v1(q.terms) as dates from q), "
        "e as (select array_to_tsvector(prism_memory.lexical_terms_v2(%(text)s)) as tsv) "
        "select prism_memory.lexical_score_v2(e.tsv, %(event_at)s, a.terms, a.any_term, a.dates), "
        "prism_memory.lexical_score_v2(e.tsv, %(event_at)s, a.terms, a.any_term, null) "
        "from a, e",
        {"query": query, "text": text, "event_at": event_at})
    terms = query_terms(query)
    assert score == pytest.approx(lexical_score(terms, lexical_terms(text), event_at), abs=1e-12)
    assert score == pytest.approx(oracle_lexical(query, text, event_at), abs=1e-12)
    assert plain == pytest.approx(lexical_score(terms, lexical_terms(text), event_at, []), abs=1e-12)


def test_held_terms_v2_without_date_terms_is_the_text_tsvector(pg_dsn):
    [(no_dates, null_dates, null_time, named)] = sql(
        pg_dsn,
        "select prism_memory.query_dates_v1('{lisbon,hotel}') is null and prism_memory.query_dates_v1('{}') is null "
        "and prism_memory.query_dates_v1(null) is null, "
        "prism_memory.held_terms_v2('a b'::tsvector, now(), null) = 'a b'::tsvector, "
        "prism_memory.held_terms_v2('a b'::tsvector, null, prism_memory.query_dates_v1('{mai}')) = 'a b'::tsvector, "
        "prism_memory.held_terms_v2('a mai'::tsvector, '2023-05-07Z', prism_memory.query_dates_v1('{mai,sundai,7,07,2023}'))::text")
    assert no_dates and null_dates and null_time
    assert named == "'07' '2023' '7' 'a' 'mai' 'sundai'"
