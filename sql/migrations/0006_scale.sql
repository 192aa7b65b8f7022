-- prism-memory schema revision 0006: scale.
--
-- remember_batch_v1: bulk ingest sends one tenant's entries for many threads
-- in one call instead of one call per thread; each thread's rows are written
-- by remember_v1, so every rule of a single remember (validation, sequences,
-- consent, lineage tombstones) holds unchanged.
--
-- recall_v2, same contract, new body and plan settings. A generic plan
-- expects a few rows per thread, so on a large thread it read the thread
-- through an index scan, merge-joined the tombstones, and joined each hit back
-- to its entry through the scope index (a scan of the thread per hit). Now
-- the hit and adjacent rows are joined back by ctid (the row scored, in the
-- same snapshot), and plain index scans and merge joins are off inside the
-- function: the thread is read by a bitmap scan and the tombstones are
-- hashed, which halves the cost of a 5,000-entry thread. Plain recall (no
-- scoring, grants, adjacency or explain) runs a statement a third the size,
-- which takes about 0.2 ms off every call.
--
-- invalidate_v1, same contract: each step of the lineage walk tested every
-- entry of the thread once per frontier id (up to 64); now once per step.
-- Template rules as in 0001; frozen once released.

{{pin_search_path}}

-- file functions/install_info_v1.sql
create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
set search_path from current
as $$
  select {{schema_version}}, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;
-- end of functions/install_info_v1.sql


-- file functions/remember_batch_v1.sql
-- Writes the entries of many threads of one tenant in one transaction: all of
-- them or none. p_resource_ids and p_thread_ids name each entry's thread and
-- run parallel to the other arrays, which mean what they mean for remember_v1;
-- the rows of one thread must be contiguous (PM002 otherwise), and an entry's
-- position ("entry N") in an error is its position within its thread's rows.
-- Arrays must be one-dimensional and start at index 1 (PM002 otherwise).
-- Every thread's lock is taken first, in lock-key order (the order every
-- batch uses, so concurrent batches cannot deadlock, even when two threads
-- share a lock key); then the threads are checked and written one by one in
-- (resource_id, thread_id) code-point order. Returns one row per thread, in
-- that order: entries written and the ids invalidated (as remember_v1
-- returns them).
create or replace function {{schema}}.remember_batch_v1(
  p_tenant_id text, p_resource_ids text[], p_thread_ids text[],
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_now timestamptz default now())
returns table (resource_id text, thread_id text, written integer, invalidated text[])
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_count integer := coalesce(cardinality(p_ids), 0);
  v_group record;
  v_key bigint;
begin
  if p_tenant_id is null or is_blank_v1(p_tenant_id) then
    raise exception 'tenant_id must be a non-empty string' using errcode = 'PM001';
  end if;
  if exists (select 1
             from (values (array_ndims(p_resource_ids), array_lower(p_resource_ids, 1)),
                          (array_ndims(p_thread_ids), array_lower(p_thread_ids, 1)),
                          (array_ndims(p_ids), array_lower(p_ids, 1)),
                          (array_ndims(p_texts), array_lower(p_texts, 1)),
                          (array_ndims(p_embeddings), array_lower(p_embeddings, 1)),
                          (array_ndims(p_metadata), array_lower(p_metadata, 1)),
                          (array_ndims(p_sequences), array_lower(p_sequences, 1)),
                          (array_ndims(p_importance), array_lower(p_importance, 1)),
                          (array_ndims(p_consent), array_lower(p_consent, 1))) as a(ndims, lower)
             where a.ndims > 1 or a.lower <> 1) then
    raise exception 'remember_batch_v1: arrays must be one-dimensional and start at index 1'
      using errcode = 'PM002';
  end if;
  if coalesce(cardinality(p_resource_ids), 0) <> v_count or coalesce(cardinality(p_thread_ids), 0) <> v_count
     or coalesce(cardinality(p_texts), 0) <> v_count or coalesce(cardinality(p_embeddings), 0) <> v_count
     or coalesce(cardinality(p_metadata), v_count) <> v_count or coalesce(cardinality(p_sequences), v_count) <> v_count
     or coalesce(cardinality(p_importance), v_count) <> v_count or coalesce(cardinality(p_consent), v_count) <> v_count then
    raise exception 'remember_batch_v1: the argument arrays differ in length' using errcode = 'PM002';
  end if;
  -- The keys lock_thread_v1 takes, in one global order; remember_v1 takes its
  -- thread's again below (advisory locks are re-entrant).
  for v_key in
    select distinct hashtextextended(p_tenant_id || chr(31) || g.resource_id || chr(31) || g.thread_id, 0)
    from unnest(p_resource_ids, p_thread_ids) as g(resource_id, thread_id)
    where g.resource_id is not null and g.thread_id is not null
    order by 1
  loop
    perform pg_advisory_xact_lock(v_key);
  end loop;
  for v_group in
    select g.resource_id, g.thread_id, min(g.ord)::integer as first, max(g.ord)::integer as last, count(*) as rows
    from unnest(p_resource_ids, p_thread_ids) with ordinality as g(resource_id, thread_id, ord)
    group by g.resource_id, g.thread_id
    order by g.resource_id collate "C", g.thread_id collate "C"
  loop
    if v_group.last - v_group.first + 1 <> v_group.rows then
      raise exception 'remember_batch_v1: the rows of thread % (resource %) are not contiguous',
        v_group.thread_id, v_group.resource_id using errcode = 'PM002';
    end if;
    return query
      select v_group.resource_id, v_group.thread_id, r.written, r.invalidated
      from remember_v1(p_tenant_id, v_group.resource_id, v_group.thread_id,
                       p_ids[v_group.first : v_group.last], p_texts[v_group.first : v_group.last],
                       p_embeddings[v_group.first : v_group.last], p_metadata[v_group.first : v_group.last],
                       p_sequences[v_group.first : v_group.last], p_importance[v_group.first : v_group.last],
                       p_consent[v_group.first : v_group.last], p_now) as r;
  end loop;
end;
$$;
-- end of functions/remember_batch_v1.sql


revoke execute on function {{schema}}.remember_batch_v1(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz) from public;
alter function {{schema}}.remember_batch_v1(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz) security definer;

-- file functions/invalidate_v1.sql
-- Tombstones p_ids and their lineage dependents (contract as in revision 0001);
-- the walk's step is one pass over the thread rather than one per frontier id.
create or replace function {{schema}}.invalidate_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_reason text,
  p_now timestamptz default now())
returns table (entry_id text)
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_visited text[] := array(select distinct x from unnest(p_ids) as x);
  v_frontier text[] := v_visited;
  v_edges text[] := '{}';  -- 'source' || chr(31) || 'dependent'
  v_found text[];
  v_new text[];
  v_depth integer := 0;
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if coalesce(cardinality(p_ids), 0) not between 1 and 64 then
    raise exception 'invalidate: between 1 and 64 ids per call, got %', coalesce(cardinality(p_ids), 0)
      using errcode = 'PM005';
  end if;
  if p_reason is null
     or p_reason not in ('deleted', 'held', 'revoked', 'corrected', 'expired', 'source-invalidated') then
    raise exception 'invalidate: unknown reason %', p_reason using errcode = 'PM002';
  end if;
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);

  while cardinality(v_frontier) > 0 loop
    v_depth := v_depth + 1;
    -- One pass over the thread per step: the entries naming any frontier id
    -- (?| is one test per row; an entry without lineage fails it at once), then
    -- their edges from the frontier.
    v_found := array(
      select distinct source.id || chr(31) || d.id
      from {{entries}} d
      cross join lateral jsonb_array_elements_text(d.metadata -> '_lineage' -> 'sourceIds') as source(id)
      where d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
        and (d.metadata -> '_lineage' -> 'sourceIds') ?| v_frontier
        and source.id = any(v_frontier) and d.id <> source.id);
    v_edges := array(select distinct x from unnest(v_edges || v_found) as x);
    if cardinality(v_edges) > 256 then
      raise exception 'lineage walk passed the cap of 256 edges' using errcode = 'PM010';
    end if;
    v_new := array(select distinct split_part(x, chr(31), 2) from unnest(v_found) as x
                   except select unnest(v_visited));
    if cardinality(v_new) > 0 and v_depth > 8 then
      raise exception 'lineage walk passed the cap of depth 8' using errcode = 'PM010';
    end if;
    v_visited := v_visited || v_new;
    v_frontier := v_new;
  end loop;

  insert into {{invalidation}}
    (tenant_id, resource_id, thread_id, entry_id, reason, source_entry_id, sequence, created_at)
  select p_tenant_id, p_resource_id, p_thread_id, e.id, p_reason,
         case when e.id = any(p_ids) then e.id end, e.sequence, p_now
  from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    and e.id = any(v_visited)
    and (p_reason <> 'corrected' or not (e.id = any(p_ids)))
  on conflict do nothing;
  if p_reason = 'held' then
    update {{entries}} e set legal_hold = true, updated_at = p_now
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids);
  end if;

  return query
    select e.id from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and e.id = any(v_visited)
      and (p_reason <> 'corrected' or not (e.id = any(p_ids)))
    order by e.id collate "C";
end;
$$;
-- end of functions/invalidate_v1.sql


-- file functions/recall_v2.sql
-- Semantic recall (contract as in revision 0003); see the header for what changed.
create or replace function {{schema}}.recall_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_query_embedding vector, p_query_text text default '',
  p_top_k integer default 8, p_message_range integer default 0,
  p_require_consent boolean default false, p_share_parent_thread_id text default null,
  p_now timestamptz default now(),
  p_recency_weight double precision default null, p_importance_weight double precision default null,
  p_half_life_ms double precision default null, p_explain boolean default false)
returns table (kind text, rank integer, resource_id text, thread_id text, id text, text text,
               metadata jsonb, sequence bigint, importance double precision,
               similarity double precision, lexical double precision, recency double precision,
               score double precision, created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer
set search_path from current
set plan_cache_mode = force_generic_plan
set random_page_cost = 1.1
set enable_indexscan = off
set enable_mergejoin = off
as $$
declare
  v_weights record := scoring_weights_v1(p_recency_weight, p_importance_weight, p_half_life_ms);
  v_scored boolean := p_recency_weight is not null or p_importance_weight is not null;
  v_terms text[] := lexical_terms_v1(coalesce(p_query_text, ''));
  -- Any-term query: terms hold no quote or backslash, so quote_literal is a safe operand.
  v_any_term tsquery := (select string_agg(quote_literal(term), ' | ')::tsquery from unnest(v_terms) as term);
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_top_k is null or p_top_k < 1 or p_top_k > 32 then
    raise exception 'top_k must be between 1 and 32, got %', p_top_k using errcode = 'PM005';
  end if;
  if p_message_range is null or p_message_range < 0 or p_message_range > 4 then
    raise exception 'message_range must be between 0 and 4, got %', p_message_range
      using errcode = 'PM005';
  end if;
  if octet_length(p_query_text) > 65536 then
    raise exception 'the query text is % bytes, over the 64 KiB hard cap', octet_length(p_query_text)
      using errcode = 'PM006';
  end if;
  if p_share_parent_thread_id is not null and is_blank_v1(p_share_parent_thread_id) then
    raise exception 'share_from_parent_thread_id must not be blank' using errcode = 'PM001';
  end if;
  if p_explain is null then
    raise exception 'explain must be true or false' using errcode = 'PM005';
  end if;
  perform assert_embedding_v1(p_query_embedding, 'the query embedding');
  perform assert_dimensions_v1(p_tenant_id, p_resource_id, p_thread_id, vector_dims(p_query_embedding));

  -- Plain recall of one thread (no scoring, grants, adjacency or explain): the
  -- same hits as the general statement below, from a plan a third its size.
  if not v_scored and p_share_parent_thread_id is null and p_message_range = 0 and not p_explain then
    return query
      select 'hit'::text,
             (row_number() over (order by h.score desc, h.sequence asc, h.id collate "C" asc))::integer,
             e.resource_id, e.thread_id, e.id, e.text, e.metadata, e.sequence, e.importance,
             h.similarity, h.lexical, null::float8, h.score, e.created_at, e.updated_at
      from (select s.row_id, s.id, s.sequence, s.similarity, s.lexical,
                   s.similarity + 0.25::float8 * s.lexical as score
            from (select e.ctid as row_id, e.id, e.sequence,
                         1::float8 - (e.embedding <=> p_query_embedding) as similarity,
                         lexical_score_v1(e.text_tsv, v_terms, v_any_term) as lexical
                  from {{entries}} e
                  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
                    and e.thread_id = p_thread_id
                    and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold,
                                         e.consent_source, p_require_consent)
                    and not exists (select 1 from {{invalidation}} i
                                    where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                      and i.thread_id = p_thread_id and i.entry_id = e.id)
                  offset 0) as s  -- each row's distance and lexical score computed once
            order by score desc, s.sequence asc, s.id collate "C" asc
            limit p_top_k) as h
      join {{entries}} e on e.ctid = h.row_id  -- the row scored above, in this statement's snapshot
      order by 2;
    return;
  end if;

  return query
    with grants as (
      select g.resource_id, g.parent_thread_id as thread_id, g.source_ids
      from {{share_grant}} g
      where p_share_parent_thread_id is not null
        and g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
        and g.child_thread_id = p_thread_id and g.parent_thread_id = p_share_parent_thread_id
        and (g.expires_at is null or g.expires_at > p_now)
    ), scored as (
      (select e.resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at, e.ctid as row_id,
              1::float8 - (e.embedding <=> p_query_embedding) as similarity,
              lexical_score_v1(e.text_tsv, v_terms, v_any_term) as lexical
       from {{entries}} e
       where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
         and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                              p_require_consent)
         and not exists (select 1 from {{invalidation}} i
                         where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                           and i.thread_id = p_thread_id and i.entry_id = e.id)
       offset 0)
      union all
      (select e.resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at, e.ctid as row_id,
              1::float8 - (e.embedding <=> p_query_embedding) as similarity,
              lexical_score_v1(e.text_tsv, v_terms, v_any_term) as lexical
       from grants g
       join {{entries}} e
         on e.tenant_id = p_tenant_id and e.resource_id = g.resource_id
        and e.thread_id = g.thread_id and e.id = any(g.source_ids)
       where vector_dims(e.embedding) = vector_dims(p_query_embedding)
         and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                              p_require_consent)
         and not exists (select 1 from {{invalidation}} i
                         where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                           and i.thread_id = e.thread_id and i.entry_id = e.id)
       offset 0)
    ), candidates as (
      -- Plain recall keeps top_k; scoring re-ranks the top (top_k x 4).
      select s.*, s.similarity + 0.25::float8 * s.lexical as base
      from scored s
      order by s.similarity + 0.25::float8 * s.lexical desc, s.sequence asc, s.id collate "C" asc,
               s.thread_id collate "C" asc, s.resource_id collate "C" asc
      limit case when v_scored then p_top_k * 4 else p_top_k end
    ), blended as (
      select c.resource_id, c.thread_id, c.id, c.sequence, c.row_id, c.similarity, c.lexical,
             case when v_scored and p_half_life_ms is not null
                  then recency_v1(p_now, c.created_at, p_half_life_ms)
             end as recency,
             case when v_scored then greatest(0::float8, least(1::float8, coalesce(c.importance, 1::float8)))
                  else c.importance end as importance,
             c.base
      from candidates c
    ), hits as (
      select b.resource_id, b.thread_id, b.id, b.sequence, b.row_id, b.similarity, b.lexical, b.recency, b.importance,
             case when v_scored
                  then v_weights.similarity_weight * b.base
                       + v_weights.recency_weight * coalesce(b.recency, 0::float8)
                       + v_weights.importance_weight * b.importance
                  else b.base end as score
      from blended b
      order by score desc, b.sequence asc, b.id collate "C" asc,
               b.thread_id collate "C" asc, b.resource_id collate "C" asc
      limit p_top_k
    ), adjacent as (
      select distinct e.resource_id, e.thread_id, e.id, e.sequence, e.ctid as row_id
      from hits h
      join {{entries}} e
        on e.tenant_id = p_tenant_id and e.resource_id = h.resource_id and e.thread_id = h.thread_id
       and e.sequence between h.sequence - p_message_range and h.sequence + p_message_range
      where p_message_range > 0
        and not exists (select 1 from hits r
                        where r.resource_id = e.resource_id and r.thread_id = e.thread_id and r.id = e.id)
        and ((e.resource_id = p_resource_id and e.thread_id = p_thread_id)
             or exists (select 1 from grants g
                        where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                          and e.id = any(g.source_ids)))
        and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                             p_require_consent)
        and not exists (select 1 from {{invalidation}} i
                        where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                          and i.thread_id = e.thread_id and i.entry_id = e.id)
    ), gates as (
      -- Only with p_explain: the thread's entries and the entries live grants
      -- name (nothing else of another thread), each counted at the first gate
      -- that removes it.
      select case
               when not (e.resource_id = p_resource_id and e.thread_id = p_thread_id)
                    and vector_dims(e.embedding) <> vector_dims(p_query_embedding) then 'scope'
               when e.legal_hold then 'hold'
               when not is_injectable_v1(e.consent_visible, e.consent_revoked_at, false, e.consent_source,
                                         p_require_consent) then 'consent'
               when exists (select 1 from {{invalidation}} i
                            where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                              and i.thread_id = e.thread_id and i.entry_id = e.id) then 'invalidation'
             end as gate
      from {{entries}} e
      where p_explain
        and e.tenant_id = p_tenant_id
        and ((e.resource_id = p_resource_id and e.thread_id = p_thread_id)
             or exists (select 1 from grants g
                        where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                          and e.id = any(g.source_ids)))
    ), picked as (
      select 'hit'::text as kind,
             (row_number() over (order by h.score desc, h.sequence asc, h.id collate "C" asc,
                                          h.thread_id collate "C" asc, h.resource_id collate "C" asc))::integer as rank,
             h.resource_id, h.thread_id, h.id, h.row_id, h.similarity, h.lexical, h.recency, h.importance, h.score
      from hits h
      union all
      select 'adjacent'::text,
             (row_number() over (order by a.sequence, a.id collate "C", a.thread_id collate "C",
                                          a.resource_id collate "C"))::integer,
             a.resource_id, a.thread_id, a.id, a.row_id, null::float8, null::float8, null::float8, null::float8,
             null::float8
      from adjacent a
    )
    select p.kind, p.rank, e.resource_id, e.thread_id, e.id, e.text, e.metadata, e.sequence,
           case when p.kind = 'hit' then p.importance else e.importance end,
           p.similarity, p.lexical, p.recency, p.score, e.created_at, e.updated_at
    from picked p
    join {{entries}} e on e.ctid = p.row_id  -- the row scored above, in this statement's snapshot
    union all
    select 'gate'::text, coalesce(n.removed, 0)::integer, null::text, null::text, g.gate, null::text,
           null::jsonb, null::bigint, null::float8, null::float8, null::float8, null::float8, null::float8,
           null::timestamptz, null::timestamptz
    from unnest(array['scope', 'hold', 'consent', 'invalidation']) with ordinality as g(gate, position)
    left join (select x.gate, count(*) as removed from gates x where x.gate is not null group by x.gate) n
      on n.gate = g.gate
    where p_explain
    order by 1 desc, 2;
end;
$$;
-- end of functions/recall_v2.sql


reset search_path;
