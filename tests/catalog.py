"""A database schema's catalog as comparable rows: what the schema-source and migration tests diff.

Covers the schema's ACL; tables (row-level security, forced or not,
persistence, storage options, replica identity) and their columns (type,
collation, nullability, storage, default, generated expression); views,
materialized views, sequences and foreign tables; indexes (with their
validity), constraints, triggers, extended statistics; composite, enum,
domain and range types; text search dictionaries (template and options); every function's full definition (body and
attributes: volatility, SECURITY DEFINER, SET clauses) and its ACL; ACLs as
effective privileges (a NULL ACL reads as the built-in default it stands for,
items sorted); policies; comments on the schema and anything in it; the
schema's default privileges; and the recorded Alembic revision. Owners are
left out (two test databases share one owner anyway), and so is everything
outside the schema.
"""

from __future__ import annotations

import psycopg

#: The effective ACL of a catalog row: its items sorted, a NULL ACL read as the default for ``kind`` and ``owner``.
_ACL = "(select string_agg(x::text, ',' order by x::text) from unnest(coalesce({acl}, acldefault('{kind}', {owner}))) x)"

CATALOG = f"""
with ns as (select oid from pg_namespace where nspname = %(schema)s)
select 'schema', n.nspname, 'acl=' || {_ACL.format(acl="n.nspacl", kind="n", owner="n.nspowner")}
from pg_namespace n where n.oid = (select oid from ns)
union all
select 'table', c.relname,
       'kind=' || c.relkind::text || ' rls=' || c.relrowsecurity || ' force=' || c.relforcerowsecurity
       || ' persistence=' || c.relpersistence::text || ' replica=' || c.relreplident::text
       || ' options=' || coalesce(c.reloptions::text, '')
       || ' acl=' || {_ACL.format(acl="c.relacl", kind="r", owner="c.relowner")}
from pg_class c where c.relnamespace = (select oid from ns) and c.relkind in ('r', 'p')
union all
select 'relation', c.relname,
       'kind=' || c.relkind::text || ' persistence=' || c.relpersistence::text
       || ' options=' || coalesce(c.reloptions::text, '') || ' definition=' || coalesce(pg_get_viewdef(c.oid), '')
       || coalesce((select ' sequence=' || concat_ws(' ', s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin,
                                                   s.seqmax, s.seqcache, s.seqcycle)
                    from pg_sequence s where s.seqrelid = c.oid), '')
       || ' acl=' || {_ACL.format(acl="c.relacl", kind="r", owner="c.relowner")}
from pg_class c where c.relnamespace = (select oid from ns) and c.relkind in ('v', 'm', 'S', 'f')
union all
select 'column', c.relname || '.' || a.attname,
       format_type(a.atttypid, a.atttypmod) || ' collation=' || coalesce(a.attcollation::regcollation::text, '')
       || ' notnull=' || a.attnotnull || ' storage=' || a.attstorage::text
       || ' generated=' || a.attgenerated::text || ' default=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
       || ' acl=' || coalesce(a.attacl::text, '')
from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
left join pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
where c.relnamespace = (select oid from ns) and c.relkind in ('r', 'p', 'c')
union all
select 'index', i.relname, pg_get_indexdef(i.oid) || ' valid=' || x.indisvalid
from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
where t.relnamespace = (select oid from ns)
union all
select 'constraint', t.relname || '.' || k.conname, pg_get_constraintdef(k.oid)
from pg_constraint k join pg_class t on t.oid = k.conrelid
where t.relnamespace = (select oid from ns)
union all
select 'trigger', t.relname || '.' || g.tgname, pg_get_triggerdef(g.oid) || ' enabled=' || g.tgenabled::text
from pg_trigger g join pg_class t on t.oid = g.tgrelid
where t.relnamespace = (select oid from ns) and not g.tgisinternal
union all
select 'statistics', s.stxname, pg_get_statisticsobjdef(s.oid)
from pg_statistic_ext s where s.stxnamespace = (select oid from ns)
union all
select 'type', t.typname,
       t.typtype::text
       || coalesce(' labels=' || (select string_agg(e.enumlabel::text, ',' order by e.enumsortorder)
                                  from pg_enum e where e.enumtypid = t.oid), '')
       || case when t.typtype = 'd' then ' base=' || format_type(t.typbasetype, t.typtypmod) || ' notnull=' || t.typnotnull
               || ' default=' || coalesce(t.typdefault, '') || ' checks=' || coalesce(
                   (select string_agg(pg_get_constraintdef(k.oid), ',' order by k.conname)
                    from pg_constraint k where k.contypid = t.oid), '') else '' end
       || coalesce(' subtype=' || (select r.rngsubtype::regtype::text from pg_range r where r.rngtypid = t.oid), '')
from pg_type t where t.typnamespace = (select oid from ns) and t.typtype in ('c', 'e', 'd', 'r')
  and not exists (select 1 from pg_class c where c.oid = t.typrelid and c.relkind <> 'c')
union all
select 'text search dictionary', d.dictname,
       t.tmplnamespace::regnamespace::text || '.' || t.tmplname || ' ' || coalesce(d.dictinitoption, '')
from pg_ts_dict d join pg_ts_template t on t.oid = d.dicttemplate where d.dictnamespace = (select oid from ns)
union all
select 'function', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', pg_get_functiondef(p.oid)
from pg_proc p where p.pronamespace = (select oid from ns)
union all
select 'function acl', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
       {_ACL.format(acl="p.proacl", kind="f", owner="p.proowner")}
from pg_proc p where p.pronamespace = (select oid from ns)
union all
select 'policy', p.tablename || '.' || p.policyname,
       p.permissive || ' ' || p.roles::text || ' ' || p.cmd || ' using ' || coalesce(p.qual, '')
       || ' check ' || coalesce(p.with_check, '')
from pg_policies p where p.schemaname = %(schema)s
union all
select 'comment', o.type || ' ' || o.identity, d.description
from pg_description d cross join lateral pg_identify_object(d.classoid, d.objoid, d.objsubid) o
where o.schema = %(schema)s or (o.type = 'schema' and o.identity = quote_ident(%(schema)s))
   or o.identity like '%% on ' || quote_ident(%(schema)s) || '.%%'  -- a policy's or a trigger's
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


def catalog_diff(expected: list[tuple[str, str, str]], actual: list[tuple[str, str, str]]) -> str:
    """A readable unified diff of two catalogs (empty when equal)."""
    import difflib

    def render(rows: list[tuple[str, str, str]]) -> list[str]:
        return [f"{kind} {name}: {definition}" for kind, name, definition in rows]

    return "\n".join(difflib.unified_diff(render(expected), render(actual), "migrated", "other", lineterm=""))
