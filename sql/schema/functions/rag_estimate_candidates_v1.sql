-- The planner's estimate of the chunks of one generation of a scope whose
-- metadata satisfy p_filter (the metadata filter language: @> for a plain
-- containment document, else @@ its metadata_filter_v1 path; the planner
-- estimates both from the column statistics), among p_sources when given. EXPLAIN needs a
-- volatile function; rag_query_v1 itself stays stable, so all of its reads
-- see one snapshot.
create or replace function {{schema}}.rag_estimate_candidates_v1(
  p_tenant_id text, p_scope text, p_generation bigint, p_filter jsonb, p_sources text[] default null)
returns double precision
language plpgsql volatile
set search_path from current
as $$
declare
  v_contains constant boolean := metadata_filter_is_containment_v1(p_filter);
  v_path constant jsonpath := case when not v_contains then metadata_filter_v1(p_filter) end;
  v_plan json;
begin
  execute 'explain (format json) select 1 from {{rag_chunk}} c where '
          || rag_where_v2(v_contains, v_path is not null, false, p_sources is not null)
    into v_plan
    using p_tenant_id, p_scope, p_generation, p_filter, null::text, null::text[], p_sources,
          null::text, null::integer, v_path;
  return (v_plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
end;
$$;
