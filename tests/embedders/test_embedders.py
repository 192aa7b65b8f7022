"""The embedder adapters against real counterparts, and query embeddings on both backends.

* ``create_openai_embedder``: the official ``openai`` client against a real HTTP server on 127.0.0.1
  (``tests/embedding_server.py``), its batching, the ``dimensions`` option and every error path (401,
  500 after retries, a retried 500, a wrong width, a short answer, a timeout);
* ``create_langchain_embedder``: real LangChain classes, ``DeterministicFakeEmbedding`` (langchain-core)
  and ``langchain_openai.OpenAIEmbeddings`` pointed at the same local server (offline: no tiktoken, see
  ``check_embedding_ctx_length``), plus a sync-only object;
* ``embed_query``: recall and the context provider embed the query with it when the embedder has it.

The sentence-transformers adapter loads a real model, so its tests are in ``tests/embedders/test_embedders_local.py``
(the model lane of ``.ci/run``).
"""

from __future__ import annotations

import asyncio
import time

import openai
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_openai import OpenAIEmbeddings
from prism_memory import (
    ConfigurationError,
    DimensionMismatchError,
    EmbeddingFailedError,
    EmbeddingUnavailableError,
    InvalidEmbeddingError,
    create_hash_embedder,
)
from prism_memory.embedders import create_langchain_embedder, create_openai_embedder

from conftest import TEST_DIMENSIONS
from embedding_server import EmbeddingServer

TURNS = ["Prefers concise answers", "Has a dog called Rex", "Walks Rex every morning", "Works as a nurse in Lisbon",
         "Drinks green tea at four", "Is learning Portuguese"]


def entries(prefix: str = "m") -> list[dict]:
    return [{"id": f"{prefix}{index}", "text": text} for index, text in enumerate(TURNS, start=1)]


@pytest.fixture
def server():
    with EmbeddingServer(TEST_DIMENSIONS) as running:
        yield running


def http_embedder(server: EmbeddingServer, model: str = "served-model", **options):
    options.setdefault("max_retries", 0)
    return create_openai_embedder(model, dimensions=options.pop("dimensions", TEST_DIMENSIONS),
                                  base_url=server.base_url, api_key=options.pop("api_key", server.api_key), **options)


async def ranked(memory, query: str) -> list[tuple[str, float]]:
    return [(hit.id, hit.score) for hit in (await memory.recall(query, top_k=6)).hits]


# -- the OpenAI-compatible adapter ---------------------------------------------------------


async def test_a_memory_over_the_http_embedder_recalls_what_the_hash_embedder_would(backends, server):
    """The server serves the hash embedder's vectors: the same hits and scores prove the whole path."""
    async def scenario(backend):
        served = backend.memory(thread_id="http", embedder=http_embedder(server))
        local = backend.memory(thread_id="local")
        await served.remember(entries("h"), wait=True)
        await local.remember(entries("h"), wait=True)
        return await ranked(served, "who walks the dog"), await ranked(local, "who walks the dog")

    served, local = await backends.run(scenario)
    assert served == local and served[0][0] == "h2"
    assert {request["body"]["encoding_format"] for request in server.requests} == {"float"}
    assert all("dimensions" not in request["body"] for request in server.requests)


async def test_texts_are_split_into_requests_within_the_limits(server):
    embedder = http_embedder(server, batch_size=3)
    texts = [f"text number {index}" for index in range(7)]
    assert await embedder.embed(texts) == server.vectors(texts)
    assert [len(request["body"]["input"]) for request in server.requests] == [3, 3, 1]
    server.requests.clear()
    by_bytes = http_embedder(server, max_batch_tokens=30)  # each text is 13 bytes: two per request
    assert await by_bytes.embed(texts) == server.vectors(texts)
    assert [len(request["body"]["input"]) for request in server.requests] == [2, 2, 2, 1]


async def test_the_dimensions_option_is_sent_to_models_that_shorten(server):
    shortened = http_embedder(server, "text-embedding-3-small", dimensions=16)
    assert shortened.request_dimensions and shortened.model_id == "text-embedding-3-small"
    assert await shortened.embed(["a dog"]) == server.vectors(["a dog"], 16)
    assert server.requests[-1]["body"]["dimensions"] == 16
    forced = http_embedder(server, "served-model", dimensions=8, request_dimensions=True)
    assert len((await forced.embed(["a dog"]))[0]) == 8
    with pytest.raises(DimensionMismatchError):  # a model that does not shorten answers at its own width
        await http_embedder(server, "served-model", dimensions=8).embed(["a dog"])


async def test_a_wrong_key_fails_the_write_and_nothing_is_written(backends, server):
    async def scenario(backend):
        memory = backend.memory(thread_id="keyed", embedder=http_embedder(server, api_key="wrong-key"))
        with pytest.raises(EmbeddingFailedError) as raised:
            await memory.remember(entries(), wait=True)
        assert not isinstance(raised.value, EmbeddingUnavailableError)
        assert isinstance(raised.value.__cause__, openai.AuthenticationError) and "401" in str(raised.value)
        return await memory.config.vector_store.count_by_thread(memory.config.scope)

    assert await backends.run(scenario) == 0


async def test_a_server_error_is_unavailable_after_the_clients_retries(server):
    with pytest.raises(EmbeddingUnavailableError) as raised:
        await http_embedder(server, "fail-500", max_retries=1).embed(["a dog"])
    assert isinstance(raised.value.__cause__, openai.InternalServerError)
    assert len(server.requests) == 2  # the first try and one retry
    assert await http_embedder(server, "flaky", max_retries=2).embed(["a cat"]) == server.vectors(["a cat"])


async def test_a_wrong_width_or_a_short_answer_is_refused(backends, server):
    async def scenario(backend):
        outcomes = []
        for model, error in (("wrong-width", DimensionMismatchError), ("short", InvalidEmbeddingError)):
            memory = backend.memory(thread_id=model, embedder=http_embedder(server, model))
            with pytest.raises(error):
                await memory.remember(entries(), wait=True)
            outcomes.append(await memory.config.vector_store.count_by_thread(memory.config.scope))
        return outcomes

    assert await backends.run(scenario) == [0, 0]


async def test_a_timeout_is_unavailable_and_never_blocks_the_event_loop(server):
    embedder = http_embedder(server, "slow", timeout=0.3)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    with pytest.raises(EmbeddingUnavailableError) as raised:
        await embedder.embed(["a dog"])
    elapsed = time.perf_counter() - started
    task.cancel()
    assert isinstance(raised.value.__cause__, openai.APITimeoutError)
    assert elapsed < server.slow_seconds and ticks >= 10  # gave up at its timeout; the loop kept running


def test_the_http_embedder_refuses_bad_options(monkeypatch, server):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="api_key"):
        create_openai_embedder("text-embedding-3-small", dimensions=1536)  # OpenAI itself needs a key
    for options in ({"dimensions": 0}, {"dimensions": TEST_DIMENSIONS, "batch_size": 4096}):
        with pytest.raises(ConfigurationError):
            create_openai_embedder("m", base_url=server.base_url, **options)
    keyless = create_openai_embedder("m", dimensions=TEST_DIMENSIONS, base_url=server.base_url)  # Ollama, vLLM ...
    assert keyless.model_id == "m"


# -- the LangChain bridge ----------------------------------------------------------------------


async def test_a_langchain_fake_embedding_serves_both_backends(backends):
    async def scenario(backend):
        bridge = create_langchain_embedder(DeterministicFakeEmbedding(size=TEST_DIMENSIONS), dimensions=TEST_DIMENSIONS)
        assert bridge.model_id is None  # no model attribute: the width rule alone
        memory = backend.memory(thread_id="fake", embedder=bridge)
        await memory.remember(entries(), wait=True)
        return [hit.id for hit in (await memory.recall("Has a dog called Rex", top_k=3)).hits][0]

    assert await backends.run(scenario) == "m2"  # the same text: the same vector, a cosine of 1


async def test_langchain_openai_embeddings_on_the_local_server_share_the_http_embedders_model(backends, server):
    """``OpenAIEmbeddings`` offline (``check_embedding_ctx_length=False``: no tiktoken download): the bridge
    records its ``model``, the same id the HTTP adapter records, so either may write and recall the thread."""
    async def scenario(backend):
        langchain = OpenAIEmbeddings(model="served-model", base_url=server.base_url, api_key=server.api_key,
                                     check_embedding_ctx_length=False, max_retries=0)
        bridge = create_langchain_embedder(langchain, dimensions=TEST_DIMENSIONS)
        assert bridge.model_id == "served-model"
        written = backend.memory(thread_id="lc", embedder=http_embedder(server))
        await written.remember(entries(), wait=True)
        read = backend.memory(thread_id="lc", embedder=bridge)
        await read.remember([{"id": "m9", "text": "Bakes bread on Sundays"}], wait=True)
        return await ranked(read, "who walks the dog"), await ranked(written, "who walks the dog")

    through_langchain, through_openai = await backends.run(scenario)
    assert through_langchain == through_openai and through_langchain[0][0] == "m2"


class QueryPrefixed(Embeddings):
    """A LangChain ``Embeddings`` whose queries differ from its documents (as E5's ``query:`` prefix does)."""

    def __init__(self) -> None:
        self.hash = create_hash_embedder(TEST_DIMENSIONS)
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.hash.embed_one(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self.hash.embed_one("Drinks green tea at four")  # every query means the tea


class SyncOnly:
    """Not a LangChain class: only the sync methods, which the bridge runs in a worker thread."""

    def __init__(self) -> None:
        self.hash = create_hash_embedder(TEST_DIMENSIONS)
        self.model = "sync-only-model"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.hash.embed_one(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.hash.embed_one(text)


async def test_the_bridge_embeds_queries_with_embed_query_and_runs_sync_methods_off_the_loop(backends):
    async def scenario(backend):
        prefixed = QueryPrefixed()
        memory = backend.memory(thread_id="q", embedder=create_langchain_embedder(prefixed, dimensions=TEST_DIMENSIONS))
        await memory.remember(entries(), wait=True)
        top = (await memory.recall("concise answers", top_k=1)).hits[0].id
        sync = create_langchain_embedder(SyncOnly(), dimensions=TEST_DIMENSIONS)
        other = backend.memory(thread_id="s", embedder=sync)
        await other.remember(entries(), wait=True)
        return top, prefixed.queries, sync.model_id, (await other.recall("concise answers", top_k=1)).hits[0].id

    assert await backends.run(scenario) == ["m5", ["concise answers"], "sync-only-model", "m1"]


def test_the_bridge_refuses_objects_it_cannot_use():
    with pytest.raises(ConfigurationError, match="Embeddings"):
        create_langchain_embedder(object(), dimensions=TEST_DIMENSIONS)
    with pytest.raises(ConfigurationError, match="dimensions"):
        create_langchain_embedder(DeterministicFakeEmbedding(size=8))
    with_width = OpenAIEmbeddings(model="m", dimensions=256, api_key="k", check_embedding_ctx_length=False)
    assert create_langchain_embedder(with_width).dimensions == 256


# -- query embeddings through the facade ---------------------------------------------------------


class QueryAware:
    """A host embedder with ``embed_query``: recall must use it (here every query means "green tea")."""

    def __init__(self) -> None:
        self.dimensions = TEST_DIMENSIONS
        self.hash = create_hash_embedder(TEST_DIMENSIONS)
        self.queries: list[str] = []

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return await self.hash.embed(texts)

    async def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self.hash.embed_one("Drinks green tea at four")


async def test_recall_and_the_context_provider_embed_the_query_with_embed_query(backends):
    async def scenario(backend):
        embedder = QueryAware()
        memory = backend.memory(thread_id="aware", embedder=embedder)
        await memory.remember(entries(), wait=True)
        recalled = (await memory.recall("a nurse in Lisbon", top_k=1)).hits[0].id
        blocks = await memory.create_context_provider(working=False, top_k=1).provide("a nurse in Lisbon")
        plain = (await backend.memory(thread_id="plain").recall("a nurse in Lisbon", top_k=1)).hits
        return recalled, [block.text for block in blocks], embedder.queries, plain

    recalled, blocks, queries, plain = await backends.run(scenario)
    assert recalled == "m5" and "Drinks green tea at four" in blocks[0]
    assert queries == ["a nurse in Lisbon", "a nurse in Lisbon"]
    assert plain == []  # an empty thread: the hash embedder's own query path is unchanged (embed)


async def test_a_failing_embed_query_is_an_embedding_failure(backends):
    class Broken(QueryAware):
        async def embed_query(self, text: str) -> list[float]:
            raise RuntimeError("model offline")

    async def scenario(backend):
        memory = backend.memory(thread_id="broken", embedder=Broken())
        await memory.remember(entries(), wait=True)
        with pytest.raises(EmbeddingFailedError, match="model offline"):
            await memory.recall("tea")
        return "raised"

    assert await backends.run(scenario) == "raised"
