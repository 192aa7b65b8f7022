"""Hostile and unusual input on both backends: exact round trips, huge texts, query metacharacters, naive times."""

from datetime import datetime, timezone

import pytest
from prism_memory import MemoryConsent, MemoryLimits, RagChunk

from parity import Clock

UNICODE = [
    "family 👨‍👩‍👧‍👦 and flags 🇵🇹🏳️‍🌈",
    "combining: e\u0301 a\u0308 n\u0303 (NFD) vs é ä ñ (NFC)",
    "rtl: مرحبا שלום with a \u200f mark",
    "controls: \x01\x02\x1b[31m red \x7f and \u2028 line \u2029 paragraph",
    "zero width: a\u200bb\u200dc\ufeffd",
    "astral: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠀀 🀄",
]


async def test_unicode_round_trips_byte_for_byte_through_remember_recall_and_export(backends):
    async def scenario(backend):
        memory = backend.memory()
        entries = [{"id": f"u{i}", "text": text, "consent": MemoryConsent(),
                    "metadata": {text: [text, {"nested " + text: text}]}} for i, text in enumerate(UNICODE)]
        await memory.remember(entries, wait=True)
        hits = {hit.id: (hit.text, hit.metadata) for hit in (await memory.recall("and with a", top_k=32)).hits}
        page = await memory.export_memory(memory.config.scope)
        exported = {record.id: (record.text, record.metadata) for record in page.entries}
        [vector] = await backend.embedder.embed([UNICODE[0]])
        await backend.vector_store.upsert("t1", "kb", [RagChunk("c", "s", UNICODE[0], vector, {UNICODE[1]: UNICODE[2]})])
        [chunk] = await backend.vector_store.get_by_source("t1", "kb", "s")
        return hits, exported, (chunk.text, chunk.metadata)

    hits, exported, chunk = await backends.run(scenario)
    for i, text in enumerate(UNICODE):
        expected = [text, {text: [text, {"nested " + text: text}]}]
        assert exported[f"u{i}"] == expected and hits[f"u{i}"] == expected
        assert exported[f"u{i}"][0].encode("utf-8") == text.encode("utf-8")
    assert chunk == [UNICODE[0], {UNICODE[1]: UNICODE[2]}]


async def test_a_text_past_the_full_text_limits_is_stored_and_recalled_by_vector(backends):
    huge = " ".join(f"w{i:07d}" for i in range(400_000))  # 3.6 MB, 400,000 distinct terms (a tsvector caps at 1 MB)

    async def scenario(backend):
        memory = backend.memory(limits=MemoryLimits(entry_bytes=8 * 1024 * 1024))
        await memory.remember([{"id": "huge", "text": huge}, {"id": "small", "text": "a small note"}], wait=True)
        by_vector = await memory.recall("w0000001 w0399999", top_k=2)
        [chunk_vector] = await backend.embedder.embed([huge])
        await backend.vector_store.upsert("t1", "kb", [RagChunk("huge", "s", huge, chunk_vector)])
        lexical = await backend.vector_store.lexical_query("t1", "kb", "w0000001 w0399999")
        return [(hit.id, len(hit.text), hit.lexical) for hit in by_vector.hits], [(m.id, m.score) for m in lexical]

    hits, lexical = await backends.run(scenario)
    assert hits[0] == ["huge", len(huge), 0.5]  # the lexical leg reads the first 200,000 characters only
    assert lexical == [["huge", 0.5]]


QUERIES = ["& | ! : * ( ) ' < > \\ \" ; -- /* */", "' or 1=1 --", "a:* & !b", "<-> <2> (x | y) & !z", "%_\\%",
           "\u3000\u00a0 coffee \t", "x" * 8000]


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
async def test_queries_full_of_full_text_and_sql_metacharacters_are_plain_text(backends, query):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": "a", "text": "coffee or tea"}, {"id": "b", "text": "x and z"}], wait=True)
        hits = (await memory.recall(query, top_k=8)).hits
        return [(hit.id, hit.lexical) for hit in hits]

    assert len(await backends.run(scenario)) == 2


NAIVE = datetime(2026, 1, 1, 12, 0)


@pytest.mark.parametrize("call", [
    lambda m: m.share_with("child", ["a"], expires_at=NAIVE),
    lambda m: m.remember([{"id": "n", "text": "t", "consent": MemoryConsent(granted_at=NAIVE)}], wait=True),
    lambda m: m.set_consent("a", visible=False, revoked_at=NAIVE),
], ids=["share expiry", "consent granted_at", "consent revoked_at"])
async def test_naive_datetimes_are_refused_with_a_typed_error(backends, call):
    async def scenario(backend):
        memory = backend.memory(clock=Clock(datetime(2026, 1, 1, tzinfo=timezone.utc)))
        await memory.remember([{"id": "a", "text": "kept"}], wait=True)
        try:
            await call(memory)
            outcome = "accepted"
        except Exception as exc:
            outcome = type(exc).__name__
        return outcome, [(hit.id, hit.text) for hit in (await memory.recall("kept")).hits]

    outcome, hits = await backends.run(scenario)
    assert outcome == "InvalidEntryError" and hits == [["a", "kept"]]


async def test_a_naive_clock_is_a_configuration_error(backends):
    async def scenario(backend):
        memory = backend.memory(clock=lambda: NAIVE)
        try:
            await memory.remember([{"id": "a", "text": "t"}], wait=True)
        except Exception as exc:
            return type(exc).__name__

    assert await backends.run(scenario) == "ConfigurationError"
