"""Remember and recall on both backends: scores, ordering, tie-breaks, adjacency, scoping."""

import math

import pytest
from prism_memory import InvalidScopeError, MemoryEntry, Scope, create_hash_embedder, create_memory
from prism_memory.lexical import lexical_terms
from prism_memory.scoring import LEXICAL_WEIGHT

TURNS = [
    "Caroline: I went to an LGBTQ support group yesterday and it was powerful.",
    "Melanie: That's amazing! What did you talk about there?",
    "Caroline: Transgender stories, and how to find courage to be yourself.",
    "Melanie: I painted a sunrise over the lake last week.",
    "Caroline: Your painting sounds beautiful, do you paint often?",
    "Melanie: Most weekends. Painting helps me relax after work with the kids.",
    "Caroline: I'm looking into counseling certification programs.",
    "Melanie: You'd be a great counselor, you listen so well.",
]


def entries():
    return [{"id": f"D1:{index}", "text": text} for index, text in enumerate(TURNS, start=1)]


async def test_recall_orders_by_default_score_with_components(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember(entries(), wait=True)
        return await memory.recall("When did Melanie paint a sunrise?", top_k=5)

    result = await backends.run(scenario)
    hits = result["hits"]
    assert hits[0]["id"] == "D1:4"
    assert len(hits) == 5 and result["adjacent"] == []
    scores = [hit["score"] for hit in hits]
    assert scores == sorted(scores, reverse=True)
    query_terms = set(lexical_terms("When did Melanie paint a sunrise?"))
    for hit in hits:
        expected_lexical = len(query_terms & set(lexical_terms(hit["text"]))) / len(query_terms)
        assert math.isclose(hit["lexical"], expected_lexical, abs_tol=1e-12)
        assert math.isclose(hit["score"], hit["similarity"] + LEXICAL_WEIGHT * hit["lexical"], abs_tol=1e-12)
        assert -1.0 <= hit["similarity"] <= 1.0


async def test_ties_break_by_sequence_then_id(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember(
            [
                MemoryEntry("b", "same words here", sequence=5),
                MemoryEntry("a", "same words here", sequence=5),
                MemoryEntry("c", "same words here", sequence=2),
                MemoryEntry("Z", "same words here", sequence=5),
            ],
            wait=True,
        )
        return await memory.recall("same words", top_k=4)

    result = await backends.run(scenario)
    assert [hit["id"] for hit in result["hits"]] == ["c", "Z", "a", "b"]
    assert len({hit["score"] for hit in result["hits"]}) == 1


async def test_message_range_returns_adjacent_turns_of_the_same_thread(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember(entries(), wait=True)
        await backend.memory(thread_id="other").remember(entries(), wait=True)
        return await memory.recall("counseling certification", top_k=1, message_range=2)

    result = await backends.run(scenario)
    assert [hit["id"] for hit in result["hits"]] == ["D1:7"]
    assert [(entry["id"], entry["sequence"]) for entry in result["adjacent"]] == [
        ("D1:5", 5),
        ("D1:6", 6),
        ("D1:8", 8),
    ]


async def test_recall_never_crosses_tenant_resource_or_thread(backends):
    async def scenario(backend):
        await backend.memory(tenant_id="t2").remember([{"id": "x1", "text": "secret of tenant two"}], wait=True)
        await backend.memory(resource_id="user-bob").remember([{"id": "x2", "text": "secret of bob"}], wait=True)
        await backend.memory(thread_id="thread-2").remember([{"id": "x3", "text": "secret of thread two"}], wait=True)
        mine = backend.memory()
        await mine.remember([{"id": "m1", "text": "my own note"}], wait=True)
        return await mine.recall("secret", top_k=32, message_range=4)

    result = await backends.run(scenario)
    assert [hit["id"] for hit in result["hits"]] == ["m1"]
    assert result["adjacent"] == []


async def test_sequences_are_assigned_and_kept_on_upsert(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": "a", "text": "alpha"}, {"id": "b", "text": "beta", "sequence": 10}], wait=True)
        await memory.remember([{"id": "c", "text": "gamma"}, {"id": "a", "text": "alpha corrected"}], wait=True)
        result = await memory.recall("alpha beta gamma", top_k=3)
        return sorted((hit.id, hit.sequence, hit.text) for hit in result.hits)

    rows = await backends.run(scenario)
    assert rows == [["a", 1, "alpha corrected"], ["b", 10, "beta"], ["c", 11, "gamma"]]


async def test_metadata_importance_and_unicode_round_trip(backends):
    text = "Zoë likes 🍣 and naïve café 👩‍👩‍👧 e\u0301"

    async def scenario(backend):
        memory = backend.memory()
        await memory.remember(
            [
                {"id": "u1", "text": text, "metadata": {"tags": ["food", "ü"], "n": 1.5}, "importance": 7},
                {"id": "u2", "text": "plain", "importance": -3},
                {"id": "u3", "text": "no importance"},
            ],
            wait=True,
        )
        result = await memory.recall("café 🍣", top_k=3)
        return {hit.id: (hit.text, hit.metadata, hit.importance) for hit in result.hits}

    hits = await backends.run(scenario)
    assert hits["u1"] == [text, {"tags": ["food", "ü"], "n": 1.5}, 1.0]
    assert hits["u1"][0].encode() == text.encode()
    assert hits["u2"][2] == 0.0
    assert hits["u3"][2] is None


async def test_background_remember_reports_pending_then_flushes(backends):
    async def scenario(backend):
        memory = backend.memory()
        started = await memory.remember(entries(), wait=False)
        await memory.flush()
        result = await memory.recall("sunrise", top_k=1)
        return started, [hit.id for hit in result.hits]

    started, ids = await backends.run(scenario)
    assert started == {"accepted": 8, "pending": 8, "done": False}
    assert ids == ["D1:4"]


async def test_metadata_and_working_memory_come_back_as_their_json(backends):
    metadata = {"tuple": (1, "two"), "nested": {"list": [1.5, None, True, {"deep": "ü"}]}, "big": 2**70}

    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": "j", "text": "json shapes", "metadata": metadata}], wait=True)
        working = await memory.update_working({"pair": ("a", "b"), "n": 1})
        [hit] = (await memory.recall("json shapes", top_k=1)).hits
        return hit.metadata, working.data, (await memory.get_working()).data

    stored, working, read_back = await backends.run(scenario)
    assert stored == {"tuple": [1, "two"], "nested": {"list": [1.5, None, True, {"deep": "ü"}]}, "big": 2**70}
    assert working == read_back == {"pair": ["a", "b"], "n": 1}


async def test_for_thread_is_the_same_resource_in_another_thread(backends):
    """Memory.for_thread (how the MCP server serves a resource's threads): same tenant, resource, stores and
    options; a thread of its own, isolated from the others like any thread."""
    async def scenario(backend):
        base = backend.memory(thread_id=None, secrets=["hunter2"])
        plans, diary = base.for_thread("plans"), base.for_thread("diary")
        await plans.remember([{"id": "p1", "text": "book the hunter2 train to Lyon"}], wait=True)
        await diary.remember([{"id": "d1", "text": "walked to the train station"}], wait=True)
        assert plans.config.scope == Scope("t1", "user-ada", "plans")
        assert plans.config.vector_store is base.config.vector_store and plans.config.redaction is base.config.redaction
        return {"plans": await plans.recall("train"), "diary": await diary.recall("train"),
                "direct": await backend.memory(thread_id="plans").recall("train")}

    result = await backends.run(scenario)
    assert [hit["id"] for hit in result["plans"]["hits"]] == ["p1"] == [hit["id"] for hit in result["direct"]["hits"]]
    assert result["plans"]["hits"][0]["text"] == "book the [REDACTED] train to Lyon"
    assert [hit["id"] for hit in result["diary"]["hits"]] == ["d1"]


@pytest.mark.parametrize("thread_id", ["", "   ", "x" * 257, None, 7, "main/agent:researcher"])
def test_for_thread_refuses_a_malformed_or_reserved_thread(thread_id):
    base = create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(8))
    with pytest.raises(InvalidScopeError):
        base.for_thread(thread_id)
