-- Reverts revision 0018: drops recall_v4 and its helpers, the selection type and the
-- entries' occurred_at.

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

drop function {{schema}}.recall_v4(text, text, text, vector, text, integer, integer, boolean, text, boolean, timestamptz, double precision, double precision, double precision, boolean, text, jsonb, timestamptz, timestamptz, timestamptz, timestamptz, double precision);
drop function {{schema}}.recall_gates_v2(text, text, text, text, boolean, boolean, integer, text[], timestamptz, {{schema}}.selection_v1);
drop function {{schema}}.recall_travellers_v2(text, text, text, vector, text[], tsquery, boolean, text[], timestamptz, integer, double precision, {{schema}}.selection_v1, double precision);
drop function {{schema}}.recall_travellers_probe_v2(text, text, text, vector, tsquery, boolean, text[], timestamptz, timestamptz, integer, boolean, {{schema}}.selection_v1, double precision);
drop function {{schema}}.recall_top_v2({{schema}}.recall_probe_v1[], text, text, text[], tsquery, timestamptz, timestamptz, integer, double precision);
drop function {{schema}}.recall_bounds_v2(text, text, text, vector, tsquery, boolean, timestamptz, timestamptz, integer, {{schema}}.selection_v1, double precision);
drop function {{schema}}.recall_selection_v1(jsonb, timestamptz, timestamptz, timestamptz, timestamptz);
drop function {{schema}}.selects_v1(jsonb, timestamptz, timestamptz, {{schema}}.selection_v1);

drop type {{schema}}.selection_v1;
alter table {{entries}} drop column occurred_at;

reset search_path;
