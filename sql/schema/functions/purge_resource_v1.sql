-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The second step of erasing a resource: deletes the bodies of the entries
-- p_thread_ids[i], p_ids[i] (at most 64 pairs) of the tenant and resource,
-- thread by thread with purge_v1 (its lock; entries under legal hold are
-- kept; every other one must carry its tombstone, invalidate_resource_v1
-- first, else PM012 and nothing is deleted). Returns how many bodies were
-- deleted.
create or replace function {{schema}}.purge_resource_v1(
  p_tenant_id text, p_resource_id text, p_thread_ids text[], p_ids text[])
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_thread text;
  v_ids text[];
  v_deleted integer := 0;
begin
  perform assert_scope_v2(p_tenant_id, p_resource_id, null, false);
  if coalesce(cardinality(p_ids), 0) not between 1 and 64
     or coalesce(cardinality(p_thread_ids), 0) <> cardinality(p_ids) then
    raise exception 'purge_resource: between 1 and 64 (thread, id) pairs per call, got % threads and % ids',
      coalesce(cardinality(p_thread_ids), 0), coalesce(cardinality(p_ids), 0) using errcode = 'PM005';
  end if;
  for v_thread, v_ids in
    select x.thread_id, array_agg(x.id)
    from unnest(p_thread_ids, p_ids) as x(thread_id, id)
    group by x.thread_id
    order by x.thread_id collate "C"
  loop
    v_deleted := v_deleted + purge_v1(p_tenant_id, p_resource_id, v_thread, v_ids);
  end loop;
  return v_deleted;
end;
$$;
