-- Reverts revision 0004: functions run as their caller again, PUBLIC may execute them, no RLS.
drop policy if exists tenant_isolation on {{entries}};
alter table {{entries}} disable row level security;
drop policy if exists tenant_isolation on {{working}};
alter table {{working}} disable row level security;
drop policy if exists tenant_isolation on {{invalidation}};
alter table {{invalidation}} disable row level security;
drop policy if exists tenant_isolation on {{share_grant}};
alter table {{share_grant}} disable row level security;
drop policy if exists tenant_isolation on {{rag_chunk}};
alter table {{rag_chunk}} disable row level security;
drop policy if exists tenant_isolation on {{rag_source_acl}};
alter table {{rag_source_acl}} disable row level security;
drop policy if exists tenant_isolation on {{rag_source_version}};
alter table {{rag_source_version}} disable row level security;
drop policy if exists tenant_isolation on {{rag_scope_generations}};
alter table {{rag_scope_generations}} disable row level security;
alter function {{schema}}.correct_v1(text, text, text, text, text, vector, timestamptz) security invoker;
alter function {{schema}}.count_entries_v1(text, text, text) security invoker;
alter function {{schema}}.get_working_v1(text, text, text) security invoker;
alter function {{schema}}.invalidate_v1(text, text, text, text[], text, timestamptz) security invoker;
alter function {{schema}}.list_entries_v1(text, text, text, bigint, text, integer, boolean) security invoker;
alter function {{schema}}.purge_v1(text, text, text, text[]) security invoker;
alter function {{schema}}.rag_check_source_access_v1(text, text, text, text[], bigint) security invoker;
alter function {{schema}}.rag_delete_v1(text, text, text[], text, bigint) security invoker;
alter function {{schema}}.rag_get_by_source_v1(text, text, text, text, integer, boolean, text, text[], bigint) security invoker;
alter function {{schema}}.rag_get_generation_v1(text, text) security invoker;
alter function {{schema}}.rag_lexical_query_v1(text, text, text, integer, jsonb, boolean, text, text[], bigint) security invoker;
alter function {{schema}}.rag_query_v1(text, text, vector, integer, jsonb, boolean, text, text[], bigint) security invoker;
alter function {{schema}}.rag_set_generation_v1(text, text, bigint) security invoker;
alter function {{schema}}.rag_set_source_access_v1(text, text, text[], text[], bigint) security invoker;
alter function {{schema}}.rag_upsert_v1(text, text, text[], text[], text[], vector[], jsonb[], bigint[], bigint) security invoker;
alter function {{schema}}.recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz) security invoker;
alter function {{schema}}.recall_v2(text, text, text, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean) security invoker;
alter function {{schema}}.reembed_v1(text, text, text, text[], text[], vector[]) security invoker;
alter function {{schema}}.remember_v1(text, text, text, text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz) security invoker;
alter function {{schema}}.retention_candidates_v1(text, text, text, double precision, integer, integer, timestamptz) security invoker;
alter function {{schema}}.set_consent_v1(text, text, text, text, boolean, text, text, timestamptz, timestamptz, timestamptz) security invoker;
alter function {{schema}}.share_with_v1(text, text, text, text, text, text[], timestamptz, timestamptz) security invoker;
alter function {{schema}}.update_working_v1(text, text, text, jsonb, bigint) security invoker;
grant execute on all functions in schema {{schema}} to public;
{{search_path_0001}}
do $$
declare
  v_function regprocedure;
  v_name name;
begin
  for v_function, v_name in
    select p.oid::regprocedure, p.proname from pg_catalog.pg_proc p
    join pg_catalog.pg_language l on l.oid = p.prolang
    where p.pronamespace = (select n.oid from pg_catalog.pg_namespace n where n.nspname = {{schema_literal}})
      and (l.lanname = 'plpgsql' or (l.lanname = 'sql' and p.prosqlbody is null))
  loop
    -- Back to the path each function had before 0004: 0001's for the functions
    -- revision 0001 created with one, none for those created without one;
    -- revisions 0002 and 0003 already pinned the path 0004 gives.
    if v_name in (
         'assert_dimensions_v1', 'assert_embedding_v1', 'assert_scope_v1', 'correct_v1', 'count_entries_v1',
         'get_working_v1', 'invalidate_v1', 'list_entries_v1', 'purge_v1', 'recall_v1', 'reembed_v1',
         'remember_v1', 'retention_candidates_v1', 'set_consent_v1', 'share_with_v1', 'update_working_v1') then
      execute pg_catalog.format('alter function %s set search_path from current', v_function);
    elsif v_name in ('assert_time_v1', 'rag_assert_generation_v1', 'scoring_weights_v1') then
      execute pg_catalog.format('alter function %s reset search_path', v_function);
    end if;
  end loop;
end;
$$;
reset search_path;
-- file functions/install_info_v1.sql
create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
as $$
  select {{schema_version}}, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;
-- end of functions/install_info_v1.sql

