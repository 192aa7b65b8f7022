from parity import Raised
from prism_memory import InvalidEntryError


async def test_remember_and_recall_parity(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": "m1", "text": "Prefers concise answers"}, {"id": "m2", "text": "Has a dog"}], wait=True)
        return await memory.recall("concise answers please", top_k=2)

    result = await backends.run(scenario)
    assert [hit["id"] for hit in result["hits"]] == ["m1", "m2"]


async def test_empty_text_raises_on_both(backends):
    async def scenario(backend):
        await backend.memory().remember([{"id": "m1", "text": "  "}], wait=True)

    assert await backends.run(scenario) == Raised(InvalidEntryError)
