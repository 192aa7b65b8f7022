"""Working memory on both backends: versions, conflicts, schema and hook checks, templates."""

import pytest
from prism_memory import (
    ConfigurationError,
    MemoryLimits,
    PayloadTooLargeError,
    WorkingMemoryValidationError,
    WorkingMemoryVersionConflict,
    create_hash_embedder,
    create_memory,
)

from parity import Raised

PROFILE_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "preferences": {
            "type": "object",
            "properties": {"format": {"type": "string"}},
            "required": ["format"],
            "additionalProperties": False,
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}


async def test_versions_increment_and_get_returns_latest(backends):
    async def scenario(backend):
        memory = backend.memory(schema=PROFILE_SCHEMA)
        before = await memory.get_working()
        first = await memory.update_working({"name": "Ada"})
        second = await memory.update_working({"name": "Ada", "preferences": {"format": "concise"}})
        return before, first, second, await memory.get_working()

    before, first, second, latest = await backends.run(scenario)
    assert before is None
    assert (first["version"], second["version"], latest["version"]) == (1, 2, 2)
    assert latest["data"] == {"name": "Ada", "preferences": {"format": "concise"}}


async def test_expected_version_conflict_changes_nothing(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.update_working({"n": 1}, expected_version=0)
        await memory.update_working({"n": 2}, expected_version=1)
        try:
            await memory.update_working({"n": 99}, expected_version=1)
        except WorkingMemoryVersionConflict:
            conflict = True
        else:
            conflict = False
        return conflict, await memory.get_working()

    conflict, record = await backends.run(scenario)
    assert conflict is True
    assert record["version"] == 2 and record["data"] == {"n": 2}


async def test_expected_version_on_missing_record_must_be_zero(backends):
    async def scenario(backend):
        await backend.memory().update_working({"n": 1}, expected_version=3)

    assert await backends.run(scenario) == Raised(WorkingMemoryVersionConflict)


async def test_resource_and_thread_scopes_are_separate(backends):
    async def scenario(backend):
        resource_scoped = backend.memory(thread_id=None)
        thread_scoped = backend.memory(thread_id="thread-9")
        other_tenant = backend.memory(tenant_id="t2", thread_id=None)
        await resource_scoped.update_working({"scope": "resource"})
        await thread_scoped.update_working({"scope": "thread"})
        return (
            await resource_scoped.get_working(),
            await thread_scoped.get_working(),
            await other_tenant.get_working(),
        )

    resource, thread, other = await backends.run(scenario)
    assert resource["data"] == {"scope": "resource"} and resource["thread_id"] is None
    assert thread["data"] == {"scope": "thread"} and thread["thread_id"] == "thread-9"
    assert other is None


async def test_schema_failure_raises_and_keeps_stored_document(backends):
    async def scenario(backend):
        memory = backend.memory(schema=PROFILE_SCHEMA)
        await memory.update_working({"name": "Ada"})
        try:
            await memory.update_working({"name": "Ada", "preferences": {"colour": "blue"}})
        except WorkingMemoryValidationError:
            rejected = True
        else:
            rejected = False
        return rejected, await memory.get_working()

    rejected, record = await backends.run(scenario)
    assert rejected is True
    assert record["version"] == 1 and record["data"] == {"name": "Ada"}


async def test_host_hook_and_non_object_are_rejected(backends):
    async def rejected_by_hook(backend):
        await backend.memory(validate_working_memory=lambda data: "name" in data).update_working({"nick": "A"})

    async def not_an_object(backend):
        await backend.memory().update_working(["a", "list"])

    assert await backends.run(rejected_by_hook) == Raised(WorkingMemoryValidationError)
    assert await backends.run(not_an_object) == Raised(WorkingMemoryValidationError)


async def test_oversized_working_memory_is_refused(backends):
    async def scenario(backend):
        memory = backend.memory(limits=MemoryLimits(working_memory_bytes=100))
        await memory.update_working({"blob": "x" * 200})

    assert await backends.run(scenario) == Raised(PayloadTooLargeError)


async def test_template_renders_paths_and_missing_values(backends):
    async def scenario(backend):
        memory = backend.memory(
            schema=PROFILE_SCHEMA,
            working_memory_template="Name: {{name}}; Format: {{ preferences.format }}; Age: {{age}}",
        )
        empty = await memory.render_working()
        await memory.update_working({"name": "Ada", "preferences": {"format": "concise"}})
        return empty, await memory.render_working()

    empty, rendered = await backends.run(scenario)
    assert empty == "Name: ; Format: ; Age: "
    assert rendered == "Name: Ada; Format: concise; Age: "


def test_invalid_schema_is_refused_when_the_memory_is_created():
    with pytest.raises(ConfigurationError):
        create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(8), schema={"type": "no-such-type"})


UNRESOLVABLE_SCHEMAS = [
    {"$ref": "#/nope"},
    {"type": "object", "properties": {"name": {"$ref": "#/$defs/missing"}}},
    {"$ref": "https://example.invalid/schema.json"},
    {"properties": {"name": {"$ref": "file:///etc/hostname"}}},
    {"$dynamicRef": "#meta"},
]


@pytest.mark.parametrize("schema", UNRESOLVABLE_SCHEMAS, ids=[str(schema) for schema in UNRESOLVABLE_SCHEMAS])
def test_an_unresolvable_ref_is_refused_when_the_memory_is_created_and_nothing_is_fetched(schema, monkeypatch):
    import urllib.request

    def no_fetching(*args, **kwargs):
        raise AssertionError(f"a schema reference was fetched: {args}")

    monkeypatch.setattr(urllib.request, "urlopen", no_fetching)
    monkeypatch.setattr("builtins.open", no_fetching)
    with pytest.raises(ConfigurationError, match="does not resolve"):
        create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(8), schema=schema)


async def test_refs_within_the_schema_and_to_the_metaschema_still_work():
    schema = {
        "$id": "https://example.invalid/profile",
        "$defs": {"name": {"type": "string"}, "age": {"$id": "age", "type": "integer"}},
        "properties": {"name": {"$ref": "#/$defs/name"}, "age": {"$ref": "age"},
                       "meta": {"$ref": "https://json-schema.org/draft/2020-12/schema"}},
    }
    memory = create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(8), schema=schema)
    await memory.update_working({"name": "Ada", "age": 36, "meta": {"type": "string"}})
    with pytest.raises(WorkingMemoryValidationError):
        await memory.update_working({"age": "old"})


IN_PLACE_LOOPS = [
    {"$ref": "#"},
    {"allOf": [{"type": "object"}, {"$ref": "#"}]},
    {"anyOf": [{"type": "string"}, {"$ref": "#"}]},
    {"not": {"$ref": "#"}},
    {"if": True, "then": {"$ref": "#"}},
    {"dependentSchemas": {"name": {"$ref": "#"}}},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"oneOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
    {"properties": {"name": {"$ref": "#/properties/name"}}},
    {"$dynamicAnchor": "meta", "$dynamicRef": "#meta"},
]


@pytest.mark.parametrize("schema", IN_PLACE_LOOPS, ids=[str(schema) for schema in IN_PLACE_LOOPS])
def test_a_reference_loop_that_never_descends_into_the_document_is_refused_when_the_memory_is_created(schema):
    with pytest.raises(ConfigurationError, match="never descends"):
        create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(8), schema=schema)


TREE_SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}},
    "additionalProperties": False,
}


def nested_tree(depth, label):
    node = {"label": label}
    for _ in range(depth):
        node = {"label": "branch", "children": [node]}
    return node


async def test_a_schema_that_recurses_through_the_document_checks_documents_as_deep_as_the_cap(backends):
    async def scenario(backend):
        memory = backend.memory(schema=TREE_SCHEMA)
        stored = await memory.update_working(nested_tree(30, "leaf"))
        try:
            await memory.update_working(nested_tree(30, 7))
        except WorkingMemoryValidationError as exc:
            refused = str(exc).startswith("working memory fails its schema at children/0/children/0")
        else:
            refused = False
        return stored.version, refused, (await memory.get_working()).data == nested_tree(30, "leaf")

    assert await backends.run(scenario) == [1, True, True]


def test_a_schema_nested_past_what_python_can_walk_is_refused_when_the_memory_is_created():
    schema = {"type": "object"}
    for _ in range(5000):
        schema = {"not": schema}
    with pytest.raises(ConfigurationError, match="nests too deeply"):
        create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(8), schema=schema)


async def test_a_relative_root_id_is_refused_when_the_memory_is_created():
    """A root ``$id`` without a scheme has no base to resolve the schema's references against."""
    schema = {"$id": "foo/bar.json", "$defs": {"x": {"$id": "baz.json", "type": "object"}}, "$ref": "baz.json"}
    with pytest.raises(ConfigurationError, match="absolute URI"):
        create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(8), schema=schema)
    absolute = {**schema, "$id": "https://example.invalid/foo/bar.json"}
    memory = create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(8), schema=absolute)
    assert (await memory.update_working({"name": "Ada"})).version == 1
