-- erase_walk_v1's walk from p_start over the thread's lineage: breadth-first
-- over edges in code-point order (erase_walk_step_v1), on through the
-- dependents that carry no tombstone or a pending one (a settled tombstone
-- has everything below it tombstoned), until 256 dependents without a
-- tombstone are reached or 8 levels are passed. Then it takes what the budget
-- allows, in edge order, and stops: each entry taken, and each entry of the
-- last frontier with a dependent left out, is pending. Returns the ids
-- reached (p_start included), those whose dependents it looked for, and the
-- pending ones. Reads only: erase_walk_v1 writes the tombstones.
create or replace function {{schema}}.erase_walk_reach_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_start text[],
  out visited text[], out walked text[], out pending text[])
language plpgsql stable
set search_path from current
as $$
declare
  v_frontier text[] := p_start;
  v_found text[];            -- 'source' || chr(31) || 'dependent', in code-point order
  v_new text[];              -- dependents reached this step that carried no tombstone
  v_taken text[];
  v_budget integer := 256;
  v_depth integer := 0;
begin
  visited := p_start;
  walked := '{}';
  pending := '{}';
  while cardinality(v_frontier) > 0 loop
    v_depth := v_depth + 1;
    walked := walked || v_frontier;
    v_found := erase_walk_step_v1(p_tenant_id, p_resource_id, p_thread_id, v_frontier, visited);
    v_new := array(select distinct split_part(f.edge, chr(31), 2) from unnest(v_found) as f(edge)
                   where not exists (select 1 from {{invalidation}} i
                                     where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                       and i.thread_id = p_thread_id and i.entry_id = split_part(f.edge, chr(31), 2)));
    if v_depth > 8 or cardinality(v_new) > v_budget then
      -- Out of depth or budget: take what the budget allows (in edge order);
      -- a frontier entry with a dependent left out, and every entry taken, stays pending.
      v_taken := case when v_depth > 8 then '{}'::text[] else array(
                   select d.id from (select split_part(f.edge, chr(31), 2) as id, min(f.position) as first
                                     from unnest(v_found) with ordinality as f(edge, position)
                                     where split_part(f.edge, chr(31), 2) = any(v_new)
                                     group by 1) as d
                   order by d.first limit v_budget) end;
      pending := v_taken || array(select distinct split_part(f.edge, chr(31), 1) from unnest(v_found) as f(edge)
                                  where split_part(f.edge, chr(31), 2) = any(v_new)
                                    and not (split_part(f.edge, chr(31), 2) = any(v_taken)));
      visited := visited || v_taken
                 || array(select distinct split_part(f.edge, chr(31), 2) from unnest(v_found) as f(edge)
                          where not (split_part(f.edge, chr(31), 2) = any(v_new)));
      exit;
    end if;
    v_budget := v_budget - cardinality(v_new);
    -- Walked on: the dependents that carried no tombstone, or a pending one.
    v_frontier := array(select distinct split_part(f.edge, chr(31), 2) from unnest(v_found) as f(edge)
                        where split_part(f.edge, chr(31), 2) = any(v_new)
                           or exists (select 1 from {{invalidation}} i
                                      where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                        and i.thread_id = p_thread_id and i.pending
                                        and i.entry_id = split_part(f.edge, chr(31), 2)));
    visited := visited || array(select distinct split_part(f.edge, chr(31), 2) from unnest(v_found) as f(edge));
  end loop;
end;
$$;
