-- The live share grants recall_v3 reads for a child thread (p_resource_id,
-- p_thread_id) from its parent thread p_parent_thread_id: each grant's
-- resource (the child's own, or the one a delegated agent's derives from),
-- parent thread and granted ids, unexpired at p_now; none when
-- p_parent_thread_id is NULL. One single-table statement on the tenant's
-- predicate.
create or replace function {{schema}}.recall_grants_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_parent_thread_id text, p_now timestamptz)
returns table (resource_id text, thread_id text, source_ids text[])
language plpgsql stable
rows 1
set search_path from current
as $$
begin
  return query
    select g.resource_id, g.parent_thread_id, g.source_ids
    from {{share_grant}} g
    where p_parent_thread_id is not null
      and g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
      and g.child_thread_id = p_thread_id and g.parent_thread_id = p_parent_thread_id
      and (g.expires_at is null or g.expires_at > p_now);
end;
$$;
