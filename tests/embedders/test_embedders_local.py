"""The sentence-transformers adapter with the real all-MiniLM-L6-v2 model (the ``local`` extra).

These tests load the model, which needs torch: they belong to the model lane of ``.ci/run``, which
installs ``torch==2.13.0`` and the ``local`` extra and sets ``PRISM_TEST_MODEL=1`` (with the Hugging Face
offline switches, so any hub access would fail). There a test whose model cannot load fails, never
skips. Without ``PRISM_TEST_MODEL=1`` (the main test command, torch-free) they are skipped, saying so.
"""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest
from prism_memory import ConfigurationError, EmbeddingModelMismatchError, create_hash_embedder
from prism_memory.cli import main as cli_main
from prism_memory.embedders import DEFAULT_LOCAL_MODEL_ID, create_local_embedder
from prism_memory.schema import SchemaConfig, migrate

from parity import Backends

pytestmark = pytest.mark.skipif(
    os.environ.get("PRISM_TEST_MODEL") != "1",
    reason="loads the real all-MiniLM-L6-v2 model (torch): the model lane of .ci/run sets PRISM_TEST_MODEL=1",
)

MINILM_DIMENSIONS = 384
TURNS = [
    "Caroline: I went to an LGBTQ support group yesterday and it was powerful.",
    "Melanie: I painted a sunrise over the lake last week.",
    "Caroline: I'm looking into counseling certification programs.",
    "Melanie: We took the kids camping in the mountains and roasted marshmallows.",
    "Caroline: My grandmother gave me a necklace from Sweden.",
    "Melanie: Running in the morning clears my head before work.",
]


@pytest.fixture(scope="module")
def minilm():
    """The packaged model, loaded once: a load failure errors every test that uses it (never a skip)."""
    return create_local_embedder()


@pytest.fixture
async def minilm_backends(server_dsn):
    """Both backends with a 384-wide install (the test template pins 64)."""
    dsn = server_dsn("minilm")
    config = SchemaConfig(dimensions=MINILM_DIMENSIONS)
    await asyncio.to_thread(migrate, dsn, config)
    async with Backends(dsn, config) as pair:
        yield pair


def cosine(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


async def test_the_packaged_model_loads_offline_with_its_identity(minilm):
    assert minilm.dimensions == MINILM_DIMENSIONS and minilm.model_id == DEFAULT_LOCAL_MODEL_ID
    [dog, puppy, taxes] = await minilm.embed(["a dog runs in the park", "a puppy plays outside", "filing tax forms"])
    assert cosine(dog, puppy) > cosine(dog, taxes) + 0.2
    assert all(abs(np.linalg.norm(vector) - 1) < 1e-5 for vector in (dog, puppy, taxes))
    expected = minilm.model.encode(["a dog runs in the park"], normalize_embeddings=True)[0]
    assert np.allclose(dog, expected, atol=1e-6)


async def test_encoding_runs_in_a_worker_thread(minilm):
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    vectors = await minilm.embed([f"sentence number {index} about a garden" for index in range(256)])
    task.cancel()
    assert len(vectors) == 256 and ticks >= 5  # the event loop ran while the model encoded


async def test_the_models_query_and_document_prompts_are_used(minilm):
    from prism_memory.embedders.local import default_model_path
    from sentence_transformers import SentenceTransformer

    prompted = SentenceTransformer(str(default_model_path()), device="cpu", local_files_only=True,
                                   prompts={"query": "query: ", "document": "passage: "})
    with pytest.raises(ConfigurationError, match="model_id"):
        create_local_embedder(prompted)
    embedder = create_local_embedder(prompted, model_id="minilm-e5-style")
    query = await embedder.embed_query("where is the lake")
    [document] = await embedder.embed(["where is the lake"])
    assert np.allclose(query, prompted.encode("query: where is the lake", normalize_embeddings=True), atol=1e-6)
    assert np.allclose(document, prompted.encode("passage: where is the lake", normalize_embeddings=True), atol=1e-6)
    assert cosine(query, document) < 0.999  # the prompts made them differ
    [plain] = await minilm.embed(["where is the lake"])
    assert np.allclose(await minilm.embed_query("where is the lake"), plain, atol=1e-6)  # MiniLM defines none


async def test_recall_with_the_real_model_is_the_same_on_both_backends(minilm, minilm_backends):
    async def scenario(backend):
        memory = backend.memory(embedder=minilm)
        await memory.remember([{"id": f"D1:{index}", "text": text} for index, text in enumerate(TURNS, start=1)], wait=True)
        outcomes = [[hit.id for hit in (await memory.recall(question, top_k=3)).hits] for question in (
            "What did Melanie paint?", "Where did the family go camping?", "What is Caroline studying for?")]
        hashed = backend.memory(embedder=create_hash_embedder(MINILM_DIMENSIONS))  # another model, the same width
        with pytest.raises(EmbeddingModelMismatchError):
            await hashed.remember([{"id": "x", "text": "a hash vector"}], wait=True)
        return outcomes

    outcomes = await minilm_backends.run(scenario)
    assert [ids[0] for ids in outcomes] == ["D1:2", "D1:4", "D1:3"]


def test_the_demo_serves_answers_with_minilm(capsys):
    assert cli_main(["demo", "--backend", "memory", "--embedder", "minilm", "--questions", "2"]) == 0
    out = capsys.readouterr().out
    assert f"embedder: {DEFAULT_LOCAL_MODEL_ID} ({MINILM_DIMENSIONS} dimensions" in out
    assert "evidence turn in the top 5 for" in out
