"""Hypothesis strategies for metadata documents and metadata filters, shared by the filter language's tests
(tests/recall/test_filters.py) and the selecting reads' (tests/recall/test_recall_filter_property.py)."""

from hypothesis import strategies as st

KEYS = ["a", "b", "c", "a.b"]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, 1, -1, 2, 10**20]), st.sampled_from([0.0, 1.0, 0.5, -1.5, 2.25, 1e-07]),
    st.sampled_from(["", "1", "a", "b", "A", "é", "true", "null", "user_1", "user-1"]),
)


def documents(depth=3):
    """Random JSON values; keys from a few names (``"a.b"`` a literal key a path never reaches)."""
    return st.recursive(
        SCALARS,
        lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.sampled_from(KEYS), children, max_size=3)),
        max_leaves=8,
    )


metadata_documents = st.dictionaries(st.sampled_from(KEYS), documents(), max_size=4)
paths = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3).map(".".join)
containment = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=2), st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=2)),
    max_leaves=4,
).filter(lambda value: isinstance(value, (dict, list)))
operators = st.dictionaries(
    st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains"]),
    st.none(), min_size=1, max_size=2,
)


@st.composite
def operator_objects(draw):
    chosen = {}
    for operator in draw(operators):
        if operator in ("$eq", "$ne", "$contains"):
            chosen[operator] = draw(SCALARS)
        elif operator in ("$in", "$nin"):
            chosen[operator] = draw(st.lists(SCALARS, min_size=1, max_size=3))
        elif operator == "$exists":
            chosen[operator] = draw(st.booleans())
        else:
            chosen[operator] = draw(st.one_of(st.sampled_from([0, 1, -1, 0.5, 2.25, 10**20]), st.sampled_from(["", "1", "a", "b", "é"])))
    return chosen


conditions = st.one_of(SCALARS, operator_objects(), containment)
field_filters = st.dictionaries(paths, conditions, min_size=1, max_size=2)
filters = st.recursive(
    field_filters,
    lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda items: {"$and": items}),
        st.lists(children, min_size=1, max_size=3).map(lambda items: {"$or": items}),
        children.map(lambda item: {"$not": item}),
        st.tuples(field_filters, children).map(lambda pair: {**pair[0], "$not": pair[1]}),
    ),
    max_leaves=6,
)
