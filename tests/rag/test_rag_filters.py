"""RAG ``query`` and ``lexical_query`` with filters of the metadata filter language on both backends.

Each read returns exactly min(top_k, matches), the same ids in the same order as a brute force over the
chunks an independent predicate keeps (cosine similarity desc, then id; the lexical score, then id).
Postgres reads an operator-free filter with ``@>`` and any other with ``@@`` (``rag_where_v2``); the
language itself: tests/recall/test_filters.py; large scopes (HNSW): tests/rag/test_rag_filtered_hnsw.py.
"""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from prism_memory import InvalidFilterError, RagAccessConstraint, RagChunk

from parity import Raised

ROWS = 48
DIMENSIONS = 64
DEPTS = ["hr", "product", "eng"]


def metadata_of(i: int) -> dict:
    """Look-alike values on purpose: ``"1"`` and 1, true and 1, ``"user_1"`` and ``"user-1"``, 2026 and 2026.0."""
    metadata = {
        "dept": DEPTS[i % 3],
        "year": [2024, 2025, 2026, 2026.0][i % 4],
        "tags": [["policy"], ["plan", "public"], [], ["policy", 1]][i % 4],
        "user": {"tier": ["gold", "silver", "bronze"][i % 3], "id": "user_1" if i % 2 else "user-1"},
        "rank": [1, "1", True, 1.0, None][i % 5],
        "score": (i * 7 % 10) / 4,
    }
    if i % 6 == 0:
        del metadata["dept"]
    return metadata


@pytest.fixture
def corpus():
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(ROWS, DIMENSIONS)).astype(np.float32)
    chunks = [
        RagChunk(f"c{i:02d}", f"s{i % 4}", f"alpha chunk {i}" + (" beta" if i % 2 else ""), vectors[i].tolist(), metadata_of(i))
        for i in range(ROWS)
    ]
    return vectors, chunks


FILTERS = [
    ("$eq shorthand", {"dept": "hr"}, lambda m: m.get("dept") == "hr"),
    ("dotted path", {"user.tier": "gold"}, lambda m: m["user"]["tier"] == "gold"),
    ("$ne: missing matches", {"dept": {"$ne": "hr"}}, lambda m: m.get("dept") != "hr"),
    ("$in across types", {"rank": {"$in": ["1", None]}}, lambda m: m["rank"] in ("1", None)),
    ("number 1 is not true", {"rank": {"$eq": 1}}, lambda m: m["rank"] == 1 and m["rank"] is not True),
    ("$nin", {"user.id": {"$nin": ["user_1"]}}, lambda m: m["user"]["id"] == "user-1"),
    ("range", {"score": {"$gte": 0.5, "$lt": 1.75}}, lambda m: 0.5 <= m["score"] < 1.75),
    ("2026 == 2026.0", {"year": {"$gt": 2025}}, lambda m: m["year"] > 2025),
    ("$contains", {"tags": {"$contains": "policy"}}, lambda m: "policy" in m["tags"]),
    ("$exists false", {"dept": {"$exists": False}}, lambda m: "dept" not in m),
    ("$or", {"$or": [{"dept": "eng"}, {"user.tier": "bronze"}]}, lambda m: m.get("dept") == "eng" or m["user"]["tier"] == "bronze"),
    ("$not of containment", {"$not": {"tags": ["policy"]}}, lambda m: "policy" not in m["tags"]),
    ("$and and a field", {"$and": [{"year": 2026}, {"rank": {"$ne": True}}], "user.id": "user_1"},
     lambda m: m["year"] == 2026 and m["rank"] is not True and m["user"]["id"] == "user_1"),
    ("no match", {"rank": {"$gt": "z"}}, lambda m: False),
    ("everything", {"$not": {"nope": {"$exists": True}}}, lambda m: True),
]


def brute_force(vectors, chunks, query, keep, k):
    rows = [i for i, chunk in enumerate(chunks) if keep(chunk.metadata)]
    if not rows:
        return []
    matrix = vectors[rows].astype(np.float64)
    scores = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    order = sorted(range(len(rows)), key=lambda j: (-scores[j], chunks[rows[j]].id))
    return [chunks[rows[j]].id for j in order[:k]]


@pytest.mark.parametrize(("name", "filter", "keep"), FILTERS, ids=[name for name, _, _ in FILTERS])
async def test_query_and_lexical_query_return_exactly_what_the_brute_force_keeps(backends, corpus, name, filter, keep):
    vectors, chunks = corpus
    query = vectors[3].astype(np.float64) + vectors[17].astype(np.float64)

    async def scenario(backend):
        store = backend.vector_store
        await store.upsert("t1", "kb", chunks)
        await store.upsert("t1", "other", chunks[:5])
        results = {}
        for k in (1, 5, 32):
            results[f"query{k}"] = [m.id for m in await store.query("t1", "kb", query.tolist(), top_k=k, filter=filter)]
            results[f"lexical{k}"] = [(m.id, m.score) for m in await store.lexical_query("t1", "kb", "alpha beta", top_k=k, filter=filter)]
        return results

    outcome = await backends.run(scenario)
    kept = [chunk for chunk in chunks if keep(chunk.metadata)]
    for k in (1, 5, 32):
        assert outcome[f"query{k}"] == brute_force(vectors, chunks, query, keep, k), k
        lexical = sorted(((1.0 if " beta" in chunk.text else 0.5), chunk.id) for chunk in kept)
        expected = sorted(lexical, key=lambda item: (-item[0], item[1]))[:k]
        assert [(chunk_id, score) for chunk_id, score in outcome[f"lexical{k}"]] == [(i, s) for s, i in expected], k
        assert len(outcome[f"query{k}"]) == min(k, len(kept))


async def test_an_operator_filter_and_the_acl_both_narrow(backends, corpus):
    vectors, chunks = corpus
    reader = RagAccessConstraint("ada")

    async def scenario(backend):
        store = backend.vector_store
        await store.upsert("t1", "kb", chunks)
        await store.set_source_access("t1", "s1", principal_ids=["ada"], access_version=1)
        read = {"filter": {"user.id": {"$in": ["user_1"]}, "tags": {"$contains": "plan"}}, "authorization": reader}
        return (
            [m.id for m in await store.query("t1", "kb", vectors[0].tolist(), top_k=32, **read)],
            [m.id for m in await store.lexical_query("t1", "kb", "alpha", top_k=32, **read)],
        )

    by_vector, by_text = await backends.run(scenario)
    expected = sorted(c.id for c in chunks if c.source_id == "s1" and c.metadata["user"]["id"] == "user_1" and "plan" in c.metadata["tags"])
    assert expected and sorted(by_vector) == expected and by_text == expected


async def test_a_bad_filter_raises_invalid_filter_error_on_both_backends_before_anything_is_read(backends):
    async def scenario(backend):
        store = backend.vector_store
        outcomes = []
        for filter in ({"a": {"$in": []}}, {"a..b": 1}, {"$or": []}, {"a": {"b": {"$eq": 1}}}, {"a": {"$gt": True, "x": 1}}):
            for call in (lambda wanted=filter: store.query("t1", "kb", [1.0] * 64, filter=wanted),
                         lambda wanted=filter: store.lexical_query("t1", "kb", "alpha", filter=wanted)):
                try:
                    await call()
                except Exception as exc:  # compared by type across backends
                    outcomes.append(Raised(type(exc)))
        return outcomes

    assert await backends.run(scenario) == [{"error": InvalidFilterError}] * 10


def test_rag_reads_through_direct_sql_take_the_language(pg_dsn, corpus):
    """A psql caller: the same filters through ``rag_query_v1`` and ``rag_lexical_query_v1``, and PM019 for a bad one."""
    import json

    _, chunks = corpus
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for chunk in chunks[:12]:
            conn.execute(
                "select prism_memory.rag_upsert_v1('t1', 'kb', array[%s], array[%s], array[%s], array[%s::vector], array[%s::jsonb])",
                (chunk.id, chunk.source_id, chunk.text, str(chunk.embedding), json.dumps(chunk.metadata)),
            )
        vector = str(chunks[0].embedding)
        for _, filter, keep in FILTERS:
            rows = conn.execute(
                "select id from prism_memory.rag_lexical_query_v1('t1', 'kb', 'alpha', 32, %s::jsonb)", (json.dumps(filter),)
            ).fetchall()
            assert sorted(row[0] for row in rows) == sorted(c.id for c in chunks[:12] if keep(c.metadata)), filter
            rows = conn.execute(
                "select id from prism_memory.rag_query_v1('t1', 'kb', %s::vector, 32, %s::jsonb)", (vector, json.dumps(filter))
            ).fetchall()
            assert sorted(row[0] for row in rows) == sorted(c.id for c in chunks[:12] if keep(c.metadata)), filter
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("select * from prism_memory.rag_query_v1('t1', 'kb', %s::vector, 5, '{\"a\": {\"$in\": []}}')", (vector,))
        assert raised.value.sqlstate == "PM019"


HOSTILE = ["'", '"', "\\", "$", "@", ")", "||", "\n", "é", "like_regex", '") || (1 == 1', "'; drop table x; --", "$.a"]


async def test_hostile_keys_and_strings_match_literally_through_the_stores(backends):
    keys = ["k" + text.replace(".", "_") for text in HOSTILE]
    chunks = [
        RagChunk(f"h{i:02d}", "s", "alpha", [1.0] + [0.01 * i] * 63, {key: text, "list": [text]})
        for i, (key, text) in enumerate(zip(keys, HOSTILE))
    ]

    async def scenario(backend):
        store = backend.vector_store
        await store.upsert("t1", "kb", chunks)
        found = []
        for key, text in zip(keys, HOSTILE):
            for filter in ({key: {"$in": [text]}}, {"list": {"$contains": text}}, {key: text, "list": [text]}):
                found.append([m.id for m in await store.query("t1", "kb", [1.0] * 64, top_k=32, filter=filter)])
            found.append(len(await store.lexical_query("t1", "kb", "alpha", top_k=32, filter={key: {"$ne": text}})))
        return found

    found = await backends.run(scenario)
    for i in range(len(HOSTILE)):
        assert found[4 * i : 4 * i + 3] == [[f"h{i:02d}"]] * 3
        assert found[4 * i + 3] == len(HOSTILE) - 1
