-- API function (prism_memory/operations.py; security definer, see recall_v4).
--
-- Writes the entries of many threads of one tenant in one transaction: all of
-- them or none. p_resource_ids and p_thread_ids name each entry's thread and
-- run parallel to the other arrays, which mean what they mean for remember_v3;
-- the rows of one thread must be contiguous (PM002 otherwise), and an entry's
-- position ("entry N") in an error is its position within its thread's rows.
-- Arrays must be one-dimensional and start at index 1 (PM002 otherwise).
-- Every thread's lock is taken first, in lock-key order (the order every
-- batch uses, so concurrent batches cannot deadlock, even when two threads
-- share a lock key); then the threads are checked and written one by one in
-- (resource_id, thread_id) code-point order. Returns one row per thread, in
-- that order: entries written and the ids invalidated (as remember_v3
-- returns them).
create or replace function {{schema}}.remember_batch_v3(
  p_tenant_id text, p_resource_ids text[], p_thread_ids text[],
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_expires_at timestamptz[] default null, p_ttl interval[] default null,
  p_now timestamptz default now(), p_occurred_at timestamptz[] default null)
returns table (resource_id text, thread_id text, written integer, invalidated text[])
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_count integer := coalesce(cardinality(p_ids), 0);
  v_group record;
  v_key bigint;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_id_v1(p_tenant_id, 'tenant_id', 256, 'PM001');
  if exists (select 1
             from (values (array_ndims(p_resource_ids), array_lower(p_resource_ids, 1)),
                          (array_ndims(p_thread_ids), array_lower(p_thread_ids, 1)),
                          (array_ndims(p_ids), array_lower(p_ids, 1)),
                          (array_ndims(p_texts), array_lower(p_texts, 1)),
                          (array_ndims(p_embeddings), array_lower(p_embeddings, 1)),
                          (array_ndims(p_metadata), array_lower(p_metadata, 1)),
                          (array_ndims(p_sequences), array_lower(p_sequences, 1)),
                          (array_ndims(p_importance), array_lower(p_importance, 1)),
                          (array_ndims(p_consent), array_lower(p_consent, 1)),
                          (array_ndims(p_expires_at), array_lower(p_expires_at, 1)),
                          (array_ndims(p_ttl), array_lower(p_ttl, 1)),
                          (array_ndims(p_occurred_at), array_lower(p_occurred_at, 1))) as a(ndims, lower)
             where a.ndims > 1 or a.lower <> 1) then
    raise exception 'remember_batch_v3: arrays must be one-dimensional and start at index 1'
      using errcode = 'PM002';
  end if;
  if coalesce(cardinality(p_resource_ids), 0) <> v_count or coalesce(cardinality(p_thread_ids), 0) <> v_count
     or coalesce(cardinality(p_texts), 0) <> v_count or coalesce(cardinality(p_embeddings), 0) <> v_count
     or coalesce(cardinality(p_metadata), v_count) <> v_count or coalesce(cardinality(p_sequences), v_count) <> v_count
     or coalesce(cardinality(p_importance), v_count) <> v_count or coalesce(cardinality(p_consent), v_count) <> v_count
     or coalesce(cardinality(p_expires_at), v_count) <> v_count or coalesce(cardinality(p_ttl), v_count) <> v_count
     or coalesce(cardinality(p_occurred_at), v_count) <> v_count then
    raise exception 'remember_batch_v3: the argument arrays differ in length' using errcode = 'PM002';
  end if;
  -- The keys lock_thread_v1 takes, in one global order; remember_v3 takes its
  -- thread's again below (advisory locks are re-entrant).
  for v_key in
    select distinct hashtextextended(p_tenant_id || chr(31) || g.resource_id || chr(31) || g.thread_id, 0)
    from unnest(p_resource_ids, p_thread_ids) as g(resource_id, thread_id)
    where g.resource_id is not null and g.thread_id is not null
    order by 1
  loop
    perform lock_key_v1(p_tenant_id, v_key);
  end loop;
  for v_group in
    select g.resource_id, g.thread_id, min(g.ord)::integer as first, max(g.ord)::integer as last, count(*) as rows
    from unnest(p_resource_ids, p_thread_ids) with ordinality as g(resource_id, thread_id, ord)
    group by g.resource_id, g.thread_id
    order by g.resource_id collate "C", g.thread_id collate "C"
  loop
    if v_group.last - v_group.first + 1 <> v_group.rows then
      raise exception 'remember_batch_v3: the rows of thread % (resource %) are not contiguous',
        v_group.thread_id, v_group.resource_id using errcode = 'PM002';
    end if;
    return query
      select v_group.resource_id, v_group.thread_id, r.written, r.invalidated
      from remember_v3(p_tenant_id, v_group.resource_id, v_group.thread_id,
                       p_ids[v_group.first : v_group.last], p_texts[v_group.first : v_group.last],
                       p_embeddings[v_group.first : v_group.last], p_metadata[v_group.first : v_group.last],
                       p_sequences[v_group.first : v_group.last], p_importance[v_group.first : v_group.last],
                       p_consent[v_group.first : v_group.last], p_expires_at[v_group.first : v_group.last],
                       p_ttl[v_group.first : v_group.last], p_now,
                       p_occurred_at[v_group.first : v_group.last]) as r;
  end loop;
end;
$$;
