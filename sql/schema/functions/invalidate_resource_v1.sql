-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The first step of erasing everything a resource holds, one bounded batch
-- at a time: picks the next p_limit (1..64) entries of every thread of the
-- tenant and resource (exact ids: a derived resource is another one) after
-- the (thread_id, sequence, id) cursor, in that order (code-point order for
-- the texts), and tombstones, thread by thread with erase_walk_v1 (reason
-- 'deleted', its lock and bounded walk, which never refuses: a walk it
-- leaves pending is continued by the next erase_walk_v1 call in that
-- thread), those not under legal hold and their lineage dependents. Returns
-- the picked entries (picked true, in cursor order; held says whether the
-- entry stays under its hold) and then the dependents the walks reached
-- besides them (picked false), each with its thread and sequence. The next
-- batch starts after the last picked entry; fewer than p_limit picked means
-- the resource is done. purge_resource_v1 then deletes the bodies. With
-- p_expired_only it picks only the entries that have expired at p_now
-- (is_live_v2, under the policies of the resource and of each thread) and
-- tombstones them as 'expired': the resource-wide retention sweep.
create or replace function {{schema}}.invalidate_resource_v1(
  p_tenant_id text, p_resource_id text,
  p_after_thread_id text default null, p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 64, p_expired_only boolean default false, p_now timestamptz default now())
returns table (thread_id text, entry_id text, sequence bigint, held boolean, picked boolean)
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_picked record;  -- the batch, as parallel arrays in cursor order
  v_thread text;
  v_ids text[];
  v_reached_threads text[] := '{}';
  v_reached_ids text[] := '{}';
  v_resource_cutoff timestamptz;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- expiry is measured against it
  perform assert_scope_v2(p_tenant_id, p_resource_id, null, false);
  perform assert_resource_cursor_v1(p_after_thread_id, p_after_sequence, p_after_id);
  if p_limit is null or p_limit not between 1 and 64 then
    raise exception 'limit must be between 1 and 64, got %', p_limit using errcode = 'PM005';
  end if;
  if p_expired_only is null then
    raise exception 'expired_only must be true or false' using errcode = 'PM005';
  end if;
  v_resource_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, null, p_now);
  select coalesce(array_agg(b.thread_id order by b.position), '{}') as threads,
         coalesce(array_agg(b.id order by b.position), '{}') as ids,
         coalesce(array_agg(b.sequence order by b.position), '{}') as sequences,
         coalesce(array_agg(b.legal_hold order by b.position), '{}') as held
  into v_picked
  from (select e.thread_id, e.id, e.sequence, e.legal_hold,
               row_number() over (order by e.thread_id collate "C", e.sequence, e.id collate "C") as position
        from {{entries}} e
        left join {{retention_policy}} tp  -- a policy of the entry's own thread
          on tp.tenant_id = p_tenant_id and tp.resource_id = p_resource_id and tp.thread_id = e.thread_id
        where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
          and (p_after_thread_id is null
               or (e.thread_id collate "C", e.sequence, e.id collate "C")
                  > (p_after_thread_id collate "C", p_after_sequence, p_after_id collate "C"))
          and (not p_expired_only
               or not is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
                                 greatest(v_resource_cutoff, p_now - tp.max_age_days * interval '24 hours'), p_now))
        order by e.thread_id collate "C", e.sequence, e.id collate "C"
        limit p_limit) as b;
  for v_thread, v_ids in
    select b.thread_id, array_agg(b.id order by b.position)
    from unnest(v_picked.threads, v_picked.ids, v_picked.held) with ordinality as b(thread_id, id, held, position)
    where not b.held
    group by b.thread_id
    order by b.thread_id collate "C"
  loop
    v_ids := (select w.tombstoned
              from erase_walk_v1(p_tenant_id, p_resource_id, v_thread, v_ids,
                                 case when p_expired_only then 'expired' else 'deleted' end, p_now) as w);
    v_reached_threads := v_reached_threads || array_fill(v_thread, array[cardinality(v_ids)]);
    v_reached_ids := v_reached_ids || v_ids;
  end loop;
  return query
    select b.thread_id, b.id, b.sequence, b.held, true
    from unnest(v_picked.threads, v_picked.ids, v_picked.sequences, v_picked.held)
           with ordinality as b(thread_id, id, sequence, held, position)
    order by b.position;
  return query
    select e.thread_id, e.id, e.sequence, e.legal_hold, false
    from unnest(v_reached_threads, v_reached_ids) as r(thread_id, id)
    join {{entries}} e
      on e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = r.thread_id and e.id = r.id
    where not exists (select 1 from unnest(v_picked.threads, v_picked.ids) as b(thread_id, id)
                      where b.thread_id = r.thread_id and b.id = r.id)
    order by e.thread_id collate "C", e.sequence, e.id collate "C";
end;
$$;
