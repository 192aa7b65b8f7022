-- Replaces an entry's text and embedding, keeps its consent, sets
-- metadata._lineage.reason to 'corrected' and invalidates its dependents
-- (not the entry itself: "corrected keeps the source"). The corrected entry
-- keeps its lineage, so it is then re-derived from its sources: if the walk
-- invalidated one of its own sources (a lineage cycle), it is invalid too
-- ("multi-source facts stay injectable only if none of their sources are
-- invalidated"). The entry leaves every share grant of the thread
-- (unshare_v1). Returns the record (entry_record_v2: with its occurred_at)
-- and every id invalidated (the entry last, when it is one of them). PM002 for a blank text, PM006 over 64 MiB, PM003 /
-- PM004 for the embedding, PM011 when the thread holds no such entry.
create or replace function {{schema}}.correct_v3(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_text text, p_embedding vector, p_now timestamptz default now())
returns setof {{schema}}.entry_record_v2
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_record {{schema}}.entry_record_v2;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if p_text is null or is_blank_v1(p_text) then
    raise exception 'the corrected text must not be blank' using errcode = 'PM002';
  end if;
  if octet_length(p_text) > 67108864 then
    raise exception 'the corrected text is over the 64 MiB hard cap' using errcode = 'PM006';
  end if;
  perform assert_embedding_v1(p_embedding, 'the embedding');
  perform assert_dimensions_v2(p_tenant_id, p_resource_id, p_thread_id, vector_dims(p_embedding));
  perform 1 from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id
  for update;
  if not found then
    raise exception 'no entry % in this thread', p_entry_id using errcode = 'PM011';
  end if;
  v_record.invalidated := array(select x.entry_id
                                from invalidate_v1(p_tenant_id, p_resource_id, p_thread_id,
                                                   array[p_entry_id], 'corrected', p_now) as x);
  update {{entries}} e
  set text = p_text, embedding = p_embedding,
      metadata = jsonb_set(e.metadata, '{_lineage}',
                           coalesce(e.metadata -> '_lineage', '{"sourceIds": []}'::jsonb)
                           || '{"reason": "corrected"}'),
      updated_at = p_now
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id
  returning e.id, e.text, e.metadata, e.sequence, e.importance, e.consent_source, e.consent_scope,
            e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold,
            e.created_at, e.updated_at, coalesce(e.occurred_at, e.created_at)
  into v_record.id, v_record.text, v_record.metadata, v_record.sequence, v_record.importance,
       v_record.consent_source, v_record.consent_scope, v_record.consent_visible,
       v_record.consent_granted_at, v_record.consent_revoked_at, v_record.legal_hold,
       v_record.created_at, v_record.updated_at, v_record.occurred_at;
  perform unshare_v1(p_tenant_id, p_resource_id, p_thread_id, array[p_entry_id]);
  if not exists (select 1 from {{invalidation}} i
                 where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                   and i.thread_id = p_thread_id and i.entry_id = p_entry_id) then
    perform tombstone_from_sources_v1(p_tenant_id, p_resource_id, p_thread_id, array[p_entry_id], p_now);
    if exists (select 1 from {{invalidation}} i
               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                 and i.thread_id = p_thread_id and i.entry_id = p_entry_id) then
      v_record.invalidated := v_record.invalidated || p_entry_id;
    end if;
  end if;
  return next v_record;
end;
$$;
