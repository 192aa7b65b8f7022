-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The deleting step of an erasure that a write may overtake: deletes the
-- bodies of p_ids (1..64) that carry a tombstone, skipping entries under
-- legal hold, and drops the deleted ids from this thread's share grants. An
-- id whose entry carries no tombstone was written again after the erasure
-- tombstoned it (remember_v2 clears a written id's tombstone; the write
-- committed between the two steps): it is kept as that write left it and
-- returned in kept, never raised (purge_v1's PM012), so one overtaken id
-- never stops the deletion of the others. Returns how many bodies were
-- deleted and the kept ids, in code-point order.
create or replace function {{schema}}.purge_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[])
returns table (deleted integer, kept text[])
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_ids text[];
  v_kept text[];
begin
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if coalesce(cardinality(p_ids), 0) not between 1 and 64 then
    raise exception 'purge: between 1 and 64 ids per call, got %', coalesce(cardinality(p_ids), 0)
      using errcode = 'PM005';
  end if;
  v_kept := array(
    select e.id from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids) and not e.legal_hold
      and not exists (select 1 from {{invalidation}} i
                      where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                        and i.thread_id = p_thread_id and i.entry_id = e.id)
    order by e.id collate "C");
  with deleted as (
    delete from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids) and not e.legal_hold
      and not (e.id = any(v_kept))
    returning e.id
  )
  select coalesce(array_agg(d.id), '{}') into v_ids from deleted d;
  perform unshare_v1(p_tenant_id, p_resource_id, p_thread_id, v_ids);
  return query select cardinality(v_ids), v_kept;
end;
$$;
