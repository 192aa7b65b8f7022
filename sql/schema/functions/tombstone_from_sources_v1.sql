-- Tombstones each of p_ids (that has none) whose metadata._lineage names a
-- source that is tombstoned, revoked, invisible or held: "multi-source facts
-- stay injectable only if none of their sources are invalidated". (A string
-- body, not BEGIN ATOMIC: Citus propagates only string bodies to workers.)
create or replace function {{schema}}.tombstone_from_sources_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_now timestamptz)
returns void
language sql volatile
set search_path from current
as $$
  insert into {{invalidation}}
    (tenant_id, resource_id, thread_id, entry_id, reason, source_entry_id, sequence, created_at)
  select p_tenant_id, p_resource_id, p_thread_id, e.id, 'source-invalidated', min(source.id), e.sequence, p_now
  from {{entries}} e
  cross join lateral jsonb_array_elements_text(coalesce(e.metadata -> '_lineage' -> 'sourceIds', '[]')) as source(id)
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = any(p_ids) and source.id <> e.id
    and (exists (select 1 from {{invalidation}} i
                 where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                   and i.thread_id = p_thread_id and i.entry_id = source.id)
         or exists (select 1 from {{entries}} x
                    where x.tenant_id = p_tenant_id and x.resource_id = p_resource_id
                      and x.thread_id = p_thread_id and x.id = source.id
                      and (not x.consent_visible or x.consent_revoked_at is not null or x.legal_hold)))
  group by e.id, e.sequence
  on conflict do nothing;
$$;
