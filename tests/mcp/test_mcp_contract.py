"""The MCP tools' contract as a real client sees it, on both backends: input schemas every client reads (inline,
optional arguments not required), compact results, the working-memory schema before the first update,
remember's idempotency key, and entries of another thread changed in their thread or answered "not found".
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp import Client, MCPError
from prism_memory.mcp_server import MemoryDirectory, create_mcp_server, server_scope

from mcp_client import ADMIN_TOOLS, PROFILE_SCHEMA, SCOPE, TOOLS, Caller, listing, on_both, types_only, without_times
from parity import assert_same


def _schema_problems(node: Any, where: str = "") -> list[str]:
    """Where an input schema uses a form some clients refuse: ``$ref``, ``$defs``, or ``null`` in an ``anyOf``
    or a ``type`` list."""
    problems = []
    if isinstance(node, dict):
        problems += [f"{where}/{key}" for key in ("$ref", "$defs") if key in node]
        if any(choice.get("type") == "null" for choice in node.get("anyOf", []) if isinstance(choice, dict)):
            problems.append(f"{where}/anyOf: null")
        if isinstance(node.get("type"), list) and "null" in node["type"]:
            problems.append(f"{where}/type: null")
        for key, value in node.items():
            problems += _schema_problems(value, f"{where}/{key}")
    elif isinstance(node, list):
        for number, value in enumerate(node):
            problems += _schema_problems(value, f"{where}/{number}")
    return problems


async def test_input_schemas_are_inline_and_optional_means_not_required(backends):
    """Every tool's input schema, as a real client lists it, has no $ref, $defs or null choice (forms some
    clients refuse): an optional argument is one not required. remember requires its entries, and the
    server still takes an explicit null for an optional argument."""
    async def scenario(call, backend):
        tools = await listing(call)
        explicit_null = await call.ok("recall", query="tea", thread=None, top_k=None)
        return {"tools": tools, "explicit_null": explicit_null}

    listed = await on_both(backends, scenario, admin_tools=True)
    tools = listed["tools"]
    assert list(tools) == TOOLS + ADMIN_TOOLS
    problems = {name: _schema_problems(tool["input_schema"]) for name, tool in tools.items()}
    assert problems == {name: [] for name in tools}
    remember = tools["remember"]["input_schema"]
    assert remember["required"] == ["entries"] and "texts" not in remember["properties"]
    assert [choice["type"] for choice in remember["properties"]["entries"]["items"]["anyOf"]] == ["string", "object"]
    assert "required" not in tools["list_memories"]["input_schema"]
    assert tools["recall"]["input_schema"]["properties"]["top_k"] == {
        "type": "integer", "minimum": 1, "maximum": 32, "description": "Hits to return (default 8)."}
    assert listed["explicit_null"]["thread"] == "thread-1"


async def test_results_are_compact_json(backends):
    """A tool result's text is its structured content as compact JSON (no indentation, no spaces)."""
    async def scenario(call, backend):
        results = [await call.client.call_tool("remember", {"entries": ["Prefers green tea", {"text": "Has a dog"}]}),
                   await call.client.call_tool("recall", {"query": "tea"}),
                   await call.client.call_tool("list_memories", {})]
        return [[result.content[0].text == json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False),
                 len(result.content[0].text) < len(json.dumps(result.structured_content, indent=2))] for result in results]

    assert await on_both(backends, scenario) == [[True, True]] * 3


async def test_the_working_memory_schema_is_in_the_update_tool_and_a_resource(backends):
    """With a working-memory schema the model sees it before its first update: quoted in
    update_working_memory's description (a long one is named by resource instead) and served as
    memory://working/schema."""
    async def scenario(call, backend):
        description = (await listing(call))["update_working_memory"]["description"]
        schema = await call.client.read_resource("memory://working/schema")
        return {"description": description, "schema": json.loads(schema.contents[0].text)}

    listed = await on_both(backends, scenario, schema=PROFILE_SCHEMA)
    assert listed["schema"] == PROFILE_SCHEMA
    assert listed["description"].endswith(json.dumps(PROFILE_SCHEMA, separators=(",", ":")))
    long_schema = {**PROFILE_SCHEMA, "description": "x" * 5000}
    listed = await on_both(backends, scenario, schema=long_schema)
    assert "memory://working/schema" in listed["description"] and "x" * 100 not in listed["description"]
    assert listed["schema"] == long_schema
    plain = await on_both(backends, lambda call, backend: listing(call))
    assert "any object" in plain["update_working_memory"]["description"]


class LateAnswers:
    """A vector store whose writes commit, then take ``delay_s`` seconds to return: a client that gives up
    first never learns that its call stored the entries. A write runs to its commit even when the call is
    cancelled (the client's cancellation can reach the server while a slow backend is still writing), so the
    scenario is the same on every backend."""

    def __init__(self, store: Any, delay_s: float) -> None:
        self.inner = store
        self.delay_s = delay_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def remember(self, *args: Any, **kwargs: Any) -> Any:
        written = await asyncio.shield(self.inner.remember(*args, **kwargs))
        await asyncio.sleep(self.delay_s)
        return written


async def test_a_retried_remember_with_an_idempotency_key_stores_its_entries_once(backends):
    """A remember whose answer the client gave up on had committed; retried without a key it stores copies,
    retried with the same idempotency_key it stores the same entries again (same ids, one of each). The same
    key with other texts, or in another thread, names other entries and overwrites none."""
    async def scenario(backend):
        store = LateAnswers(backend.vector_store, 0.5)
        directory = MemoryDirectory({None: (store, backend.working_store)}, backend.embedder)
        async with Client(create_mcp_server(directory, lambda: SCOPE)) as client:
            call = Caller(client)
            outcome = {}
            for key in (None, "call-7f3a"):
                thread = "plain" if key is None else "keyed"
                arguments = {"entries": ["Prefers green tea", {"text": "Has a dog", "metadata": {"n": 1}}], "thread": thread,
                             **({} if key is None else {"idempotency_key": key})}
                with pytest.raises(MCPError):
                    await client.call_tool("remember", arguments, read_timeout_seconds=0.1)
                store.delay_s = 0
                retried = await call.ok("remember", **arguments)
                again = await call.ok("remember", **arguments)
                outcome[thread] = {"same ids": retried["ids"] == again["ids"],
                                   "stored": [(entry["id"] in retried["ids"], entry["text"], entry["metadata"])
                                              for entry in (await call.ok("list_memories", thread=thread))["entries"]]}
                store.delay_s = 0.5
            store.delay_s = 0
            other_text = await call.ok("remember", entries=["Prefers black tea", "Has a dog"], thread="keyed",
                                       idempotency_key="call-7f3a")
            other_thread = await call.ok("remember", entries=["Prefers green tea"], idempotency_key="call-7f3a")
            outcome["reused key"] = {"other text": other_text["ids"], "other thread": other_thread["ids"],
                                     "keyed": [entry["id"] for entry in (await call.ok("list_memories", thread="keyed"))["entries"]]}
        return outcome

    outcomes = [await scenario(backend) for backend in backends.each]
    assert_same(*outcomes, "outcome")  # keyed ids depend only on the scope, key, position and text
    outcome = outcomes[0]
    assert [text for _, text, _ in outcome["plain"]["stored"]] == ["Prefers green tea", "Has a dog"] * 3
    assert outcome["keyed"] == {"same ids": True, "stored": [(True, "Prefers green tea", {}), (True, "Has a dog", {"n": 1})]}
    reused = outcome["reused key"]
    keyed_before = reused["keyed"][:2]
    assert reused["other text"][0] not in keyed_before and reused["other text"][1] == keyed_before[1]
    assert reused["other thread"][0] != keyed_before[0]
    assert len(reused["keyed"]) == 3  # the new text is a new entry; "Has a dog" at position 2 is the same entry


async def test_entries_recalled_from_another_thread_are_changed_in_their_thread(backends):
    """A hit recalled across threads is corrected, has its consent changed and is forgotten by passing its thread;
    without it, each of those tools answers "not found" (a tool error naming the id and how to pass the thread),
    never success, and the entry is still recalled. A forget with ids of two threads forgets the ones of the
    thread it names and reports the rest."""
    async def scenario(call, backend):
        await call.ok("remember", entries=["Drinks green tea at breakfast"])
        await call.ok("remember", entries=["Brews oolong tea on weekends", "Grows mint for tea"], thread="thread-2",
                      consent={"scope": "user"})
        across = await call.ok("recall", query="tea", top_k=8, across_threads=True)
        here = {"correct": await call.failed("correct", entry_id="e2", text="Brews black tea"),
                "set_consent": await call.failed("set_consent", entry_id="e2", visible=False),
                "forget": await call.failed("forget", ids=["e2"])}
        still = await call.ok("recall", query="oolong", top_k=8, across_threads=True)
        corrected = await call.ok("correct", entry_id="e2", text="Brews black tea on weekends", thread="thread-2")
        revoked = await call.ok("set_consent", entry_id="e3", visible=False, thread="thread-2")
        mixed = await call.failed("forget", ids=["e2", "e1"], thread="thread-2")
        after = await call.ok("recall", query="tea", top_k=8, across_threads=True)
        return {"across": across, "here": here, "still": still, "corrected": corrected, "revoked": revoked,
                "mixed": mixed, "after": after, "left": [await call.count(), await call.count("thread-2")]}

    result = await on_both(backends, scenario)
    assert sorted((hit["id"], hit["thread"]) for hit in result["across"]["hits"]) == [
        ("e1", "thread-1"), ("e2", "thread-2"), ("e3", "thread-2")]
    for tool, failure in result["here"].items():
        assert failure.error == "EntryNotFoundError", tool
        assert "e2" in failure.text and "pass it as thread" in failure.text, tool
    assert "e2" in [hit["id"] for hit in result["still"]["hits"]]
    assert (result["corrected"]["thread"], result["corrected"]["text"]) == ("thread-2", "Brews black tea on weekends")
    assert result["revoked"]["consent"]["visible"] is False
    assert result["mixed"].error == "EntryNotFoundError"
    assert "no entry e1 in thread 'thread-2'" in result["mixed"].text and "(1 deleted)" in result["mixed"].text
    assert [hit["id"] for hit in result["after"]["hits"]] == ["e1"]
    assert result["left"] == [1, 0]  # e3 was revoked, so it is not listed; e2 is gone


async def test_a_thread_argument_never_leaves_the_tokens_resource(backends):
    """Servers of look-alike scopes (user_1 and user-1 of acme, and user_1 of acme-corp) over the same stores,
    with the same entry ids and thread names: naming the other scope's thread reaches this scope's thread of
    that name, so the other's entries are "not found" for forget, correct and set_consent, and stay intact."""
    scopes = {"acme user_1": server_scope("acme", "user_1", "notes"), "acme user-1": server_scope("acme", "user-1", "notes"),
              "acme-corp user_1": server_scope("acme-corp", "user_1", "notes")}

    async def scenario(backend):
        directory = MemoryDirectory({None: (backend.vector_store, backend.working_store)}, backend.embedder)
        servers = {name: create_mcp_server(directory, lambda scope=scope: scope, entry_ids=lambda: "same-id")
                   for name, scope in scopes.items()}
        outcome = {}
        async with Client(servers["acme user-1"]) as a, Client(servers["acme-corp user_1"]) as b, \
                Client(servers["acme user_1"]) as mine:
            for other in (Caller(a), Caller(b)):
                await other.ok("remember", entries=["a secret of a look-alike scope"], thread="shared", consent={"scope": "user"})
            call = Caller(mine)
            for thread in ("shared", "notes"):
                outcome[f"forget {thread}"] = await call.failed("forget", ids=["same-id"], thread=thread)
                outcome[f"correct {thread}"] = await call.failed("correct", entry_id="same-id", text="x", thread=thread)
                outcome[f"consent {thread}"] = await call.failed("set_consent", entry_id="same-id", visible=False, thread=thread)
            outcome["mine"] = await call.ok("recall", query="secret", top_k=8, across_threads=True)
            outcome["intact"] = [(await Caller(other).ok("recall", query="secret", thread="shared"))["hits"][0]["text"]
                                 for other in (a, b)]
        return outcome

    outcomes = [await scenario(backend) for backend in backends.each]
    assert_same(*[without_times(types_only(outcome)) for outcome in outcomes], "outcome")
    for outcome in outcomes:
        for key, value in outcome.items():
            if key.split()[0] in ("forget", "correct", "consent"):
                assert value.error == "EntryNotFoundError", key
        assert outcome["mine"]["hits"] == []
        assert outcome["intact"] == ["a secret of a look-alike scope"] * 2
