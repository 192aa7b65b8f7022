"""The Citus invariant (docs/scaling.md), read from the catalog: every table can be distributed by
tenant_id and every API function delegated by its first argument."""

import psycopg
from prism_memory.schema import API_FUNCTIONS


def test_every_primary_key_and_unique_index_leads_with_tenant_id(pg_dsn):
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("""
            select t.relname, i.relname, a.attname
            from pg_index x
            join pg_class i on i.oid = x.indexrelid
            join pg_class t on t.oid = x.indrelid
            join pg_attribute a on a.attrelid = t.oid and a.attnum = x.indkey[0]
            where t.relnamespace = 'prism_memory'::regnamespace and t.relname <> 'alembic_version'
              and (x.indisprimary or x.indisunique)""").fetchall()
        tables = {row[0] for row in conn.execute(
            "select relname from pg_class where relnamespace = 'prism_memory'::regnamespace and relkind = 'r' "
            "and relname <> 'alembic_version'").fetchall()}
    assert {table for table, _, _ in rows} == tables  # every table has a key
    assert [(table, index) for table, index, column in rows if column != "tenant_id"] == []


def test_every_api_function_takes_the_tenant_first(pg_dsn):
    with psycopg.connect(pg_dsn) as conn:
        rows = dict(conn.execute(
            "select proname, proargnames from pg_proc where pronamespace = 'prism_memory'::regnamespace").fetchall())
    for name, _ in API_FUNCTIONS:
        if name != "install_info_v1":  # takes no arguments and touches no tenant
            assert rows[name][0] == "p_tenant_id", name
