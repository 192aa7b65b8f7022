"""Lexical terms: the single tokenizer behind ``text_tsv``, the lexical leg of
recall and the hash embedder.

The SQL function ``lexical_terms_v1`` (``sql/migrations/0001_initial.sql``) is
the definition; :func:`lexical_terms` mirrors it exactly so the emulator gives
the same answers as Postgres, whatever the database's locale:

1. read at most the first 200,000 characters (so a ``tsvector`` stays far below
   Postgres's 1 MB limit);
2. lower-case ASCII letters only (Postgres ``lower(... collate "C")``);
3. split on every character that is not an ASCII letter or digit, nor a code
   point from U+00C0 up (the General Punctuation block U+2000-U+206F and the
   CJK punctuation block U+3000-U+303F also split);
4. drop empty terms, terms over 64 characters and :data:`STOPWORDS_V1`;
5. return the distinct terms in code-point order.
"""

from __future__ import annotations

import re

#: Characters read from a text; the rest is ignored by the lexical leg.
MAX_LEXICAL_CHARS = 200_000
#: Longest term kept, in characters.
MAX_TERM_CHARS = 64
#: Distinct terms a query is scored by (``query_terms_v1``): the first ones in order of appearance.
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

_SPLIT = re.compile("[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_STOPWORDS = frozenset(STOPWORDS_V1)


def _terms_in_order(text: str) -> list[str]:
    """Every term of ``text`` in order of appearance, repeats included (steps 1-4 of the rule)."""
    folded = text[:MAX_LEXICAL_CHARS].translate(_ASCII_LOWER)
    return [term for term in _SPLIT.split(folded) if term and len(term) <= MAX_TERM_CHARS and term not in _STOPWORDS]


def lexical_terms(text: str) -> list[str]:
    """Return the distinct lexical terms of ``text`` in code-point order.

    Mirrors the SQL function ``lexical_terms_v1`` exactly (see the module
    docstring for the rule). ``text`` is any ``str``; the result is a
    ``list[str]``, empty when the text has no terms.
    """
    return sorted(set(_terms_in_order(text)))


def query_terms(text: str) -> list[str]:
    """Return the terms a query is scored by: its first :data:`MAX_QUERY_TERMS` distinct terms in order of
    appearance, in code-point order.

    Mirrors the SQL function ``query_terms_v1``. The cap bounds the cost of
    the lexical leg (issue: bounded cost); an entry's own terms are never capped.
    """
    return sorted(list(dict.fromkeys(_terms_in_order(text)))[:MAX_QUERY_TERMS])


def stopwords_sql_literal() -> str:
    """Render :data:`STOPWORDS_V1` as a Postgres array literal (``'{a,about,...}'``)."""
    return "'{" + ",".join(STOPWORDS_V1) + "}'"
