"""Property test: no working-memory schema, however it references itself, yields an error that is not prism's.

Schemas are drawn from a grammar of JSON Schema 2020-12 keywords, both the in-place ones (``allOf``,
``not``, ``if``/``then``, ``$ref``...) and those that descend into the document (``properties``,
``items``...), with references to the root, to ``$defs`` and to a dynamic anchor, so loops of every shape
appear. ``create_memory`` must accept the schema or raise :class:`ConfigurationError`; an accepted schema
must then accept or refuse any document with a :class:`PrismMemoryError`. A schema may branch at every level
(``anyOf`` of two references through ``items``), so checking a document costs up to 2^depth steps: the
documents here nest 6 levels (``test_working_memory.py`` checks one as deep as the cap against a tree schema),
and the examples are drawn from a fixed seed so every run checks the same ones. The check
runs in Python before any store is reached, so the emulator stands for both backends here; the fixed cases
in ``test_working_memory.py`` run on both.
"""

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prism_memory import ConfigurationError, PrismMemoryError, create_hash_embedder, create_memory

REFERENCES = st.sampled_from(
    [{"$ref": "#"}, {"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}, {"$dynamicRef": "#node"}, {"$ref": "#/properties/x"}]
)
LEAVES = st.one_of(
    st.booleans(),
    st.sampled_from([{"type": "object"}, {"type": "array"}, {"type": "string"}, {"minProperties": 1}, {}]),
    REFERENCES,
)


def wrapped(inner):
    """One keyword around a subschema (or a list of them)."""
    one = st.sampled_from(["not", "if", "then", "else", "items", "additionalProperties", "contains",
                           "propertyNames", "unevaluatedProperties", "unevaluatedItems"])
    many = st.sampled_from(["allOf", "anyOf", "oneOf", "prefixItems"])
    named = st.sampled_from(["properties", "dependentSchemas", "patternProperties"])
    return st.one_of(
        st.builds(lambda key, schema: {key: schema}, one, inner),
        st.builds(lambda key, schemas: {key: schemas}, many, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda key, schema: {key: {"x": schema}}, named, inner),
        st.builds(lambda reference, schema: {**reference, **schema} if isinstance(schema, dict) else reference,
                  REFERENCES, inner),
    )


SUBSCHEMAS = st.recursive(LEAVES, wrapped, max_leaves=8)


@st.composite
def schemas(draw):
    root = draw(SUBSCHEMAS.filter(lambda schema: isinstance(schema, dict)))
    root = {**root, "$defs": {"a": draw(SUBSCHEMAS), "b": draw(SUBSCHEMAS)}}
    if draw(st.booleans()):
        root["$dynamicAnchor"] = "node"
    return root


DOCUMENTS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["", "x", "node"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)),
    max_leaves=12,
)


def deep_document(depth):
    document = {"x": "leaf"}
    for _ in range(depth):
        document = {"x": [document]}
    return document


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas(), documents=st.lists(st.dictionaries(st.sampled_from(["x", "y"]), DOCUMENTS, max_size=2), max_size=3))
def test_every_schema_is_refused_at_construction_or_answers_every_document_with_a_prism_error(schema, documents):
    try:
        memory = create_memory(tenant_id="t", resource_id="r", thread_id="th", embedder=create_hash_embedder(8), schema=schema)
    except ConfigurationError:
        return

    async def write_each():
        for document in [*documents, deep_document(6)]:
            try:
                await memory.update_working(document)
            except PrismMemoryError:
                pass

    asyncio.run(write_each())
