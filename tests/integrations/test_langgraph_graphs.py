"""PrismStore under real LangGraph and LangChain code, offline: a StateGraph (async, and sync from a worker
thread) whose nodes read and write the store, and a LangChain v1 agent calling LangMem's memory tools.

The agent's chat model is langchain_core's fake message-list model: a real model cannot run offline here. It
only replays the tool calls listed; the tools, the agent loop and the store are the real ones."""

from __future__ import annotations

import asyncio
import json
from typing import TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph_stores import make_store  # noqa: F401 (a fixture)
from langmem import create_manage_memory_tool, create_search_memory_tool


class State(TypedDict):
    user: str
    fact: str
    recalled: list[str]


def build_graph(sync: bool):
    """remember -> recall: the first node writes the user's fact, the second searches the user's namespace."""

    def remember(state: State, *, store: BaseStore) -> dict:
        store.put(("memories", state["user"]), "fact", {"text": state["fact"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict:
        return {"recalled": [hit.value["text"] for hit in store.search(("memories", state["user"]), query="tea")]}

    async def aremember(state: State, *, store: BaseStore) -> dict:
        await store.aput(("memories", state["user"]), "fact", {"text": state["fact"]})
        return {}

    async def arecall(state: State, *, store: BaseStore) -> dict:
        hits = await store.asearch(("memories", state["user"]), query="tea")
        return {"recalled": [hit.value["text"] for hit in hits]}

    graph = StateGraph(State)
    graph.add_node("remember", remember if sync else aremember)
    graph.add_node("recall", recall if sync else arecall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    return graph


async def test_state_graph_reads_and_writes_the_store(make_store):
    store = make_store()
    graph = build_graph(sync=False).compile(store=store)
    out = await graph.ainvoke({"user": "user_1", "fact": "likes green tea", "recalled": []})
    assert out["recalled"] == ["likes green tea"]
    out = await graph.ainvoke({"user": "user-1", "fact": "likes black tea", "recalled": []})
    assert out["recalled"] == ["likes black tea"]  # user_1's item is not in user-1's namespace
    # LangGraph's sync methods, from a sync graph run outside the store's event loop
    sync_graph = build_graph(sync=True).compile(store=store)
    out = await asyncio.to_thread(sync_graph.invoke, {"user": "user_10", "fact": "likes tea at ten", "recalled": []})
    assert out["recalled"] == ["likes tea at ten"]
    assert await store.alist_namespaces() == [("memories", "user-1"), ("memories", "user_1"), ("memories", "user_10")]


class ToolCallingFake(FakeMessagesListChatModel):
    """The fake message-list model, accepting the tools an agent binds (it replays its list regardless)."""

    def bind_tools(self, tools, **kwargs):
        return self


def call(name: str, args: dict, call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def agent(store, replies):
    namespace = ("memories", "{langgraph_user_id}")
    tools = [create_manage_memory_tool(namespace=namespace), create_search_memory_tool(namespace=namespace)]
    return create_agent(ToolCallingFake(responses=replies), tools, store=store)


async def run(store, user: str, replies) -> list[ToolMessage]:
    config = {"configurable": {"langgraph_user_id": user}}
    out = await agent(store, replies).ainvoke({"messages": [{"role": "user", "content": "hi"}]}, config)
    return [message for message in out["messages"] if isinstance(message, ToolMessage)]


@pytest.mark.parametrize("resource_label", [None, 1])
async def test_agent_with_langmem_tools_keeps_users_apart(make_store, resource_label):
    store = make_store(resource_label=resource_label)
    await run(store, "user_1", [call("manage_memory", {"content": "Prefers green tea", "action": "create"}, "c1"),
                                AIMessage(content="Noted.")])
    [stored] = await store.asearch(("memories", "user_1"))
    assert stored.value == {"content": "Prefers green tea"}
    search = call("search_memory", {"query": "green tea"}, "c2")
    [other] = await run(store, "user_10", [search, AIMessage(content="Nothing.")])
    assert json.loads(other.content) == []
    [own] = await run(store, "user_1", [search, AIMessage(content="Green tea.")])
    assert [hit["value"] for hit in json.loads(own.content)] == [{"content": "Prefers green tea"}]
    await run(store, "user_1", [call("manage_memory", {"action": "delete", "id": stored.key}, "c3"), AIMessage(content="ok")])
    assert await store.asearch(("memories", "user_1")) == []
