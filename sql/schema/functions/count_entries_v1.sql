-- API function: how many entries one thread holds, every one counted (tombstoned,
-- held, expired and not yet swept included). PM001 for a bad scope.
create or replace function {{schema}}.count_entries_v1(p_tenant_id text, p_resource_id text, p_thread_id text)
returns bigint
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  return (select count(*) from {{entries}} e
          where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id);
end;
$$;
