-- Reverts revision 0003.
drop function if exists {{schema}}.recall_v2(text, text, text, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean);
drop function if exists {{schema}}.recency_v1(timestamptz, timestamptz, double precision);
drop function if exists {{schema}}.scoring_weights_v1(double precision, double precision, double precision);
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

