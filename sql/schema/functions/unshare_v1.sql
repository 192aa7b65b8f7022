-- A share grant shares entries as they were when it was made: a later write
-- under a shared id (remember_v2, correct_v2) or the entry's deletion
-- (purge_v1) takes the id out of every grant of its thread, until the thread
-- shares it again.
create or replace function {{schema}}.unshare_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[])
returns void
language plpgsql volatile
set search_path from current
as $$
begin
  update {{share_grant}} g
  set source_ids = array(select x from unnest(g.source_ids) as x where x <> all (p_ids))
  where g.tenant_id = p_tenant_id and g.resource_id = p_resource_id
    and g.parent_thread_id = p_thread_id and g.source_ids && p_ids;
end;
$$;
