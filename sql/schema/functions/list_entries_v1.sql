-- API function kept for direct SQL callers (prism_memory/operations.py,
-- RETAINED_FUNCTIONS): the Python calls list_entries_v2. It answers exactly as
-- list_entries_v2 on the server's clock (p_now => now()).
create or replace function {{schema}}.list_entries_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false)
returns setof {{schema}}.entry_record_v1
language sql stable security definer
set search_path from current
as $$
  select * from list_entries_v2(p_tenant_id, p_resource_id, p_thread_id, p_after_sequence, p_after_id, p_limit,
                                p_exportable, now())
$$;
