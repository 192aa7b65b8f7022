-- Upserts a batch of chunks (1..1000) into one generation of a scope (the
-- current one when p_generation is NULL), all or nothing. Arrays are parallel;
-- p_metadata and p_access_versions may be NULL. Returns the number written.
create or replace function {{schema}}.rag_upsert_v1(
  p_tenant_id text, p_scope text,
  p_ids text[], p_source_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_access_versions bigint[] default null,
  p_generation bigint default null)
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_count integer := coalesce(cardinality(p_ids), 0);
  v_generation bigint;
  v_problem text;
begin
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
  perform rag_assert_generation_v1(p_generation);
  if v_count = 0 then
    return 0;
  end if;
  if v_count > 1000 then
    raise exception 'upsert takes at most 1000 chunks per call, got %', v_count using errcode = 'PM005';
  end if;
  if coalesce(cardinality(p_source_ids), 0) <> v_count
     or coalesce(cardinality(p_texts), 0) <> v_count
     or coalesce(cardinality(p_embeddings), 0) <> v_count
     or coalesce(cardinality(p_metadata), v_count) <> v_count
     or coalesce(cardinality(p_access_versions), v_count) <> v_count then
    raise exception 'rag_upsert_v1: the argument arrays differ in length' using errcode = 'PM002';
  end if;
  -- The first problem of the first chunk that has one.
  select x.problem into v_problem
  from (select c.ord, case
                 when not is_id_v1(c.id, 512)
                   then format('chunk %s: id must be a non-blank string of at most 512 bytes', c.ord)
                 when not is_id_v1(c.source_id, 512)
                   then format('chunk %s (%s): source_id must be a non-blank string of at most 512 bytes', c.ord, c.id)
                 when c.text is null or is_blank_v1(c.text)
                   then format('chunk %s (%s): text must not be blank', c.ord, c.id)
                 when c.metadata is not null and jsonb_typeof(c.metadata) <> 'object'
                   then format('chunk %s (%s): metadata must be a JSON object', c.ord, c.id)
                 when c.access_version < 0
                   then format('chunk %s (%s): access_version must be >= 0', c.ord, c.id)
                 when c.embedding is null
                   then format('chunk %s (%s): embedding is missing', c.ord, c.id)
               end as problem
        from unnest(p_ids, p_source_ids, p_texts, p_metadata, p_access_versions, p_embeddings)
               with ordinality as c(id, source_id, text, metadata, access_version, embedding, ord)) as x
  where x.problem is not null
  order by x.ord
  limit 1;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'PM002';
  end if;
  if (select count(distinct id) from unnest(p_ids) as id) <> v_count then
    raise exception 'rag_upsert_v1: a chunk id appears twice in the batch' using errcode = 'PM002';
  end if;
  if (select max(octet_length(t) + coalesce(octet_length(m::text), 0))
      from unnest(p_texts, p_metadata) as x(t, m)) > 8388608 then
    raise exception 'a chunk is over the 8 MiB hard cap on text plus metadata' using errcode = 'PM006';
  end if;
  perform assert_embedding_v1(v, 'an embedding') from unnest(p_embeddings) as v;
  if (select count(distinct vector_dims(v)) from unnest(p_embeddings) as v) > 1 then
    raise exception 'the embeddings in one batch differ in dimensions' using errcode = 'PM004';
  end if;

  -- Serialises the scope's writers: an unpinned scope's first width is fixed
  -- before a second writer checks it.
  perform lock_key_v1(p_tenant_id, hashtextextended('rag' || chr(31) || p_tenant_id || chr(31) || p_scope, 0));
  perform assert_dimensions_v2(p_tenant_id, p_scope, null, vector_dims(p_embeddings[1]));
  v_generation := coalesce(p_generation, rag_get_generation_v1(p_tenant_id, p_scope));

  insert into {{rag_chunk}} as t
    (tenant_id, scope, generation, id, source_id, text, metadata, embedding, access_version,
     created_at, updated_at)
  select p_tenant_id, p_scope, v_generation, c.id, c.source_id, c.text,
         coalesce(c.metadata, '{}'::jsonb), c.embedding, c.access_version, now(), now()
  from unnest(p_ids, p_source_ids, p_texts, p_embeddings, p_metadata, p_access_versions)
         as c(id, source_id, text, embedding, metadata, access_version)
  on conflict (tenant_id, scope, generation, id) do update
    set source_id = excluded.source_id, text = excluded.text, metadata = excluded.metadata,
        embedding = excluded.embedding, access_version = excluded.access_version, updated_at = excluded.updated_at;
  return v_count;
end;
$$;
