-- Reverts revision 0012 (and brings back revision 0011's recall_guarded_v1).

{{pin_search_path}}

-- file functions/install_info_v1.sql
-- What this install is: checked by the Python caller before any other call.
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

drop function {{schema}}.assert_now_v1(timestamptz);
drop function {{schema}}.assert_resource_cursor_v1(text, bigint, text);
drop function {{schema}}.count_resource_entries_v1(text, text);
drop function {{schema}}.get_retention_policy_v1(text, text, text);
drop function {{schema}}.invalidate_resource_v1(text, text, text, bigint, text, integer, boolean, timestamptz);
drop function {{schema}}.is_live_v1(timestamptz, timestamptz, timestamptz, timestamptz);
drop function {{schema}}.leaves_thread_v1(text);
drop function {{schema}}.list_entries_v2(text, text, text, bigint, text, integer, boolean, timestamptz);
drop function {{schema}}.list_resource_entries_v1(text, text, text, bigint, text, integer, boolean, timestamptz);
drop function {{schema}}.purge_resource_v1(text, text, text[], text[]);
drop function {{schema}}.recall_top_v1({{schema}}.recall_probe_v1[], text, text, text[], tsquery, timestamptz, timestamptz, integer);
drop function {{schema}}.recall_v3(text, text, text, vector, text, integer, integer, boolean, text, boolean, timestamptz,
                                  double precision, double precision, double precision, boolean, text);
drop function {{schema}}.remember_batch_v2(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[],
                                          jsonb[], timestamptz[], interval[], timestamptz);
drop function {{schema}}.remember_v2(text, text, text, text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[],
                                    timestamptz[], interval[], timestamptz);
drop function {{schema}}.retention_candidates_v2(text, text, text, double precision, integer, integer, timestamptz);
drop function {{schema}}.retention_cutoff_v1(text, text, text, timestamptz);
drop function {{schema}}.set_retention_policy_v1(text, text, text, double precision, timestamptz);
-- file functions/assert_embedding_model_v1.sql
-- Raises PM017 unless p_model_id is a non-blank string of at most 256 bytes
-- and p_dimensions a width in 1..16000: the embedder identity the guard
-- functions take (use_embedding_model_v1, recall_guarded_v1), as
-- prism_memory.checks.check_model checks it.
create or replace function {{schema}}.assert_embedding_model_v1(p_model_id text, p_dimensions integer)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_model_id is null or is_blank_v1(p_model_id) or octet_length(p_model_id) > 256 then
    raise exception 'the embedding model id must be a non-blank string of at most 256 bytes' using errcode = 'PM017';
  end if;
  if p_dimensions is null or p_dimensions not between 1 and 16000 then
    raise exception 'the embedding model''s width must be between 1 and 16000, got %', p_dimensions
      using errcode = 'PM017';
  end if;
end;
$$;
-- end of functions/assert_embedding_model_v1.sql

-- file functions/list_entries_v1.sql
-- Entries of the thread after the (sequence, id) cursor, in (sequence, id)
-- order, at most p_limit (1..200). With p_exportable only what an export may
-- contain: explicitly consented, visible, not revoked, not held, not
-- tombstoned.
create or replace function {{schema}}.list_entries_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false)
returns setof {{schema}}.entry_record_v1
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_limit is null or p_limit not between 1 and 200 then
    raise exception 'limit must be between 1 and 200, got %', p_limit using errcode = 'PM005';
  end if;
  return query
    select e.id, e.text, e.metadata, e.sequence, e.importance, e.consent_source, e.consent_scope,
           e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold,
           e.created_at, e.updated_at, '{}'::text[]
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and (p_after_sequence is null
           or (e.sequence, e.id collate "C") > (p_after_sequence, p_after_id collate "C"))
      and (not p_exportable
           or (is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source, true)
               and not exists (select 1 from {{invalidation}} i
                               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                 and i.thread_id = p_thread_id and i.entry_id = e.id)))
    order by e.sequence, e.id collate "C"
    limit p_limit;
end;
$$;
-- end of functions/list_entries_v1.sql

-- file functions/recall_v2.sql
-- API function (prism_memory/operations.py): it runs as the schema owner
-- (security definer) on the search_path install.sql pins (pg_catalog, this
-- schema, pgvector's schema, pg_temp last); EXECUTE belongs to the owner and
-- to the application roles grant_app_role names, and a tenant-bound role may
-- call it for its own tenants only (tenant_access_v1, on the server's clock).
--
-- Semantic recall over one thread, behind the consent gate, plus the entries a
-- live share grant from p_share_parent_thread_id lets this thread read.
--   similarity = 1 - cosine distance (pgvector <=>), in [-1, 1]
--   lexical    = share of the query's terms (query_terms_v2: at most 32) found in the entry's
--                text_tsv (lexical_terms_v2), in [0, 1]
--   score      = similarity + 0.25 * lexical
-- Only injectable entries take part: visible, not revoked, not held, not
-- tombstoned (an indexed NOT EXISTS), explicitly consented when
-- p_require_consent. Hits (kind 'hit', rank 1..top_k) are ordered by score
-- desc, sequence asc, id asc (code-point order), then thread and resource;
-- then come the entries within p_message_range sequences of a hit in the same
-- thread, under the same gate and grants (kind 'adjacent', ordered by
-- sequence, id), with no scores.
--
-- Opt-in composite scoring: with weights (scoring_weights_v1), the top
-- (top_k x 4) candidates by the default score are re-ranked by
--   score = w_similarity * (similarity + 0.25 * lexical)
--         + w_recency * 0.5 ^ (max(0, now - created_at in ms) / half_life_ms)
--         + w_importance * coalesce(importance, 1.0)
-- and cut to top_k, ties by sequence asc, id asc (code-point order); the hit
-- rows carry recency and the importance used. Without weights, recency is
-- NULL and importance is as stored. With p_explain, rows of kind 'gate'
-- follow: for each gate (id = scope, hold, consent, invalidation), rank = how
-- many entries it removed, each counted at the first gate it fails in that
-- order. scope counts the parent thread's entries outside a live share grant
-- (or of another width) when p_share_parent_thread_id is set.
--
-- Plan: one cached generic plan (planning per call costs more than the scan
-- of a thread), except under Citus, which routes custom plans only. Plain index scans and merge joins are off, so the thread is
-- read by a bitmap scan and the tombstones are hashed; hits and adjacent rows
-- are joined back to their entries by tenant and ctid (the row scored, same
-- snapshot; ctids repeat across a distributed table's shards).
-- A plain recall (no scoring, grants, adjacency or explain) takes a shorter
-- statement. Errors: PM001 scope, PM005 top_k (1..32) or message_range
-- (0..4), PM006 a query over 64 KiB, PM008 a blank query, PM003/PM004 the
-- query embedding, PM015 scoring weights.
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
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_weights record := scoring_weights_v1(p_recency_weight, p_importance_weight, p_half_life_ms);
  v_scored boolean := p_recency_weight is not null or p_importance_weight is not null;
  v_terms text[] := query_terms_v2(coalesce(p_query_text, ''));
  -- Any-term query: terms hold no quote or backslash, so quote_literal is a safe operand.
  v_any_term tsquery := (select string_agg(quote_literal(term), ' | ')::tsquery from unnest(v_terms) as term);
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  if citus_installed_v1() then
    -- Under Citus a generic plan cannot be routed to the tenant's shard: plan
    -- each call (the function's SET restores the generic mode on return).
    perform set_config('plan_cache_mode', 'force_custom_plan', true);
  end if;
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
  if p_query_text is null or is_blank_v1(p_query_text) then
    raise exception 'the query text must not be blank' using errcode = 'PM008';
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
      join {{entries}} e on e.tenant_id = p_tenant_id and e.ctid = h.row_id  -- the row scored above, in this snapshot
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
    join {{entries}} e on e.tenant_id = p_tenant_id and e.ctid = p.row_id  -- the row scored above, in this snapshot
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
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_count integer := coalesce(cardinality(p_ids), 0);
  v_group record;
  v_key bigint;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
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
    perform lock_key_v1(p_tenant_id, v_key);
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

-- file functions/remember_v1.sql
-- Upserts a batch of entries into one thread, all or nothing. Arrays are
-- parallel (one element per entry); p_metadata, p_sequences, p_importance and
-- p_consent may be null. A missing sequence keeps the stored entry's sequence,
-- or for a new entry takes (max sequence in the thread) + (position in the
-- batch); a missing consent keeps the stored one (legacy for a new entry).
-- Importance is clamped to [0, 1]; metadata._lineage is checked; created_at
-- and updated_at are p_now. A written entry is tombstoned exactly when one of
-- its lineage sources is invalid. A written id leaves every share grant of
-- the thread (unshare_v1). Returns the number of entries written.
create or replace function {{schema}}.remember_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_now timestamptz default now())
returns table (written integer, invalidated text[])
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_count integer := coalesce(cardinality(p_ids), 0);
  v_max_sequence bigint;
  v_problem text;
  v_dimensions integer;
  v_invalid text[];
  v_dependents text[] := '{}';
  v_offset integer;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform {{schema}}.assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if v_count = 0 then
    return query select 0, '{}'::text[];
    return;
  end if;
  if coalesce(cardinality(p_texts), 0) <> v_count
     or coalesce(cardinality(p_embeddings), 0) <> v_count
     or coalesce(cardinality(p_metadata), v_count) <> v_count
     or coalesce(cardinality(p_sequences), v_count) <> v_count
     or coalesce(cardinality(p_importance), v_count) <> v_count
     or coalesce(cardinality(p_consent), v_count) <> v_count then
    raise exception 'remember_v1: the argument arrays differ in length' using errcode = 'PM002';
  end if;

  select case
           when e.id is null or is_blank_v1(e.id) or octet_length(e.id) > 512
             then format('entry %s: id must be a non-blank string of at most 512 bytes', e.ord)
           when e.text is null or is_blank_v1(e.text)
             then format('entry %s (%s): text must not be blank', e.ord, e.id)
           when e.metadata is not null and jsonb_typeof(e.metadata) <> 'object'
             then format('entry %s (%s): metadata must be a JSON object', e.ord, e.id)
           when e.importance in ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)
             then format('entry %s (%s): importance must be finite', e.ord, e.id)
           when e.sequence not between 0 and 9007199254740991
             then format('entry %s (%s): sequence must be between 0 and 2^53 - 1', e.ord, e.id)
           when e.embedding is null
             then format('entry %s (%s): embedding is missing', e.ord, e.id)
           when not lineage_is_valid_v1(e.metadata -> '_lineage')
             then format('entry %s (%s): metadata._lineage must be {"sourceIds": [at most 32 non-blank ids], "reason"?: text}', e.ord, e.id)
           when not consent_is_valid_v1(e.consent)
             then format('entry %s (%s): consent must be {"source": user|agent|system, "scope": thread|profile|user, "visible": bool, "grantedAt"?, "revokedAt"?}', e.ord, e.id)
         end
  into v_problem
  from unnest(p_ids, p_texts, p_metadata, p_importance, p_embeddings, p_sequences, p_consent)
         with ordinality as e(id, text, metadata, importance, embedding, sequence, consent, ord)
  where e.id is null or is_blank_v1(e.id) or octet_length(e.id) > 512
     or e.text is null or is_blank_v1(e.text)
     or (e.metadata is not null and jsonb_typeof(e.metadata) <> 'object')
     or e.importance in ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)
     or e.sequence not between 0 and 9007199254740991
     or e.embedding is null
     or not lineage_is_valid_v1(e.metadata -> '_lineage')
     or not consent_is_valid_v1(e.consent)
  order by e.ord
  limit 1;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'PM002';
  end if;
  perform assert_time_v1((c.value ->> 'grantedAt')::timestamptz, 'consent grantedAt'),
          assert_time_v1((c.value ->> 'revokedAt')::timestamptz, 'consent revokedAt')
  from unnest(p_consent) as c(value)
  where c.value is not null;
  if (select count(distinct id) from unnest(p_ids) as id) <> v_count then
    raise exception 'remember_v1: an entry id appears twice in the batch' using errcode = 'PM002';
  end if;
  if (select max(octet_length(t) + coalesce(pg_column_size(m), 0))
      from unnest(p_texts, p_metadata) as x(t, m)) > 67108864 then
    raise exception 'an entry is over the 64 MiB hard cap of the SQL function on text plus metadata'
      using errcode = 'PM006';
  end if;
  perform assert_embedding_v1(v, 'an embedding') from unnest(p_embeddings) as v;
  if (select count(distinct vector_dims(v)) from unnest(p_embeddings) as v) > 1 then
    raise exception 'the embeddings in one batch differ in dimensions' using errcode = 'PM004';
  end if;

  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  v_dimensions := vector_dims(p_embeddings[1]);
  perform assert_dimensions_v1(p_tenant_id, p_resource_id, p_thread_id, v_dimensions);
  select greatest(
           (select max(e.sequence) from {{entries}} e
            where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id),
           (select max(i.sequence) from {{invalidation}} i
            where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id and i.thread_id = p_thread_id),
           0)
  into v_max_sequence;

  -- A stored entry keeps its sequence and consent unless the batch gives new ones.
  insert into {{entries}} as t
    (tenant_id, resource_id, thread_id, id, text, metadata, embedding, sequence, importance,
     consent_source, consent_scope, consent_visible, consent_granted_at, consent_revoked_at,
     created_at, updated_at)
  select p_tenant_id, p_resource_id, p_thread_id, e.id, e.text,
         coalesce(e.metadata, '{}'::jsonb), e.embedding,
         coalesce(e.sequence, s.sequence, v_max_sequence + e.ord),
         case when e.importance is null then null
              else greatest(0::float8, least(1::float8, e.importance)) end,
         case when e.consent is null then s.consent_source else coalesce(e.consent ->> 'source', 'user') end,
         case when e.consent is null then s.consent_scope else coalesce(e.consent ->> 'scope', 'thread') end,
         case when e.consent is null then coalesce(s.consent_visible, true)
              else coalesce((e.consent ->> 'visible')::boolean, true) end,
         case when e.consent is null then s.consent_granted_at else (e.consent ->> 'grantedAt')::timestamptz end,
         case when e.consent is null then s.consent_revoked_at else (e.consent ->> 'revokedAt')::timestamptz end,
         p_now, p_now
  from unnest(p_ids, p_texts, p_embeddings, p_metadata, p_sequences, p_importance, p_consent)
         with ordinality as e(id, text, embedding, metadata, sequence, importance, consent, ord)
  left join {{entries}} s
    on s.tenant_id = p_tenant_id and s.resource_id = p_resource_id
   and s.thread_id = p_thread_id and s.id = e.id
  on conflict (tenant_id, resource_id, thread_id, id) do update
    set text = excluded.text, metadata = excluded.metadata, embedding = excluded.embedding,
        sequence = excluded.sequence, importance = excluded.importance,
        consent_source = excluded.consent_source, consent_scope = excluded.consent_scope,
        consent_visible = excluded.consent_visible, consent_granted_at = excluded.consent_granted_at,
        consent_revoked_at = excluded.consent_revoked_at, updated_at = excluded.updated_at;
  perform unshare_v1(p_tenant_id, p_resource_id, p_thread_id, p_ids);

  -- A written entry is invalidated exactly when one of its lineage sources is;
  -- a written entry that is now invalid (by a source, or written invisible or
  -- revoked, or held) takes its dependents with it, in this batch and stored.
  delete from {{invalidation}} i
  where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
    and i.thread_id = p_thread_id and i.entry_id = any(p_ids);
  perform tombstone_from_sources_v1(p_tenant_id, p_resource_id, p_thread_id, p_ids, p_now);
  v_invalid := array(
    select e.id from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids)
      and (not is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source, false)
           or exists (select 1 from {{invalidation}} i
                      where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                        and i.thread_id = p_thread_id and i.entry_id = e.id))
    order by e.id collate "C");
  for v_offset in 1 .. coalesce(cardinality(v_invalid), 0) by 64 loop
    v_dependents := v_dependents || array(
      select x.entry_id from invalidate_v1(p_tenant_id, p_resource_id, p_thread_id,
                                           v_invalid[v_offset : v_offset + 63], 'source-invalidated', p_now) as x);
  end loop;
  return query
    select v_count, array(select x.id from unnest(v_invalid || v_dependents) as x(id)
                          group by x.id order by x.id collate "C");
end;
$$;
-- end of functions/remember_v1.sql

-- file functions/recall_guarded_v1.sql
-- API function (prism_memory/operations.py, a guard): it runs as the schema
-- owner (security definer), like every API function.
--
-- recall_v2 behind the embedding-model guard, in one call: the caller names
-- the model id and width of the embedder of the query (p_model_id,
-- p_dimensions; the other arguments and the rows are recall_v2's). It raises
-- PM018 when a thread whose entries the recall would score recorded another
-- model id of the same width (use_embedding_model_v1 keeps the records): the
-- thread itself, while it holds entries, and the parent thread of each live
-- share grant from p_share_parent_thread_id to this thread, while it holds a
-- granted entry. A thread without a record passes; a record of another width
-- is left to recall_v2's width rule (PM004 for the thread, out of scope for
-- the parent). The check reads the thread's record by primary key and takes
-- no lock; then recall_v2 answers. PM001 for a bad scope, PM017 for a model id
-- that is not a non-blank string of at most 256 bytes or a width outside
-- 1..16000, then recall_v2's errors.
create or replace function {{schema}}.recall_guarded_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_model_id text, p_dimensions integer,
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
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_recorded record;
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  perform assert_embedding_model_v1(p_model_id, p_dimensions);
  select m.model_id into v_recorded
  from {{embedding_model}} m
  where m.tenant_id = p_tenant_id and m.resource_id = p_resource_id and m.thread_id = p_thread_id
    and m.dimensions = p_dimensions and m.model_id <> p_model_id;
  if found and exists (select 1 from {{entries}} e
                       where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
                         and e.thread_id = p_thread_id) then
    raise exception 'thread % holds entries embedded with model % (% dimensions), not %: '
                    'recall with that model, or rebuild_index the thread with this one',
      quote_literal(p_thread_id), quote_literal(v_recorded.model_id), p_dimensions, quote_literal(p_model_id)
      using errcode = 'PM018';
  end if;
  if p_share_parent_thread_id is not null then  -- a plain recall skips the grants' query
    for v_recorded in
      select g.resource_id, g.parent_thread_id as thread_id, g.source_ids, m.model_id
      from {{share_grant}} g
      join {{embedding_model}} m
        on m.tenant_id = p_tenant_id and m.resource_id = g.resource_id and m.thread_id = g.parent_thread_id
      where g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
        and g.child_thread_id = p_thread_id and g.parent_thread_id = p_share_parent_thread_id
        and (g.expires_at is null or g.expires_at > v_clock)
        and m.dimensions = p_dimensions and m.model_id <> p_model_id
      order by g.resource_id collate "C"
    loop
      if exists (select 1 from {{entries}} e
                 where e.tenant_id = p_tenant_id and e.resource_id = v_recorded.resource_id
                   and e.thread_id = v_recorded.thread_id and e.id = any(v_recorded.source_ids)) then
        raise exception 'the parent thread % (resource %) holds entries embedded with model % (% dimensions), not %',
          quote_literal(v_recorded.thread_id), quote_literal(v_recorded.resource_id),
          quote_literal(v_recorded.model_id), p_dimensions, quote_literal(p_model_id)
          using errcode = 'PM018';
      end if;
    end loop;
  end if;
  return query
    select * from recall_v2(p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_query_text, p_top_k,
                            p_message_range, p_require_consent, p_share_parent_thread_id, p_now,
                            p_recency_weight, p_importance_weight, p_half_life_ms, p_explain);
end;
$$;
-- end of functions/recall_guarded_v1.sql

drop index {{schema}}.{{entries_travel_idx}};
drop type {{schema}}.recall_probe_v1;
drop type {{schema}}.recall_candidate_v1;
drop table {{retention_policy}};
alter table {{entries}} drop column expires_at;
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
