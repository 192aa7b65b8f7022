"""recall_v4's selection and lexical weight, called directly in SQL: a time window is applied before the top_k
cut (the same ids, order and scores as the unwindowed ranking restricted to the window), the explain counts
name what the selection removed, and bad bounds and weights get their PM codes. Look-alike tenants hold
distinct ids, so a leak would show."""

from datetime import datetime, timedelta, timezone

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from prism_memory import create_hash_embedder

from conftest import TEST_DIMENSIONS

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
WORDS = "tea garden lisbon flight hotel piano yoga budget chess river".split()


def recall(conn, tenant: str, vector, top_k: int = 32, **options) -> list[tuple]:
    named = "".join(f", p_{name} => %({name})s" for name in options)
    return conn.execute(
        "select kind, id, score, created_at from prism_memory.recall_v4(%(tenant)s, 'user_1', 'main', %(vector)s, "
        f"'tea garden', %(top_k)s{named}, p_now => %(now)s)",
        {"tenant": tenant, "vector": vector, "top_k": top_k, "now": START + timedelta(days=40), **options},
    ).fetchall()


@pytest.fixture
async def written(pg_dsn):
    """Thirty entries (at most a recall's top_k) a day apart in two look-alike tenants (distinct ids), and the query's embedding."""
    embedder = create_hash_embedder(TEST_DIMENSIONS)
    texts = [f"{WORDS[n % 10]} {WORDS[(n * 3) % 10]} note {n}" for n in range(30)]
    embeddings = await embedder.embed(texts)
    conn = psycopg.connect(pg_dsn, autocommit=True)
    register_vector(conn)
    for tenant in ("acme", "acme-corp"):
        for n, (text, embedding) in enumerate(zip(texts, embeddings)):
            conn.execute(
                "select prism_memory.remember_v3(%s, 'user_1', 'main', array[%s], array[%s], array[%s::vector], "
                "p_now => %s)",
                (tenant, f"{tenant}-{n}", text, np.asarray(embedding, dtype=np.float32), START + timedelta(days=n)))
    [query] = await embedder.embed(["tea garden"])
    yield conn, np.asarray(query, dtype=np.float32)
    conn.close()


async def test_a_created_window_keeps_the_unwindowed_ranking_of_its_entries(written):
    conn, query = written
    everything = [row for row in recall(conn, "acme", query) if row[0] == "hit"]
    after, before = START + timedelta(days=10), START + timedelta(days=20)
    inside = [row for row in everything if after <= row[3] < before]
    for top_k in (3, 10, 32):
        windowed = recall(conn, "acme", query, top_k, created_after=after, created_before=before)
        assert [(row[1], row[2]) for row in windowed] == [(row[1], row[2]) for row in inside][:top_k]
    assert all(row[1].startswith("acme-") and not row[1].startswith("acme-corp") for row in everything)
    # With no created_at in the thread's table, occurred_at reads as created_at: the same window.
    assert recall(conn, "acme", query, occurred_after=after, occurred_before=before) == recall(
        conn, "acme", query, created_after=after, created_before=before)
    assert recall(conn, "acme", query, created_after=before, created_before=after) == []


async def test_explain_counts_what_the_selection_removed(written):
    conn, query = written
    rows = recall(conn, "acme", query, 4, explain=True, created_before=START + timedelta(days=20))
    gates = {row[1]: row for row in rows if row[0] == "gate"}
    ranks = dict(conn.execute(
        "select id, rank from prism_memory.recall_v4('acme', 'user_1', 'main', %s, 'tea', 4, p_explain => true, "
        "p_created_before => %s, p_now => %s) where kind = 'gate'",
        (query, START + timedelta(days=20), START + timedelta(days=40))).fetchall())
    assert list(gates) == ["scope", "hold", "consent", "invalidation", "expiry", "selection"]
    assert ranks == {"scope": 0, "hold": 0, "consent": 0, "invalidation": 0, "expiry": 0, "selection": 10}


async def test_the_lexical_weight_ranks_and_is_checked(written):
    conn, query = written
    for weight in (0.0, 0.25, 0.75, 10.0):
        rows = conn.execute(
            "select id, score, similarity, lexical from prism_memory.recall_v4('acme', 'user_1', 'main', %s, "
            "'tea garden', 8, p_lexical_weight => %s)", (query, weight)).fetchall()
        assert [score for _, score, *_ in rows] == sorted((score for _, score, *_ in rows), reverse=True)
        assert all(score == pytest.approx(similarity + weight * lexical) for _, score, similarity, lexical in rows)
    for weight in (-0.5, 10.5, float("nan"), float("inf"), None):
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("select prism_memory.recall_v4('acme', 'user_1', 'main', %s, 'tea', 8, p_lexical_weight => %s)",
                         (query, weight))
        assert raised.value.sqlstate == "PM015"
    for bound in ("infinity", "-infinity", "10000-01-01 00:00:00+00"):
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("select prism_memory.recall_v4('acme', 'user_1', 'main', %s, 'tea', 8, "
                         "p_occurred_after => %s::timestamptz)", (query, bound))
        assert raised.value.sqlstate == "PM008"
