-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The tombstoning step of an erasure (forget, legal hold, the retention
-- sweeps) that no lineage a tenant writes can block: tombstones p_ids (0..64)
-- of the thread with p_reason ('deleted', 'expired' or 'held'; 'held' also
-- sets their legal hold) and walks their lineage dependents breadth-first,
-- as invalidate_v1 does, but never refuses: one call tombstones at most 256
-- entries that carried no tombstone, at most 8 levels below where it
-- starts, and marks the tombstone of each entry whose dependents it did not
-- all reach as pending. A call starts from p_ids and from up to 64 pending
-- tombstones of the thread (code-point order), so calls repeated with no
-- ids finish every walk left pending, whatever its size; each call
-- tombstones at least one more entry or settles a pending one. A dependent
-- that already carries a settled (not pending) tombstone is reached (an
-- erasure's reason replaces another's, as in invalidate_v1) but not walked
-- through: everything derived from it already carries a tombstone, since a
-- tombstone is settled only once its walk is done. Returns the ids
-- tombstoned or reached (p_ids and dependents that are stored entries, in
-- code-point order) and how many pending tombstones the thread still holds
-- (0: every walk done). PM005 for more than 64 ids, PM002 for another reason.
create or replace function {{schema}}.erase_walk_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_reason text,
  p_now timestamptz default now())
returns table (tombstoned text[], pending integer)
language plpgsql volatile security definer
set search_path from current
as $$
#variable_conflict use_column
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_start text[];
  v_visited text[];  -- the entries the walk reached
  v_walked text[];   -- those whose dependents it looked for
  v_pending text[];  -- those whose dependents it did not all reach
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  if coalesce(cardinality(p_ids), 0) > 64 then
    raise exception 'erase: at most 64 ids per call, got %', cardinality(p_ids) using errcode = 'PM005';
  end if;
  if p_reason is null or p_reason not in ('deleted', 'expired', 'held') then
    raise exception 'erase: unknown reason %', p_reason using errcode = 'PM002';
  end if;
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  v_start := array(select distinct x from unnest(coalesce(p_ids, '{}')) as x
                   union
                   select i.entry_id from (select i.entry_id from {{invalidation}} i
                                           where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                             and i.thread_id = p_thread_id and i.pending
                                           order by i.entry_id collate "C" limit 64) as i);
  select r.visited, r.walked, r.pending into v_visited, v_walked, v_pending
  from erase_walk_reach_v1(p_tenant_id, p_resource_id, p_thread_id, v_start) as r;

  insert into {{invalidation}}
    (tenant_id, resource_id, thread_id, entry_id, reason, source_entry_id, sequence, created_at, pending)
  select p_tenant_id, p_resource_id, p_thread_id, e.id, p_reason,
         case when e.id = any(p_ids) then e.id end, e.sequence, p_now,
         e.id = any(v_pending)
         or exists (select 1 from {{invalidation}} i  -- reached, not walked: still pending
                    where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                      and i.thread_id = p_thread_id and i.entry_id = e.id and i.pending
                      and not (e.id = any(v_walked)))
  from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    and e.id = any(v_visited)
  on conflict (tenant_id, resource_id, thread_id, entry_id)
  do update set reason = case when {{invalidation}}.reason in ('deleted', 'expired', 'held')
                              then {{invalidation}}.reason else excluded.reason end,  -- an erasure's replaces another
                pending = excluded.pending;
  -- What was walked is settled unless left pending above; a start whose body
  -- is gone (deleted while its walk was pending) too.
  update {{invalidation}} i set pending = false
  where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id and i.thread_id = p_thread_id
    and i.entry_id = any(v_walked) and not (i.entry_id = any(v_pending)) and i.pending;
  if p_reason = 'held' then
    update {{entries}} e set legal_hold = true, updated_at = p_now
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids);
  end if;

  return query
    select array(select e.id from {{entries}} e
                 where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
                   and e.id = any(v_visited)
                 order by e.id collate "C"),
           (select count(*)::integer from {{invalidation}} i
            where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id and i.thread_id = p_thread_id
              and i.pending);
end;
$$;
