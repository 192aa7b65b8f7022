"""The tokenizer mirror and the embedding checks."""

import json
import math
from pathlib import Path

import numpy as np
import psycopg
import pytest
from prism_memory import (
    DimensionMismatchError,
    InvalidEmbeddingError,
    LimitExceededError,
    assert_finite_vector,
    create_hash_embedder,
    embed_batched,
)
from prism_memory.cli import sample_conversation_path
from prism_memory.lexical import MAX_QUERY_TERMS, lexical_terms, query_terms

TRICKY = [
    "",
    "   ",
    "Hello, World! It's 5pm — café ÉCOLE 3-year-old the",
    "J.K. Rowling's e-mail: jk@example.com, see https://example.com/a?b=c&d",
    "don’t “quote” … ellipsis «guillemets» ¿qué? ¡sí!",
    "日本語のテキスト、句読点。カタカナ",
    "emoji 👩‍👩‍👧 and e\u0301 combining ÅNGSTRÖM",
    "x" * 70 + " short " + "y" * 64,
    "& | ! : * ( ) ' < > metacharacters",
    "tab\tnewline\ncarriage\rreturn\x0bvt\x0cff",
]


def conversation_texts(path: Path) -> list[str]:
    """Every turn and question of a LoCoMo-format file."""
    samples = json.loads(path.read_text())
    texts = []
    for sample in samples:
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(turn["text"] for turn in turns)
        texts.extend(qa["question"] for qa in sample["qa"])
    return texts


def sql_terms(dsn: str, texts: list[str], function: str = "lexical_terms_v1") -> list[list[str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            f"select prism_memory.{function}(t) from unnest(%s::text[]) with ordinality as x(t, n) order by n",
            (texts,),
        ).fetchall()
    return [row[0] for row in rows]


def test_sql_tokenizer_and_python_mirror_agree_on_tricky_and_sample_text(pg_dsn):
    texts = TRICKY + conversation_texts(sample_conversation_path())
    assert [lexical_terms(text) for text in texts] == sql_terms(pg_dsn, texts)
    assert lexical_terms(TRICKY[2]) == ["3", "5pm", "café", "hello", "old", "world", "year", "École"]
    assert lexical_terms(TRICKY[7]) == ["short", "y" * 64]


def test_a_query_is_scored_by_its_first_32_distinct_terms_in_sql_and_python(pg_dsn):
    """Issue: bounded cost. A 64 KiB query had about 10,900 distinct terms; now the first 32 (in order of
    appearance) are kept, by the same rule in query_terms_v1 and lexical.query_terms."""
    long_query = " ".join(f"w{n:05d}" for n in range(11000))[:65536]
    repeated = " ".join(["zeta", "alpha", "zeta", "The", "beta"] + [f"t{n}" for n in range(40)])
    texts = TRICKY + conversation_texts(sample_conversation_path()) + [long_query, repeated]
    assert [query_terms(text) for text in texts] == sql_terms(pg_dsn, texts, "query_terms_v1")
    assert MAX_QUERY_TERMS == 32 and len(query_terms(long_query)) == 32
    assert query_terms(long_query) == sorted(f"w{n:05d}" for n in range(32))  # the first ones, not the smallest
    assert query_terms(repeated) == sorted(["zeta", "alpha", "beta"] + [f"t{n}" for n in range(29)])
    assert query_terms(TRICKY[2]) == lexical_terms(TRICKY[2])  # short queries keep every term


def test_sql_tokenizer_and_python_mirror_agree_on_all_of_locomo(pg_dsn, locomo_path):
    texts = conversation_texts(locomo_path)
    assert len(texts) == 5882 + 1986
    mismatches = [(text, sql) for text, sql in zip(texts, sql_terms(pg_dsn, texts)) if sql != lexical_terms(text)]
    assert mismatches == []


def test_generated_tsvector_holds_the_same_terms_and_survives_huge_text(pg_dsn):
    huge = " ".join(f"word{index}" for index in range(300_000))  # ~3 MB, far past the 1 MB tsvector limit
    with psycopg.connect(pg_dsn) as conn:
        terms = conn.execute("select tsvector_to_array(array_to_tsvector(prism_memory.lexical_terms_v1(%s)))", (huge,)).fetchone()[0]
    assert sorted(terms) == lexical_terms(huge)
    assert len(terms) == len(set(huge[:200_000].split()))


@pytest.mark.parametrize(
    ("vector", "expected_length", "error"),
    [
        ([], None, InvalidEmbeddingError),
        ([0.0, 0.0], None, InvalidEmbeddingError),
        ([1.0, math.nan], None, InvalidEmbeddingError),
        ([1.0, -math.inf], None, InvalidEmbeddingError),
        ([1.0, "2"], None, InvalidEmbeddingError),
        ([1.0, True], None, InvalidEmbeddingError),
        ("12", None, InvalidEmbeddingError),
        (None, None, InvalidEmbeddingError),
        ([1.0, 2.0], 3, DimensionMismatchError),
    ],
)
def test_assert_finite_vector_rejects(vector, expected_length, error):
    with pytest.raises(error):
        assert_finite_vector(vector, "v", expected_length)


def test_assert_finite_vector_accepts_numbers_and_numpy():
    assert assert_finite_vector([1, 2.5, np.float32(3)], "v", 3) == [1.0, 2.5, 3.0]
    assert assert_finite_vector(np.array([0.0, 1.0], dtype=np.float32)) == [0.0, 1.0]


class CountingEmbedder:
    dimensions = 4

    def __init__(self):
        self.calls = []

    async def embed(self, texts):
        self.calls.append(len(texts))
        return [[1.0, 0.0, float(len(text)), 0.0] for text in texts]


async def test_embed_batched_splits_into_capped_batches():
    embedder = CountingEmbedder()
    vectors = await embed_batched(embedder, [f"t{index}" for index in range(300)], 128)
    assert embedder.calls == [128, 128, 44]
    assert vectors[299] == [1.0, 0.0, 4.0, 0.0]
    with pytest.raises(LimitExceededError):
        await embed_batched(embedder, ["a"], 129)


async def test_hash_embedder_is_deterministic_integer_valued_and_never_zero():
    embedder = create_hash_embedder(32)
    [first, again, punctuation] = await embedder.embed(["Prefers concise answers", "Prefers concise answers", "!!!"])
    assert first == again and len(first) == 32
    assert all(value == int(value) for value in first)
    assert any(punctuation)
    with pytest.raises(LimitExceededError):
        create_hash_embedder(1)
