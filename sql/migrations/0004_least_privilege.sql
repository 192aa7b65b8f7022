-- prism-memory schema revision 0004: least privilege.
--
-- * The API functions (the ones an application calls) run as their owner
--   (SECURITY DEFINER), so a caller needs only EXECUTE on them:
--   prism_memory.schema.grant_app_role() grants exactly that, and no table
--   privilege.
-- * Every function whose body is parsed when it runs (PL/pgSQL, and SQL with
--   a string body) pins search_path to "pg_catalog, <schema>, <pgvector's
--   schema>, pg_temp": built-ins cannot be shadowed from a schema someone may
--   write to, and a caller's temporary types or functions come last, never
--   first. (Functions with an SQL-standard body were resolved when created.)
-- * Nobody but the owner may execute the schema's functions: EXECUTE is
--   revoked from PUBLIC on all of them (PostgreSQL grants it to PUBLIC on
--   every new function). That covers the functions that exist now only: the
--   "alter default privileges in schema ... revoke" below changes nothing,
--   since a per-schema default privilege can add to the global default but
--   never take it away. So every later revision that creates a function, on
--   upgrade or on downgrade, revokes EXECUTE from PUBLIC again.
-- * Row-level security on every table, keyed by tenant: a role that is ever
--   granted direct access to a table (a reporting role, say) sees only the
--   rows of the tenant named by its prism_memory.tenant_id setting, none
--   without one. The owner, and so the API functions, bypass it: they are
--   keyed by their tenant argument.
--
-- Template rules as in 0001; frozen once released.

{{pin_search_path}}

-- file functions/install_info_v1.sql
create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
set search_path from current
as $$
  select {{schema_version}}, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;
-- end of functions/install_info_v1.sql


revoke execute on all functions in schema {{schema}} from public;
alter default privileges in schema {{schema}} revoke execute on functions from public;
grant execute on function {{schema}}.install_info_v1() to public;

do $$
declare
  v_function regprocedure;
begin
  for v_function in
    select p.oid::regprocedure from pg_catalog.pg_proc p
    join pg_catalog.pg_language l on l.oid = p.prolang
    where p.pronamespace = (select n.oid from pg_catalog.pg_namespace n where n.nspname = {{schema_literal}})
      and (l.lanname = 'plpgsql' or (l.lanname = 'sql' and p.prosqlbody is null))
  loop
    execute pg_catalog.format('alter function %s set search_path from current', v_function);
  end loop;
end;
$$;

alter function {{schema}}.correct_v1(text, text, text, text, text, vector, timestamptz) security definer;
alter function {{schema}}.count_entries_v1(text, text, text) security definer;
alter function {{schema}}.get_working_v1(text, text, text) security definer;
alter function {{schema}}.invalidate_v1(text, text, text, text[], text, timestamptz) security definer;
alter function {{schema}}.list_entries_v1(text, text, text, bigint, text, integer, boolean) security definer;
alter function {{schema}}.purge_v1(text, text, text, text[]) security definer;
alter function {{schema}}.rag_check_source_access_v1(text, text, text, text[], bigint) security definer;
alter function {{schema}}.rag_delete_v1(text, text, text[], text, bigint) security definer;
alter function {{schema}}.rag_get_by_source_v1(text, text, text, text, integer, boolean, text, text[], bigint) security definer;
alter function {{schema}}.rag_get_generation_v1(text, text) security definer;
alter function {{schema}}.rag_lexical_query_v1(text, text, text, integer, jsonb, boolean, text, text[], bigint) security definer;
alter function {{schema}}.rag_query_v1(text, text, vector, integer, jsonb, boolean, text, text[], bigint) security definer;
alter function {{schema}}.rag_set_generation_v1(text, text, bigint) security definer;
alter function {{schema}}.rag_set_source_access_v1(text, text, text[], text[], bigint) security definer;
alter function {{schema}}.rag_upsert_v1(text, text, text[], text[], text[], vector[], jsonb[], bigint[], bigint) security definer;
alter function {{schema}}.recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz) security definer;
alter function {{schema}}.recall_v2(text, text, text, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean) security definer;
alter function {{schema}}.reembed_v1(text, text, text, text[], text[], vector[]) security definer;
alter function {{schema}}.remember_v1(text, text, text, text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz) security definer;
alter function {{schema}}.retention_candidates_v1(text, text, text, double precision, integer, integer, timestamptz) security definer;
alter function {{schema}}.set_consent_v1(text, text, text, text, boolean, text, text, timestamptz, timestamptz, timestamptz) security definer;
alter function {{schema}}.share_with_v1(text, text, text, text, text, text[], timestamptz, timestamptz) security definer;
alter function {{schema}}.update_working_v1(text, text, text, jsonb, bigint) security definer;

alter table {{entries}} enable row level security;
create policy tenant_isolation on {{entries}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));
alter table {{working}} enable row level security;
create policy tenant_isolation on {{working}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));
alter table {{invalidation}} enable row level security;
create policy tenant_isolation on {{invalidation}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));
alter table {{share_grant}} enable row level security;
create policy tenant_isolation on {{share_grant}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));
alter table {{rag_chunk}} enable row level security;
create policy tenant_isolation on {{rag_chunk}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));
alter table {{rag_source_acl}} enable row level security;
create policy tenant_isolation on {{rag_source_acl}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));
alter table {{rag_source_version}} enable row level security;
create policy tenant_isolation on {{rag_source_version}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));
alter table {{rag_scope_generations}} enable row level security;
create policy tenant_isolation on {{rag_scope_generations}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

reset search_path;
