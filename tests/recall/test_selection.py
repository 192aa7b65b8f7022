"""Event time, time windows and the lexical weight on both backends: a window applies before the top_k cut (the
unwindowed ranking restricted to what it keeps), to hits and adjacent entries alike, to exports and their
cursors; occurred_at is written, kept and exported; the weight is a memory's or a call's, checked alike."""

from datetime import datetime, timedelta, timezone

import pytest
from prism_memory import InvalidFilterError, InvalidQueryError, InvalidScoringError, create_memory
from prism_memory.export import export_json
from prism_memory.scoring import LEXICAL_WEIGHT

from parity import Clock

START = datetime(2026, 3, 1, tzinfo=timezone.utc)
WORDS = "tea garden lisbon flight hotel piano yoga budget chess river".split()
IDENTITY = {"tenant_id": "t1", "resource_id": "user-ada", "thread_id": "thread-1"}
CONSENTED = {"source": "user", "scope": "thread", "visible": True}  # what an export holds


def day(n: float) -> datetime:
    return START + timedelta(days=n)


def texts(count: int) -> list[str]:
    return [f"{WORDS[n % 10]} {WORDS[(n * 7) % 10]} {WORDS[(n * 3) % 10]} note {n}" for n in range(count)]


async def written(backend, count: int = 30, **options):
    """A memory holding ``count`` entries told of day n (occurred_at) and written at day n / 2 (created_at)."""
    clock = Clock(START)
    memory = backend.memory(clock=clock, **options)
    for n, text in enumerate(texts(count)):
        clock.now = day(n / 2)
        await memory.remember([{"id": f"e{n}", "text": text, "occurred_at": day(n), "consent": CONSENTED}], wait=True)
    clock.now = day(60)
    return memory


def ranked(result) -> list[list]:
    return [[hit.id, hit.score] for hit in result.hits]


@pytest.mark.parametrize("window", [
    {"occurred_after": day(5), "occurred_before": day(15)},
    {"occurred_after": day(20)},
    {"created_before": day(4)},
    {"created_after": day(2), "created_before": day(9), "occurred_before": day(12)},
    {"occurred_after": day(15), "occurred_before": day(5)},  # empty: keeps nothing
])
async def test_a_window_ranks_what_it_keeps_as_the_unwindowed_recall_does(backends, window):
    def kept(n: int) -> bool:
        occurred, created = day(n), day(n / 2)
        return ((window.get("occurred_after") is None or occurred >= window["occurred_after"])
                and (window.get("occurred_before") is None or occurred < window["occurred_before"])
                and (window.get("created_after") is None or created >= window["created_after"])
                and (window.get("created_before") is None or created < window["created_before"]))

    async def scenario(backend):
        memory = await written(backend)
        everything = ranked(await memory.recall("tea garden river", top_k=32))
        windowed = {top_k: ranked(await memory.recall("tea garden river", top_k=top_k, **window)) for top_k in (1, 4, 32)}
        return everything, windowed

    everything, windowed = await backends.run(scenario)
    assert len(everything) == 30
    inside = [[entry_id, score] for entry_id, score in everything if kept(int(entry_id[1:]))]
    for top_k, hits in windowed.items():
        assert hits == inside[:top_k]


async def test_adjacent_entries_and_explain_honour_the_window(backends):
    async def scenario(backend):
        memory = await written(backend, 12)
        result = await memory.recall("note 5", top_k=1, message_range=2, explain=True,
                                     occurred_after=day(4), occurred_before=day(7))
        return [hit.id for hit in result.hits], [entry.id for entry in result.adjacent], result.explanation.removed

    hits, adjacent, removed = await backends.run(scenario)
    assert hits == ["e5"] and adjacent == ["e4", "e6"]  # e3 and e7 are adjacent by sequence, outside the window
    assert removed["selection"] == 9


async def test_occurred_at_is_written_kept_exported_and_defaults_to_the_write_time(backends):
    async def scenario(backend):
        clock = Clock(day(1))
        memory = backend.memory(clock=clock)
        await memory.remember([{"id": "told", "text": "moved to Lisbon", "occurred_at": day(-300), "consent": CONSENTED},
                               {"id": "plain", "text": "likes tea", "consent": CONSENTED}], wait=True)
        clock.now = day(2)
        await memory.remember([{"id": "told", "text": "moved to Lisbon in May"}], wait=True)  # keeps its event time
        page = await memory.export_memory(IDENTITY)
        before = await memory.export_memory(IDENTITY, occurred_before=day(0))
        return ([[record.id, export_json(record)["occurredAt"], export_json(record)["createdAt"]]
                 for record in page.entries],
                [record.id for record in before.entries])

    records, before = await backends.run(scenario)
    assert records == [["told", day(-300).isoformat(), day(1).isoformat()],
                       ["plain", day(1).isoformat(), day(1).isoformat()]]
    assert before == ["told"]


async def test_an_export_pages_through_exactly_what_its_window_keeps(backends):
    async def scenario(backend):
        memory = await written(backend, 25)
        pages, cursor = [], None
        while True:
            page = await memory.export_memory(IDENTITY, cursor=cursor, limit=3, occurred_after=day(4),
                                              occurred_before=day(17))
            pages.append([record.id for record in page.entries])
            cursor = page.next_cursor
            if cursor is None:
                return pages

    pages = await backends.run(scenario)
    assert [entry_id for page in pages for entry_id in page] == [f"e{n}" for n in range(4, 17)]
    assert all(len(page) == 3 for page in pages[:-1])


async def test_the_lexical_weight_is_a_memorys_or_a_calls(backends):
    async def scenario(backend):
        memory = await written(backend, 12, lexical_weight=2.0)
        own = await memory.recall("tea garden", top_k=5)
        call = await memory.recall("tea garden", top_k=5, lexical_weight=0)
        return ([(hit.score, hit.similarity, hit.lexical) for hit in own.hits],
                [(hit.score, hit.similarity, hit.lexical) for hit in call.hits])

    own, call = await backends.run(scenario)
    assert all(score == pytest.approx(similarity + 2.0 * lexical) for score, similarity, lexical in own)
    assert all(score == pytest.approx(similarity) for score, similarity, _ in call)
    assert LEXICAL_WEIGHT == 0.75


@pytest.mark.parametrize("weight", [-0.1, 10.01, float("nan"), float("inf"), True, "0.5", None,
                                    pytest.param(10**5000, id="an int of 5,001 digits")])
async def test_a_bad_lexical_weight_is_refused_alike(backends, weight):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": "a", "text": "tea"}], wait=True)
        return await memory.recall("tea", lexical_weight=weight)

    if weight is not None:  # None: the memory's weight
        assert (await backends.run(scenario)).error is InvalidScoringError
    with pytest.raises(InvalidScoringError):
        create_memory(tenant_id="t1", resource_id="r", thread_id="t", embedder=backends.emulator.embedder,
                      lexical_weight=weight)


@pytest.mark.parametrize("bound", [datetime(2026, 1, 1), "2026-01-01", 1_700_000_000])
async def test_a_naive_or_untyped_bound_is_refused_before_anything_runs(backends, bound):
    async def scenario(backend):
        memory = backend.memory()
        return await memory.recall("tea", occurred_after=bound)

    outcome = await backends.run(scenario)
    assert outcome.error is InvalidQueryError


async def test_a_window_applies_to_the_other_threads_and_to_shared_entries(backends):
    """Across threads (entries whose consent travels) and through a share grant, as in the thread itself."""
    travelling = {"source": "user", "scope": "profile", "visible": True}

    async def scenario(backend):
        clock = Clock(START)
        here, other = backend.memory(clock=clock), backend.memory(thread_id="thread-2", clock=clock)
        parent = backend.memory(thread_id="parent", clock=clock)
        for n, text in enumerate(texts(12)):
            await other.remember([{"id": f"o{n}", "text": text, "occurred_at": day(n), "consent": travelling}], wait=True)
            await parent.remember([{"id": f"p{n}", "text": text, "occurred_at": day(n)}], wait=True)
        await parent.share_with("thread-1", [f"p{n}" for n in range(12)])
        window = {"occurred_after": day(3), "occurred_before": day(8)}
        across = await here.recall("tea garden", top_k=32, across_threads=True, **window)
        shared = await here.recall("tea garden", top_k=32, share_from_parent_thread_id="parent", **window)
        return sorted(hit.id for hit in across.hits), sorted(hit.id for hit in shared.hits)

    across, shared = await backends.run(scenario)
    assert across == sorted(f"o{n}" for n in range(3, 8))
    assert shared == sorted(f"p{n}" for n in range(3, 8))


async def test_an_integer_too_long_for_json_in_a_filter_is_a_filter_error(backends):
    async def scenario(backend):
        return await backend.memory().recall("tea", filter={"a": 10**5000})

    assert (await backends.run(scenario)).error is InvalidFilterError
