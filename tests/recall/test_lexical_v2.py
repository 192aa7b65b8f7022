"""Tokenizer v2 through the public API, on both backends: recall and RAG lexical queries find
morphological variants (Porter stems) and CJK substrings (character bigrams), including runs over 64
characters that v1 left out of the index; and an install with data migrates to revision 0010 and back."""

import asyncio

import psycopg
import pytest
from prism_memory import RagChunk, create_hash_embedder, create_memory, create_postgres_memory_stores
from prism_memory.lexical import lexical_terms_v1, lexical_terms_v2
from prism_memory.schema import SchemaConfig, downgrade, migrate

#: Space-less sentences over 64 characters: v1 kept no term of either.
CHINESE = "我们明天下午三点在北京总部的第三会议室开会讨论下一季度的预算安排和人员招聘计划请大家提前准备好相关材料并准时参加会议谢谢大家的配合"
JAPANESE = "来週の金曜日に東京タワーの近くのレストランで新しいプロジェクトのキックオフミーティングを開催しますので皆さんぜひ参加してくださいね"
ENTRIES = [
    {"id": "en-expiry", "text": "Tokens expire after 30 minutes"},
    {"id": "en-budget", "text": "Our token budget for the week is spent"},
    {"id": "en-invoice", "text": "The invoice is due on Friday"},
    {"id": "zh-meeting", "text": CHINESE},
    {"id": "ja-kickoff", "text": JAPANESE},
    {"id": "zh-short", "text": "北京很冷"},
]


def test_the_sentences_are_what_v1_could_not_index():
    assert len(CHINESE) > 64 and len(JAPANESE) > 64
    assert lexical_terms_v1(CHINESE) == lexical_terms_v1(JAPANESE) == []
    assert set(lexical_terms_v1("how long until my token expires")).isdisjoint(lexical_terms_v1(ENTRIES[0]["text"]))
    assert "北京" in lexical_terms_v2(CHINESE) and "タワ" in lexical_terms_v2(JAPANESE)


async def test_recall_finds_morphological_variants_and_cjk_substrings(backends):
    queries = {
        "how long until my token expires": "en-expiry",  # expir, long, token: 2 of 3 in the entry
        "第三会议室": "zh-meeting",  # a substring from the middle of a 65-character run
        "キックオフミーティング": "ja-kickoff",
        "東京タワー": "ja-kickoff",
        "北京": "zh-meeting",  # also in zh-short: a tie on lexical, broken by similarity
    }

    async def scenario(backend):
        memory = backend.memory(tenant_id="acme", resource_id="ada", thread_id="th-lexical")
        await memory.remember(ENTRIES, wait=True)
        answers = {}
        for query in queries:
            hits = (await memory.recall(query, top_k=len(ENTRIES))).hits
            answers[query] = {hit.id: hit.lexical for hit in hits}
        return answers

    # The hash embedder's similarity is noise here: the lexical leg is what is tested, on every entry.
    answers = await backends.run(scenario)
    for query, expected in queries.items():
        assert max(answers[query], key=answers[query].get) == expected, (query, answers[query])
    assert answers["how long until my token expires"] == {
        "en-expiry": pytest.approx(2 / 3), "en-budget": pytest.approx(1 / 3), "en-invoice": 0.0,
        "zh-meeting": 0.0, "ja-kickoff": 0.0, "zh-short": 0.0}
    for query in ("第三会议室", "キックオフミーティング", "東京タワー"):
        assert sorted(answers[query].values()) == [0.0] * 5 + [1.0], query  # every bigram of the query, in one sentence
    assert {entry for entry, lexical in answers["北京"].items() if lexical == 1.0} == {"zh-meeting", "zh-short"}


async def test_rag_lexical_query_finds_morphological_variants_and_cjk_substrings(backends):
    async def scenario(backend):
        store, embedder = backend.vector_store, backend.embedder
        texts = [entry["text"] for entry in ENTRIES]
        vectors = await embedder.embed(texts)
        chunks = [RagChunk(entry["id"], "doc-" + entry["id"][:2], entry["text"], vector)
                  for entry, vector in zip(ENTRIES, vectors)]
        await store.upsert("acme", "kb", chunks)
        return {query: [(match.id, match.score) for match in await store.lexical_query("acme", "kb", query, top_k=4)]
                for query in ("token expires", "expiring tokens", "第三会议室", "東京タワーの近く", CHINESE, "北京")}

    answers = await backends.run(scenario)
    assert answers["token expires"] == [["en-expiry", 1.0], ["en-budget", 0.5]]
    assert answers["expiring tokens"] == [["en-expiry", 1.0], ["en-budget", 0.5]]
    assert answers["第三会议室"] == [["zh-meeting", 1.0]]
    assert answers["東京タワーの近く"] == [["ja-kickoff", 1.0]]
    assert answers[CHINESE][0] == ["zh-meeting", 1.0]  # its own text: v1 could not find it at all
    assert answers["北京"] == [["zh-meeting", 1.0], ["zh-short", 1.0]]  # ties by id


def _vector(values: list[float]) -> str:
    return "[" + ",".join(repr(value) for value in values) + "]"


def test_an_install_with_data_migrates_to_tokenizer_v2_and_back(server_dsn):
    """Entries and chunks written at revision 0009 (v1 terms in text_tsv) are found by stemmed and CJK queries
    once revision 0010 rewrote text_tsv, through the public API; the downgrade restores v1's answers."""
    dsn = server_dsn("lexical_v2_migration")
    config = SchemaConfig(dimensions=16)
    embedder = create_hash_embedder(16)
    ids, texts = [entry["id"] for entry in ENTRIES], [entry["text"] for entry in ENTRIES]
    vectors = [_vector(vector) for vector in asyncio.run(embedder.embed(texts))]
    query = _vector(asyncio.run(embedder.embed(["token expires"]))[0])
    migrate(dsn, config, "0009")
    with psycopg.connect(dsn) as conn:
        conn.execute("select prism_memory.remember_v1('acme', 'ada', 'th', %s, %s, %s::vector[], %s::jsonb[])",
                     (ids, texts, vectors, ["{}"] * len(ids)))
        conn.execute("select prism_memory.rag_upsert_v1('acme', 'kb', %s, %s, %s, %s::vector[])",
                     (ids, ids, texts, vectors))

    def sql_answers(recall: str = "recall_v2") -> dict:  # recall_v3 from revision 0012, recall_v2 up to 0015
        with psycopg.connect(dsn) as conn:
            return {
                "recall": conn.execute(f"select id, lexical from prism_memory.{recall}('acme', 'ada', 'th', %s::vector, "
                                       "'token expires', 8) order by id", (query,)).fetchall(),
                "rag": conn.execute("select id from prism_memory.rag_lexical_query_v1('acme', 'kb', '第三会议室')").fetchall(),
                "text_tsv": conn.execute("select id, tsvector_to_array(text_tsv) from prism_memory.semantic_memory "
                                         "order by id").fetchall(),
            }

    before = sql_answers()
    assert dict(before["recall"])["en-expiry"] == 0 and before["rag"] == []  # v1: tokens, expire; no CJK term
    assert dict(before["text_tsv"]) == {entry["id"]: lexical_terms_v1(entry["text"]) for entry in ENTRIES}

    migrate(dsn, config)

    async def through_the_api():
        stores = await create_postgres_memory_stores(dsn, dimensions=16, skip_migrations=True)
        try:
            memory = create_memory(tenant_id="acme", resource_id="ada", thread_id="th", embedder=embedder,
                                   vector_store=stores.vector_store, working_store=stores.working_store)
            hits = (await memory.recall("token expires", top_k=8)).hits
            matches = await stores.vector_store.lexical_query("acme", "kb", "第三会议室")
            return {hit.id: hit.lexical for hit in hits}, [(match.id, match.score) for match in matches]
        finally:
            await stores.close()

    hits, matches = asyncio.run(through_the_api())
    assert hits["en-expiry"] == 1.0 and hits["en-budget"] == 0.5 and matches == [("zh-meeting", 1.0)]
    assert dict(sql_answers("recall_v3")["text_tsv"]) == {entry["id"]: lexical_terms_v2(entry["text"]) for entry in ENTRIES}

    downgrade(dsn, config, "0009")
    assert sql_answers() == before
