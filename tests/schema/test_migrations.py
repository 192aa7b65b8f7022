"""Schema management: Alembic upgrade/downgrade, idempotence, the head indexes, odd names (the catalog diffs
against the head schema are in test_schema_source.py)."""

import asyncio
import subprocess
import sys

import psycopg
import pytest
from prism_memory import InvalidIdentifierError, SchemaVersionError, build_memory_ddl, build_vector_search_ddl
from prism_memory.postgres import create_postgres_memory_stores
from prism_memory.schema import REVISIONS, SCHEMA_VERSION, SchemaConfig, downgrade, migrate

from catalog import catalog


def tables(dsn: str, schema: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select tablename from pg_tables where schemaname = %s order by 1", (schema,)).fetchall()
    return [row[0] for row in rows]


EXPECTED_TABLES = [
    "alembic_version",
    "semantic_memory",
    "semantic_memory_embedding_model",
    "semantic_memory_invalidation",
    "semantic_memory_rag_chunk",
    "semantic_memory_rag_scope_generations",
    "semantic_memory_rag_source_acl",
    "semantic_memory_rag_source_version",
    "semantic_memory_retention_policy",
    "semantic_memory_share_grant",
    "semantic_memory_tenant_binding",
    "semantic_memory_working",
]


def test_upgrade_then_downgrade(server_dsn):
    dsn = server_dsn("mig_updown")
    config = SchemaConfig(dimensions=16)
    migrate(dsn, config)
    assert tables(dsn, "prism_memory") == EXPECTED_TABLES
    downgrade(dsn, config)
    assert tables(dsn, "prism_memory") == ["alembic_version"]
    assert [row for row in catalog(dsn, "prism_memory") if row[0] == "function"] == []
    migrate(dsn, config)
    assert tables(dsn, "prism_memory") == EXPECTED_TABLES


def test_upgrade_twice_is_a_no_op(server_dsn):
    dsn = server_dsn("mig_twice")
    migrate(dsn, SchemaConfig(dimensions=16))
    first = catalog(dsn, "prism_memory")
    migrate(dsn, SchemaConfig(dimensions=16))
    assert catalog(dsn, "prism_memory") == first
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select version_num from prism_memory.alembic_version").fetchall() == [(REVISIONS[-1],)]


def indexes(dsn: str, schema: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select indexname from pg_indexes where schemaname = %s order by 1", (schema,)).fetchall()
    return [row[0] for row in rows]


def test_upgrade_from_0001_keeps_entries_and_moves_hnsw_to_the_chunks(server_dsn):
    dsn = server_dsn("mig_from_0001")
    config = SchemaConfig(dimensions=4)
    migrate(dsn, config, "0001")
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "select prism_memory.remember_v1(p_tenant_id => 't', p_resource_id => 'r', p_thread_id => 'th', "
            "p_ids => array['a'], p_texts => array['kept across revisions'], p_embeddings => array['[1,0,0,0]'::vector])"
        )
    assert "semantic_memory_hnsw_idx" in indexes(dsn, "prism_memory")
    migrate(dsn, config)
    after = indexes(dsn, "prism_memory")
    assert "semantic_memory_hnsw_idx" not in after and "semantic_memory_rag_chunk_hnsw_idx" in after
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select id, text from prism_memory.semantic_memory").fetchall() == [("a", "kept across revisions")]
        assert conn.execute("select schema_version from prism_memory.install_info_v1()").fetchone() == (SCHEMA_VERSION,)
    downgrade(dsn, config, "0001")
    back = indexes(dsn, "prism_memory")
    assert "semantic_memory_hnsw_idx" in back and "semantic_memory_rag_chunk_hnsw_idx" not in back
    assert "semantic_memory_rag_chunk" not in tables(dsn, "prism_memory")
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select schema_version from prism_memory.install_info_v1()").fetchone() == (1,)
        assert conn.execute("select count(*) from prism_memory.semantic_memory").fetchone() == (1,)


def test_dimensions_over_the_hnsw_limit_install_without_hnsw(server_dsn):
    dsn = server_dsn("mig_wide")
    migrate(dsn, SchemaConfig(dimensions=3072))
    assert not [name for name in indexes(dsn, "prism_memory") if "hnsw" in name]
    assert build_vector_search_ddl(dimensions=3072) == ""


@pytest.mark.parametrize("dimensions", [None, 16])
def test_the_head_indexes(server_dsn, dimensions):
    dsn = server_dsn("mig_indexes")
    migrate(dsn, SchemaConfig(dimensions=dimensions))
    indexes = {name: definition for kind, name, definition in catalog(dsn) if kind == "index"}
    assert "semantic_memory_hnsw_idx" not in indexes
    assert ("semantic_memory_rag_chunk_hnsw_idx" in indexes) is (dimensions is not None)
    assert "USING gin (metadata jsonb_path_ops)" in indexes["semantic_memory_rag_chunk_meta_idx"]
    assert "USING gin (text_tsv)" in indexes["semantic_memory_rag_chunk_tsv_idx"]
    assert "USING gin (text_tsv)" in indexes["semantic_memory_tsv_idx"]
    assert "'_lineage'::text) -> 'sourceIds'" in indexes["semantic_memory_lineage_idx"]
    assert "(tenant_id, resource_id, thread_id, sequence)" in indexes["semantic_memory_scope_idx"]
    vector_search = build_vector_search_ddl(dimensions=dimensions)
    assert vector_search == "" if dimensions is None else "hnsw" in vector_search


async def test_mixed_case_schema_and_table_with_a_dash_work_end_to_end(server_dsn):
    from prism_memory import create_hash_embedder, create_memory

    dsn = server_dsn("mig_odd_names")
    stores = await create_postgres_memory_stores(dsn, schema="Tenant-Memory", table="Agent-Notes", dimensions=16)
    try:
        memory = create_memory(
            tenant_id="t",
            resource_id="r",
            thread_id="th",
            embedder=create_hash_embedder(16),
            vector_store=stores.vector_store,
            working_store=stores.working_store,
        )
        await memory.remember([{"id": "a", "text": "odd names still work"}], wait=True)
        await memory.update_working({"ok": True})
        result = await memory.recall("odd names")
    finally:
        await stores.close()
    assert [hit.id for hit in result.hits] == ["a"]
    assert "Agent-Notes_rag_scope_generations" in tables(dsn, "Tenant-Memory")
    with psycopg.connect(dsn) as conn:
        assert conn.execute('select count(*) from "Tenant-Memory"."Agent-Notes"').fetchone()[0] == 1


@pytest.mark.parametrize("name", ['bad"quote', "semi;colon", "has space", "", "1digit", "x" * 64, "dash-;drop"])
def test_unusable_identifiers_are_refused_before_any_sql(name):
    with pytest.raises(InvalidIdentifierError):
        build_memory_ddl(schema=name)
    with pytest.raises(InvalidIdentifierError):
        SchemaConfig(table=name)


async def test_skip_migrations_on_an_empty_database_fails_clearly(server_dsn):
    dsn = server_dsn("mig_empty")
    with pytest.raises(SchemaVersionError):
        await create_postgres_memory_stores(dsn, skip_migrations=True)


async def test_a_schema_newer_than_the_package_is_refused(server_dsn):
    dsn = server_dsn("mig_newer")
    await asyncio.to_thread(migrate, dsn, SchemaConfig(dimensions=16))
    with pytest.raises(SchemaVersionError, match="dimensions"):
        await create_postgres_memory_stores(dsn, dimensions=32)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "create or replace function prism_memory.install_info_v1() "
            "returns table (schema_version integer, table_name text, dimensions integer, vector_schema text) "
            "language sql immutable as $$ select 99, 'semantic_memory'::text, 16, 'public'::text $$"
        )
    with pytest.raises(SchemaVersionError, match="newer"):
        await create_postgres_memory_stores(dsn, dimensions=16, skip_migrations=True)


@pytest.mark.slow
def test_concurrent_migrators_all_succeed(server_dsn):
    """Three processes migrate one database at once; the advisory lock serialises them."""
    dsn = server_dsn("mig_concurrent")
    code = "import sys; from prism_memory.schema import SchemaConfig, migrate; migrate(sys.argv[1], SchemaConfig(dimensions=16))"
    workers = [subprocess.Popen([sys.executable, "-c", code, dsn]) for _ in range(3)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0]
    assert tables(dsn, "prism_memory") == EXPECTED_TABLES


@pytest.mark.slow
def test_concurrent_migrators_of_different_schemas_all_succeed(server_dsn):
    """Installs into different schemas of one fresh database share "create extension vector": one lock per database."""
    dsn = server_dsn("mig_concurrent_schemas")
    code = ("import sys; from prism_memory.schema import SchemaConfig, migrate; "
            "migrate(sys.argv[1], SchemaConfig(sys.argv[2], dimensions=16))")
    workers = [subprocess.Popen([sys.executable, "-c", code, dsn, f"memory_{n}"]) for n in range(4)]
    assert [worker.wait(timeout=180) for worker in workers] == [0, 0, 0, 0]
    for n in range(4):
        assert tables(dsn, f"memory_{n}") == EXPECTED_TABLES


@pytest.mark.parametrize("dimensions", [None, 16])
def test_an_owner_who_is_not_a_superuser_migrates_from_0006_and_installs_by_hand(server_dsn, dimensions):
    """The production set-up (docs/security.md): a dedicated owner role, pgvector created by a superuser.

    rag_query_v1 names pgvector's hnsw.* settings, which only a superuser may name before the
    library is loaded in the session.
    """
    import secrets
    from urllib.parse import urlparse

    from roles import as_role

    owner = f"owner_{secrets.token_hex(4)}"
    admin_dsn = server_dsn(f"mig_{owner}")
    by_hand_admin = server_dsn(f"mig_{owner}_by_hand")
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f"create role {owner} login")
    try:
        urls = []
        for url in (admin_dsn, by_hand_admin):
            database = urlparse(url).path.lstrip("/")
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'alter database "{database}" owner to {owner}')
                conn.execute("create extension vector")
            urls.append(as_role(url, owner))
        migrated, by_hand = urls
        config = SchemaConfig(dimensions=dimensions)
        migrate(migrated, config, "0006")
        migrate(migrated, config)  # new sessions: nothing has loaded pgvector's library yet
        with psycopg.connect(by_hand, autocommit=True) as conn:
            conn.execute(build_memory_ddl(dimensions=dimensions))
            if dimensions is not None:
                conn.execute(build_vector_search_ddl(dimensions=dimensions))
        assert catalog(by_hand) == catalog(migrated)
    finally:
        for url in (admin_dsn, by_hand_admin):
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"reassign owned by {owner} to current_user")
                conn.execute(f"drop owned by {owner}")
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f"drop role {owner}")
