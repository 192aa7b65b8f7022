-- Tombstones p_ids' dependents (every entry of the thread whose
-- _lineage.sourceIds holds an invalidated id, transitively) and, unless
-- p_reason is 'corrected', p_ids themselves; with 'held' it also sets the legal
-- hold. The walk is breadth-first over distinct lineage edges. Caps: at most
-- 64 ids, 256 edges, and new dependents no deeper than 8 levels;
-- over a cap raises PM010 and nothing changes. Returns every tombstoned id.
-- Reasons: deleted, held, revoked, corrected, expired, source-invalidated.
-- An entry keeps one tombstone: an erasure's reason (deleted, expired, held)
-- replaces any other, since a grant clears every tombstone but an erasure's
-- (set_consent_v1), so none may stand for an erasure under another name.
-- Each step of the walk is one pass over the thread, whatever the frontier's size.
create or replace function {{schema}}.invalidate_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_reason text,
  p_now timestamptz default now())
returns table (entry_id text)
language plpgsql volatile security definer
set search_path from current
as $$
#variable_conflict use_column
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_visited text[] := array(select distinct x from unnest(p_ids) as x);
  v_frontier text[] := v_visited;
  v_edges text[] := '{}';  -- 'source' || chr(31) || 'dependent'
  v_found text[];
  v_new text[];
  v_depth integer := 0;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  if coalesce(cardinality(p_ids), 0) not between 1 and 64 then
    raise exception 'invalidate: between 1 and 64 ids per call, got %', coalesce(cardinality(p_ids), 0)
      using errcode = 'PM005';
  end if;
  if p_reason is null
     or p_reason not in ('deleted', 'held', 'revoked', 'corrected', 'expired', 'source-invalidated') then
    raise exception 'invalidate: unknown reason %', p_reason using errcode = 'PM002';
  end if;
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);

  while cardinality(v_frontier) > 0 loop
    v_depth := v_depth + 1;
    -- One pass over the thread per step: the entries naming any frontier id
    -- (?| is one test per row; an entry without lineage fails it at once), then
    -- their edges from the frontier.
    v_found := array(
      select distinct source.id || chr(31) || d.id
      from {{entries}} d
      cross join lateral jsonb_array_elements_text(d.metadata -> '_lineage' -> 'sourceIds') as source(id)
      where d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
        and (d.metadata -> '_lineage' -> 'sourceIds') ?| v_frontier
        and source.id = any(v_frontier) and d.id <> source.id);
    v_edges := array(select distinct x from unnest(v_edges || v_found) as x);
    if cardinality(v_edges) > 256 then
      raise exception 'lineage walk passed the cap of 256 edges' using errcode = 'PM010';
    end if;
    v_new := array(select distinct split_part(x, chr(31), 2) from unnest(v_found) as x
                   except select unnest(v_visited));
    if cardinality(v_new) > 0 and v_depth > 8 then
      raise exception 'lineage walk passed the cap of depth 8' using errcode = 'PM010';
    end if;
    v_visited := v_visited || v_new;
    v_frontier := v_new;
  end loop;

  insert into {{invalidation}}
    (tenant_id, resource_id, thread_id, entry_id, reason, source_entry_id, sequence, created_at)
  select p_tenant_id, p_resource_id, p_thread_id, e.id, p_reason,
         case when e.id = any(p_ids) then e.id end, e.sequence, p_now
  from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    and e.id = any(v_visited)
    and (p_reason <> 'corrected' or not (e.id = any(p_ids)))
  on conflict (tenant_id, resource_id, thread_id, entry_id)  -- columns (use_column), not the result's entry_id
  do update set reason = excluded.reason
    where excluded.reason in ('deleted', 'expired', 'held')
      and {{invalidation}}.reason not in ('deleted', 'expired', 'held');
  if p_reason = 'held' then
    update {{entries}} e set legal_hold = true, updated_at = p_now
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids);
  end if;

  return query
    select e.id from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and e.id = any(v_visited)
      and (p_reason <> 'corrected' or not (e.id = any(p_ids)))
    order by e.id collate "C";
end;
$$;
