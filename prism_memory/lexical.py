"""Lexical terms: the tokenizers behind ``text_tsv``, the lexical leg of recall and the hash embedder.

Two rules, each defined by SQL functions and mirrored here exactly, so the
emulator gives the same answers as Postgres whatever the database's locale:

* **v2** (:func:`lexical_terms_v2`, :func:`query_terms_v2`; SQL
  ``lexical_terms_v2``, ``query_terms_v2``, ``lexical_tokens_v2``; revision
  0010) is the one at head: ``text_tsv`` of entries and RAG chunks, and the
  query terms of ``recall_v4`` and ``rag_lexical_query_v1``.
  :func:`lexical_terms` and :func:`query_terms` name it.
* **v1** (:func:`lexical_terms_v1`; revision 0001)
  is what ``text_tsv`` held before 0010, and stays the hash embedder's
  features (:mod:`prism_memory.embedding`), so vectors already stored keep
  matching the vectors of new queries.

The v1 rule:

1. read at most the first 200,000 characters (so a ``tsvector`` stays far below
   Postgres's 1 MB limit);
2. lower-case ASCII letters only (Postgres ``lower(... collate "C")``);
3. split on every character that is not an ASCII letter or digit, nor a code
   point from U+00C0 up (the General Punctuation block U+2000-U+206F and the
   CJK punctuation block U+3000-U+303F also split): each piece is a term;
4. drop empty terms, terms over 64 characters and :data:`STOPWORDS_V1`;
5. return the distinct terms in code-point order.

The v2 rule reads at most the first 100,000 characters (:data:`MAX_LEXICAL_CHARS_V2`),
lower-cases and splits as v1 (steps 2 and 3), then cuts each piece into
maximal runs of :data:`CJK_RANGES` characters (Han, Hiragana, Katakana,
Hangul) and of other characters, in order:

* a CJK run becomes its overlapping character bigrams (``東京タワー`` -> ``東京``,
  ``京タ``, ``タワ``, ``ワー``); a one-character run stays one term. A
  substring query of two or more characters therefore holds only bigrams
  of its sentence, and no CJK run is ever too long to index;
* any other run is one term: over 64 characters it is cut to its first 64
  (not stemmed, never dropped); else a stopword (:data:`STOPWORDS_V1`) is
  dropped; else a run of ASCII letters only is replaced by its stem under
  the Porter algorithm (Snowball's ``porter``, PostgreSQL's snowball
  dictionary ``porter_stem_v1``, with an empty stem read as the word itself,
  as PostgreSQL does); else it stays as it is (digits, accents, other
  scripts: ``5pm``, ``café``, ``mp3``).

The distinct terms are returned in code-point order. Why Porter rather than
Snowball's ``english`` (Porter2), and why 100,000 characters: docs/api.md,
"Lexical terms".
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from snowballstemmer.porter_stemmer import PorterStemmer

#: Characters read from a text by the v1 rule; the rest is ignored by the lexical leg.
MAX_LEXICAL_CHARS = 200_000
#: Characters read by the v2 rule: each character yields at most two bigrams of at most 4 bytes
#: each, so a text's terms stay below a tsvector's 1 MB of lexemes (8 x 100,000 bytes at worst).
MAX_LEXICAL_CHARS_V2 = 100_000
#: Longest term kept, in characters (v1 drops a longer one, v2 keeps its first 64 characters).
MAX_TERM_CHARS = 64
#: Distinct terms a query is scored by (``query_terms_v2``): the first ones in order of appearance.
MAX_QUERY_TERMS = 32

#: English function words dropped from lexical terms (frozen with schema revision 0001).
STOPWORDS_V1: tuple[str, ...] = tuple(sorted(set("""
a about above after again against all am an and any are as at be because been
before being below between both but by can could d did do does doing don down
during each few for from further had has have having he her here hers herself
him himself his how i if in into is it its itself just ll m me more most my
myself no nor not now of off on once only or other our ours ourselves out over
own re s same she should so some such t than that the their theirs them
themselves then there these they this those through to too under until up ve
very was we were what when where which while who whom why will with would you
your yours yourself yourselves
""".split())))

#: The code points the v2 rule cuts into bigrams (inclusive ranges, as in ``lexical_tokens_v2``): Hangul Jamo,
#: CJK and Kangxi radicals, Hiragana, Katakana, Hangul compatibility Jamo, CJK strokes and Katakana phonetic
#: extensions, CJK unified ideographs extension A and the main block, Hangul Jamo extended-A, Hangul syllables and
#: Hangul Jamo extended-B, CJK compatibility ideographs, halfwidth Katakana and Hangul, the Kana supplements,
#: and the supplementary and tertiary ideographic planes (extensions B-I).
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),
    (0x2E80, 0x2FDF),
    (0x3040, 0x30FF),
    (0x3130, 0x318F),
    (0x31C0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFFDC),
    (0x1AFF0, 0x1B16F),
    (0x20000, 0x3FFFF),
)

_SPLIT = re.compile("[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_STOPWORDS = frozenset(STOPWORDS_V1)
_CJK_CLASS = "".join(f"{chr(low)}-{chr(high)}" for low, high in CJK_RANGES)
_CJK = re.compile(f"[{_CJK_CLASS}]")
_CJK_RUNS = re.compile(f"([{_CJK_CLASS}]+)")  # split keeps the CJK runs, at the odd positions
_STEMMER = PorterStemmer()
_STEMMER_LOCK = threading.Lock()  # a snowballstemmer instance keeps its word in its own state


def lexical_terms_v1(text: str) -> list[str]:
    """Return the distinct v1 lexical terms of ``text`` in code-point order (SQL ``lexical_terms_v1``).

    ``text`` is any ``str``; the result is a ``list[str]``, empty when the
    text has no terms. The hash embedder's features; ``text_tsv`` before
    revision 0010.
    """
    folded = text[:MAX_LEXICAL_CHARS].translate(_ASCII_LOWER)
    return sorted({term for term in _SPLIT.split(folded) if term and len(term) <= MAX_TERM_CHARS and term not in _STOPWORDS})


@lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """The Porter stem of ``word`` as PostgreSQL's ``ts_lexize('porter_stem_v1', word)`` gives it.

    ``word`` is lower-case ASCII letters (the only terms v2 stems). An
    empty stem (``s``) is read as the word itself, as PostgreSQL's snowball
    dictionary does. Snowball's Porter algorithm is frozen: every
    snowballstemmer release since 2.2 and PostgreSQL 18 give the same stems
    (``tests/recall/test_lexical_and_embedding.py`` proves it on LoCoMo and two
    English word lists).
    """
    with _STEMMER_LOCK:
        return _STEMMER.stemWord(word) or word


def _term(run: str) -> list[str]:
    """The v2 term of a run without CJK characters: at most one."""
    if len(run) > MAX_TERM_CHARS:
        return [run[:MAX_TERM_CHARS]]
    if run in _STOPWORDS:
        return []
    return [porter_stem(run) if run.isascii() and run.isalpha() else run]


def lexical_tokens_v2(text: str) -> list[str]:
    """Every v2 term of ``text`` in order of appearance, repeats included (SQL ``lexical_tokens_v2``).

    Reads the whole of ``text``: the callers cut it to :data:`MAX_LEXICAL_CHARS_V2`.
    """
    terms: list[str] = []
    for piece in _SPLIT.split(text.translate(_ASCII_LOWER)):
        if not piece:
            continue
        if _CJK.search(piece) is None:
            terms += _term(piece)
            continue
        # split() keeps the CJK runs at the odd positions (lexical_cjk_tokens_v2)
        for position, run in enumerate(_CJK_RUNS.split(piece)):
            if position % 2:
                terms += [run[start : start + 2] for start in range(max(len(run) - 1, 1))]
            elif run:
                terms += _term(run)
    return terms


def lexical_terms_v2(text: str) -> list[str]:
    """Return the distinct v2 lexical terms of ``text`` in code-point order (SQL ``lexical_terms_v2``).

    ``text`` is any ``str`` (its first :data:`MAX_LEXICAL_CHARS_V2`
    characters are read); the result is a ``list[str]``, empty when the text
    has no terms. The rule is in the module docstring.
    """
    return sorted(set(lexical_tokens_v2(text[:MAX_LEXICAL_CHARS_V2])))


def query_terms_v2(text: str) -> list[str]:
    """Return the terms a query is scored by (SQL ``query_terms_v2``): its first :data:`MAX_QUERY_TERMS`
    distinct v2 terms in order of appearance, in code-point order.

    The cap bounds the cost of the lexical leg; an entry's own terms are never capped.
    """
    return sorted(list(dict.fromkeys(lexical_tokens_v2(text[:MAX_LEXICAL_CHARS_V2])))[:MAX_QUERY_TERMS])


#: The tokenizer at head: what ``text_tsv`` holds and what a recall or a RAG lexical query is scored by.
lexical_terms = lexical_terms_v2
query_terms = query_terms_v2


def stopwords_sql_literal() -> str:
    """Render :data:`STOPWORDS_V1` as a Postgres array literal (``'{a,about,...}'``)."""
    return "'{" + ",".join(STOPWORDS_V1) + "}'"
