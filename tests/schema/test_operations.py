"""One registry of operations (prism_memory.operations): the Protocols, both stores, the named queries
and the SQL functions all name the same operations (compare pgqueuer's port-conformance test)."""

from __future__ import annotations

import dataclasses
import inspect
import re

import psycopg
import pytest
from prism_memory import operations, sql_source, stores
from prism_memory.emulator import EmulatorVectorStore, EmulatorWorkingStore
from prism_memory.postgres.queries import Queries, build_queries
from prism_memory.postgres.store import PostgresVectorStore, PostgresWorkingStore

#: Protocol methods that are not operations on stored data.
LIFECYCLE = {"close", "transaction"}
IMPLEMENTATIONS = {
    "VectorStore": (EmulatorVectorStore, PostgresVectorStore),
    "RagVectorStore": (EmulatorVectorStore, PostgresVectorStore),
    "WorkingStore": (EmulatorWorkingStore, PostgresWorkingStore),
}


def _methods(protocol: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(protocol, inspect.isfunction) if not name.startswith("_")} - LIFECYCLE


def test_each_protocol_declares_exactly_the_registered_operations():
    for name in IMPLEMENTATIONS:
        registered = {op.method for op in operations.OPERATIONS if op.protocol == name}
        assert _methods(getattr(stores, name)) == registered, name


@pytest.mark.parametrize("protocol", sorted(IMPLEMENTATIONS))
def test_both_stores_implement_every_operation_with_the_protocols_parameters(protocol):
    for op in (op for op in operations.OPERATIONS if op.protocol == protocol):
        declared = inspect.signature(getattr(getattr(stores, protocol), op.method))
        for implementation in IMPLEMENTATIONS[protocol]:
            method = getattr(implementation, op.method)
            assert inspect.iscoroutinefunction(method), (implementation.__name__, op.method)
            assert list(inspect.signature(method).parameters) == list(declared.parameters), (implementation.__name__, op.method)


def test_each_named_query_calls_its_operations_function():
    queries = build_queries("s", "public")
    named = [*operations.OPERATIONS, *operations.GUARDS]
    assert {field.name for field in dataclasses.fields(Queries)} == {op.query for op in named}
    for op in named:
        called = re.findall(r'"s"\.(\w+)\(', getattr(queries, op.query).as_string(None))
        assert called == [op.function], op


def test_each_guard_precedes_vector_store_operations():
    methods = {op.method for op in operations.OPERATIONS if op.protocol == "VectorStore"}
    for guard in operations.GUARDS:
        assert set(guard.methods) <= methods, guard
        for method in guard.methods:  # each guarded method takes the model the guard checks
            assert "model" in inspect.signature(getattr(stores.VectorStore, method)).parameters, method


def test_every_api_function_has_a_head_file_and_only_api_functions_run_as_their_owner():
    definers = {name for name, text in sql_source.head_functions().items()
                if re.search(r"^language \w+ [^\n]*security definer", text, re.M)}
    api = {name for name, _ in operations.API_FUNCTIONS}
    assert definers == api - {"install_info_v1"}
    assert len(api) == len(operations.API_FUNCTIONS)  # one function per operation


def test_the_registered_argument_types_are_the_installed_ones(pg_dsn):
    with psycopg.connect(pg_dsn) as conn:
        for name, arguments in operations.API_FUNCTIONS:
            # Raises if no function of that name takes exactly those types.
            conn.execute("select %s::regprocedure", (f"prism_memory.{name}({arguments})",))
