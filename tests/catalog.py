"""A database schema's catalog as comparable rows: what the schema-source and migration tests diff.

Covers tables and their columns (type, nullability, storage, default,
generated expression), row-level security, indexes, constraints, extended
statistics, composite types, every function's full definition (body and
attributes: volatility, SECURITY DEFINER, SET clauses) and its ACL, table
ACLs (as effective privileges: a NULL ACL reads as the built-in default it
stands for, items sorted), policies, the schema's default privileges, and the
recorded Alembic revision. Owners are left out (two test databases share one
owner anyway), and so is everything outside the schema.
"""

from __future__ import annotations

import psycopg

CATALOG = """
with ns as (select oid from pg_namespace where nspname = %(schema)s)
select 'table', c.relname, 'rls=' || c.relrowsecurity || ' acl=' || (select string_agg(x::text, ',' order by x::text) from unnest(coalesce(c.relacl, acldefault('r', c.relowner))) x)
from pg_class c where c.relnamespace = (select oid from ns) and c.relkind = 'r'
union all
select 'column', c.relname || '.' || a.attname,
       format_type(a.atttypid, a.atttypmod) || ' notnull=' || a.attnotnull || ' storage=' || a.attstorage::text
       || ' generated=' || a.attgenerated::text || ' default=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
       || ' acl=' || coalesce(a.attacl::text, '')
from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
left join pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
where c.relnamespace = (select oid from ns) and c.relkind in ('r', 'c')
union all
select 'index', i.relname, pg_get_indexdef(i.oid)
from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
where t.relnamespace = (select oid from ns)
union all
select 'constraint', t.relname || '.' || k.conname, pg_get_constraintdef(k.oid)
from pg_constraint k join pg_class t on t.oid = k.conrelid
where t.relnamespace = (select oid from ns)
union all
select 'statistics', s.stxname, pg_get_statisticsobjdef(s.oid)
from pg_statistic_ext s where s.stxnamespace = (select oid from ns)
union all
select 'type', t.typname, t.typtype::text
from pg_type t where t.typnamespace = (select oid from ns) and t.typtype = 'c'
  and not exists (select 1 from pg_class c where c.oid = t.typrelid and c.relkind <> 'c')
union all
select 'function', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', pg_get_functiondef(p.oid)
from pg_proc p where p.pronamespace = (select oid from ns)
union all
select 'function acl', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', (select string_agg(x::text, ',' order by x::text) from unnest(coalesce(p.proacl, acldefault('f', p.proowner))) x)
from pg_proc p where p.pronamespace = (select oid from ns)
union all
select 'policy', p.tablename || '.' || p.policyname,
       p.permissive || ' ' || p.roles::text || ' ' || p.cmd || ' using ' || coalesce(p.qual, '')
       || ' check ' || coalesce(p.with_check, '')
from pg_policies p where p.schemaname = %(schema)s
union all
select 'default acl', d.defaclobjtype::text, d.defaclacl::text
from pg_default_acl d where d.defaclnamespace = (select oid from ns)
order by 1, 2, 3
"""


def catalog(dsn: str, schema: str = "prism_memory") -> list[tuple[str, str, str]]:
    """Every catalog row of ``schema`` as ``(kind, name, definition)``, sorted, plus its Alembic revision."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(CATALOG, {"schema": schema}).fetchall()
        exists = conn.execute("select to_regclass(%s)", (f'"{schema}".alembic_version',)).fetchone()[0]
        if exists:
            revision = conn.execute(f'select string_agg(version_num, \',\') from "{schema}".alembic_version').fetchone()
            rows.append(("alembic", "version_num", revision[0] or ""))
    return rows


def functions(rows: list[tuple[str, str, str]]) -> dict[str, str]:
    """The ``function`` rows of a catalog: ``{"name(args)": definition}``."""
    return {name: definition for kind, name, definition in rows if kind == "function"}
