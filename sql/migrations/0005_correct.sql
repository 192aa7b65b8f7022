-- prism-memory schema revision 0005: correct_v2.
--
-- correct_v1 invalidates the corrected entry's dependents but never the entry
-- itself; in a lineage cycle (a derived from c, c derived from a) that left the
-- entry injectable although one of its own sources had just been invalidated.
-- correct_v2 re-derives the corrected entry from its sources afterwards
-- ("multi-source facts stay injectable only if none of their sources are
-- invalidated"). correct_v1 stays for direct callers. Template rules as in
-- 0001; frozen once released.

select pg_catalog.set_config(
  'search_path',
  pg_catalog.format('pg_catalog, %I, %I, pg_temp', {{schema_literal}},
    (select n.nspname from pg_catalog.pg_extension x
     join pg_catalog.pg_namespace n on n.oid = x.extnamespace
     where x.extname = 'vector')),
  false);

create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
set search_path from current
as $$
  select 5, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;

-- Replaces the text and embedding of one entry, invalidates its dependents,
-- then re-derives the entry itself from its sources; returns the record and
-- every id invalidated (the entry last, when it is one of them).
create function {{schema}}.correct_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_text text, p_embedding vector, p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile
set search_path from current
as $$
declare
  v_invalidated text[];
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if p_text is null or is_blank_v1(p_text) then
    raise exception 'the corrected text must not be blank' using errcode = 'PM002';
  end if;
  if octet_length(p_text) > 67108864 then
    raise exception 'the corrected text is over the 64 MiB hard cap' using errcode = 'PM006';
  end if;
  perform assert_embedding_v1(p_embedding, 'the embedding');
  perform assert_dimensions_v1(p_tenant_id, p_resource_id, p_thread_id, vector_dims(p_embedding));
  perform 1 from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id
  for update;
  if not found then
    raise exception 'no entry % in this thread', p_entry_id using errcode = 'PM011';
  end if;
  v_invalidated := array(select x.entry_id
                         from invalidate_v1(p_tenant_id, p_resource_id, p_thread_id,
                                            array[p_entry_id], 'corrected', p_now) as x);
  update {{entries}} e
  set text = p_text, embedding = p_embedding,
      metadata = jsonb_set(e.metadata, '{_lineage}',
                           coalesce(e.metadata -> '_lineage', '{"sourceIds": []}'::jsonb)
                           || '{"reason": "corrected"}'),
      updated_at = p_now
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id;
  -- The corrected entry keeps its lineage: if the walk just invalidated one of
  -- its own sources (a lineage cycle), it is invalid too.
  if not exists (select 1 from {{invalidation}} i
                 where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                   and i.thread_id = p_thread_id and i.entry_id = p_entry_id) then
    perform tombstone_from_sources_v1(p_tenant_id, p_resource_id, p_thread_id, array[p_entry_id], p_now);
    if exists (select 1 from {{invalidation}} i
                         where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                           and i.thread_id = p_thread_id and i.entry_id = p_entry_id) then
      v_invalidated := v_invalidated || p_entry_id;
    end if;
  end if;
  return query
    select e.id, e.text, e.metadata, e.sequence, e.importance, e.consent_source, e.consent_scope,
           e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold,
           e.created_at, e.updated_at, v_invalidated
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = p_entry_id;
end;
$$;

revoke execute on function {{schema}}.correct_v2(text, text, text, text, text, vector, timestamptz) from public;
alter function {{schema}}.correct_v2(text, text, text, text, text, vector, timestamptz) security definer;

reset search_path;
