-- Deletes the bodies of p_ids (at most 64), skipping entries under legal
-- hold, and drops their ids from this thread's share grants; returns how many
-- rows were deleted. Every entry must already carry
-- its tombstone (invalidate_v1 first, so dependents never outlive the walk):
-- otherwise PM012 and nothing is deleted.
create or replace function {{schema}}.purge_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[])
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_ids text[];
begin
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if coalesce(cardinality(p_ids), 0) not between 1 and 64 then
    raise exception 'purge: between 1 and 64 ids per call, got %', coalesce(cardinality(p_ids), 0)
      using errcode = 'PM005';
  end if;
  if exists (select 1 from {{entries}} e
             where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
               and e.thread_id = p_thread_id and e.id = any(p_ids) and not e.legal_hold
               and not exists (select 1 from {{invalidation}} i
                               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                 and i.thread_id = p_thread_id and i.entry_id = e.id)) then
    raise exception 'purge: invalidate the entries (invalidate_v1) before deleting them' using errcode = 'PM012';
  end if;
  with deleted as (
    delete from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids) and not e.legal_hold
    returning e.id
  )
  select coalesce(array_agg(d.id), '{}') into v_ids from deleted d;
  perform unshare_v1(p_tenant_id, p_resource_id, p_thread_id, v_ids);
  return cardinality(v_ids);
end;
$$;
