-- Reverts revision 0006: remember_batch_v1 goes, and recall_v2 and
-- invalidate_v1 get back their 0005 definitions (as revisions 0003 and 0001
-- wrote them, running as their owner since 0004).

{{pin_search_path}}

drop function if exists {{schema}}.remember_batch_v1(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz);
create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
set search_path from current
as $$
  select 5, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;
\history 0003 recall_v2
\history 0001 invalidate_v1
alter function {{schema}}.recall_v2(text, text, text, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean) security definer;
alter function {{schema}}.invalidate_v1(text, text, text, text[], text, timestamptz) security definer;

reset search_path;
