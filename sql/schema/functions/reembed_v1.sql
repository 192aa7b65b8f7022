-- Replaces the embeddings of existing entries (rebuild_index) whose text is
-- still the text that was embedded (a concurrent correct_v1 wins); text,
-- consent and timestamps are untouched. Returns how many entries were updated.
create or replace function {{schema}}.reembed_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_texts text[],
  p_embeddings vector[])
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_updated integer;
begin
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if coalesce(cardinality(p_ids), 0) <> coalesce(cardinality(p_embeddings), 0)
     or coalesce(cardinality(p_ids), 0) <> coalesce(cardinality(p_texts), 0)
     or coalesce(cardinality(p_ids), 0) > 128 then
    raise exception 'reembed: ids, texts and embeddings must pair up, at most 128' using errcode = 'PM005';
  end if;
  if coalesce(cardinality(p_ids), 0) = 0 then
    return 0;
  end if;
  perform assert_embedding_v1(v, 'an embedding') from unnest(p_embeddings) as v;
  perform assert_dimensions_v2(p_tenant_id, p_resource_id, p_thread_id, vector_dims(v))
  from unnest(p_embeddings) as v;
  update {{entries}} e set embedding = x.embedding
  from unnest(p_ids, p_texts, p_embeddings) as x(id, text, embedding)
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = x.id and e.text = x.text;
  get diagnostics v_updated = row_count;
  return v_updated;
end;
$$;
