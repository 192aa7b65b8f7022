"""The metadata filter language on both sides: ``metadata_filter_v1`` (SQL, applied as ``metadata @@ path``)
and :mod:`prism_memory.filters` (``check_filter``, ``matches``: the emulator's evaluator) give the same answers
and refuse the same filters (docs/api.md, "Metadata filters").

The SQL side runs through direct SQL over a table of documents, one query per filter; each case asserts
the answer on both sides, so a disagreement names the case. Through the stores: tests/rag/test_rag_filters.py.
"""

from __future__ import annotations

import json

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prism_memory import InvalidFilterError, PrismMemoryError
from prism_memory.errors import SQLSTATE_ERRORS
from prism_memory.filters import (
    MAX_FILTER_BYTES,
    check_filter,
    is_containment,
    jsonb_text_bytes,
    matches,
)

from filter_strategies import filters, metadata_documents

SCHEMA = "prism_memory"


@pytest.fixture
def conn(pg_dsn):
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        yield connection


def sql_matches(conn, filter, documents):
    """``document @@ metadata_filter_v1(filter)`` for each document, in order (never NULL: the predicate is two-valued)."""
    rows = conn.execute(
        f"select d.value @@ {SCHEMA}.metadata_filter_v1(%s::jsonb) from jsonb_array_elements(%s::jsonb) "
        "with ordinality d(value, n) order by d.n",
        (json.dumps(filter), json.dumps(documents)),
    ).fetchall()
    answers = [row[0] for row in rows]
    assert None not in answers, (filter, documents, answers)
    return answers


def both(conn, filter, documents):
    """The answers of both sides, asserted equal; returns them."""
    checked = check_filter(filter)
    python = [matches(checked, document) for document in documents]
    assert sql_matches(conn, filter, documents) == python, (filter, documents)
    return python


# --- semantics: a table of (filter, document, expected) --------------------------------------------------

DOC = {
    "n": 1, "f": 1.5, "s": "1", "b": True, "z": None, "tags": ["x", "y", 1], "empty": [],
    "user": {"tier": "gold", "id": "user_1", "age": 30, "tags": ["a"]}, "obj": {},
    "dotted.key": "literal", "nested": [[1, 2], {"k": "v"}], "big": 10000000000000000,
    "word": "é", "zero": 0, "neg": -2, "tiny": 1e-07,
}
SEMANTICS = [
    # shorthand and $eq: JSON-typed equality
    ({"n": 1}, True), ({"n": 1.0}, True), ({"n": "1"}, False), ({"n": True}, False),
    ({"s": "1"}, True), ({"s": 1}, False), ({"b": True}, True), ({"b": 1}, False), ({"zero": False}, False),
    ({"z": None}, True), ({"missing": None}, False), ({"n": None}, False),
    ({"user.id": "user_1"}, True), ({"user.id": "user-1"}, False),
    ({"big": 10000000000000000.0}, True), ({"big": 10000000000000001}, False), ({"tiny": 0.0000001}, True),
    ({"neg": -2}, True), ({"neg": {"$eq": -2.0}}, True), ({"word": "é"}, True), ({"word": "e"}, False),
    # a field holding an array or object is compared whole
    ({"tags": "x"}, False), ({"tags": {"$eq": "x"}}, False), ({"user": {"$eq": "gold"}}, False),
    ({"tags": {"$ne": "x"}}, True),
    # $ne, $nin, $not: exact negations (a missing field matches)
    ({"n": {"$ne": 1}}, False), ({"n": {"$ne": "1"}}, True), ({"missing": {"$ne": 1}}, True),
    ({"missing": {"$nin": [1, "a"]}}, True), ({"n": {"$nin": [1.0]}}, False), ({"n": {"$nin": ["1", True]}}, True),
    ({"$not": {"missing": 1}}, True), ({"$not": {"n": "1"}}, True), ({"$not": {"n": 1}}, False),
    ({"$not": {"$not": {"n": "1"}}}, False),
    # order operators: numbers with numbers, strings with strings (code points), else false
    ({"n": {"$gt": 0}}, True), ({"n": {"$gt": "0"}}, False), ({"s": {"$gt": 0}}, False), ({"s": {"$gte": "1"}}, True),
    ({"f": {"$gt": 1, "$lt": 2}}, True), ({"f": {"$gte": 1.5, "$lte": 1.5}}, True), ({"f": {"$lt": 1.5}}, False),
    ({"word": {"$gt": "z"}}, True), ({"user.tier": {"$lt": "gp"}}, True), ({"b": {"$gt": 0}}, False),
    ({"z": {"$lt": 1}}, False), ({"missing": {"$gt": 0}}, False), ({"tags": {"$gt": "a"}}, False),
    ({"big": {"$gt": 9999999999999999}}, True), ({"big": {"$gt": 9999999999999999.5}}, False), ({"neg": {"$lt": -1.5}}, True),
    # $in
    ({"n": {"$in": ["1", 1]}}, True), ({"n": {"$in": ["1", True]}}, False), ({"z": {"$in": [None]}}, True),
    ({"missing": {"$in": [None]}}, False), ({"tags": {"$in": ["x"]}}, False),
    # $exists: a present null exists
    ({"z": {"$exists": True}}, True), ({"z": {"$exists": False}}, False), ({"missing": {"$exists": False}}, True),
    ({"user.tier": {"$exists": True}}, True), ({"user.tier.x": {"$exists": True}}, False),
    ({"n.x": {"$exists": False}}, True), ({"tags.x": {"$exists": True}}, False),
    # a dotted path walks objects only; a literal dotted key is not reached
    ({"dotted.key": "literal"}, False), ({"dotted.key": {"$exists": False}}, True),
    # $contains: an array holding an equal element
    ({"tags": {"$contains": "x"}}, True), ({"tags": {"$contains": 1.0}}, True), ({"tags": {"$contains": "1"}}, False),
    ({"tags": {"$contains": True}}, False), ({"s": {"$contains": "1"}}, False), ({"empty": {"$contains": None}}, False),
    ({"user.tags": {"$contains": "a"}}, True), ({"missing": {"$contains": 1}}, False),
    # legacy containment below the top level, as jsonb @>
    ({"tags": ["x"]}, True), ({"tags": ["x", 1.0]}, True), ({"tags": ["z"]}, False), ({"tags": []}, True),
    ({"tags": ["1"]}, False), ({"user": {"tier": "gold"}}, True), ({"user": {"tier": "gold", "age": 30.0}}, True),
    ({"user": {"tier": "silver"}}, False), ({"user": {}}, True), ({"obj": {}}, True), ({"n": {}}, False),
    ({"tags": {}}, False), ({"user": []}, False), ({"user": {"tags": ["a"]}}, True), ({"user": {"tags": "a"}}, False),
    ({"nested": [[1]]}, True), ({"nested": [[3]]}, False), ({"nested": [{"k": "v"}]}, True), ({"nested": [1]}, False),
    ({"nested": [{}]}, True), ({"nested": [[]]}, True), ({"missing": {}}, False), ({"missing": []}, False),
    # logic
    ({}, True), ({"$and": [{"n": 1}, {"s": "1"}]}, True), ({"$and": [{"n": 1}, {"s": 1}]}, False),
    ({"$or": [{"n": "1"}, {"s": 1}]}, False), ({"$or": [{"n": "1"}, {"s": "1"}]}, True),
    ({"$or": [{"missing": 1}, {"$not": {"missing": 1}}]}, True), ({"$and": [{}]}, True), ({"$not": {}}, False),
    ({"n": 1, "$not": {"s": "1"}}, False), ({"$or": [{"user.age": {"$gte": 30}}], "b": True}, True),
]


@pytest.mark.parametrize(("filter", "expected"), SEMANTICS, ids=[json.dumps(f) for f, _ in SEMANTICS])
def test_semantics_on_both_sides(conn, filter, expected):
    assert both(conn, filter, [DOC]) == [expected]


def test_every_semantics_case_in_one_query_per_side_and_the_containment_rule(conn):
    """The table again, batched; and which filters mean exactly ``@>`` (what the RAG reads send as ``@>``), by
    ``metadata_filter_is_containment_v1`` and by Python, and that those answer as ``@>`` does."""
    filters = [filter for filter, _ in SEMANTICS]
    rows = conn.execute(
        f"select {SCHEMA}.metadata_filter_is_containment_v1(nullif(f.value, '{{}}')), "
        f"case when {SCHEMA}.metadata_filter_is_containment_v1(f.value) then %s::jsonb @> f.value end "
        "from jsonb_array_elements(%s::jsonb) with ordinality f(value, n) order by f.n",
        (json.dumps(DOC), json.dumps(filters)),
    ).fetchall()
    for (filter, expected), (plain, contained) in zip(SEMANTICS, rows):
        assert plain == is_containment(check_filter(filter) or None), filter
        if plain:
            assert contained == expected, filter
    assert is_containment({"a": 1, "tags": ["x"], "u": {"t": 1}}) and not is_containment({"a.b": 1})
    assert not is_containment({"a": {"$eq": 1}}) and not is_containment({"$or": [{"a": 1}]})


def test_null_filter_and_empty_filter(conn):
    assert conn.execute(f"select {SCHEMA}.metadata_filter_v1(null) is null").fetchone() == (True,)
    assert check_filter(None) is None and matches(None, {"a": 1})
    assert check_filter({}) == {} and matches({}, {})
    assert sql_matches(conn, {}, [{}, {"a": 1}]) == [True, True]


# --- the property: random documents, random filters ------------------------------------------------------

@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=filters, docs=st.lists(metadata_documents, min_size=10, max_size=20))
@example(filter={"a": {"$ne": 1}}, docs=[{"a": True}, {"a": 1.0}, {}, {"a": [1]}, {"a": "1"}] * 2)
@example(filter={"a.b": {"$contains": 1}}, docs=[{"a": {"b": [True, 1.0]}}, {"a.b": [1]}, {"a": [{"b": [1]}]}] * 4)
def test_python_matches_equals_sql_on_random_documents_and_filters(conn, filter, docs):
    both(conn, filter, docs)


# --- bad filters: the same refusals on both sides -----------------------------------------------------------


def nest(levels, leaf):
    """``levels`` $not around ``leaf``."""
    for _ in range(levels):
        leaf = {"$not": leaf}
    return leaf


def deep_list(lists):
    """``1`` inside ``lists`` nested arrays (a containment document: the filter's own depth cap does not count it)."""
    value = 1
    for _ in range(lists):
        value = [value]
    return value


def sized(total):
    """A filter whose jsonb text is exactly ``total`` bytes (a float and escapes included, as numeric prints them)."""
    base = {"f": 1e-07, "g": -0.0, "s": "é\n\"", "k": ""}
    base["k"] = "x" * (total - jsonb_text_bytes(base))
    assert jsonb_text_bytes(base) == total
    return base


BAD = [
    ("not an object", []), ("a string", "x"), ("a number", 1),
    ("empty $and", {"$and": []}), ("$and an object", {"$and": {}}), ("$and of a scalar", {"$and": [1]}),
    ("$or of an array", {"$or": [[]]}), ("$not an array", {"$not": []}), ("$not a scalar", {"$not": 1}),
    ("unknown top operator", {"$foo": 1}), ("$eq at the top", {"$eq": 1}), ("empty path", {"": 1}),
    ("trailing dot", {"a.": 1}), ("leading dot", {".a": 1}), ("empty segment", {"a..b": 1}), ("dot", {".": 1}),
    ("$ segment", {"a.$b": 1}), ("mixed keys", {"a": {"$gt": 1, "b": 2}}), ("unknown operator", {"a": {"$regex": "x"}}),
    ("$eq array", {"a": {"$eq": [1]}}), ("$ne object", {"a": {"$ne": {}}}), ("$gt boolean", {"a": {"$gt": True}}),
    ("$lte null", {"a": {"$lte": None}}), ("$lt array", {"a": {"$lt": [1]}}), ("$in empty", {"a": {"$in": []}}),
    ("$in scalar", {"a": {"$in": 1}}), ("$in nested", {"a": {"$in": [[1]]}}), ("$nin object", {"a": {"$nin": [{}]}}),
    ("$exists number", {"a": {"$exists": 1}}), ("$exists string", {"a": {"$exists": "true"}}),
    ("$contains array", {"a": {"$contains": [1]}}), ("operator in containment", {"a": {"b": {"$eq": 1}}}),
    ("operator in containment array", {"a": [{"$x": 1}]}), ("deep mixed", {"$or": [{"a": {"$in": [1], "x": 1}}]}),
    ("bad inside $not", {"$not": {"a": {"$exists": None}}}),
    # caps
    ("depth 9 (filter)", nest(8, {})), ("depth 9 (operator object)", nest(7, {"a": {"$eq": 1}})),
    ("65 conditions", {f"k{i}": i for i in range(65)}),
    ("65 conditions in operators", {f"k{i}": {"$gte": 0, "$lte": 9} for i in range(32)} | {"z": 1}),
    ("65 conditions across $or", {"$or": [{f"k{i}": i for i in range(33)}, {f"k{i}": i for i in range(32)}]}),
    ("257 in $in", {"a": {"$in": list(range(257))}}), ("257 in $nin", {"a": {"$nin": [str(i) for i in range(257)]}}),
    ("65 containment elements", {"a": list(range(65))}),
    ("65 with nested containment arrays", {"a": [[1, 2], {"b": list(range(30))}], "c": list(range(31))}),
    ("9 segments", {".".join("abcdefghi"): 1}), ("over 16 KiB", sized(MAX_FILTER_BYTES + 1)),
    ("JSON 65 levels deep", {"a": deep_list(64)}),
]
GOOD_AT_THE_CAPS = [
    ("depth 8 (filter)", nest(7, {})), ("depth 8 (operator object)", nest(6, {"a": {"$eq": 1}})),
    ("64 conditions", {f"k{i}": i for i in range(64)}), ("256 in $in", {"a": {"$in": list(range(256))}}),
    ("8 segments", {".".join("abcdefgh"): 1}), ("16 KiB", sized(MAX_FILTER_BYTES)),
    ("64 containment elements", {"a": list(range(63)), "b": 1}),
    ("64 with nested containment arrays", {"a": [[1, 2], {"b": list(range(30))}], "c": list(range(30))}),
    ("JSON 64 levels deep", {"a": deep_list(63)}),
    ("containment deep inside the caps", {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}}),
]


@pytest.mark.parametrize(("name", "filter"), BAD, ids=[name for name, _ in BAD])
def test_a_bad_filter_raises_invalid_filter_error_in_python_and_pm019_in_sql(conn, name, filter):
    with pytest.raises(InvalidFilterError) as caught:
        check_filter(filter)
    assert str(caught.value).startswith("filter")
    with pytest.raises(psycopg.Error) as raised:
        conn.execute(f"select {SCHEMA}.metadata_filter_v1(%s::jsonb)", (json.dumps(filter),))
    assert raised.value.sqlstate == "PM019", raised.value
    assert SQLSTATE_ERRORS["PM019"] is InvalidFilterError


@pytest.mark.parametrize(("name", "filter"), GOOD_AT_THE_CAPS, ids=[name for name, _ in GOOD_AT_THE_CAPS])
def test_a_filter_at_each_cap_is_accepted_on_both_sides(conn, name, filter):
    both(conn, filter, [{}, {"a": 1}, {"k0": 0, "k1": 1}])


def test_the_messages_name_the_offending_path_or_operator(conn):
    cases = [
        ({"user.tier": {"$in": []}}, ['$in', '"user.tier"']),
        ({"$or": [{"a": 1}, {"b": {"$gt": True}}]}, ["$gt", '"b"', "$or[1]"]),
        ({"a": {"$regex": 1}}, ['"$regex"', '"a"']),
        ({"$not": {"x..y": 1}}, ['"x..y"', "$not"]),
        ({"u": {"v": {"$eq": 1}}}, ['"$eq"', '"u"']),
    ]
    for filter, names in cases:
        with pytest.raises(InvalidFilterError) as caught:
            check_filter(filter)
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(f"select {SCHEMA}.metadata_filter_v1(%s::jsonb)", (json.dumps(filter),))
        sql_message = raised.value.diag.message_primary
        assert str(caught.value) == sql_message, (filter, str(caught.value), sql_message)
        assert all(name in sql_message for name in names), (filter, sql_message)


def test_python_only_refusals_are_invalid_filter_errors():
    """What Python cannot send (a non-finite number, a set, a lone surrogate) is refused before SQL."""
    for filter in ({"a": float("nan")}, {"a": {"$gt": float("inf")}}, {"a": {1, 2}}, {"a\ud800": 1}, {1: 2}):
        with pytest.raises(InvalidFilterError):
            check_filter(filter)
    assert issubclass(InvalidFilterError, PrismMemoryError)


def test_the_size_rule_is_jsonb_text_on_both_sides(conn):
    """16 KiB of ``jsonb`` text (``octet_length(filter::text)``): both sides measure the same bytes."""
    for filter in (sized(MAX_FILTER_BYTES), sized(200), {"a": [1.5e300, -0.0, 10**30, "\u0001\\"], "é": {"b": None}}):
        assert conn.execute("select octet_length(%s::jsonb::text)", (json.dumps(filter),)).fetchone() == (
            jsonb_text_bytes(check_filter(filter)),
        )


# --- hostile keys and strings: compiled as literals, matched literally -------------------------------------

HOSTILE = [
    "'", '"', "\\", "$", "@", ")", "(", "||", "&&", "!", "\n", "\t", "\u0001", "é", "😀", "\u2028", "like_regex",
    '" || true || "', '") || (1 == 1', "'; drop table x; --", "$.a", "@ == @", "strict", "lax", '\\"', "a\\u0041",
    "exists(@)", "? (@ == 1)", "[*]", "**", "last", "$a", "{}", "null", "true", "1", " ",
]


def test_hostile_keys_and_strings_compile_and_match_literally(conn):
    keys = ["k" + text.replace(".", "_") for text in HOSTILE]
    docs = [{key: text, "arr": [text], "obj": {key: text}} for key, text in zip(keys, HOSTILE)]
    docs += [{key: [text]} for key, text in zip(keys, HOSTILE)] + [{}, {"k": "other"}]
    for key, text in zip(keys, HOSTILE):
        literal = [doc.get(key) == text for doc in docs]
        cases = [
            ({key: text}, literal),
            ({key: {"$eq": text}}, literal),
            ({key: {"$in": [text, "zz"]}}, literal),
            ({key: {"$ne": text}}, [not hit for hit in literal]),
            ({key: {"$nin": [text]}}, [not hit for hit in literal]),
            ({"obj." + key: text}, [doc.get("obj", {}).get(key) == text for doc in docs]),
            ({"arr": {"$contains": text}}, [doc.get("arr") == [text] for doc in docs]),
            ({"arr": [text]}, [doc.get("arr") == [text] for doc in docs]),
            ({"obj": {key: text}}, [doc.get("obj", {}).get(key) == text for doc in docs]),
            ({key: {"$gte": text, "$lte": text}}, literal),
            ({key: {"$exists": True}}, [key in doc for doc in docs]),
            ({"$or": [{key: text}, {key: [text]}]}, [doc.get(key) in (text, [text]) for doc in docs]),
        ]
        for filter, expected in cases:
            assert both(conn, filter, docs) == expected, (text, filter)
