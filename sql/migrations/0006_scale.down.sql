-- Reverts revision 0006. recall_v2 keeps its 0006 body (the same contract and
-- answers as 0003's); only its plan settings go back.

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
alter function {{schema}}.recall_v2(text, text, text, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean)
  reset enable_indexscan;
alter function {{schema}}.recall_v2(text, text, text, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean)
  reset enable_mergejoin;

reset search_path;
