-- One step of erase_walk_v1: the lineage edges of the thread from p_frontier
-- to the entries that name one of them as a source (not themselves), leaving
-- out dependents in p_visited, as 'source' || chr(31) || 'dependent' in
-- code-point order. One pass over the thread through the lineage index (?|
-- is one test per row; an entry without lineage fails it at once).
create or replace function {{schema}}.erase_walk_step_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_frontier text[], p_visited text[])
returns text[]
language plpgsql stable
set search_path from current
as $$
begin
  return array(
    select x.edge
    from (select distinct source.id || chr(31) || d.id as edge
          from {{entries}} d
          cross join lateral jsonb_array_elements_text(d.metadata -> '_lineage' -> 'sourceIds') as source(id)
          where d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
            and (d.metadata -> '_lineage' -> 'sourceIds') ?| p_frontier
            and source.id = any(p_frontier) and d.id <> source.id and not (d.id = any(p_visited))) as x
    order by x.edge collate "C");
end;
$$;
