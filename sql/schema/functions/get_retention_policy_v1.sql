-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The stored retention policies that cover a resource's entries: its own
-- maximum age, and (with p_thread_id) the thread's; NULL where none is stored.
create or replace function {{schema}}.get_retention_policy_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text default null)
returns table (resource_max_age_days double precision, thread_max_age_days double precision)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, false);
  return query
    select max(p.max_age_days) filter (where p.thread_id = ''),
           max(p.max_age_days) filter (where p.thread_id <> '')
    from {{retention_policy}} p
    where p.tenant_id = p_tenant_id and p.resource_id = p_resource_id
      and p.thread_id in ('', coalesce(p_thread_id, ''));
end;
$$;
