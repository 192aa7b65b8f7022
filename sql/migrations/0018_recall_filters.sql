-- prism-memory schema revision 0018: recall_filters. Recall that answers
-- "which" and "when": recall_v4 takes a metadata filter and time windows,
-- applied before the top_k cut, and the lexical weight of its fused score.
--
-- The entries get occurred_at (the event time; NULL reads as created_at).
-- selection_v1 carries what a read keeps besides its gates (a filter's
-- jsonpath, metadata_filter_v1, and four half-open window bounds),
-- recall_selection_v1 builds and checks it, selects_v1 applies it; the
-- thread's pass (recall_bounds_v2), the travellers (recall_travellers_v2,
-- recall_travellers_probe_v2, recall_top_v2), the grants' leg, adjacency and
-- the explain counts (recall_gates_v2: a 'selection' gate) apply it, and
-- rank by similarity + p_lexical_weight * lexical (0.75 unless given).
-- recall_v3 and its helpers stay for the callers of the release before.

{{pin_search_path}}

alter table {{entries}} add column occurred_at timestamptz;
create type {{schema}}.selection_v1 as (
  path jsonpath, occurred_after timestamptz, occurred_before timestamptz,
  created_after timestamptz, created_before timestamptz);

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

-- file functions/selects_v1.sql
-- Whether an entry is one a read's selection keeps (selection_v1, from
-- recall_selection_v1): its metadata satisfies the filter's jsonpath, and its
-- event time (occurred_at, or created_at when it has none) and its created_at
-- fall in the half-open windows [after, before). A NULL part keeps every
-- entry; a NULL selection (nothing selected) costs one test per row. One
-- expression, inlined into the queries that use it.
create or replace function {{schema}}.selects_v1(
  p_metadata jsonb, p_occurred_at timestamptz, p_created_at timestamptz, p_selection {{schema}}.selection_v1)
returns boolean
language sql immutable parallel safe
return p_selection is null
       or (((p_selection).path is null or coalesce(p_metadata @@ (p_selection).path, false))
           and ((p_selection).occurred_after is null
                or coalesce(p_occurred_at, p_created_at) >= (p_selection).occurred_after)
           and ((p_selection).occurred_before is null
                or coalesce(p_occurred_at, p_created_at) < (p_selection).occurred_before)
           and ((p_selection).created_after is null or p_created_at >= (p_selection).created_after)
           and ((p_selection).created_before is null or p_created_at < (p_selection).created_before));
-- end of functions/selects_v1.sql

-- file functions/recall_selection_v1.sql
-- A read's selection (selection_v1) from its arguments: p_filter compiled by
-- metadata_filter_v1 (PM019 for a bad filter; NULL: no filter), and the four
-- window bounds, each NULL (open) or a time between years 1 and 9999 (PM008
-- otherwise: infinity is no bound). An empty window (after >= before) keeps
-- nothing, as asked. NULL when nothing is selected.
create or replace function {{schema}}.recall_selection_v1(
  p_filter jsonb, p_occurred_after timestamptz, p_occurred_before timestamptz,
  p_created_after timestamptz, p_created_before timestamptz)
returns {{schema}}.selection_v1
language plpgsql immutable
set search_path from current
as $$
declare
  v_bound record;
  v_path jsonpath;
begin
  for v_bound in
    select b.label, b.value
    from (values ('occurred_after', p_occurred_after), ('occurred_before', p_occurred_before),
                 ('created_after', p_created_after), ('created_before', p_created_before)) as b(label, value)
    where b.value is not null
      and not (b.value between '0001-01-02 00:00:00+00'::timestamptz and '9999-12-30 00:00:00+00'::timestamptz)
  loop
    raise exception '% must be a time between years 1 and 9999, got %', v_bound.label, v_bound.value
      using errcode = 'PM008';
  end loop;
  if p_filter is null and p_occurred_after is null and p_occurred_before is null and p_created_after is null
     and p_created_before is null then
    return null;
  end if;
  if p_filter is not null then
    v_path := metadata_filter_v1(p_filter);
  end if;
  return row(v_path, p_occurred_after, p_occurred_before, p_created_after, p_created_before)::{{schema}}.selection_v1;
end;
$$;
-- end of functions/recall_selection_v1.sql

-- file functions/recall_bounds_v2.sql
-- recall_v4's narrow first pass over one thread: the p_limit rows (all of them
-- when p_limit is NULL) of the thread whose upper bound on the score is
-- highest, injectable (is_injectable_v1 under p_require_consent), live at
-- p_now (is_live_v2 under p_cutoff) and kept by p_selection (selects_v1);
-- each row as its ctid (same snapshot as the caller, a stable function) and
--   upper = similarity + p_lexical_weight when its tsvector holds a term of p_any_term, else similarity
-- (lexical <= 1, so no row's exact score exceeds it). Tombstones are not read
-- here. One single-table statement on the tenant's predicate, which Citus
-- plans on its fast path (for the shard directly, never printed back to text);
-- plain PostgreSQL runs it from its plan cache.
create or replace function {{schema}}.recall_bounds_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_any_term tsquery,
  p_require_consent boolean, p_cutoff timestamptz, p_now timestamptz, p_limit integer,
  p_selection {{schema}}.selection_v1, p_lexical_weight double precision)
returns table (row_id tid, upper double precision)
language plpgsql stable
set search_path from current
as $$
begin
  return query
    -- One expression per row, so nothing is computed twice and the sort's tuples
    -- are two columns wide.
    select e.ctid,
           (1::float8 - (e.embedding <=> p_query_embedding))
           + case when e.text_tsv @@ p_any_term then p_lexical_weight else 0::float8 end as upper
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                           p_require_consent)
      and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at, p_cutoff, p_now)
      and selects_v1(e.metadata, e.occurred_at, e.created_at, p_selection)
    order by 2 desc
    limit p_limit;
end;
$$;
-- end of functions/recall_bounds_v2.sql

-- file functions/recall_top_v2.sql
-- The best p_keep of recall_v4's probed rows (p_probes: rows of p_resource_id
-- read with their distance, the cheap columns of the gate already applied):
-- those not expired at p_now (is_live_v2 under p_resource_cutoff and their
-- thread's own policy, if any) and not tombstoned, scored exactly
-- (similarity + p_lexical_weight * lexical, lexical_score_v1 over p_terms), ordered by
-- score desc, sequence, id, thread (code-point order for the texts).
create or replace function {{schema}}.recall_top_v2(
  p_probes {{schema}}.recall_probe_v1[], p_tenant_id text, p_resource_id text, p_terms text[], p_any_term tsquery,
  p_resource_cutoff timestamptz, p_now timestamptz, p_keep integer, p_lexical_weight double precision)
returns {{schema}}.recall_candidate_v1[]
language plpgsql stable  -- so its plan is cached for the session (a SQL function's is made in every transaction)
set search_path from current
set enable_indexscan = on  -- recall_v4 turns plain index scans off
as $$
begin
  return (
    select coalesce(array_agg(row(t.row_id, p_resource_id, t.thread_id, t.id, t.sequence, t.importance, t.created_at,
                                  t.similarity, t.lexical)::{{schema}}.recall_candidate_v1
                              order by t.base desc, t.sequence, t.id collate "C", t.thread_id collate "C"), '{}')
    from (select p.row_id, p.thread_id, p.id, p.sequence, p.importance, p.created_at, p.similarity, l.lexical,
                 p.similarity + p_lexical_weight * l.lexical as base
          from unnest(p_probes) as p
          left join (select tp.thread_id, p_now - tp.max_age_days * interval '24 hours' as cutoff
                     from {{retention_policy}} tp
                     where tp.tenant_id = p_tenant_id and tp.resource_id = p_resource_id and tp.thread_id <> '') as tp
            on tp.thread_id = p.thread_id
          cross join lateral (select lexical_score_v1(p.text_tsv, p_terms, p_any_term) as lexical) as l
          where is_live_v2(p.created_at, p.expires_at, p.sources_created_at, p.sources_expire_at,
                           greatest(p_resource_cutoff, tp.cutoff), p_now)
            -- One probe of the tombstones' key per row (a subplan: as an anti-join,
            -- planned for a few rows, it read the resource's tombstones per row).
            and (select true from {{invalidation}} i
                 where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                   and i.thread_id = p.thread_id and i.entry_id = p.id) is null
          order by base desc, p.sequence, p.id collate "C", p.thread_id collate "C"
          limit p_keep) as t);
end;
$$;
-- end of functions/recall_top_v2.sql

-- file functions/recall_travellers_probe_v2.sql
-- recall_travellers_v2's read of the travellers: the entries of
-- p_resource_id's other threads than p_thread_id that may leave their thread
-- (leaves_thread_v1), of the query's width, outside the threads of p_foreign,
-- injectable (under p_require_consent), live under p_resource_cutoff (the
-- resource's own policy; recall_top_v2 applies each thread's) and kept by
-- p_selection (selects_v1), as probes.
-- p_exact: as the thread's own are read (recall_bounds_v1), one narrow pass
-- bounds each row's score (similarity, plus p_lexical_weight when it holds a term of
-- p_any_term), then the p_limit best bounds (every row when NULL) are read
-- again; floor is the lowest bound among them (the highest a row left out
-- could have). Otherwise the p_limit nearest are read through the travellers'
-- partial HNSW index (pinned installs of at most 2,000 dimensions, whose width
-- is the query's), by pgvector's iterative scan, planned per call so that the
-- planner sees the resource's size; floor is the lowest similarity among them
-- plus p_lexical_weight. probed: how many were read.
create or replace function {{schema}}.recall_travellers_probe_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_any_term tsquery,
  p_require_consent boolean, p_foreign text[], p_resource_cutoff timestamptz, p_now timestamptz, p_limit integer,
  p_exact boolean, p_selection {{schema}}.selection_v1, p_lexical_weight double precision, out probes {{schema}}.recall_probe_v1[], out probed bigint, out floor double precision)
language plpgsql stable
set search_path from current
as $$
declare
  v_width constant integer := vector_dims(p_query_embedding);
begin
  if p_exact then
    select c.probes, c.probed, c.floor into probes, probed, floor
    from (
      with bounds as materialized (
        select e.ctid as row_id,
               (1::float8 - (e.embedding <=> p_query_embedding))
               + case when e.text_tsv @@ p_any_term then p_lexical_weight else 0::float8 end as upper
        from {{entries}} e
        where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id <> p_thread_id
          and leaves_thread_v1(e.consent_scope) and vector_dims(e.embedding) = v_width
          and e.thread_id <> all (p_foreign)
          and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                               p_require_consent)
          and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
                         p_resource_cutoff, p_now)
          and selects_v1(e.metadata, e.occurred_at, e.created_at, p_selection)
        order by upper desc
        limit p_limit
      )
      select array(select row(e.ctid, p_resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,
                              1::float8 - (e.embedding <=> p_query_embedding), e.text_tsv,
                              e.expires_at, e.sources_created_at, e.sources_expire_at)::{{schema}}.recall_probe_v1
                   from bounds b
                   join {{entries}} e on e.tenant_id = p_tenant_id and e.ctid = b.row_id) as probes,
             (select count(*) from bounds) as probed, (select min(b.upper) from bounds b) as floor
    ) as c;
    return;
  end if;
  perform set_config('enable_indexscan', 'on', true);
  perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
  -- A search list a quarter longer than the probe: pgvector's iterative scan
  -- (when the filters leave fewer rows than asked) costs far more than a
  -- longer list.
  perform set_config('hnsw.ef_search', least(1000, p_limit + p_limit / 4 + 16)::text, true);
  execute 'select coalesce(array_agg(row(p.row_id, $2, p.thread_id, p.id, p.sequence, p.importance,'
          || ' p.created_at, p.similarity, p.text_tsv, p.expires_at, p.sources_created_at, p.sources_expire_at)'
          || '::{{schema}}.recall_probe_v1), ''{}''),'
          || ' count(*), min(p.similarity) + $11'
          || ' from (select e.ctid as row_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,'
          || ' e.expires_at, e.sources_created_at, e.sources_expire_at, e.text_tsv,'
          || ' 1::float8 - (e.embedding <=> $4) as similarity'
          || ' from {{entries}} e'
          || ' where e.tenant_id = $1 and e.resource_id = $2 and e.thread_id <> $3 and e.thread_id <> all ($9)'
          || ' and {{schema}}.leaves_thread_v1(e.consent_scope)'
          || ' and {{schema}}.is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold,'
          || ' e.consent_source, $5)'
          || ' and {{schema}}.is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at, $6, $7)'
          || ' and {{schema}}.selects_v1(e.metadata, e.occurred_at, e.created_at, $10)'
          || ' order by e.embedding <=> $4 limit $8) as p'
    into probes, probed, floor
    using p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_require_consent, p_resource_cutoff,
          p_now, p_limit, p_foreign, p_selection, p_lexical_weight;
  perform set_config('enable_indexscan', 'off', true);  -- as recall_v4 runs
end;
$$;
-- end of functions/recall_travellers_probe_v2.sql

-- file functions/recall_travellers_v2.sql
-- recall_v4's best p_keep candidates (recall_top_v2: scored exactly, in score
-- order) among the travellers of p_resource_id's other threads than
-- p_thread_id: the entries that may leave them (leaves_thread_v1, which have
-- an index of their own), outside the threads of p_foreign, read by
-- recall_travellers_probe_v2, kept by p_selection. Up to 5,000 travellers are ranked exactly, as
-- the thread's own are. Over that, on an install with the travellers' HNSW
-- index (a pinned width of at most 2,000), the nearest are read through it,
-- 256, then 786 if need be, until the p_keep-th best exact score (theirs, or
-- p_bar: the thread's own p_keep-th best, which a traveller must beat to
-- matter) beats every similarity left out plus p_lexical_weight: exact when that holds
-- (and HNSW orders exactly), approximate otherwise. If fewer than p_keep of
-- them pass every gate (HNSW ran dry, or tombstones and thread policies,
-- applied after it, removed them), every traveller is ranked exactly after
-- all, so a recall always returns min(top_k, matches).
create or replace function {{schema}}.recall_travellers_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_terms text[],
  p_any_term tsquery, p_require_consent boolean, p_foreign text[], p_now timestamptz, p_keep integer,
  p_bar double precision, p_selection {{schema}}.selection_v1, p_lexical_weight double precision)
returns {{schema}}.recall_candidate_v1[]
language plpgsql stable
set search_path from current
as $$
declare
  v_resource_cutoff constant timestamptz := retention_cutoff_v1(p_tenant_id, p_resource_id, null, p_now);
  v_exact boolean := true;  -- the travellers are ranked exactly (else read through HNSW)
  v_probe integer := greatest(256, 8 * p_keep);  -- rows read, whose lexical leg is then scored
  v_probes {{schema}}.recall_probe_v1[];
  v_probed bigint;
  v_floor double precision;  -- the highest score a row left out could have
  v_found {{schema}}.recall_candidate_v1[];
begin
  if {{dimensions}}::integer <= 2000 then
    -- Counted from the travellers' index alone (an index-only scan).
    perform set_config('enable_indexscan', 'on', true), set_config('enable_bitmapscan', 'off', true);
    select count(*) < 5000 into v_exact
    from (select 1 from {{entries}} e
          where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id <> p_thread_id
            and leaves_thread_v1(e.consent_scope)
          limit 5000) as x;
    perform set_config('enable_indexscan', 'off', true), set_config('enable_bitmapscan', 'on', true);
  end if;
  loop
    select t.probes, t.probed, t.floor into v_probes, v_probed, v_floor
    from recall_travellers_probe_v2(p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_any_term,
                                    p_require_consent, p_foreign, v_resource_cutoff, p_now, v_probe, v_exact,
                                    p_selection, p_lexical_weight) as t;
    v_found := recall_top_v2(v_probes, p_tenant_id, p_resource_id, p_terms, p_any_term, v_resource_cutoff,
                             p_now, p_keep, p_lexical_weight);
    exit when v_probe is null or (v_exact and v_probed < v_probe)
              or greatest((v_found[p_keep]).similarity + p_lexical_weight * (v_found[p_keep]).lexical, p_bar) > v_floor;
    if v_exact then
      v_probe := null;  -- every traveller
    elsif cardinality(v_found) < p_keep and (v_probed < v_probe or v_probe >= 786) then
      -- HNSW ran dry, or the gates applied after it (tombstones, thread
      -- policies) removed too many of its nearest: every traveller, exactly.
      v_exact := true;
      v_probe := null;
    elsif v_probed < v_probe or v_probe >= 786 then
      exit;  -- approximate: the nearest through HNSW, ranked exactly
    else
      v_probe := 786;  -- its search list fills pgvector's longest, 1,000
    end if;
  end loop;
  return v_found;
end;
$$;
-- end of functions/recall_travellers_v2.sql

-- file functions/recall_gates_v2.sql
-- recall_v4's explain counts: for each gate, in order (scope, hold, consent,
-- invalidation, expiry, selection), how many entries it removed, each counted
-- at the first gate it fails; selection: those the read's filter or time
-- windows leave out (selects_v1 under p_selection). Counted are the thread's entries, the entries live
-- grants to it name (recall_grants_v1) and, with p_across_threads, every
-- entry of the resource's other threads (nothing else of another thread);
-- scope counts those of them that may not take part: kept in their thread by
-- their consent scope, of another width than p_width, or in a thread of
-- p_foreign (one another embedding model wrote). Expiry is measured against
-- each thread's retention cutoff (retention_cutoff_v1).
create or replace function {{schema}}.recall_gates_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_share_parent_thread_id text,
  p_across_threads boolean, p_require_consent boolean, p_width integer, p_foreign text[], p_now timestamptz,
  p_selection {{schema}}.selection_v1)
returns table (gate text, removed integer)
language plpgsql stable
set search_path from current
as $$
begin
  return query
    with grants as (
      select g.resource_id, g.thread_id, g.source_ids
      from recall_grants_v1(p_tenant_id, p_resource_id, p_thread_id, p_share_parent_thread_id, p_now) as g
    ), counted as materialized (
      -- Each entry counted, with the first gate it fails but expiry's and the selection's.
      select e.resource_id, e.thread_id, e.metadata, e.occurred_at, e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
             case
               when not (e.resource_id = p_resource_id and e.thread_id = p_thread_id)
                    and not (vector_dims(e.embedding) = p_width
                             and ((p_across_threads and e.resource_id = p_resource_id
                                   and leaves_thread_v1(e.consent_scope) and e.thread_id <> all (p_foreign))
                                  or exists (select 1 from grants g
                                             where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                                               and e.id = any(g.source_ids)))) then 'scope'
               when e.legal_hold then 'hold'
               when not is_injectable_v1(e.consent_visible, e.consent_revoked_at, false, e.consent_source,
                                         p_require_consent) then 'consent'
               when exists (select 1 from {{invalidation}} i
                            where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                              and i.thread_id = e.thread_id and i.entry_id = e.id) then 'invalidation'
             end as gate
      from {{entries}} e
      where e.tenant_id = p_tenant_id
        and ((e.resource_id = p_resource_id and (e.thread_id = p_thread_id or p_across_threads))
             or exists (select 1 from grants g
                        where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                          and e.id = any(g.source_ids)))
    ), cutoffs as (
      select t.resource_id, t.thread_id, retention_cutoff_v1(p_tenant_id, t.resource_id, t.thread_id, p_now) as cutoff
      from (select distinct c.resource_id, c.thread_id from counted c where c.gate is null) as t
    )
    select g.name, coalesce(n.removed, 0)::integer
    from unnest(array['scope', 'hold', 'consent', 'invalidation', 'expiry', 'selection']) with ordinality as g(name, position)
    left join (select coalesce(c.gate, case when not is_live_v2(c.created_at, c.expires_at, c.sources_created_at,
                                                               c.sources_expire_at, t.cutoff, p_now)
                                            then 'expiry' else 'selection' end) as name,
                      count(*) as removed
               from counted c
               left join cutoffs t on t.resource_id = c.resource_id and t.thread_id = c.thread_id
               where c.gate is not null
                  or not is_live_v2(c.created_at, c.expires_at, c.sources_created_at, c.sources_expire_at,
                                    t.cutoff, p_now)
                  or not selects_v1(c.metadata, c.occurred_at, c.created_at, p_selection)
               group by 1) as n
      on n.name = g.name
    order by g.position;
end;
$$;
-- end of functions/recall_gates_v2.sql

-- file functions/recall_v4.sql
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
--   lexical    = share of the query's terms (query_terms_v2: at most 32) found in the entry, in [0, 1]
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
-- fast path: retention_cutoff_v1, the tombstones, recall_bounds_v1,
-- recall_rescore_v1, recall_rows_v1. Plain index scans and merge joins are
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
  v_selection {{schema}}.selection_v1 := recall_selection_v1(p_filter, p_occurred_after, p_occurred_before,
                                                             p_created_after, p_created_before);
begin
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
  -- term, and keeps the v_probe rows whose upper bound is highest (similarity,
  -- plus p_lexical_weight when it holds a term: lexical <= 1), each as narrow as can be
  -- (its ctid). Only those are read again (recall_rescore_v1), for their exact
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
                          p_require_consent, v_cutoff, p_now, v_probe, v_selection, p_lexical_weight) as b;
    v_candidates := array(
      select row(r.row_id, p_resource_id, p_thread_id, r.id, r.sequence, r.importance, r.created_at,
                 r.similarity, r.lexical)::{{schema}}.recall_candidate_v1
      from recall_rescore_v1(p_tenant_id, p_resource_id, p_thread_id, v_row_ids, p_query_embedding, v_terms,
                             v_any_term) as r
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
      v_selection, p_lexical_weight);
  end if;

  if p_share_parent_thread_id is not null then
    -- The best of the entries live grants name (those the resource's leg holds are left out).
    v_candidates := v_candidates || array(
      select row(s.row_id, s.resource_id, s.thread_id, s.id, s.sequence, s.importance, s.created_at,
                 s.similarity, s.lexical)::{{schema}}.recall_candidate_v1
      from (select e.ctid as row_id, e.resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,
                   1::float8 - (e.embedding <=> p_query_embedding) as similarity,
                   lexical_score_v1(e.text_tsv, v_terms, v_any_term) as lexical
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
-- end of functions/recall_v4.sql


reset search_path;
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;
