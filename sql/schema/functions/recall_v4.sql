-- API function (prism_memory/operations.py): it runs as the schema owner
-- (security definer) on the search_path install.sql pins (pg_catalog, this
-- schema, pgvector's schema, pg_temp last); EXECUTE belongs to the owner and
-- to the application roles grant_app_role names, and a tenant-bound role may
-- call it for its own tenants only (tenant_access_v1, on the server's clock).
--
-- Semantic recall over one thread, behind the consent gate; with
-- p_across_threads over every thread of the tenant and resource: the thread's
-- own entries and, from its other threads, the entries whose consent lets
-- them leave their thread (leaves_thread_v1: scope 'profile' or 'user'; a
-- legacy entry without consent stays in its thread). Resources are matched
-- exactly: another resource, a delegated agent's derived one
-- ("<resource>/agent:<id>") included, is never searched. Plus the entries a
-- live share grant from p_share_parent_thread_id lets this thread read.
--   similarity = 1 - cosine distance (pgvector <=>), in [-1, 1]
--   lexical    = share of the query's terms (query_terms_v2: at most 32) the entry holds, in [0, 1]:
--                in its text (text_tsv) or, for a term naming a part of a date (query_date_terms_v1:
--                a month, weekday, year or day of the month), in its event date (occurred_at, else
--                created_at, in UTC); a term held both ways counts once (lexical_score_v2)
--   score      = similarity + p_lexical_weight * lexical (0.75 unless given; finite, 0 to 10)
-- Only injectable entries take part: visible, not revoked, not held, not
-- tombstoned (an indexed NOT EXISTS), explicitly consented when
-- p_require_consent, and not expired at p_now (is_live_v2: its expires_at, and
-- the retention policies of its resource and thread, retention_cutoff_v1; an
-- entry whose lineage source, transitively, has expired has expired with it).
-- Of those, only the entries the read selects take part, hits and adjacent
-- rows alike (recall_selection_v1, selects_v1): metadata satisfying p_filter
-- (metadata_filter_v1's language), event time (occurred_at, else created_at)
-- in [p_occurred_after, p_occurred_before) and created_at in
-- [p_created_after, p_created_before), each bound NULL for open. The
-- selection is applied before the top_k cut: a recall returns
-- min(top_k, selected entries), ranked as without it.
-- An entry of another embedding width than the query never takes part but in
-- its own thread (an unpinned install). Hits (kind 'hit', rank 1..top_k) are
-- ordered by score desc, sequence asc, id asc (code-point order), then thread
-- and resource; each names its thread. Then come the entries within
-- p_message_range sequences of a hit in the hit's own thread, under the same
-- gate, grants and consent scope (kind 'adjacent', ordered by sequence, id,
-- thread, resource), with no scores.
--
-- Opt-in composite scoring: with weights (scoring_weights_v1), the top
-- (top_k x 4) candidates by the default score are re-ranked by
--   score = w_similarity * (similarity + p_lexical_weight * lexical)
--         + w_recency * 0.5 ^ (max(0, now - created_at in ms) / half_life_ms)
--         + w_importance * coalesce(importance, 1.0)
-- and cut to top_k, ties by sequence asc, id asc (code-point order), thread,
-- resource; the hit rows carry recency and the importance used. Without
-- weights, recency is NULL and importance is as stored. With p_explain, rows
-- of kind 'gate' follow: for each gate (id = scope, hold, consent,
-- invalidation, expiry, selection), rank = how many entries it removed, each counted at
-- the first gate it fails in that order. Counted are the thread's entries, the
-- entries live grants name and, with p_across_threads, every entry of the
-- resource's other threads; scope counts those of them that may not take
-- part (kept in their thread by their consent scope, of another width, or in
-- a thread another embedding model wrote). With weights, each gate row also
-- carries the normalised weights of the score's components in its
-- similarity, recency and importance columns (NULL without weights).
--
-- The embedding-model guard, with p_model_id (the id of the embedder of the
-- query; its width is the query's): PM018 when the thread, while it holds
-- entries, or the parent thread of a live grant to it, while it holds a
-- granted entry, recorded another model id of this width
-- (<table>_embedding_model, kept by use_embedding_model_v1); the resource's
-- other threads that recorded one are left out of p_across_threads. A thread
-- without a record passes; PM017 for a model id that is not a non-blank string
-- of at most 256 bytes. Without p_model_id nothing is checked.
--
-- Exact or approximate: the thread is ranked exactly, and so are the
-- resource's other threads while they hold fewer than 5,000 travelling
-- entries; above that, on an install pinned to at most 2,000 dimensions,
-- those are read through their HNSW index and re-ranked exactly
-- (recall_travellers_v1).
--
-- Plan: cached generic plans (planning per call costs more than the scan of
-- a thread), but for the HNSW read, planned per call. On a distributed
-- install the plan mode is distribute()'s (prism_memory/citus.py: auto, or
-- every statement planned per call where Citus leaks the local plans of
-- cached ones); Citus routes a cached plan only for a single-table statement,
-- so the thread's leg up to a plain recall's hits reads each table with a
-- single-table statement on the tenant's predicate, which Citus plans on its
-- fast path: retention_cutoff_v1, the tombstones, recall_bounds_v2,
-- recall_rescore_v2, recall_rows_v1. Plain index scans and merge joins are
-- off, so a thread is read by a bitmap scan. Each source of entries (the
-- thread, the resource's other threads, the live grants: recall_grants_v1)
-- gives its own best candidates (top_k, or top_k x 4 with scoring:
-- recall_candidate_v1, in score order): a plain recall of one thread returns
-- the thread's as they are, otherwise one statement ranks them together,
-- blends, adds adjacency and the gate counts (recall_gates_v1). Hits and
-- adjacent rows are joined back to their entries by tenant and ctid (the row
-- scored, same snapshot; ctids repeat across a distributed table's shards).
-- Errors: PM001 scope and parent thread, PM005 top_k (1..32), message_range
-- (0..4), a NULL explain or across_threads, PM006 a query over 64 KiB, PM008
-- a blank query or a window bound out of range, PM003/PM004 the query
-- embedding, PM015 scoring weights and the lexical weight, PM017/PM018 the
-- embedding model, PM019 the filter.
create or replace function {{schema}}.recall_v4(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_query_embedding vector, p_query_text text default '',
  p_top_k integer default 8, p_message_range integer default 0,
  p_require_consent boolean default false, p_share_parent_thread_id text default null,
  p_across_threads boolean default false, p_now timestamptz default now(),
  p_recency_weight double precision default null, p_importance_weight double precision default null,
  p_half_life_ms double precision default null, p_explain boolean default false,
  p_model_id text default null, p_filter jsonb default null,
  p_occurred_after timestamptz default null, p_occurred_before timestamptz default null,
  p_created_after timestamptz default null, p_created_before timestamptz default null,
  p_lexical_weight double precision default 0.75)
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
  v_terms text[] := query_terms_v2(coalesce(p_query_text, ''));  -- the one place the query's terms come from
  -- Any-term query: terms hold no quote or backslash, so quote_literal is a safe operand.
  v_any_term tsquery := (select string_agg(quote_literal(term), ' | ')::tsquery from unnest(v_terms) as term);
  -- Its terms naming a part of a date (NULL: none), read only when one might.
  v_dates {{schema}}.date_terms_v1 := case when might_name_a_date_v1(v_terms) then query_dates_v1(v_terms) end;
  v_width integer;
  v_keep integer;                 -- candidates per source: top_k, or top_k x 4 with scoring
  v_cutoff timestamptz;           -- the oldest created_at still live in the thread
  v_candidates {{schema}}.recall_candidate_v1[];
  v_probe integer;                -- rows read and bounded, whose lexical leg is then scored
  v_tombstones text[];            -- the thread's tombstoned entry ids
  v_row_ids tid[];                -- the rows the first pass kept
  v_probed bigint;
  v_floor double precision;       -- the highest score a row left out could have
  v_recorded record;
  v_foreign text[] := '{}';       -- the resource's other threads whose entries another model of this width embedded
  v_selection {{schema}}.selection_v1;  -- what the read selects (recall_selection_v1); NULL: every entry
begin
  if num_nonnulls(p_filter, p_occurred_after, p_occurred_before, p_created_after, p_created_before) > 0 then
    v_selection := recall_selection_v1(p_filter, p_occurred_after, p_occurred_before, p_created_after,
                                       p_created_before);
  end if;
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- expiry is measured against it
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
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
  if p_share_parent_thread_id is not null then
    perform assert_id_v1(p_share_parent_thread_id, 'share_from_parent_thread_id', 256, 'PM001');
  end if;
  if p_explain is null then
    raise exception 'explain must be true or false' using errcode = 'PM005';
  end if;
  if p_across_threads is null then
    raise exception 'across_threads must be true or false' using errcode = 'PM005';
  end if;
  if p_lexical_weight is null or not (p_lexical_weight between 0 and 10) then
    raise exception 'lexical_weight must be a finite number within [0, 10], got %', p_lexical_weight
      using errcode = 'PM015';
  end if;
  perform assert_embedding_v1(p_query_embedding, 'the query embedding');
  v_width := vector_dims(p_query_embedding);
  perform assert_dimensions_v2(p_tenant_id, p_resource_id, p_thread_id, v_width);
  if p_model_id is not null then
    -- The embedding-model guard (use_embedding_model_v1 keeps the records): the
    -- thread, while it holds entries, and the parent thread of each live grant,
    -- while it holds a granted entry, must not have recorded another model of
    -- this width; the other threads that did are left out of the resource's leg.
    perform assert_embedding_model_v1(p_model_id, v_width);
    select m.model_id into v_recorded
    from {{embedding_model}} m
    where m.tenant_id = p_tenant_id and m.resource_id = p_resource_id and m.thread_id = p_thread_id
      and m.dimensions = v_width and m.model_id <> p_model_id;
    if found and exists (select 1 from {{entries}} e
                         where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
                           and e.thread_id = p_thread_id) then
      raise exception 'thread % holds entries embedded with model % (% dimensions), not %: '
                      'recall with that model, or rebuild_index the thread with this one',
        quote_literal(p_thread_id), quote_literal(v_recorded.model_id), v_width, quote_literal(p_model_id)
        using errcode = 'PM018';
    end if;
    if p_share_parent_thread_id is not null then
      for v_recorded in
        select g.resource_id, g.thread_id, g.source_ids, m.model_id
        from recall_grants_v1(p_tenant_id, p_resource_id, p_thread_id, p_share_parent_thread_id, p_now) as g
        join {{embedding_model}} m
          on m.tenant_id = p_tenant_id and m.resource_id = g.resource_id and m.thread_id = g.thread_id
        where m.dimensions = v_width and m.model_id <> p_model_id
        order by g.resource_id collate "C"
      loop
        if exists (select 1 from {{entries}} e
                   where e.tenant_id = p_tenant_id and e.resource_id = v_recorded.resource_id
                     and e.thread_id = v_recorded.thread_id and e.id = any(v_recorded.source_ids)) then
          raise exception 'the parent thread % (resource %) holds entries embedded with model % (% dimensions), not %',
            quote_literal(v_recorded.thread_id), quote_literal(v_recorded.resource_id),
            quote_literal(v_recorded.model_id), v_width, quote_literal(p_model_id)
            using errcode = 'PM018';
        end if;
      end loop;
    end if;
    if p_across_threads then
      v_foreign := array(select m.thread_id from {{embedding_model}} m
                         where m.tenant_id = p_tenant_id and m.resource_id = p_resource_id
                           and m.thread_id <> p_thread_id and m.dimensions = v_width
                           and m.model_id <> p_model_id);
    end if;
  end if;
  v_keep := case when v_scored then p_top_k * 4 else p_top_k end;
  v_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, p_thread_id, p_now);

  -- The thread's own best candidates, exactly. A pass over the thread
  -- (recall_bounds_v2) reads each row's distance and whether it holds a query
  -- term (in its text, or a date term in its event date), and keeps the
  -- v_probe rows whose upper bound is highest (similarity, plus
  -- p_lexical_weight when it holds a term: lexical <= 1), each as narrow as
  -- can be (its ctid). Only those are read again (recall_rescore_v2), for their exact
  -- score (the lexical leg copies the tsvector), and the thread's tombstones
  -- are hashed once and left out. They hold the exact top v_keep when fewer
  -- rows exist, or when the v_keep-th best exact score among them beats the
  -- highest bound left out (strictly: no tie can be missed); otherwise the
  -- pass runs again over every row. Each read of a table is a single-table
  -- statement of its own, which Citus plans on its fast path.
  select coalesce(array_agg(i.entry_id), '{}') into v_tombstones
  from {{invalidation}} i
  where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id and i.thread_id = p_thread_id;
  v_probe := greatest(256, 8 * v_keep);
  loop
    select coalesce(array_agg(b.row_id), '{}'), count(*), min(b.upper) into v_row_ids, v_probed, v_floor
    from recall_bounds_v2(p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, v_any_term,
                          p_require_consent, v_cutoff, p_now, v_probe, v_selection, p_lexical_weight,
                          v_dates) as b;
    v_candidates := array(
      select row(r.row_id, p_resource_id, p_thread_id, r.id, r.sequence, r.importance, r.created_at,
                 r.similarity, r.lexical)::{{schema}}.recall_candidate_v1
      from recall_rescore_v2(p_tenant_id, p_resource_id, p_thread_id, v_row_ids, p_query_embedding, v_terms,
                             v_any_term, v_dates) as r
      where r.id not in (select t.entry_id from unnest(v_tombstones) as t(entry_id))  -- a hashed subplan
      order by r.similarity + p_lexical_weight * r.lexical desc, r.sequence asc, r.id collate "C" asc
      limit v_keep);
    exit when v_probe is null or v_probed < v_probe
              or (v_candidates[v_keep]).similarity + p_lexical_weight * (v_candidates[v_keep]).lexical > v_floor;
    v_probe := null;  -- every row
  end loop;

  -- Plain recall of one thread (no scoring, grants, adjacency, explain or
  -- other threads): the candidates are the hits.
  if not v_scored and p_share_parent_thread_id is null and p_message_range = 0 and not p_explain
     and not p_across_threads then
    return query
      select 'hit'::text, c.position::integer, e.resource_id, e.thread_id, e.id, e.text, e.metadata, e.sequence,
             e.importance, c.similarity, c.lexical, null::float8, c.similarity + p_lexical_weight * c.lexical,
             e.created_at, e.updated_at
      from unnest(v_candidates) with ordinality as c(row_id, resource_id, thread_id, id, sequence, importance,
                                                     created_at, similarity, lexical, position)
      join recall_rows_v1(p_tenant_id, array(select x.row_id from unnest(v_candidates) as x)) as e
        on e.row_id = c.row_id  -- the row scored above, in this snapshot
      order by c.position;
    return;
  end if;

  if p_across_threads then
    -- The best of the resource's other threads (recall_travellers_v2), which
    -- must beat the thread's own v_keep-th best score to matter.
    v_candidates := v_candidates || recall_travellers_v2(
      p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, v_terms, v_any_term, p_require_consent, v_foreign,
      p_now, v_keep, (v_candidates[v_keep]).similarity + p_lexical_weight * (v_candidates[v_keep]).lexical,
      v_selection, p_lexical_weight, v_dates);
  end if;

  if p_share_parent_thread_id is not null then
    -- The best of the entries live grants name (those the resource's leg holds are left out).
    v_candidates := v_candidates || array(
      select row(s.row_id, s.resource_id, s.thread_id, s.id, s.sequence, s.importance, s.created_at,
                 s.similarity, s.lexical)::{{schema}}.recall_candidate_v1
      from (select e.ctid as row_id, e.resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,
                   1::float8 - (e.embedding <=> p_query_embedding) as similarity,
                   lexical_score_v2(e.text_tsv, coalesce(e.occurred_at, e.created_at), v_terms, v_any_term,
                                    v_dates) as lexical
            from (select g.resource_id, g.thread_id, g.source_ids,
                         retention_cutoff_v1(p_tenant_id, g.resource_id, g.thread_id, p_now) as cutoff
                  from recall_grants_v1(p_tenant_id, p_resource_id, p_thread_id, p_share_parent_thread_id, p_now) as g
                  offset 0) as g
            join {{entries}} e
              on e.tenant_id = p_tenant_id and e.resource_id = g.resource_id
             and e.thread_id = g.thread_id and e.id = any(g.source_ids)
            where vector_dims(e.embedding) = v_width
              and not (p_across_threads and e.resource_id = p_resource_id and leaves_thread_v1(e.consent_scope))
              and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                                   p_require_consent)
              and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
                             g.cutoff, p_now)
              and selects_v1(e.metadata, e.occurred_at, e.created_at, v_selection)
              and not exists (select 1 from {{invalidation}} i
                              where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                                and i.thread_id = e.thread_id and i.entry_id = e.id)
            offset 0) as s
      order by s.similarity + p_lexical_weight * s.lexical desc, s.sequence asc, s.id collate "C" asc,
               s.thread_id collate "C" asc, s.resource_id collate "C" asc
      limit v_keep);
  end if;

  return query
    with grants as (
      select g.resource_id, g.thread_id, g.source_ids
      from recall_grants_v1(p_tenant_id, p_resource_id, p_thread_id, p_share_parent_thread_id, p_now) as g
    ), policies as (
      -- The retention cutoffs of the resources read (thread_id '': the resource's own).
      select p.resource_id, p.thread_id, p_now - p.max_age_days * interval '24 hours' as cutoff
      from {{retention_policy}} p
      where p.tenant_id = p_tenant_id
        and (p.resource_id = p_resource_id or p.resource_id in (select g.resource_id from grants g))
    ), candidates as (
      -- Plain recall keeps top_k; scoring re-ranks the top (top_k x 4).
      select c.*, c.similarity + p_lexical_weight * c.lexical as base
      from unnest(v_candidates) as c
      order by c.similarity + p_lexical_weight * c.lexical desc, c.sequence asc, c.id collate "C" asc,
               c.thread_id collate "C" asc, c.resource_id collate "C" asc
      limit v_keep
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
      left join policies rp on rp.resource_id = e.resource_id and rp.thread_id = ''
      left join policies tp on tp.resource_id = e.resource_id and tp.thread_id = e.thread_id
      where p_message_range > 0
        and not exists (select 1 from hits r
                        where r.resource_id = e.resource_id and r.thread_id = e.thread_id and r.id = e.id)
        and ((e.resource_id = p_resource_id and e.thread_id = p_thread_id)
             or (p_across_threads and e.resource_id = p_resource_id and leaves_thread_v1(e.consent_scope))
             or exists (select 1 from grants g
                        where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                          and e.id = any(g.source_ids)))
        and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                             p_require_consent)
        and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
                       coalesce(greatest(rp.cutoff, tp.cutoff), '-infinity'), p_now)
        and selects_v1(e.metadata, e.occurred_at, e.created_at, v_selection)
        and not exists (select 1 from {{invalidation}} i
                        where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                          and i.thread_id = e.thread_id and i.entry_id = e.id)
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
    select 'gate'::text, g.removed, null::text, null::text, g.gate, null::text, null::jsonb, null::bigint,
           case when v_scored then v_weights.importance_weight end,
           case when v_scored then v_weights.similarity_weight end, null::float8,
           case when v_scored then v_weights.recency_weight end, null::float8,
           null::timestamptz, null::timestamptz
    from recall_gates_v2(p_tenant_id, p_resource_id, p_thread_id, p_share_parent_thread_id, p_across_threads,
                         p_require_consent, v_width, v_foreign, p_now, v_selection) as g
    where p_explain
    order by 1 desc, 2;
end;
$$;
