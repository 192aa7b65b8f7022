"""The tokenizers' Python mirrors (v1: the hash embedder's features; v2: text_tsv and query terms since
revision 0010), the Porter stemmer's term-for-term proof against PostgreSQL, and the embedding checks."""

import json
import math
import random
import re
from pathlib import Path

import numpy as np
import psycopg
import pytest
from english_words import get_english_words_set
from prism_memory import (
    DimensionMismatchError,
    InvalidEmbeddingError,
    LimitExceededError,
    assert_finite_vector,
    create_hash_embedder,
    embed_batched,
)
from prism_memory.cli.data import sample_conversation_path
from prism_memory.lexical import (
    MAX_LEXICAL_CHARS_V2,
    MAX_QUERY_TERMS,
    lexical_terms,
    lexical_terms_v1,
    lexical_terms_v2,
    lexical_tokens_v2,
    porter_stem,
    query_terms,
    query_terms_v2,
)

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
    "How long until my token expires? Tokens EXPIRE after 30 minutes; the expiring tokens' expiry",
    "東京タワーに行きました。iPhone手机很好用 서울에서 만나요 ｶﾀｶﾅ 中",
    "x" * 63 + "東京" + "y" * 65 + " " + "字" * 70,
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


def locomo_texts(path: Path) -> list[str]:
    """Every distinct string of a LoCoMo-format file: turns, captions, questions, answers, summaries."""

    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)

    return list(dict.fromkeys(strings(json.loads(path.read_text()))))


def sql_terms(dsn: str, texts: list[str], function: str = "lexical_terms_v1") -> list[list[str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            f"select prism_memory.{function}(t) from unnest(%s::text[]) with ordinality as x(t, n) order by n",
            (texts,),
        ).fetchall()
    return [row[0] for row in rows]


def test_sql_tokenizer_v1_and_python_mirror_agree_on_tricky_and_sample_text(pg_dsn):
    texts = TRICKY + conversation_texts(sample_conversation_path())
    assert [lexical_terms_v1(text) for text in texts] == sql_terms(pg_dsn, texts)
    assert lexical_terms_v1(TRICKY[2]) == ["3", "5pm", "café", "hello", "old", "world", "year", "École"]
    assert lexical_terms_v1(TRICKY[7]) == ["short", "y" * 64]


#: Queries whose cap of 32 distinct terms matters: 11,000 distinct words, repeats, and a long Chinese query.
LONG_QUERIES = [
    " ".join(f"w{n:05d}" for n in range(11000))[:65536],
    " ".join(["zeta", "alpha", "zeta", "The", "beta"] + [f"t{n}" for n in range(40)]),
    "".join(chr(0x4E00 + (n * 7919) % 20000) for n in range(20000)),
    " ".join(["a" * 60] * 1000),  # few distinct terms: every prefix is read
]


def test_a_query_is_scored_by_its_first_32_distinct_terms_in_sql_and_python(pg_dsn):
    """bounded cost. A 64 KiB query had about 10,900 distinct terms; now the first 32 (in order of
    appearance) are kept, by the same rule in query_terms_v2 and lexical.query_terms_v2."""
    long_query, repeated = LONG_QUERIES[:2]
    texts = TRICKY + conversation_texts(sample_conversation_path()) + LONG_QUERIES
    assert [query_terms_v2(text) for text in texts] == sql_terms(pg_dsn, texts, "query_terms_v2")
    assert MAX_QUERY_TERMS == 32 and len(query_terms_v2(long_query)) == 32
    assert query_terms_v2(long_query) == sorted(f"w{n:05d}" for n in range(32))  # the first ones, not the smallest
    assert query_terms_v2(repeated) == sorted(["zeta", "alpha", "beta"] + [f"t{n}" for n in range(29)])
    assert query_terms_v2(TRICKY[2]) == lexical_terms_v2(TRICKY[2])  # short queries keep every term


def test_sql_tokenizer_v1_and_python_mirror_agree_on_all_of_locomo(pg_dsn, locomo_path):
    texts = conversation_texts(locomo_path)
    assert len(texts) == 5882 + 1986
    mismatches = [(text, sql) for text, sql in zip(texts, sql_terms(pg_dsn, texts)) if sql != lexical_terms_v1(text)]
    assert mismatches == []


def test_generated_tsvector_holds_the_same_terms_and_survives_huge_text(pg_dsn):
    huge = " ".join(f"word{index}" for index in range(300_000))  # ~3 MB, far past the 1 MB tsvector limit
    with psycopg.connect(pg_dsn) as conn:
        terms = conn.execute("select tsvector_to_array(array_to_tsvector(prism_memory.lexical_terms_v1(%s)))", (huge,)).fetchone()[0]
    assert sorted(terms) == lexical_terms_v1(huge)
    assert len(terms) == len(set(huge[:200_000].split()))


def test_tokenizer_v2_stems_english_words_and_cuts_cjk_into_bigrams():
    assert lexical_terms is lexical_terms_v2 and query_terms is query_terms_v2  # the tokenizer at head
    assert query_terms_v2("how long until my token expires") == ["expir", "long", "token"]
    assert lexical_terms_v2("Tokens expire after 30 minutes") == ["30", "expir", "minut", "token"]
    assert lexical_terms_v1("Tokens expire after 30 minutes") == ["30", "expire", "minutes", "tokens"]
    assert lexical_terms_v2(TRICKY[2]) == ["3", "5pm", "café", "hello", "old", "world", "year", "École"]  # no stem: digits, accents
    assert lexical_tokens_v2("東京タワーに行 s 中 iPhone手机") == ["東京", "京タ", "タワ", "ワー", "ーに", "に行", "中", "iphon", "手机"]  # s: a stopword
    assert lexical_terms_v2("서울에서 만나요") == sorted(["서울", "울에", "에서", "만나", "나요"])  # Hangul too: 서울 finds 서울에서
    # Over 64 characters: a CJK run is all bigrams; any other term keeps its first 64 characters.
    assert lexical_terms_v2("字" * 70) == ["字字"] and lexical_terms_v1("字" * 70) == []
    assert lexical_terms_v2("q" * 70) == ["q" * 64] and lexical_terms_v1("q" * 70) == []
    assert porter_stem("s") == "s"  # an empty stem is the word itself, as PostgreSQL's snowball dictionary reads it


def test_sql_tokenizer_v2_and_python_mirror_agree_on_tricky_and_sample_text(pg_dsn):
    texts = TRICKY + conversation_texts(sample_conversation_path()) + LONG_QUERIES
    assert [lexical_tokens_v2(text) for text in texts] == sql_terms(pg_dsn, texts, "lexical_tokens_v2")
    assert [lexical_terms_v2(text) for text in texts] == sql_terms(pg_dsn, texts, "lexical_terms_v2")


@pytest.mark.slow
def test_sql_tokenizer_v2_and_python_mirror_classify_every_code_point_alike(pg_dsn):
    """Each code point (but NUL and the surrogates, which no text holds) is tried as 'a' + 3 of it + 'b': a
    separator gives a and b, a CJK character bigrams of its own, any other term character one term acb...b."""
    points = [chr(point) for point in range(1, 0x110000) if not 0xD800 <= point <= 0xDFFF]
    texts = [" ".join(f"a{point * 3}b" for point in points[start : start + 16000]) for start in range(0, len(points), 16000)]
    assert [lexical_tokens_v2(text) for text in texts] == sql_terms(pg_dsn, texts, "lexical_tokens_v2")


@pytest.mark.slow
def test_porter_stems_are_postgres_stems_word_for_word(pg_dsn, locomo_path):
    """The proof behind the emulator's stems (snowballstemmer's Porter) being PostgreSQL's (the snowball
    dictionary porter_stem_v1): every distinct ASCII word of LoCoMo and of two English word lists (web2 and
    GCIDE, about 260,000 words), each stemmed by both."""
    words = set(get_english_words_set(["web2", "gcide"], lower=True))
    for text in locomo_texts(locomo_path):
        words.update(re.findall("[a-z]+", text.lower()))
    words = sorted(word for word in words if re.fullmatch("[a-z]+", word))
    assert len(words) > 250_000
    with psycopg.connect(pg_dsn) as conn:
        stems = conn.execute(
            "select array_agg((ts_lexize('prism_memory.porter_stem_v1', w))[1] order by n) "
            "from unnest(%s::text[]) with ordinality as x(w, n)", (words,)).fetchone()[0]
    assert [(word, stem) for word, stem in zip(words, stems) if porter_stem(word) != stem] == []


@pytest.mark.slow
def test_sql_tokenizer_v2_and_python_mirror_agree_on_all_of_locomo(pg_dsn, locomo_path):
    """Whole texts, not single words: every string of LoCoMo, as entry terms and as query terms."""
    texts = locomo_texts(locomo_path)
    assert len(texts) > 15_000
    for function, mirror in (("lexical_terms_v2", lexical_terms_v2), ("query_terms_v2", query_terms_v2)):
        assert [(text, sql) for text, sql in zip(texts, sql_terms(pg_dsn, texts, function)) if sql != mirror(text)] == []


def test_a_huge_cjk_text_is_indexed_within_the_tsvector_limit(pg_dsn):
    """Each character gives up to two 4-byte bigrams: 100,000 characters (MAX_LEXICAL_CHARS_V2) of random
    characters of CJK extension B stay below the 1 MB of lexemes a tsvector holds; the rest is not read."""
    generator = random.Random(15)
    huge = "".join(chr(generator.randint(0x20000, 0x2A6DF)) for _ in range(MAX_LEXICAL_CHARS_V2 + 20_000))
    with psycopg.connect(pg_dsn) as conn:
        terms = conn.execute("select tsvector_to_array(array_to_tsvector(prism_memory.lexical_terms_v2(%s)))", (huge,)).fetchone()[0]
    assert sorted(terms) == lexical_terms_v2(huge)
    assert len(terms) == len({huge[start : start + 2] for start in range(MAX_LEXICAL_CHARS_V2 - 1)})


def test_the_stemming_dictionary_is_a_recorded_dependency_of_the_tokenizer(pg_dsn):
    """Citus creates a text search dictionary on its workers only as a dependency of an object it distributes
    (prism_memory.citus.distribute): lexical_tokens_v2, which text_tsv's lexical_terms_v2 calls, records it."""
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            "select d.refobjid::regdictionary::text from pg_depend d "
            "where d.classid = 'pg_proc'::regclass and d.objid = 'prism_memory.lexical_tokens_v2(text)'::regprocedure "
            "and d.refclassid = 'pg_ts_dict'::regclass").fetchall()
    assert rows == [("prism_memory.porter_stem_v1",)]


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
