-- Raises PM001 unless every id naming a scope passes the id rule for 256
-- bytes (assert_id_v1): the tenant; the resource, or the RAG scope, which
-- takes its place (p_resource_label names it in the message: 'scope'); and
-- the thread, when p_thread_required or given. prism_memory.checks.check_scope
-- mirrors it.
create or replace function {{schema}}.assert_scope_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_thread_required boolean,
  p_resource_label text default 'resource_id')
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  perform assert_id_v1(p_tenant_id, 'tenant_id', 256, 'PM001');
  perform assert_id_v1(p_resource_id, p_resource_label, 256, 'PM001');
  if p_thread_required or p_thread_id is not null then
    perform assert_id_v1(p_thread_id, 'thread_id', 256, 'PM001');
  end if;
end;
$$;
