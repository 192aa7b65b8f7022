-- Reverts revision 0002: the RAG chunk store and its functions. The entries'
-- HNSW index of 0001 comes back in 0002_vector_search.down.sql, run first.
drop function if exists {{schema}}.rag_get_by_source_v1(text, text, text, text, integer, boolean, text, text[], bigint);
drop function if exists {{schema}}.rag_lexical_query_v1(text, text, text, integer, jsonb, boolean, text, text[], bigint);
drop function if exists {{schema}}.rag_query_v1(text, text, vector, integer, jsonb, boolean, text, text[], bigint);
drop function if exists {{schema}}.rag_estimate_candidates_v1(text, text, bigint, jsonb, text[]);
drop function if exists {{schema}}.rag_read_generation_v1(text, text, integer, jsonb, boolean, text, text[], bigint);
drop function if exists {{schema}}.rag_where_v1(boolean, boolean, boolean);
drop function if exists {{schema}}.rag_check_source_access_v1(text, text, text, text[], bigint);
drop function if exists {{schema}}.rag_set_source_access_v1(text, text, text[], text[], bigint);
drop function if exists {{schema}}.rag_delete_v1(text, text, text[], text, bigint);
drop function if exists {{schema}}.rag_upsert_v1(text, text, text[], text[], text[], vector[], jsonb[], bigint[], bigint);
drop function if exists {{schema}}.rag_assert_principal_v1(text, text[]);
drop function if exists {{schema}}.rag_assert_dimensions_v1(text, text, integer);
drop function if exists {{schema}}.rag_set_generation_v1(text, text, bigint);
drop function if exists {{schema}}.rag_get_generation_v1(text, text);
drop function if exists {{schema}}.rag_assert_generation_v1(bigint);
drop function if exists {{schema}}.rag_assert_scope_v1(text, text);
drop table if exists {{rag_source_version}};
drop table if exists {{rag_chunk}};
-- file functions/install_info_v1.sql
-- What this install is: checked by the Python caller before any other call.
create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
as $$
  select {{schema_version}}, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;
-- end of functions/install_info_v1.sql

