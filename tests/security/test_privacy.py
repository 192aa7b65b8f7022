"""What must never be found again: redacted canaries, forgotten text, revoked ids; and the indexed tombstone check."""

import logging
import re
from datetime import datetime, timezone

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from prism_memory import REDACTED, MemoryConsent, revoked_ids_absent
from psycopg import sql

from conftest import CITUS, citus_placement, dsn_for

CANARY = "sk-canary-7f3a9c"


def rows_containing(dsn: str, needle: str, schema: str = "prism_memory") -> list[tuple[str, str]]:
    """Every (table, row) of the schema whose text form contains ``needle``, found through the catalog."""
    found = []
    with psycopg.connect(dsn) as conn:
        tables = conn.execute("select tablename from pg_tables where schemaname = %s", (schema,)).fetchall()
        for (table,) in tables:
            query = sql.SQL("select t::text from {}.{} as t where strpos(t::text, %s) > 0").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            found += [(table, row[0]) for row in conn.execute(query, (needle,)).fetchall()]
    return found


async def test_canary_secret_never_reaches_storage_recall_export_or_logs(backends, pg_dsn, caplog):
    caplog.set_level(logging.DEBUG)

    async def scenario(backend):
        memory = backend.memory(secrets=[CANARY], redactor=lambda text: text.replace("555-0100", "[PHONE]"))
        await memory.remember(
            [
                {"id": "k1", "text": f"my api key is {CANARY}, call 555-0100", "consent": MemoryConsent(),
                 "metadata": {"note": f"key={CANARY}", CANARY: ["nested", {"deep": CANARY}]}},
                {"id": "k2", "text": "the key is rotated monthly", "consent": MemoryConsent()},
            ],
            wait=True,
        )
        await memory.update_working({"profile": {"token": CANARY}})
        recalled = await memory.recall(f"what is the api key {CANARY}", top_k=5, message_range=1)
        corrected = await memory.correct("k2", f"the key {CANARY} is rotated weekly")
        exported = await memory.export_memory(memory.config.scope)
        return recalled, corrected, exported, await memory.get_working(), await memory.render_working()

    outcome = await backends.run(scenario)
    text = repr(outcome)
    assert CANARY not in text and "555-0100" not in text
    assert REDACTED in text and "[PHONE]" in text
    assert outcome[0]["hits"][0]["metadata"] == {"note": f"key={REDACTED}", REDACTED: ["nested", {"deep": REDACTED}]}
    assert rows_containing(pg_dsn, CANARY) == []
    assert len(rows_containing(pg_dsn, REDACTED)) >= 3  # entries k1, k2 and the working memory
    assert CANARY not in caplog.text


async def test_forgotten_text_is_in_no_table_of_the_schema(backends, pg_dsn):
    secret = "forget-me-9d1e unique phrase"

    async def scenario(backend):
        memory = backend.memory()
        await memory.remember(
            [{"id": "f1", "text": secret, "metadata": {"copy": secret}}, {"id": "f2", "text": "stays"}], wait=True
        )
        return await memory.forget(["f1"]), [hit.id for hit in (await memory.recall(secret)).hits]

    assert await backends.run(scenario) == [1, ["f2"]]
    assert rows_containing(pg_dsn, "forget-me-9d1e") == []
    assert rows_containing(pg_dsn, "stays") != []


async def test_recall_checks_tombstones_with_an_index_not_a_scan(backends, pg_dsn):
    memory = backends.postgres.memory()
    await memory.remember([{"id": f"p{i}", "text": f"plan check {i}"} for i in range(200)], wait=True)
    await memory.forget([f"p{i}" for i in range(0, 40)])
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        # Other tenants' entries and tombstones, so the tables look like a shared production corpus (on Citus,
        # 50 tenants whose rows share t1's shard: the corpus its query plans over).
        tenant, others = "'other-' || (n % 50)", None
        if CITUS:
            tenant, [others] = "(%(others)s::text[])[1 + n %% 50]", conn.execute(
                "select array_agg(name) from (select 'other-' || k as name from generate_series(1, 100000) as k "
                "where get_shard_id_for_distribution_column(%(table)s, 'other-' || k) "
                "= get_shard_id_for_distribution_column(%(table)s, 't1') limit 50) as colocated",
                {"table": "prism_memory.semantic_memory"}).fetchone()
        conn.execute(
            "insert into prism_memory.semantic_memory (tenant_id, resource_id, thread_id, id, text, embedding, sequence) "
            f"select {tenant}, 'r', 't', 'e' || n, 'other text', array_fill(1::real, array[64])::vector, n "
            "from generate_series(1, 4000) as n", {"others": others} if CITUS else None
        )
        conn.execute(
            "insert into prism_memory.semantic_memory_invalidation (tenant_id, resource_id, thread_id, entry_id, reason) "
            f"select {tenant}, 'r', 't', 'e' || n, 'deleted' from generate_series(1, 20000) as n",
            {"others": others} if CITUS else None
        )
        conn.execute("analyze")
        if CITUS:
            plan = citus_shard_plan(conn, backends, await memory.config.embedder.embed(["plan check"]))
        else:
            register_vector(conn)
            notices: list[str] = []
            conn.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
            for statement in (
                "load 'auto_explain'",
                "set auto_explain.log_min_duration = 0",
                "set auto_explain.log_nested_statements = on",
                "set auto_explain.log_level = 'notice'",
                "set client_min_messages = 'notice'",
            ):
                conn.execute(statement)
            query = backends.postgres.vector_store.queries.recall
            vector = np.asarray(await memory.config.embedder.embed(["plan check"]), dtype=np.float32)[0]
            for _ in range(6):  # past PL/pgSQL's switch to a generic plan
                notices.clear()
                conn.execute(query, ("t1", "user-ada", "thread-1", vector, "plan check", 8, 0, False, None, False,
                                     datetime.now(timezone.utc), None, None, None, False, None,
                                     None, None, None, None, None, 0.25)).fetchall()
            plan = next(notice for notice in notices if "semantic_memory_invalidation i" in notice)
            # The rows scored are filtered against those tombstones hashed once (a hashed subplan over the
            # array read below). The filter reads no table, so Citus runs it as it is and logs no shard
            # command for it: the plain lane checks it for both engines' one body.
            rows_filter = next(notice for notice in notices if "unnest(v_tombstones)" in notice)
            assert "hashed SubPlan" in rows_filter, rows_filter
    shard = r"_\d+" if CITUS else ""  # Citus: the shards' names end in their shard ids
    # The thread's tombstones are read once per recall through the key (a bitmap scan), never scanned.
    index = rf"semantic_memory_invalidation_pkey{shard}"
    assert re.search(rf"(Index Scan using|Index Only Scan using|Bitmap Index Scan on) {index}", plan)
    assert not re.search(rf"Seq Scan on semantic_memory_invalidation{shard} ", plan)
    assert not re.search(rf"Seq Scan on semantic_memory{shard} ", plan)


def citus_shard_plan(conn, backends, embeddings) -> str:
    """Citus: the generic plan of recall's query on the shards, on the worker that holds tenant t1.

    The coordinator only forwards the call, so its auto_explain sees no nested statement (and, loaded there,
    fails the delegated call: Citus explains the forwarded call with its parameters unbound); on the worker,
    auto_explain fails local execution ("cache lookup failed for type 1"). So the worker logs the shard query
    it runs locally (citus.log_local_commands), and EXPLAIN (GENERIC_PLAN) plans it there, as PL/pgSQL's
    generic plan is what the plain lane checks."""
    info = conn.info
    dsn = dsn_for(info.host, info.port, info.user, info.dbname, info.password)
    with psycopg.connect(citus_placement(dsn, "prism_memory.semantic_memory", "t1")[0], autocommit=True) as worker:
        register_vector(worker)
        notices: list[str] = []
        worker.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
        worker.execute("set citus.log_local_commands = on")
        worker.execute("set client_min_messages = 'notice'")
        vector = np.asarray(embeddings, dtype=np.float32)[0]
        worker.execute(backends.postgres.vector_store.queries.recall, (
            "t1", "user-ada", "thread-1", vector, "plan check", 8, 0, False, None, False, datetime.now(timezone.utc),
            None, None, None, False, None, None, None, None, None, None, 0.25)).fetchall()
        prefix = "executing the command locally: "
        [command] = [notice.removeprefix(prefix) for notice in notices
                     if notice.startswith(prefix) and "semantic_memory_invalidation_" in notice]
        return "\n".join(row[0] for row in worker.execute(f"explain (generic_plan) {command}"))


async def test_revoked_ids_absent_is_an_invariant_over_every_surface(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember(
            [{"id": "r1", "text": "secret plan", "consent": MemoryConsent()}, {"id": "r2", "text": "public plan",
                                                                                "consent": MemoryConsent()}],
            wait=True,
        )
        leaked_environment = {"recall": await memory.recall("plan", top_k=5)}
        await memory.set_consent("r1", visible=False)
        clean_environment = {
            "recall": await memory.recall("plan", top_k=5),
            "export": await memory.export_memory(memory.config.scope),
            "prompt": "Memory: public plan",
        }
        return revoked_ids_absent(leaked_environment, ["r1"]), revoked_ids_absent(clean_environment, ["r1"])

    leaked, clean = await backends.run(scenario)
    assert leaked["score"] == 0.0 and leaked["metadata"]["invariant"] is True
    assert leaked["metadata"]["leaks"] == [{"id": "r1", "where": "recall.hits[1]"}] or leaked["metadata"]["leaks"][0]["id"] == "r1"
    assert clean == {"score": 1.0, "metadata": {"invariant": True, "leaks": [], "denied": ["r1"]}}
    assert revoked_ids_absent({"events": [{"entry": {"id": "x"}}, "x"]}, ["x"]).score == 0.0
