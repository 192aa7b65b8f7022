"""Names checked by a pattern are checked whole: ``$`` matches before a trailing newline,
so a pattern is applied with ``re.fullmatch`` and ``"name\\n"`` is refused, before any SQL runs."""

import ast
from pathlib import Path

import pytest
from prism_memory import InvalidIdentifierError, InvalidScopeError, build_memory_ddl, create_hash_embedder, create_memory
from prism_memory.locomo import conversation_entries
from prism_memory.memory import derive_child_scope
from prism_memory.schema import SchemaConfig, grant_app_role
from prism_memory.types import Scope

PACKAGE = Path(__file__).resolve().parents[2] / "prism_memory"


@pytest.mark.parametrize("name", ["name\n", "name\r\n", "\nname"])
def test_a_name_with_a_newline_is_refused(name):
    with pytest.raises(InvalidIdentifierError):
        SchemaConfig(schema=name)
    with pytest.raises(InvalidIdentifierError):
        SchemaConfig(table=name)
    with pytest.raises(InvalidIdentifierError):
        build_memory_ddl(schema=name)
    with pytest.raises(InvalidIdentifierError):  # refused before connecting: the DSN is never used
        grant_app_role("postgresql://nowhere.invalid/db", name)
    with pytest.raises(InvalidScopeError):
        derive_child_scope(Scope("t", "r", "main"), name)
    memory = create_memory(tenant_id="t", resource_id="r", thread_id="main", embedder=create_hash_embedder(8))
    with pytest.raises(InvalidScopeError):
        memory.child(name)


def test_a_locomo_session_key_is_matched_whole():
    turn = {"speaker": "Ada", "dia_id": "D1:1", "text": "hello"}
    conversation = {"speaker_a": "Ada", "speaker_b": "Bo", "session_1": [turn], "session_2\n": [dict(turn, dia_id="D2:1")]}
    assert [entry.id for entry in conversation_entries(conversation)] == ["D1:1"]


def test_no_pattern_in_the_package_is_applied_with_match():
    """``re.match``/``pattern.match`` accept a prefix (and ``$`` a trailing newline); validation uses ``fullmatch``."""
    offenders = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "match"
    ]
    assert offenders == []
