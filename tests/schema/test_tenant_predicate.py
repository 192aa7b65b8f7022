"""Every statement on a tenant table carries the tenant predicate: checked on a Citus-like install.

``tests/partitioned.py`` installs the head schema with every tenant table
hash-partitioned by tenant_id, so that, as on Citus shards, tuple ids repeat
from partition to partition and a statement without ``tenant_id =
p_tenant_id`` reads every partition. Two tenants with look-alike ids (``acme``,
``acme-corp``), in different partitions, get the same kind of data under
distinct ids, threads, resources, texts, RAG scopes, sources and principals
(each carries its tenant's marker word, so one substring test finds any of
them), and go through every API operation via the public Python API. Then:

- no result of one tenant holds anything of the other's (its marker word);
- no call for one tenant reads a partition of the other's, or the empty one
  (``partitioned.PartitionReads``): this sees a statement without the tenant
  predicate even when it returns no wrong row;
- no call fails on the partitioned install, and every result equals what the
  same calls give on the normal install;
- every API function (``prism_memory.operations.OPERATIONS``) was called.

Same ids in both tenants would hide a leak (a row of the other tenant with the
same id looks right), so no two tenants here share an id.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from prism_memory import (
    MemoryConsent,
    MemoryLineage,
    RagAccessConstraint,
    RagChunk,
    RecallScoringOptions,
    Scope,
    create_hash_embedder,
    create_memory,
    create_postgres_memory_stores,
)
from prism_memory.citus import DISTRIBUTED_TABLES, delegated_schema, plan_cache_mode
from prism_memory.operations import OPERATIONS
from prism_memory.types import EntryRecord
from psycopg import sql

from catalog import catalog
from conftest import CITUS, TEST_CONFIG, TEST_DIMENSIONS
from parity import Clock, assert_same, normalise
from partitioned import MODULUS, PartitionReads, as_unpartitioned, install_partitioned

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
WORKING_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@dataclasses.dataclass(frozen=True)
class Tenant:
    """One tenant and its data: every id and text carries ``word``, which no other tenant's does."""

    tenant_id: str
    word: str

    @property
    def resource(self) -> str:
        return f"{self.word}-user"

    def thread(self, name: str = "main") -> str:
        return f"{self.word}-{name}"

    def entry(self, number: int) -> str:
        return f"{self.word}-m{number}"


TENANTS = (Tenant("acme", "quokka"), Tenant("acme-corp", "narwhal"))

# The same kind of data for each tenant: (number, text, consent, importance, lineage sources).
ENTRIES = [
    (1, "prefers concise answers in meetings", MemoryConsent(), 0.9, ()),
    (2, "has a dog called Rex who likes the park", MemoryConsent(source="agent"), 0.2, ()),
    (3, "works on the billing project with the finance team", None, None, ()),
    (4, "the secret launch code is stored in the vault", MemoryConsent(), 1.0, ()),
    (5, "likes hiking on weekends near the lake", MemoryConsent(scope="profile"), 0.5, ()),
    (6, "summary: concise answers and a dog in the park", MemoryConsent(source="system"), 0.7, (1, 2)),
    (7, "asked about quarterly budget meetings", None, 0.4, ()),
    (8, "travels to the coast every summer", MemoryConsent(), 0.6, ()),
]
DOCS = {
    "handbook": ["vacation policy gives 25 days of paid leave", "expense reports are due monthly"],
    "salaries": ["salary bands for engineers are confidential", "bonus payouts happen in december"],
}


def entries_of(tenant: Tenant) -> list[dict[str, Any]]:
    return [
        {
            "id": tenant.entry(number),
            "text": f"{tenant.word} {text}",
            "metadata": {"topic": f"{tenant.word}-topic", "n": number},
            "consent": consent,
            "importance": importance,
            "lineage": MemoryLineage(tuple(tenant.entry(source) for source in sources)) if sources else None,
        }
        for number, text, consent, importance, sources in ENTRIES
    ]


async def chunks_of(tenant: Tenant, embedder, suffix: str = "") -> list[RagChunk]:
    chunks = []
    for source, texts in DOCS.items():
        texts = [f"{tenant.word} {text}{suffix}" for text in texts]
        for index, (text, vector) in enumerate(zip(texts, await embedder.embed(texts))):
            source_id = f"{tenant.word}-{source}"
            chunks.append(RagChunk(f"{source_id}#{index}", source_id, text, vector, {"dept": f"{tenant.word}-hr"}, 1))
    return chunks


class Calls:
    """One tenant's calls: each outcome by name; an error is recorded (its type and message), not raised.

    With a :class:`PartitionReads` (on the partitioned install), also the partitions of other tenants
    each call read.
    """

    def __init__(self, tenant: str, pool, monitor: PartitionReads | None) -> None:
        self.tenant, self.pool, self.monitor = tenant, pool, monitor
        self.outcomes: dict[str, Any] = {}
        self.errors: dict[str, str] = {}
        self.foreign_reads: dict[str, dict[str, dict[str, int]]] = {}

    async def __call__(self, name: str, awaitable) -> Any:
        if self.monitor:
            await self.monitor.flush(self.pool)
            before = self.monitor.counters()
        try:
            value = await awaitable
        except Exception as exc:  # compared by type across installs; the message is kept for the report
            self.outcomes[name] = {"raised": type(exc).__name__}
            self.errors[name] = f"{type(exc).__name__}: {exc}"
            value = None
        else:
            self.outcomes[name] = normalise(value)
        if self.monitor:
            await self.monitor.flush(self.pool)
            moved = self.monitor.foreign_reads(self.tenant, before, self.monitor.counters())
            if moved:
                self.foreign_reads[name] = moved
        return value


async def reads(call: Calls, phase: str, tenant: Tenant, memories: dict[str, Any], store) -> None:
    """Every read of the API, for one tenant."""
    memory, child, agent = memories["main"], memories["child"], memories["agent"]
    scope = memory.config.scope
    await call(f"{phase}.get_working", memory.get_working())
    await call(f"{phase}.get_working_resource", memories["profile"].get_working())
    await call(f"{phase}.render_working", memory.render_working())
    await call(f"{phase}.recall", memory.recall("concise answers in meetings", top_k=5))
    await call(f"{phase}.recall_all", memory.recall("dog park launch hiking budget coast", top_k=32))
    await call(f"{phase}.recall_scored", memory.recall(
        "concise answers", top_k=4,
        scoring=RecallScoringOptions(recency_weight=0.3, importance_weight=0.3, half_life_ms=86_400_000.0)))
    await call(f"{phase}.recall_importance", memory.recall(
        "the park", top_k=3, scoring=RecallScoringOptions(importance_weight=0.5)))
    await call(f"{phase}.recall_adjacent", memory.recall("billing project finance", top_k=2, message_range=2))
    await call(f"{phase}.recall_explain", memory.recall("secret vault code", top_k=3, message_range=1, explain=True))
    await call(f"{phase}.recall_consent", memory.recall("concise answers", top_k=8, require_consent=True))
    await call(f"{phase}.recall_shared", child.recall(
        "concise answers billing", top_k=8, message_range=4, share_from_parent_thread_id=scope.thread_id))
    await call(f"{phase}.recall_shared_explain", child.recall(
        "concise answers", top_k=8, message_range=1, share_from_parent_thread_id=scope.thread_id, explain=True))
    await call(f"{phase}.recall_across", child.recall("hiking lake concise answers", top_k=8, across_threads=True))
    await call(f"{phase}.recall_across_full", child.recall(
        "hiking lake concise", top_k=8, message_range=2, across_threads=True, explain=True,
        share_from_parent_thread_id=scope.thread_id, scoring=RecallScoringOptions(importance_weight=0.4)))
    await call(f"{phase}.recall_agent", agent.recall(
        "hiking lake", top_k=8, message_range=4, share_from_parent_thread_id=scope.thread_id))
    await call(f"{phase}.list", memory.config.vector_store.list_by_thread(scope, None, 200))
    await call(f"{phase}.list_page", memory.config.vector_store.list_by_thread(scope, (2, tenant.entry(2)), 3))
    await call(f"{phase}.list_exportable", memory.config.vector_store.list_by_thread(scope, None, 200, exportable=True))
    await call(f"{phase}.count", memory.config.vector_store.count_by_thread(scope))
    await call(f"{phase}.count_child", memory.config.vector_store.count_by_thread(child.config.scope))
    await call(f"{phase}.export", memory.export_memory(scope))
    await call(f"{phase}.export_page", memory.export_memory(scope, limit=2))
    resource = Scope(tenant.tenant_id, tenant.resource)
    await call(f"{phase}.count_resource", memory.count_resource())
    await call(f"{phase}.export_resource", memory.export_resource(resource))
    await call(f"{phase}.export_resource_page", memory.export_resource(resource, limit=3))
    await call(f"{phase}.list_resource", memory.config.vector_store.list_by_resource(resource, None, 200))
    await call(f"{phase}.list_resource_page", memory.config.vector_store.list_by_resource(
        resource, (child.config.scope.thread_id, 1, tenant.entry(20)), 5))
    await call(f"{phase}.count_agent_resource", agent.count_resource())
    await call(f"{phase}.retention_policy", memory.retention_policy())
    await call(f"{phase}.retention_policy_resource", memories["profile"].retention_policy())
    for thread in ("bulk-a", "bulk-b"):
        bulk = Scope(tenant.tenant_id, tenant.resource, tenant.thread(thread))
        await call(f"{phase}.list_{thread}", memory.config.vector_store.list_by_thread(bulk, None, 200))

    kb, other_kb = tenant.thread("kb"), tenant.thread("kb2")
    reader = RagAccessConstraint(f"{tenant.word}-alice")
    group_reader = RagAccessConstraint(f"{tenant.word}-bob", (f"{tenant.word}-hr",))
    [question] = await memory.config.embedder.embed([f"{tenant.word} how many days of paid leave"])
    await call(f"{phase}.rag_query", store.query(tenant.tenant_id, kb, question, top_k=10))
    await call(f"{phase}.rag_query_filter", store.query(
        tenant.tenant_id, kb, question, top_k=10, filter={"dept": f"{tenant.word}-hr"}))
    await call(f"{phase}.rag_query_acl", store.query(tenant.tenant_id, kb, question, top_k=10, authorization=reader))
    await call(f"{phase}.rag_query_group", store.query(
        tenant.tenant_id, kb, question, top_k=10, authorization=group_reader))
    await call(f"{phase}.rag_query_generation", store.query(tenant.tenant_id, kb, question, top_k=10, generation=0))
    await call(f"{phase}.rag_query_other_kb", store.query(tenant.tenant_id, other_kb, question, top_k=10))
    await call(f"{phase}.rag_lexical", store.lexical_query(tenant.tenant_id, kb, "paid leave salary bonus", top_k=10))
    await call(f"{phase}.rag_lexical_acl", store.lexical_query(
        tenant.tenant_id, kb, "paid leave salary bonus", top_k=10, authorization=group_reader))
    for source in DOCS:
        source_id = f"{tenant.word}-{source}"
        await call(f"{phase}.rag_by_source_{source}", store.get_by_source(tenant.tenant_id, kb, source_id))
        await call(f"{phase}.rag_by_source_{source}_acl", store.get_by_source(
            tenant.tenant_id, kb, source_id, authorization=reader))
        await call(f"{phase}.rag_by_source_{source}_page", store.get_by_source(
            tenant.tenant_id, kb, source_id, after_id=f"{source_id}#0", limit=1))
        await call(f"{phase}.rag_access_{source}", store.check_source_access(tenant.tenant_id, source_id, reader))
        await call(f"{phase}.rag_access_{source}_group", store.check_source_access(
            tenant.tenant_id, source_id, group_reader, access_version=1))
    await call(f"{phase}.rag_generation", store.get_current_generation(tenant.tenant_id, kb))


def shared_ctids(rows, key: str, *tenants: str) -> set[str]:
    return set.intersection(*({ctid for _, ctid in rows[key, tenant]} for tenant in tenants))


def strings_with(value: Any, word: str, path: str = "") -> list[str]:
    """Where ``word`` occurs in a normalised outcome: ``path: value`` for each string (or key) holding it."""
    if isinstance(value, dict):
        return [hit for key, item in value.items()
                for hit in ([f"{path}: key {key!r}"] if word in str(key) else []) + strings_with(item, word, f"{path}.{key}")]
    if isinstance(value, (list, tuple)):
        return [hit for index, item in enumerate(value) for hit in strings_with(item, word, f"{path}[{index}]")]
    return [f"{path}: {value!r}"] if isinstance(value, str) and word in value else []


@pytest.fixture
def partitioned_dsn(server_dsn) -> str:
    """A database with the head schema, every tenant table hash-partitioned by tenant_id."""
    dsn = server_dsn("prism_memory_partitioned")
    install_partitioned(dsn, TEST_CONFIG)
    with psycopg.connect(dsn, autocommit=True) as conn:  # pg_stat_user_functions: which API functions ran
        conn.execute(sql.SQL("alter database {} set track_functions = 'all'").format(sql.Identifier(conn.info.dbname)))
    return dsn


def placement(dsn: str) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """For each tenant table and tenant: the (partition, tuple id) of each of the tenant's rows."""
    names = TEST_CONFIG.names
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = {
            (key, tenant.tenant_id): set(conn.execute(
                f"select tableoid::regclass::text, ctid::text from {names[key]} where tenant_id = %s",
                (tenant.tenant_id,)).fetchall())
            for key in DISTRIBUTED_TABLES
            for tenant in TENANTS
        }
        # These reads count in the tables' statistics now, not during the next call (PartitionReads).
        conn.execute("select pg_catalog.pg_stat_force_next_flush()")
    return rows


@dataclasses.dataclass
class Run:
    """What :func:`scenario` saw on one install.

    ``outcomes``: tenant -> call -> normalised outcome; ``errors``: ``"tenant: call"`` -> the error;
    ``foreign_reads``: ``"tenant: call"`` -> the other tenants' partitions it read (partitioned install
    only); ``placements``: where each tenant's rows were (:func:`placement`) after the first writes
    and after the lifecycle changes.
    """

    outcomes: dict[str, dict[str, Any]]
    errors: dict[str, str]
    foreign_reads: dict[str, dict[str, dict[str, int]]]
    placements: list[dict[tuple[str, str], set[tuple[str, str]]]]


def tenant_memories(tenant, stores, embedder, clock: Clock) -> dict[str, Any]:
    """One tenant's memories: its main thread, a child thread, its resource profile, and a delegated agent."""

    def memory(thread: str | None):
        return create_memory(
            tenant_id=tenant.tenant_id, resource_id=tenant.resource,
            thread_id=None if thread is None else tenant.thread(thread), embedder=embedder,
            vector_store=stores.vector_store, working_store=stores.working_store, clock=clock,
            schema=WORKING_SCHEMA, working_memory_template="Name: {{name}}; Pet: {{pet}}")

    main = memory("main")
    return {"main": main, "child": memory("child"), "profile": memory(None), "agent": main.child("helper")}


async def write_everything(call: Calls, tenant, mine: dict[str, Any], store, embedder) -> None:
    """Every write of the API for one tenant (working memory, entries, bulk, grants, retention, RAG)."""
    main, child, agent = mine["main"], mine["child"], mine["agent"]
    await call("write.update_working", main.update_working({"name": f"{tenant.word} Ada", "pet": "Rex"}))
    await call("write.update_working_again", main.update_working({"name": f"{tenant.word} Ada L."}, 1))
    await call("write.update_working_resource", mine["profile"].update_working({"name": f"{tenant.word} Ada"}))
    await call("write.remember", main.remember(entries_of(tenant), wait=True))
    await call("write.remember_child", child.remember(
        [{"id": tenant.entry(20), "text": f"{tenant.word} child notes on concise answers"}], wait=True))
    bulk = []
    for thread in ("bulk-a", "bulk-b"):
        texts = [f"{tenant.word} bulk {thread} fact {n}" for n in range(3)]
        vectors = await embedder.embed(texts)
        records = [EntryRecord(f"{tenant.word}-{thread}-{n}", text, vector, {"bulk": thread}, None, None)
                   for n, (text, vector) in enumerate(zip(texts, vectors))]
        bulk.append((Scope(tenant.tenant_id, tenant.resource, tenant.thread(thread)), records))
    await call("write.remember_batch", store.remember_batch(bulk, now=T0))
    await call("write.share", main.share_with(
        child.config.scope.thread_id, [tenant.entry(1), tenant.entry(3), tenant.entry(4)],
        expires_at=T0 + timedelta(days=1)))
    await call("write.retention_policy", child.set_retention_policy(3650))
    await call("write.retention_policy_resource", main.set_retention_policy(36500, resource_wide=True))
    await call("write.remember_expiring", child.remember([
        {"id": tenant.entry(21), "text": f"{tenant.word} expires soon", "ttl": timedelta(hours=1)},
        {"id": tenant.entry(22), "text": f"{tenant.word} expires later", "expires_at": T0 + timedelta(days=9)}],
        wait=True))
    await call("write.remember_agent", agent.remember(
        [{"id": tenant.entry(30), "text": f"{tenant.word} the helper agent's own note"}], wait=True))
    await call("write.share_agent", main.share_with(
        agent.config.scope.thread_id, [tenant.entry(5)], child_resource_id=agent.config.scope.resource_id))
    kb = tenant.thread("kb")
    await call("write.rag_upsert", store.upsert(tenant.tenant_id, kb, await chunks_of(tenant, embedder)))
    await call("write.rag_upsert_other_kb", store.upsert(
        tenant.tenant_id, tenant.thread("kb2"), (await chunks_of(tenant, embedder))[:2]))
    await call("write.rag_acl_handbook", store.set_source_access(
        tenant.tenant_id, f"{tenant.word}-handbook", principal_ids=[f"{tenant.word}-alice"], access_version=1))
    await call("write.rag_acl_salaries", store.set_source_access(
        tenant.tenant_id, f"{tenant.word}-salaries", group_ids=[f"{tenant.word}-hr"], access_version=1))


async def change_everything(call: Calls, tenant, mine: dict[str, Any], store, embedder) -> None:
    """Every lifecycle change of the API for one tenant (correct, consent, forget, hold, retention, RAG deletes)."""
    main, child = mine["main"], mine["child"]
    await call("change.correct", main.correct(tenant.entry(2), f"{tenant.word} has a cat called Tom"))
    await call("change.consent_revoke", main.set_consent(tenant.entry(3), visible=False))
    await call("change.consent_grant", main.set_consent(tenant.entry(7), source="user", scope="thread"))
    await call("change.forget", main.forget([tenant.entry(8)]))
    await call("change.hold", main.forget([tenant.entry(5)], hold=True))
    await call("change.forget_erase", main.forget([tenant.entry(1)], erase_derived=True))
    await call("change.rebuild", main.rebuild_index(batch_size=3))
    await call("change.retention", main.apply_retention(max_entries=4))
    await call("change.retention_age", child.apply_retention(max_age_days=0.01))
    await call("change.retention_expired", child.apply_retention())
    await call("change.resource_retention", main.apply_resource_retention(batch_size=4))
    await call("change.unshare", main.revoke_share(child.config.scope.thread_id))
    agent = mine["agent"]
    await call("change.forget_agent_resource", agent.forget_resource(
        Scope(tenant.tenant_id, agent.config.scope.resource_id), batch_size=4))
    await call("change.reshare", main.share_with(child.config.scope.thread_id, [tenant.entry(4), tenant.entry(7)]))
    kb = tenant.thread("kb")
    await call("change.rag_delete_ids", store.delete(tenant.tenant_id, kb, ids=[f"{tenant.word}-handbook#1"]))
    await call("change.rag_delete_source", store.delete(
        tenant.tenant_id, tenant.thread("kb2"), source_id=f"{tenant.word}-handbook"))
    await call("change.rag_upsert_generation", store.upsert(
        tenant.tenant_id, kb, await chunks_of(tenant, embedder, " (v2)"), generation=1))
    await call("change.rag_set_generation", store.set_current_generation(tenant.tenant_id, kb, 1))
    await call("change.rag_acl_revoke", store.set_source_access(
        tenant.tenant_id, f"{tenant.word}-salaries", access_version=2))
    await call("change.rag_delete_generation", store.delete(
        tenant.tenant_id, kb, source_id=f"{tenant.word}-salaries", generation=0))


async def scenario(dsn: str, partitioned: bool) -> Run:
    """Every API operation for both tenants on the install at ``dsn``."""
    # One pooled connection: PartitionReads flushes its statistics after every call.
    stores = await create_postgres_memory_stores(
        dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True, min_pool_size=1, max_pool_size=1)
    embedder = create_hash_embedder(TEST_DIMENSIONS)
    clock = Clock(T0)
    store = stores.vector_store
    monitor = PartitionReads(dsn, TEST_CONFIG, [tenant.tenant_id for tenant in TENANTS]) if partitioned else None
    calls = {tenant.tenant_id: Calls(tenant.tenant_id, stores.pool, monitor) for tenant in TENANTS}
    try:
        memories = {tenant.tenant_id: tenant_memories(tenant, stores, embedder, clock) for tenant in TENANTS}
        # Writes, tenant after tenant, the same kind for each: tuple ids in every partition.
        for tenant in TENANTS:
            await write_everything(calls[tenant.tenant_id], tenant, memories[tenant.tenant_id], store, embedder)
        placements = [placement(dsn)]  # before anything is deleted
        for tenant in TENANTS:
            await reads(calls[tenant.tenant_id], "before", tenant, memories[tenant.tenant_id], store)

        # Lifecycle writes, then every read again.
        clock.now = T0 + timedelta(hours=2)
        for tenant in TENANTS:
            await change_everything(calls[tenant.tenant_id], tenant, memories[tenant.tenant_id], store, embedder)
        placements.append(placement(dsn))  # with tombstones
        for tenant in TENANTS:
            await reads(calls[tenant.tenant_id], "after", tenant, memories[tenant.tenant_id], store)
    finally:
        await stores.close()
        if monitor:
            monitor.close()
    return Run(
        {tenant: call.outcomes for tenant, call in calls.items()},
        {f"{tenant}: {name}": error for tenant, call in calls.items() for name, error in call.errors.items()},
        {f"{tenant}: {name}": moved for tenant, call in calls.items() for name, moved in call.foreign_reads.items()},
        placements,
    )


async def test_no_api_call_reads_another_tenants_rows(partitioned_dsn, pg_dsn):
    """Every API operation for two tenants on the partitioned install: nothing of one reaches the other."""
    run = await scenario(partitioned_dsn, partitioned=True)
    partitioned = run.outcomes
    with psycopg.connect(partitioned_dsn) as conn:
        called = {name for name, in conn.execute(
            "select funcname from pg_stat_user_functions where schemaname = %s and calls > 0", (TEST_CONFIG.schema,))}
    never = {operation.function for operation in OPERATIONS} - called
    assert not never, f"API functions the scenario never called: {sorted(never)}"

    # The premise: in every tenant table the two tenants have rows in different partitions, and at
    # one moment or another rows at the same tuple ids (as on Citus shards), so a match by ctid
    # alone mixes them. The first entries of each tenant sit at (0,1) and (0,2) (a derived entry's row is
    # written again once its lineage times are stored, so one of them may have moved).
    acme, corp = (tenant.tenant_id for tenant in TENANTS)
    for key in DISTRIBUTED_TABLES:
        where = {tenant: {partition for rows in run.placements for partition, _ in rows[key, tenant]}
                 for tenant in (acme, corp)}
        assert len(where[acme]) == 1 and len(where[corp]) == 1 and where[acme] != where[corp], (key, where)
        assert any(shared_ctids(rows, key, acme, corp) for rows in run.placements), (
            key, [(rows[key, acme], rows[key, corp]) for rows in run.placements])
    assert shared_ctids(run.placements[0], "entries", acme, corp) & {"(0,1)", "(0,2)"}
    for tenant in TENANTS:  # not vacuous: each tenant reads its own data back
        mine = partitioned[tenant.tenant_id]
        assert strings_with(mine["before.recall"], tenant.word) and strings_with(mine["after.rag_query"], tenant.word)
    normal = await scenario(pg_dsn, partitioned=False)
    assert not normal.errors, f"the scenario fails on the normal install: {normal.errors}"

    problems = []
    # No outcome of one tenant holds anything of the other's.
    for tenant in TENANTS:
        for other in TENANTS:
            for call, outcome in partitioned[tenant.tenant_id].items():
                found = strings_with(outcome, other.word, call) if other is not tenant else []
                if found:
                    problems.append(f"tenant {tenant.tenant_id!r}, {call}: {len(found)} values of tenant "
                                    f"{other.tenant_id!r}, such as {'; '.join(found[:2])}")
    # No call reads a partition of another tenant (a statement without the tenant predicate).
    problems += [f"{call}: read other tenants' partitions {moved}" for call, moved in run.foreign_reads.items()]
    # No call fails on the partitioned install alone, and every outcome is the normal install's.
    problems += [f"fails on the partitioned install only: {call}: {error}" for call, error in run.errors.items()]
    for tenant in TENANTS:
        for call, expected in normal.outcomes[tenant.tenant_id].items():
            try:
                assert_same(expected, partitioned[tenant.tenant_id].get(call), call)
            except AssertionError as difference:
                problems.append(f"tenant {tenant.tenant_id!r}, {call}: differs from the normal install: {difference}"[:300])
    assert not problems, f"{len(problems)} problems on the partitioned install:\n" + "\n".join(problems)


def test_the_partitioned_install_is_the_normal_install_but_for_partitions(partitioned_dsn, pg_dsn):
    """Same columns, defaults, generated columns, indexes, statistics, policies and functions."""
    normal = sorted(catalog(pg_dsn))
    if CITUS:
        # The coordinator holds a placement of the reference table: Citus hides the shard's relation from
        # pg_class but not its row type, which the catalog then lists as a composite type of the schema.
        with psycopg.connect(pg_dsn) as conn:
            shards = {row[0] for row in conn.execute(
                "select c.relname || '_' || s.shardid from pg_dist_shard s join pg_dist_placement p using (shardid) "
                "join pg_class c on c.oid = s.logicalrelid where p.groupid = 0 "
                "and c.relnamespace = pg_catalog.to_regnamespace(%s)", (TEST_CONFIG.schema,))}
        assert shards and [row for row in normal if row[1] in shards] == [("type", shard, "c") for shard in sorted(shards)]
        normal = unguarded(pg_dsn, [row for row in normal if row[1] not in shards])
        # distribute() puts each API function behind a guard (compared by its delegated copy) and sets the
        # copy's plan mode (docs/scaling.md, "How the functions plan depends on
        # the Citus build"), in place of recall's own generic mode; the partitioned install is not distributed,
        # so the plan_cache_mode settings are compared apart from the rest.
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            mode = plan_cache_mode(conn, TEST_CONFIG.names["entries"])
        custom = f"\n SET plan_cache_mode TO '{mode}'"
        partitioned = catalog(partitioned_dsn)
        assert sum(custom in row[2] for row in normal if row[0] == "function") >= len(OPERATIONS) // 2
        assert not any(custom in row[2] for row in partitioned)
        assert without_plan_cache_mode(as_unpartitioned(partitioned)) == without_plan_cache_mode(normal)
        return
    assert as_unpartitioned(catalog(partitioned_dsn)) == normal


def unguarded(dsn: str, rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Citus: catalog rows with each API function's definition taken from its delegated copy in place of its
    guard's (prism_memory.citus.distribute puts every API function behind a guard)."""
    copies = delegated_schema(TEST_CONFIG)
    bodies = {name: definition.replace(f"FUNCTION {copies}.", f"FUNCTION {TEST_CONFIG.schema}.", 1)
              for kind, name, definition in catalog(dsn, copies) if kind == "function"}
    return sorted((kind, name, bodies.get(name, definition) if kind == "function" else definition)
                  for kind, name, definition in rows)


def without_plan_cache_mode(rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Catalog rows with every function's ``SET plan_cache_mode`` line taken out."""
    return sorted((kind, name, re.sub(r"\n SET plan_cache_mode TO '\w+'", "", definition)) for kind, name, definition in rows)


async def test_the_partition_check_sees_a_statement_without_the_tenant_predicate(partitioned_dsn):
    """The check of the test above can fail where no result shows it.

    count_entries_v1 without its tenant predicate (in this database only) still counts the caller's
    thread right, as thread and resource ids differ from tenant to tenant; on Citus it would run
    on every shard. Only the partition statistics show it.
    """
    names = TEST_CONFIG.names
    with psycopg.connect(partitioned_dsn, autocommit=True) as conn:
        [definition] = conn.execute(
            "select pg_get_functiondef(%s::regprocedure)", (f"{names['schema']}.count_entries_v1(text, text, text)",)
        ).fetchone()
        assert definition.count("e.tenant_id = p_tenant_id and ") == 1
        conn.execute(definition.replace("e.tenant_id = p_tenant_id and ", ""))
    stores = await create_postgres_memory_stores(
        partitioned_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True, min_pool_size=1, max_pool_size=1)
    monitor = PartitionReads(partitioned_dsn, TEST_CONFIG, [tenant.tenant_id for tenant in TENANTS])
    try:
        embedder = create_hash_embedder(TEST_DIMENSIONS)
        memories = {}
        for tenant in TENANTS:
            memories[tenant.tenant_id] = create_memory(
                tenant_id=tenant.tenant_id, resource_id=tenant.resource, thread_id=tenant.thread(),
                embedder=embedder, vector_store=stores.vector_store, working_store=stores.working_store)
            await memories[tenant.tenant_id].remember(entries_of(tenant)[:3], wait=True)
        acme = TENANTS[0].tenant_id
        call = Calls(acme, stores.pool, monitor)
        assert await call("count", stores.vector_store.count_by_thread(memories[acme].config.scope)) == 3
        assert await call("list", stores.vector_store.list_by_thread(memories[acme].config.scope, None, 10))
    finally:
        await stores.close()
        monitor.close()
    assert set(call.foreign_reads) == {"count"}, call.foreign_reads
    assert len(call.foreign_reads["count"]) == MODULUS - 1, call.foreign_reads  # every other partition of the entries
