-- Reverts revision 0011.

{{pin_search_path}}

-- file functions/install_info_v1.sql
-- What this install is: checked by the Python caller before any other call.
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

drop function {{schema}}.recall_guarded_v1(text, text, text, text, integer, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean);
drop function {{schema}}.use_embedding_model_v1(text, text[], text[], text, integer, boolean);
drop function {{schema}}.assert_embedding_model_v1(text, integer);
drop table {{embedding_model}};

reset search_path;
