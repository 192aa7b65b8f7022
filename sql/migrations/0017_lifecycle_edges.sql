-- prism-memory schema revision 0017: lifecycle_edges. The lifecycle's edges:
-- expiry through lineage, erasure that cannot be blocked, and a forget that a
-- concurrent write cannot fail.
--
-- A derived entry expires with its lineage sources at read time: the entries
-- get sources_created_at and sources_expire_at (the oldest created_at and the
-- earliest expires_at among an entry's sources, transitively), kept by
-- lineage_expiry_v1 in remember_v2 and filled below for the entries already
-- stored; is_live_v2 compares them beside the entry's own, in every read
-- (recall, export, the sweeps), replacing is_live_v1; recall_probe_v1 carries
-- them to recall_top_v1. No read walks lineage.
--
-- An erasure's walk never refuses: erase_walk_v1 tombstones a bounded part
-- per call (256 untombstoned dependents, 8 levels) and marks where it
-- stopped as pending (the invalidation table's new pending column), from
-- where the next call goes on; invalidate_resource_v1 walks with it (before,
-- invalidate_v1's PM010 stopped forget, the sweeps and the resource erasure
-- at one entry for good). purge_v2 deletes the tombstoned bodies of its ids
-- and keeps, and returns, an id a remember wrote again after its tombstone
-- (purge_v1 raised PM012 and deleted none). remember_v2 judges a ttl by the
-- time it ends (months are calendar months) and refuses one ending after
-- 9999-12-30 00:00 UTC, the latest time stored (PM005); the writes that store
-- their p_now refuse a NULL, infinite or out-of-range one (PM002).

{{pin_search_path}}

alter table {{entries}} add column sources_created_at timestamptz, add column sources_expire_at timestamptz;
alter table {{invalidation}} add column pending boolean not null default false;
alter type {{schema}}.recall_probe_v1
  add attribute sources_created_at timestamptz, add attribute sources_expire_at timestamptz;

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

-- file functions/is_live_v2.sql
-- Whether an entry has not expired at p_now, it and its lineage sources
-- alike ("a fact dies with its sources"): the oldest of its created_at and
-- p_sources_created_at (its sources', transitively, kept by lineage_expiry_v1)
-- is at p_cutoff or later (retention_cutoff_v1: the stored retention
-- policies; a source shares its dependent's thread, so one cutoff covers
-- both), and the earliest of its expires_at and p_sources_expire_at, if any,
-- is still ahead. Two columns of the row, no walk: inlined into the queries
-- that use it; the emulator's EmulatorState._live mirrors it. Written as one
-- comparison per column (not least()) so the planner estimates each from the
-- column's statistics (the lineage columns are mostly NULL): a default guess
-- would turn the travellers' HNSW probe into a sequential scan.
create or replace function {{schema}}.is_live_v2(
  p_created_at timestamptz, p_expires_at timestamptz, p_sources_created_at timestamptz,
  p_sources_expire_at timestamptz, p_cutoff timestamptz, p_now timestamptz)
returns boolean
language sql immutable parallel safe
return p_created_at >= p_cutoff
       and (p_sources_created_at is null or p_sources_created_at >= p_cutoff)
       and (p_expires_at is null or p_expires_at > p_now)
       and (p_sources_expire_at is null or p_sources_expire_at > p_now);
-- end of functions/is_live_v2.sql

-- file functions/lineage_expiry_v1.sql
-- Keeps sources_created_at and sources_expire_at (the oldest created_at and
-- the earliest expires_at among an entry's stored lineage sources,
-- transitively) right after p_ids of the thread were written (remember_v2,
-- under the thread's lock). First each written entry takes them afresh from
-- its direct sources written before (a source's own values or its sources',
-- the earlier); then every entry of the thread derived from a written one
-- (this batch's entries among them, whatever their order), transitively,
-- takes the written entries' values where they are earlier than its own so
-- far: one recursive statement that follows an edge only while it moves a
-- value earlier (an entry whose values stand is not passed through, so a
-- rewrite that changes no expiry reads one level of dependents), and
-- terminates on lineage cycles (UNION keeps each (id, values) once). A
-- source's expiry only ever moves its dependents' earlier: a later one (a
-- longer ttl written again) reaches a dependent when that is written again.
-- Reads the thread through the lineage index; a write of entries nothing is
-- derived from, without lineage of their own, changes no row.
create or replace function {{schema}}.lineage_expiry_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[])
returns void
language plpgsql volatile
set search_path from current
as $$
declare
  v_sources text[];
begin
  update {{entries}} e
  set (sources_created_at, sources_expire_at) = (
    select min(least(s.created_at, s.sources_created_at)), min(least(s.expires_at, s.sources_expire_at))
    from jsonb_array_elements_text(coalesce(e.metadata -> '_lineage' -> 'sourceIds', '[]')) as source(id)
    join {{entries}} s
      on s.tenant_id = p_tenant_id and s.resource_id = p_resource_id and s.thread_id = p_thread_id
     and s.id = source.id and s.id <> all(p_ids))
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    and e.id = any(p_ids)
    -- an entry without lineage and without stored times keeps its row version
    and (e.metadata -> '_lineage' -> 'sourceIds' is not null
         or e.sources_created_at is not null or e.sources_expire_at is not null);
  -- The written entries something of the thread is derived from: the only ones to follow.
  v_sources := array(
    select distinct source.id
    from {{entries}} d
    cross join lateral jsonb_array_elements_text(d.metadata -> '_lineage' -> 'sourceIds') as source(id)
    where d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
      and (d.metadata -> '_lineage' -> 'sourceIds') ?| p_ids and source.id = any(p_ids) and source.id <> d.id);
  if cardinality(v_sources) = 0 then
    return;
  end if;

  -- Each row of flow: an entry and values it now has, 'infinity' standing for
  -- no expiry; what moves an entry's values earlier is carried on.
  with recursive flow(id, created_at, expires_at) as (
    select e.id, least(e.created_at, e.sources_created_at),
           coalesce(least(e.expires_at, e.sources_expire_at), 'infinity')
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and e.id = any(v_sources)
    union
    select d.id, least(d.created_at, d.sources_created_at, f.created_at),
           least(coalesce(least(d.expires_at, d.sources_expire_at), 'infinity'), f.expires_at)
    from flow f
    join {{entries}} d
      on d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
     and (d.metadata -> '_lineage' -> 'sourceIds') ? f.id and d.id <> f.id
    where f.created_at < least(d.created_at, d.sources_created_at)
       or f.expires_at < coalesce(least(d.expires_at, d.sources_expire_at), 'infinity')
  )
  update {{entries}} e
  set sources_created_at = case when f.created_at < least(e.created_at, e.sources_created_at)
                                then f.created_at else e.sources_created_at end,
      sources_expire_at = case when f.expires_at < coalesce(least(e.expires_at, e.sources_expire_at), 'infinity')
                               then f.expires_at else e.sources_expire_at end
  from (select f.id, min(f.created_at) as created_at, min(f.expires_at) as expires_at
        from flow f group by f.id) as f
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    and e.id = f.id
    and (f.created_at < least(e.created_at, e.sources_created_at)
         or f.expires_at < coalesce(least(e.expires_at, e.sources_expire_at), 'infinity'));
end;
$$;
-- end of functions/lineage_expiry_v1.sql

-- file functions/remember_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- Upserts a batch of entries into one thread, all or nothing. Arrays are
-- parallel (one element per entry); p_metadata, p_sequences, p_importance,
-- p_consent, p_expires_at and p_ttl may be null. An entry expires (is no
-- longer recalled, exported or injected: is_live_v2) at its expires_at, which
-- must be after p_now, or at p_now + its ttl (more than 0, at most 36,500
-- days of 24 hours: added in UTC, so a daylight-saving change of the session's
-- time zone never moves it; p_now is the server's clock for a tenant-bound
-- role), ending no later than 9999-12-30 00:00 UTC, the latest time stored
-- (assert_time_v1). Giving both is
-- PM002, a time out of range PM005. Without either a stored entry keeps its
-- expiry (none for a new entry). A missing sequence keeps the stored entry's sequence,
-- or for a new entry takes (max sequence in the thread) + (position in the
-- batch); a missing consent keeps the stored one (legacy for a new entry).
-- Importance is clamped to [0, 1]; metadata._lineage is checked; created_at
-- and updated_at are p_now. A written entry expires with its lineage
-- sources, and an entry derived from it with it (lineage_expiry_v1, read by
-- is_live_v2). A written entry is tombstoned exactly when one of
-- its lineage sources is invalid. A written id leaves every share grant of
-- the thread (unshare_v1). Returns the number of entries written.
create or replace function {{schema}}.remember_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_expires_at timestamptz[] default null, p_ttl interval[] default null,
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
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform {{schema}}.assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  if v_count = 0 then
    return query select 0, '{}'::text[];
    return;
  end if;
  if coalesce(cardinality(p_texts), 0) <> v_count
     or coalesce(cardinality(p_embeddings), 0) <> v_count
     or coalesce(cardinality(p_metadata), v_count) <> v_count
     or coalesce(cardinality(p_sequences), v_count) <> v_count
     or coalesce(cardinality(p_importance), v_count) <> v_count
     or coalesce(cardinality(p_consent), v_count) <> v_count
     or coalesce(cardinality(p_expires_at), v_count) <> v_count
     or coalesce(cardinality(p_ttl), v_count) <> v_count then
    raise exception 'remember_v2: the argument arrays differ in length' using errcode = 'PM002';
  end if;

  -- The first problem of the first entry that has one.
  select x.problem into v_problem
  from (select e.ord, case
                 when not is_id_v1(e.id, 512)
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
                 when e.expires_at is not null and e.ttl is not null
                   then format('entry %s (%s): give expires_at or ttl, not both', e.ord, e.id)
               end as problem
        from unnest(p_ids, p_texts, p_metadata, p_importance, p_embeddings, p_sequences, p_consent, p_expires_at, p_ttl)
               with ordinality as e(id, text, metadata, importance, embedding, sequence, consent, expires_at, ttl, ord)) as x
  where x.problem is not null
  order by x.ord
  limit 1;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'PM002';
  end if;
  perform assert_time_v1((c.value ->> 'grantedAt')::timestamptz, 'consent grantedAt'),
          assert_time_v1((c.value ->> 'revokedAt')::timestamptz, 'consent revokedAt')
  from unnest(p_consent) as c(value)
  where c.value is not null;
  if (select count(distinct id) from unnest(p_ids) as id) <> v_count then
    raise exception 'remember_v2: an entry id appears twice in the batch' using errcode = 'PM002';
  end if;
  perform assert_time_v1(x, 'expires_at') from unnest(p_expires_at) as x where x is not null;
  -- A ttl is judged by the time it ends (added in UTC, as it is stored): an
  -- interval of months would compare as 30 days each but add calendar months.
  select format('entry %s (%s): %s', e.ord, e.id,
                case when e.expires_at <= p_now then 'expires_at must be after now'
                     when e.ends <= p_now or e.ends > ((p_now at time zone 'UTC') + interval '36500 days') at time zone 'UTC'
                       then 'ttl must be more than 0 and at most 36500 days'
                     else 'the ttl would end after 9999-12-30 00:00 UTC, the latest time stored' end)
  into v_problem
  from (select x.*, ((p_now at time zone 'UTC') + x.ttl) at time zone 'UTC' as ends
        from unnest(p_ids, p_expires_at, p_ttl) with ordinality as x(id, expires_at, ttl, ord)) as e
  where e.expires_at <= p_now or e.ends <= p_now
     or e.ends > ((p_now at time zone 'UTC') + interval '36500 days') at time zone 'UTC'
     or e.ends > timestamptz '9999-12-30 00:00:00+00'
  order by e.ord
  limit 1;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'PM005';
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
  perform assert_dimensions_v2(p_tenant_id, p_resource_id, p_thread_id, v_dimensions);
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
     created_at, updated_at, expires_at)
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
         p_now, p_now, coalesce(e.expires_at, ((p_now at time zone 'UTC') + e.ttl) at time zone 'UTC', s.expires_at)
  from unnest(p_ids, p_texts, p_embeddings, p_metadata, p_sequences, p_importance, p_consent, p_expires_at, p_ttl)
         with ordinality as e(id, text, embedding, metadata, sequence, importance, consent, expires_at, ttl, ord)
  left join {{entries}} s
    on s.tenant_id = p_tenant_id and s.resource_id = p_resource_id
   and s.thread_id = p_thread_id and s.id = e.id
  on conflict (tenant_id, resource_id, thread_id, id) do update
    set text = excluded.text, metadata = excluded.metadata, embedding = excluded.embedding,
        sequence = excluded.sequence, importance = excluded.importance,
        consent_source = excluded.consent_source, consent_scope = excluded.consent_scope,
        consent_visible = excluded.consent_visible, consent_granted_at = excluded.consent_granted_at,
        consent_revoked_at = excluded.consent_revoked_at, updated_at = excluded.updated_at,
        expires_at = excluded.expires_at;
  perform lineage_expiry_v1(p_tenant_id, p_resource_id, p_thread_id, p_ids);
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
-- end of functions/remember_v2.sql

-- file functions/recall_bounds_v1.sql
-- recall_v3's narrow first pass over one thread: the p_limit rows (all of them
-- when p_limit is NULL) of the thread whose upper bound on the score is
-- highest, injectable (is_injectable_v1 under p_require_consent) and live at
-- p_now (is_live_v2 under p_cutoff); each row as its ctid (same snapshot as
-- the caller, a stable function) and
--   upper = similarity + 0.25 when its tsvector holds a term of p_any_term, else similarity
-- (lexical <= 1, so no row's exact score exceeds it). Tombstones are not read
-- here. One single-table statement on the tenant's predicate, which Citus
-- plans on its fast path (for the shard directly, never printed back to text);
-- plain PostgreSQL runs it from its plan cache.
create or replace function {{schema}}.recall_bounds_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_any_term tsquery,
  p_require_consent boolean, p_cutoff timestamptz, p_now timestamptz, p_limit integer)
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
           + case when e.text_tsv @@ p_any_term then 0.25::float8 else 0::float8 end as upper
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                           p_require_consent)
      and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at, p_cutoff, p_now)
    order by 2 desc
    limit p_limit;
end;
$$;
-- end of functions/recall_bounds_v1.sql

-- file functions/recall_top_v1.sql
-- The best p_keep of recall_v3's probed rows (p_probes: rows of p_resource_id
-- read with their distance, the cheap columns of the gate already applied):
-- those not expired at p_now (is_live_v2 under p_resource_cutoff and their
-- thread's own policy, if any) and not tombstoned, scored exactly
-- (similarity + 0.25 * lexical, lexical_score_v1 over p_terms), ordered by
-- score desc, sequence, id, thread (code-point order for the texts).
create or replace function {{schema}}.recall_top_v1(
  p_probes {{schema}}.recall_probe_v1[], p_tenant_id text, p_resource_id text, p_terms text[], p_any_term tsquery,
  p_resource_cutoff timestamptz, p_now timestamptz, p_keep integer)
returns {{schema}}.recall_candidate_v1[]
language plpgsql stable  -- so its plan is cached for the session (a SQL function's is made in every transaction)
set search_path from current
set enable_indexscan = on  -- recall_v3 turns plain index scans off
as $$
begin
  return (
    select coalesce(array_agg(row(t.row_id, p_resource_id, t.thread_id, t.id, t.sequence, t.importance, t.created_at,
                                  t.similarity, t.lexical)::{{schema}}.recall_candidate_v1
                              order by t.base desc, t.sequence, t.id collate "C", t.thread_id collate "C"), '{}')
    from (select p.row_id, p.thread_id, p.id, p.sequence, p.importance, p.created_at, p.similarity, l.lexical,
                 p.similarity + 0.25::float8 * l.lexical as base
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
-- end of functions/recall_top_v1.sql

-- file functions/recall_travellers_probe_v1.sql
-- recall_travellers_v1's read of the travellers: the entries of
-- p_resource_id's other threads than p_thread_id that may leave their thread
-- (leaves_thread_v1), of the query's width, outside the threads of p_foreign,
-- injectable (under p_require_consent) and live under p_resource_cutoff (the
-- resource's own policy; recall_top_v1 applies each thread's), as probes.
-- p_exact: as the thread's own are read (recall_bounds_v1), one narrow pass
-- bounds each row's score (similarity, plus 0.25 when it holds a term of
-- p_any_term), then the p_limit best bounds (every row when NULL) are read
-- again; floor is the lowest bound among them (the highest a row left out
-- could have). Otherwise the p_limit nearest are read through the travellers'
-- partial HNSW index (pinned installs of at most 2,000 dimensions, whose width
-- is the query's), by pgvector's iterative scan, planned per call so that the
-- planner sees the resource's size; floor is the lowest similarity among them
-- plus 0.25. probed: how many were read.
create or replace function {{schema}}.recall_travellers_probe_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_any_term tsquery,
  p_require_consent boolean, p_foreign text[], p_resource_cutoff timestamptz, p_now timestamptz, p_limit integer,
  p_exact boolean, out probes {{schema}}.recall_probe_v1[], out probed bigint, out floor double precision)
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
               + case when e.text_tsv @@ p_any_term then 0.25::float8 else 0::float8 end as upper
        from {{entries}} e
        where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id <> p_thread_id
          and leaves_thread_v1(e.consent_scope) and vector_dims(e.embedding) = v_width
          and e.thread_id <> all (p_foreign)
          and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                               p_require_consent)
          and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
                         p_resource_cutoff, p_now)
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
          || ' count(*), min(p.similarity) + 0.25::float8'
          || ' from (select e.ctid as row_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,'
          || ' e.expires_at, e.sources_created_at, e.sources_expire_at, e.text_tsv,'
          || ' 1::float8 - (e.embedding <=> $4) as similarity'
          || ' from {{entries}} e'
          || ' where e.tenant_id = $1 and e.resource_id = $2 and e.thread_id <> $3 and e.thread_id <> all ($9)'
          || ' and {{schema}}.leaves_thread_v1(e.consent_scope)'
          || ' and {{schema}}.is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold,'
          || ' e.consent_source, $5)'
          || ' and {{schema}}.is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at, $6, $7)'
          || ' order by e.embedding <=> $4 limit $8) as p'
    into probes, probed, floor
    using p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_require_consent, p_resource_cutoff,
          p_now, p_limit, p_foreign;
  perform set_config('enable_indexscan', 'off', true);  -- as recall_v3 runs
end;
$$;
-- end of functions/recall_travellers_probe_v1.sql

-- file functions/recall_gates_v1.sql
-- recall_v3's explain counts: for each gate, in order (scope, hold, consent,
-- invalidation, expiry), how many entries it removed, each counted at the
-- first gate it fails. Counted are the thread's entries, the entries live
-- grants to it name (recall_grants_v1) and, with p_across_threads, every
-- entry of the resource's other threads (nothing else of another thread);
-- scope counts those of them that may not take part: kept in their thread by
-- their consent scope, of another width than p_width, or in a thread of
-- p_foreign (one another embedding model wrote). Expiry is measured against
-- each thread's retention cutoff (retention_cutoff_v1).
create or replace function {{schema}}.recall_gates_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_share_parent_thread_id text,
  p_across_threads boolean, p_require_consent boolean, p_width integer, p_foreign text[], p_now timestamptz)
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
      -- Each entry counted, with the first gate it fails but expiry's.
      select e.resource_id, e.thread_id, e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
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
    from unnest(array['scope', 'hold', 'consent', 'invalidation', 'expiry']) with ordinality as g(name, position)
    left join (select coalesce(c.gate, 'expiry') as name, count(*) as removed
               from counted c
               left join cutoffs t on t.resource_id = c.resource_id and t.thread_id = c.thread_id
               where c.gate is not null
                  or not is_live_v2(c.created_at, c.expires_at, c.sources_created_at, c.sources_expire_at,
                                    t.cutoff, p_now)
               group by 1) as n
      on n.name = g.name
    order by g.position;
end;
$$;
-- end of functions/recall_gates_v1.sql

-- file functions/recall_v3.sql
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
--   score      = similarity + 0.25 * lexical
-- Only injectable entries take part: visible, not revoked, not held, not
-- tombstoned (an indexed NOT EXISTS), explicitly consented when
-- p_require_consent, and not expired at p_now (is_live_v2: its expires_at, and
-- the retention policies of its resource and thread, retention_cutoff_v1; an
-- entry whose lineage source, transitively, has expired has expired with it).
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
--   score = w_similarity * (similarity + 0.25 * lexical)
--         + w_recency * 0.5 ^ (max(0, now - created_at in ms) / half_life_ms)
--         + w_importance * coalesce(importance, 1.0)
-- and cut to top_k, ties by sequence asc, id asc (code-point order), thread,
-- resource; the hit rows carry recency and the importance used. Without
-- weights, recency is NULL and importance is as stored. With p_explain, rows
-- of kind 'gate' follow: for each gate (id = scope, hold, consent,
-- invalidation, expiry), rank = how many entries it removed, each counted at
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
-- a blank query, PM003/PM004 the query embedding, PM015 scoring weights,
-- PM017/PM018 the embedding model.
create or replace function {{schema}}.recall_v3(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_query_embedding vector, p_query_text text default '',
  p_top_k integer default 8, p_message_range integer default 0,
  p_require_consent boolean default false, p_share_parent_thread_id text default null,
  p_across_threads boolean default false, p_now timestamptz default now(),
  p_recency_weight double precision default null, p_importance_weight double precision default null,
  p_half_life_ms double precision default null, p_explain boolean default false,
  p_model_id text default null)
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
  -- (recall_bounds_v1) reads each row's distance and whether it holds a query
  -- term, and keeps the v_probe rows whose upper bound is highest (similarity,
  -- plus 0.25 when it holds a term: lexical <= 1), each as narrow as can be
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
    from recall_bounds_v1(p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, v_any_term,
                          p_require_consent, v_cutoff, p_now, v_probe) as b;
    v_candidates := array(
      select row(r.row_id, p_resource_id, p_thread_id, r.id, r.sequence, r.importance, r.created_at,
                 r.similarity, r.lexical)::{{schema}}.recall_candidate_v1
      from recall_rescore_v1(p_tenant_id, p_resource_id, p_thread_id, v_row_ids, p_query_embedding, v_terms,
                             v_any_term) as r
      where r.id not in (select t.entry_id from unnest(v_tombstones) as t(entry_id))  -- a hashed subplan
      order by r.similarity + 0.25::float8 * r.lexical desc, r.sequence asc, r.id collate "C" asc
      limit v_keep);
    exit when v_probe is null or v_probed < v_probe
              or (v_candidates[v_keep]).similarity + 0.25::float8 * (v_candidates[v_keep]).lexical > v_floor;
    v_probe := null;  -- every row
  end loop;

  -- Plain recall of one thread (no scoring, grants, adjacency, explain or
  -- other threads): the candidates are the hits.
  if not v_scored and p_share_parent_thread_id is null and p_message_range = 0 and not p_explain
     and not p_across_threads then
    return query
      select 'hit'::text, c.position::integer, e.resource_id, e.thread_id, e.id, e.text, e.metadata, e.sequence,
             e.importance, c.similarity, c.lexical, null::float8, c.similarity + 0.25::float8 * c.lexical,
             e.created_at, e.updated_at
      from unnest(v_candidates) with ordinality as c(row_id, resource_id, thread_id, id, sequence, importance,
                                                     created_at, similarity, lexical, position)
      join recall_rows_v1(p_tenant_id, array(select x.row_id from unnest(v_candidates) as x)) as e
        on e.row_id = c.row_id  -- the row scored above, in this snapshot
      order by c.position;
    return;
  end if;

  if p_across_threads then
    -- The best of the resource's other threads (recall_travellers_v1), which
    -- must beat the thread's own v_keep-th best score to matter.
    v_candidates := v_candidates || recall_travellers_v1(
      p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, v_terms, v_any_term, p_require_consent, v_foreign,
      p_now, v_keep, (v_candidates[v_keep]).similarity + 0.25::float8 * (v_candidates[v_keep]).lexical);
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
              and not exists (select 1 from {{invalidation}} i
                              where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                                and i.thread_id = e.thread_id and i.entry_id = e.id)
            offset 0) as s
      order by s.similarity + 0.25::float8 * s.lexical desc, s.sequence asc, s.id collate "C" asc,
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
      select c.*, c.similarity + 0.25::float8 * c.lexical as base
      from unnest(v_candidates) as c
      order by c.similarity + 0.25::float8 * c.lexical desc, c.sequence asc, c.id collate "C" asc,
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
    from recall_gates_v1(p_tenant_id, p_resource_id, p_thread_id, p_share_parent_thread_id, p_across_threads,
                         p_require_consent, v_width, v_foreign, p_now) as g
    where p_explain
    order by 1 desc, 2;
end;
$$;
-- end of functions/recall_v3.sql

-- file functions/invalidate_v1.sql
-- Tombstones p_ids' dependents (every entry of the thread whose
-- _lineage.sourceIds holds an invalidated id, transitively) and, unless
-- p_reason is 'corrected', p_ids themselves; with 'held' it also sets the legal
-- hold. The walk is breadth-first over distinct lineage edges. Caps: at most
-- 64 ids, 256 edges, and new dependents no deeper than 8 levels;
-- over a cap raises PM010 and nothing changes. Returns every tombstoned id.
-- Reasons: deleted, held, revoked, corrected, expired, source-invalidated.
-- An entry keeps one tombstone: an erasure's reason (deleted, expired, held)
-- replaces any other, since a grant clears every tombstone but an erasure's
-- (set_consent_v1), so none may stand for an erasure under another name.
-- Each step of the walk is one pass over the thread, whatever the frontier's size.
create or replace function {{schema}}.invalidate_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_reason text,
  p_now timestamptz default now())
returns table (entry_id text)
language plpgsql volatile security definer
set search_path from current
as $$
#variable_conflict use_column
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_visited text[] := array(select distinct x from unnest(p_ids) as x);
  v_frontier text[] := v_visited;
  v_edges text[] := '{}';  -- 'source' || chr(31) || 'dependent'
  v_found text[];
  v_new text[];
  v_depth integer := 0;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
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
  on conflict (tenant_id, resource_id, thread_id, entry_id)  -- columns (use_column), not the result's entry_id
  do update set reason = excluded.reason
    where excluded.reason in ('deleted', 'expired', 'held')
      and {{invalidation}}.reason not in ('deleted', 'expired', 'held');
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

-- file functions/invalidate_resource_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The first step of erasing everything a resource holds, one bounded batch
-- at a time: picks the next p_limit (1..64) entries of every thread of the
-- tenant and resource (exact ids: a derived resource is another one) after
-- the (thread_id, sequence, id) cursor, in that order (code-point order for
-- the texts), and tombstones, thread by thread with erase_walk_v1 (reason
-- 'deleted', its lock and bounded walk, which never refuses: a walk it
-- leaves pending is continued by the next erase_walk_v1 call in that
-- thread), those not under legal hold and their lineage dependents. Returns
-- the picked entries (picked true, in cursor order; held says whether the
-- entry stays under its hold) and then the dependents the walks reached
-- besides them (picked false), each with its thread and sequence. The next
-- batch starts after the last picked entry; fewer than p_limit picked means
-- the resource is done. purge_resource_v1 then deletes the bodies. With
-- p_expired_only it picks only the entries that have expired at p_now
-- (is_live_v2, under the policies of the resource and of each thread) and
-- tombstones them as 'expired': the resource-wide retention sweep.
create or replace function {{schema}}.invalidate_resource_v1(
  p_tenant_id text, p_resource_id text,
  p_after_thread_id text default null, p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 64, p_expired_only boolean default false, p_now timestamptz default now())
returns table (thread_id text, entry_id text, sequence bigint, held boolean, picked boolean)
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_picked record;  -- the batch, as parallel arrays in cursor order
  v_thread text;
  v_ids text[];
  v_reached_threads text[] := '{}';
  v_reached_ids text[] := '{}';
  v_resource_cutoff timestamptz;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- expiry is measured against it
  perform assert_scope_v2(p_tenant_id, p_resource_id, null, false);
  perform assert_resource_cursor_v1(p_after_thread_id, p_after_sequence, p_after_id);
  if p_limit is null or p_limit not between 1 and 64 then
    raise exception 'limit must be between 1 and 64, got %', p_limit using errcode = 'PM005';
  end if;
  if p_expired_only is null then
    raise exception 'expired_only must be true or false' using errcode = 'PM005';
  end if;
  v_resource_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, null, p_now);
  select coalesce(array_agg(b.thread_id order by b.position), '{}') as threads,
         coalesce(array_agg(b.id order by b.position), '{}') as ids,
         coalesce(array_agg(b.sequence order by b.position), '{}') as sequences,
         coalesce(array_agg(b.legal_hold order by b.position), '{}') as held
  into v_picked
  from (select e.thread_id, e.id, e.sequence, e.legal_hold,
               row_number() over (order by e.thread_id collate "C", e.sequence, e.id collate "C") as position
        from {{entries}} e
        left join {{retention_policy}} tp  -- a policy of the entry's own thread
          on tp.tenant_id = p_tenant_id and tp.resource_id = p_resource_id and tp.thread_id = e.thread_id
        where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
          and (p_after_thread_id is null
               or (e.thread_id collate "C", e.sequence, e.id collate "C")
                  > (p_after_thread_id collate "C", p_after_sequence, p_after_id collate "C"))
          and (not p_expired_only
               or not is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
                                 greatest(v_resource_cutoff, p_now - tp.max_age_days * interval '24 hours'), p_now))
        order by e.thread_id collate "C", e.sequence, e.id collate "C"
        limit p_limit) as b;
  for v_thread, v_ids in
    select b.thread_id, array_agg(b.id order by b.position)
    from unnest(v_picked.threads, v_picked.ids, v_picked.held) with ordinality as b(thread_id, id, held, position)
    where not b.held
    group by b.thread_id
    order by b.thread_id collate "C"
  loop
    v_ids := (select w.tombstoned
              from erase_walk_v1(p_tenant_id, p_resource_id, v_thread, v_ids,
                                 case when p_expired_only then 'expired' else 'deleted' end, p_now) as w);
    v_reached_threads := v_reached_threads || array_fill(v_thread, array[cardinality(v_ids)]);
    v_reached_ids := v_reached_ids || v_ids;
  end loop;
  return query
    select b.thread_id, b.id, b.sequence, b.held, true
    from unnest(v_picked.threads, v_picked.ids, v_picked.sequences, v_picked.held)
           with ordinality as b(thread_id, id, sequence, held, position)
    order by b.position;
  return query
    select e.thread_id, e.id, e.sequence, e.legal_hold, false
    from unnest(v_reached_threads, v_reached_ids) as r(thread_id, id)
    join {{entries}} e
      on e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = r.thread_id and e.id = r.id
    where not exists (select 1 from unnest(v_picked.threads, v_picked.ids) as b(thread_id, id)
                      where b.thread_id = r.thread_id and b.id = r.id)
    order by e.thread_id collate "C", e.sequence, e.id collate "C";
end;
$$;
-- end of functions/invalidate_resource_v1.sql

-- file functions/purge_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The deleting step of an erasure that a write may overtake: deletes the
-- bodies of p_ids (1..64) that carry a tombstone, skipping entries under
-- legal hold, and drops the deleted ids from this thread's share grants. An
-- id whose entry carries no tombstone was written again after the erasure
-- tombstoned it (remember_v2 clears a written id's tombstone; the write
-- committed between the two steps): it is kept as that write left it and
-- returned in kept, never raised (purge_v1's PM012), so one overtaken id
-- never stops the deletion of the others. Returns how many bodies were
-- deleted and the kept ids, in code-point order.
create or replace function {{schema}}.purge_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[])
returns table (deleted integer, kept text[])
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_ids text[];
  v_kept text[];
begin
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if coalesce(cardinality(p_ids), 0) not between 1 and 64 then
    raise exception 'purge: between 1 and 64 ids per call, got %', coalesce(cardinality(p_ids), 0)
      using errcode = 'PM005';
  end if;
  v_kept := array(
    select e.id from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids) and not e.legal_hold
      and not exists (select 1 from {{invalidation}} i
                      where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                        and i.thread_id = p_thread_id and i.entry_id = e.id)
    order by e.id collate "C");
  with deleted as (
    delete from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids) and not e.legal_hold
      and not (e.id = any(v_kept))
    returning e.id
  )
  select coalesce(array_agg(d.id), '{}') into v_ids from deleted d;
  perform unshare_v1(p_tenant_id, p_resource_id, p_thread_id, v_ids);
  return query select cardinality(v_ids), v_kept;
end;
$$;
-- end of functions/purge_v2.sql

-- file functions/erase_walk_step_v1.sql
-- One step of erase_walk_v1: the lineage edges of the thread from p_frontier
-- to the entries that name one of them as a source (not themselves), leaving
-- out dependents in p_visited, as 'source' || chr(31) || 'dependent' in
-- code-point order. One pass over the thread through the lineage index (?|
-- is one test per row; an entry without lineage fails it at once).
create or replace function {{schema}}.erase_walk_step_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_frontier text[], p_visited text[])
returns text[]
language plpgsql stable
set search_path from current
as $$
begin
  return array(
    select x.edge
    from (select distinct source.id || chr(31) || d.id as edge
          from {{entries}} d
          cross join lateral jsonb_array_elements_text(d.metadata -> '_lineage' -> 'sourceIds') as source(id)
          where d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
            and (d.metadata -> '_lineage' -> 'sourceIds') ?| p_frontier
            and source.id = any(p_frontier) and d.id <> source.id and not (d.id = any(p_visited))) as x
    order by x.edge collate "C");
end;
$$;
-- end of functions/erase_walk_step_v1.sql

-- file functions/erase_walk_reach_v1.sql
-- erase_walk_v1's walk from p_start over the thread's lineage: breadth-first
-- over edges in code-point order (erase_walk_step_v1), on through the
-- dependents that carry no tombstone or a pending one (a settled tombstone
-- has everything below it tombstoned), until 256 dependents without a
-- tombstone are reached or 8 levels are passed. Then it takes what the budget
-- allows, in edge order, and stops: each entry taken, and each entry of the
-- last frontier with a dependent left out, is pending. Returns the ids
-- reached (p_start included), those whose dependents it looked for, and the
-- pending ones. Reads only: erase_walk_v1 writes the tombstones.
create or replace function {{schema}}.erase_walk_reach_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_start text[],
  out visited text[], out walked text[], out pending text[])
language plpgsql stable
set search_path from current
as $$
declare
  v_frontier text[] := p_start;
  v_found text[];            -- 'source' || chr(31) || 'dependent', in code-point order
  v_new text[];              -- dependents reached this step that carried no tombstone
  v_taken text[];
  v_budget integer := 256;
  v_depth integer := 0;
begin
  visited := p_start;
  walked := '{}';
  pending := '{}';
  while cardinality(v_frontier) > 0 loop
    v_depth := v_depth + 1;
    walked := walked || v_frontier;
    v_found := erase_walk_step_v1(p_tenant_id, p_resource_id, p_thread_id, v_frontier, visited);
    v_new := array(select distinct split_part(f.edge, chr(31), 2) from unnest(v_found) as f(edge)
                   where not exists (select 1 from {{invalidation}} i
                                     where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                       and i.thread_id = p_thread_id and i.entry_id = split_part(f.edge, chr(31), 2)));
    if v_depth > 8 or cardinality(v_new) > v_budget then
      -- Out of depth or budget: take what the budget allows (in edge order);
      -- a frontier entry with a dependent left out, and every entry taken, stays pending.
      v_taken := case when v_depth > 8 then '{}'::text[] else array(
                   select d.id from (select split_part(f.edge, chr(31), 2) as id, min(f.position) as first
                                     from unnest(v_found) with ordinality as f(edge, position)
                                     where split_part(f.edge, chr(31), 2) = any(v_new)
                                     group by 1) as d
                   order by d.first limit v_budget) end;
      pending := v_taken || array(select distinct split_part(f.edge, chr(31), 1) from unnest(v_found) as f(edge)
                                  where split_part(f.edge, chr(31), 2) = any(v_new)
                                    and not (split_part(f.edge, chr(31), 2) = any(v_taken)));
      visited := visited || v_taken
                 || array(select distinct split_part(f.edge, chr(31), 2) from unnest(v_found) as f(edge)
                          where not (split_part(f.edge, chr(31), 2) = any(v_new)));
      exit;
    end if;
    v_budget := v_budget - cardinality(v_new);
    -- Walked on: the dependents that carried no tombstone, or a pending one.
    v_frontier := array(select distinct split_part(f.edge, chr(31), 2) from unnest(v_found) as f(edge)
                        where split_part(f.edge, chr(31), 2) = any(v_new)
                           or exists (select 1 from {{invalidation}} i
                                      where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                        and i.thread_id = p_thread_id and i.pending
                                        and i.entry_id = split_part(f.edge, chr(31), 2)));
    visited := visited || array(select distinct split_part(f.edge, chr(31), 2) from unnest(v_found) as f(edge));
  end loop;
end;
$$;
-- end of functions/erase_walk_reach_v1.sql

-- file functions/erase_walk_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The tombstoning step of an erasure (forget, legal hold, the retention
-- sweeps) that no lineage a tenant writes can block: tombstones p_ids (0..64)
-- of the thread with p_reason ('deleted', 'expired' or 'held'; 'held' also
-- sets their legal hold) and walks their lineage dependents breadth-first,
-- as invalidate_v1 does, but never refuses: one call tombstones at most 256
-- entries that carried no tombstone, at most 8 levels below where it
-- starts, and marks the tombstone of each entry whose dependents it did not
-- all reach as pending. A call starts from p_ids and from up to 64 pending
-- tombstones of the thread (code-point order), so calls repeated with no
-- ids finish every walk left pending, whatever its size; each call
-- tombstones at least one more entry or settles a pending one. A dependent
-- that already carries a settled (not pending) tombstone is reached (an
-- erasure's reason replaces another's, as in invalidate_v1) but not walked
-- through: everything derived from it already carries a tombstone, since a
-- tombstone is settled only once its walk is done. Returns the ids
-- tombstoned or reached (p_ids and dependents that are stored entries, in
-- code-point order) and how many pending tombstones the thread still holds
-- (0: every walk done). PM005 for more than 64 ids, PM002 for another reason.
create or replace function {{schema}}.erase_walk_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_reason text,
  p_now timestamptz default now())
returns table (tombstoned text[], pending integer)
language plpgsql volatile security definer
set search_path from current
as $$
#variable_conflict use_column
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_start text[];
  v_visited text[];  -- the entries the walk reached
  v_walked text[];   -- those whose dependents it looked for
  v_pending text[];  -- those whose dependents it did not all reach
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  if coalesce(cardinality(p_ids), 0) > 64 then
    raise exception 'erase: at most 64 ids per call, got %', cardinality(p_ids) using errcode = 'PM005';
  end if;
  if p_reason is null or p_reason not in ('deleted', 'expired', 'held') then
    raise exception 'erase: unknown reason %', p_reason using errcode = 'PM002';
  end if;
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  v_start := array(select distinct x from unnest(coalesce(p_ids, '{}')) as x
                   union
                   select i.entry_id from (select i.entry_id from {{invalidation}} i
                                           where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                             and i.thread_id = p_thread_id and i.pending
                                           order by i.entry_id collate "C" limit 64) as i);
  select r.visited, r.walked, r.pending into v_visited, v_walked, v_pending
  from erase_walk_reach_v1(p_tenant_id, p_resource_id, p_thread_id, v_start) as r;

  insert into {{invalidation}}
    (tenant_id, resource_id, thread_id, entry_id, reason, source_entry_id, sequence, created_at, pending)
  select p_tenant_id, p_resource_id, p_thread_id, e.id, p_reason,
         case when e.id = any(p_ids) then e.id end, e.sequence, p_now,
         e.id = any(v_pending)
         or exists (select 1 from {{invalidation}} i  -- reached, not walked: still pending
                    where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                      and i.thread_id = p_thread_id and i.entry_id = e.id and i.pending
                      and not (e.id = any(v_walked)))
  from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    and e.id = any(v_visited)
  on conflict (tenant_id, resource_id, thread_id, entry_id)
  do update set reason = case when {{invalidation}}.reason in ('deleted', 'expired', 'held')
                              then {{invalidation}}.reason else excluded.reason end,  -- an erasure's replaces another
                pending = excluded.pending;
  -- What was walked is settled unless left pending above; a start whose body
  -- is gone (deleted while its walk was pending) too.
  update {{invalidation}} i set pending = false
  where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id and i.thread_id = p_thread_id
    and i.entry_id = any(v_walked) and not (i.entry_id = any(v_pending)) and i.pending;
  if p_reason = 'held' then
    update {{entries}} e set legal_hold = true, updated_at = p_now
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids);
  end if;

  return query
    select array(select e.id from {{entries}} e
                 where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
                   and e.id = any(v_visited)
                 order by e.id collate "C"),
           (select count(*)::integer from {{invalidation}} i
            where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id and i.thread_id = p_thread_id
              and i.pending);
end;
$$;
-- end of functions/erase_walk_v1.sql

-- file functions/set_consent_v1.sql
-- Grants or revokes consent on one entry without re-embedding. NULL leaves a
-- field as it is. Revoking (p_visible false, or p_revoked_at given) writes the
-- tombstones first (invalidate_v1 'revoked'); granting (p_visible true) clears
-- the entry's tombstone and its revoked_at, unless one of its own sources is
-- still invalid (dependents stay invalidated: regenerate them from the
-- remaining evidence), or the tombstone is an erasure's (deleted, expired,
-- held): a forget or retention sweep tombstones first and deletes after, and
-- a grant in between, or after an erasure that stopped there, must not bring
-- the entry back. A legacy entry
-- becomes explicitly consented (source user, scope thread unless given).
create or replace function {{schema}}.set_consent_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_visible boolean default null, p_source text default null, p_scope text default null,
  p_granted_at timestamptz default null, p_revoked_at timestamptz default null,
  p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_revoking boolean := p_visible is false or p_revoked_at is not null;
  v_granting boolean := p_visible is true and p_revoked_at is null;
  v_invalidated text[] := '{}';
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if p_source is not null and p_source not in ('user', 'agent', 'system') then
    raise exception 'consent source must be user, agent or system, got %', p_source using errcode = 'PM002';
  end if;
  if p_scope is not null and p_scope not in ('thread', 'profile', 'user') then
    raise exception 'consent scope must be thread, profile or user, got %', p_scope using errcode = 'PM002';
  end if;
  perform assert_time_v1(p_granted_at, 'granted_at'), assert_time_v1(p_revoked_at, 'revoked_at');
  perform 1 from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id
  for update;
  if not found then
    raise exception 'no entry % in this thread', p_entry_id using errcode = 'PM011';
  end if;
  if v_revoking then
    v_invalidated := array(select x.entry_id
                           from invalidate_v1(p_tenant_id, p_resource_id, p_thread_id,
                                              array[p_entry_id], 'revoked', p_now) as x);
  elsif v_granting then
    delete from {{invalidation}} i
    where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
      and i.thread_id = p_thread_id and i.entry_id = p_entry_id
      and i.reason not in ('deleted', 'expired', 'held');
  end if;
  update {{entries}} e
  set consent_source = coalesce(p_source, e.consent_source, 'user'),
      consent_scope = coalesce(p_scope, e.consent_scope, 'thread'),
      consent_visible = case when v_revoking then false else coalesce(p_visible, e.consent_visible) end,
      consent_granted_at = case when v_granting then coalesce(p_granted_at, p_now)
                                else coalesce(p_granted_at, e.consent_granted_at) end,
      consent_revoked_at = case when v_granting then null
                                when v_revoking then coalesce(p_revoked_at, p_now)
                                else e.consent_revoked_at end,
      updated_at = p_now
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id;
  if v_granting then
    -- Still invalid while one of its own sources is.
    perform tombstone_from_sources_v1(p_tenant_id, p_resource_id, p_thread_id, array[p_entry_id], p_now);
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
-- end of functions/set_consent_v1.sql

-- file functions/correct_v2.sql
-- Replaces an entry's text and embedding, keeps its consent, sets
-- metadata._lineage.reason to 'corrected' and invalidates its dependents
-- (not the entry itself: "corrected keeps the source"). The corrected entry
-- keeps its lineage, so it is then re-derived from its sources: if the walk
-- invalidated one of its own sources (a lineage cycle), it is invalid too
-- ("multi-source facts stay injectable only if none of their sources are
-- invalidated"). The entry leaves every share grant of the thread
-- (unshare_v1). Returns the record and every id invalidated (the entry last,
-- when it is one of them). PM002 for a blank text, PM006 over 64 MiB, PM003 /
-- PM004 for the embedding, PM011 when the thread holds no such entry.
create or replace function {{schema}}.correct_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_text text, p_embedding vector, p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_record {{schema}}.entry_record_v1;
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
            e.created_at, e.updated_at
  into v_record.id, v_record.text, v_record.metadata, v_record.sequence, v_record.importance,
       v_record.consent_source, v_record.consent_scope, v_record.consent_visible,
       v_record.consent_granted_at, v_record.consent_revoked_at, v_record.legal_hold,
       v_record.created_at, v_record.updated_at;
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
-- end of functions/correct_v2.sql

-- file functions/retention_candidates_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The next retention sweep: entries of the thread that have expired at p_now
-- (is_live_v2: their expires_at has passed, or they are older than a stored
-- policy of their resource or thread allows), older than p_max_age_days
-- (created_at before p_now minus that many 24-hour days) or beyond the newest
-- p_max_entries (by sequence, id), oldest first, until p_batch_size (1..64)
-- entries not under legal hold are found; p_max_age_days and p_max_entries
-- may both be NULL (what has expired only). Held entries are returned with
-- held = true (scanned, never deleted).
create or replace function {{schema}}.retention_candidates_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_max_age_days double precision, p_max_entries integer, p_batch_size integer,
  p_now timestamptz default now())
returns table (entry_id text, held boolean)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_cutoff timestamptz;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- expiry is measured against it
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_batch_size is null or p_batch_size not between 1 and 64 then
    raise exception 'batch_size must be between 1 and 64, got %', p_batch_size using errcode = 'PM005';
  end if;
  if p_max_age_days not between 0 and 36500 or p_max_entries < 0 then
    raise exception 'max_age_days must be within 0..36500 and max_entries >= 0' using errcode = 'PM005';
  end if;
  v_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, p_thread_id, p_now);
  return query
    with ranked as (
      select e.id, e.legal_hold, e.sequence, e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
             row_number() over (order by e.sequence desc, e.id collate "C" desc) as newest_rank
      from {{entries}} e
      where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    ), expired as (
      select r.id, r.legal_hold, r.sequence,
             count(*) filter (where not r.legal_hold)
               over (order by r.sequence, r.id collate "C" rows unbounded preceding) as deletable_so_far
      from ranked r
      where not is_live_v2(r.created_at, r.expires_at, r.sources_created_at, r.sources_expire_at, v_cutoff, p_now)
         or (p_max_age_days is not null and r.created_at < p_now - p_max_age_days * interval '24 hours')
         or (p_max_entries is not null and r.newest_rank > p_max_entries)
    )
    select x.id, x.legal_hold
    from expired x
    where x.deletable_so_far <= p_batch_size
    order by x.sequence, x.id collate "C";
end;
$$;
-- end of functions/retention_candidates_v2.sql

-- file functions/set_retention_policy_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- Stores the retention policy of a resource (p_thread_id NULL) or of one of
-- its threads: entries older than p_max_age_days (24-hour days, 0..36,500;
-- PM005 otherwise) stop being recalled, exported and injected at once
-- (retention_cutoff_v1), and the sweep deletes them. A thread's entries obey
-- both its thread's policy and its resource's (the stricter wins). NULL
-- removes the policy. Returns the maximum age now stored (NULL: none).
create or replace function {{schema}}.set_retention_policy_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text default null,
  p_max_age_days double precision default null, p_now timestamptz default now())
returns double precision
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, false);
  if p_max_age_days not between 0 and 36500 then
    raise exception 'max_age_days must be a number from 0 to 36500, got %', p_max_age_days using errcode = 'PM005';
  end if;
  if p_max_age_days is null then
    delete from {{retention_policy}} p
    where p.tenant_id = p_tenant_id and p.resource_id = p_resource_id and p.thread_id = coalesce(p_thread_id, '');
    return null;
  end if;
  insert into {{retention_policy}} as p (tenant_id, resource_id, thread_id, max_age_days, created_at, updated_at)
  values (p_tenant_id, p_resource_id, coalesce(p_thread_id, ''), p_max_age_days, p_now, p_now)
  on conflict (tenant_id, resource_id, thread_id) do update
    set max_age_days = excluded.max_age_days, updated_at = excluded.updated_at;
  return p_max_age_days;
end;
$$;
-- end of functions/set_retention_policy_v1.sql

-- file functions/list_entries_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- Entries of the thread after the (sequence, id) cursor, in (sequence, id)
-- order, at most p_limit (1..200). With p_exportable only what an export may
-- contain: explicitly consented, visible, not revoked, not held, not
-- tombstoned, and not expired at p_now (is_live_v2; the server's clock for a
-- tenant-bound role).
create or replace function {{schema}}.list_entries_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false, p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_cutoff timestamptz;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- expiry is measured against it
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_limit is null or p_limit not between 1 and 200 then
    raise exception 'limit must be between 1 and 200, got %', p_limit using errcode = 'PM005';
  end if;
  v_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, p_thread_id, p_now);
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
               and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at, v_cutoff, p_now)
               and not exists (select 1 from {{invalidation}} i
                               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                 and i.thread_id = p_thread_id and i.entry_id = e.id)))
    order by e.sequence, e.id collate "C"
    limit p_limit;
end;
$$;
-- end of functions/list_entries_v2.sql

-- file functions/list_resource_entries_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The entries of every thread of the tenant and resource (exact ids: another
-- resource, a derived one included, is never read) after the (thread_id,
-- sequence, id) cursor, in (thread_id, sequence, id) order (code-point order
-- for the texts), at most p_limit (1..200), each with its thread. With
-- p_exportable only what an export may contain: explicitly consented,
-- visible, not revoked, not held, not tombstoned, and not expired at p_now
-- (is_live_v2, under the policies of the resource and of each thread; the
-- server's clock for a tenant-bound role). A cursor is all three values or
-- none (PM005 otherwise).
create or replace function {{schema}}.list_resource_entries_v1(
  p_tenant_id text, p_resource_id text,
  p_after_thread_id text default null, p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false, p_now timestamptz default now())
returns table (thread_id text, id text, text text, metadata jsonb, sequence bigint, importance double precision,
               consent_source text, consent_scope text, consent_visible boolean,
               consent_granted_at timestamptz, consent_revoked_at timestamptz, legal_hold boolean,
               created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_resource_cutoff timestamptz;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- expiry is measured against it
  perform assert_scope_v2(p_tenant_id, p_resource_id, null, false);
  perform assert_resource_cursor_v1(p_after_thread_id, p_after_sequence, p_after_id);
  if p_limit is null or p_limit not between 1 and 200 then
    raise exception 'limit must be between 1 and 200, got %', p_limit using errcode = 'PM005';
  end if;
  if p_exportable is null then
    raise exception 'exportable must be true or false' using errcode = 'PM005';
  end if;
  v_resource_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, null, p_now);
  return query
    select e.thread_id, e.id, e.text, e.metadata, e.sequence, e.importance, e.consent_source, e.consent_scope,
           e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold, e.created_at, e.updated_at
    from {{entries}} e
    left join {{retention_policy}} tp  -- a policy of the entry's own thread
      on tp.tenant_id = p_tenant_id and tp.resource_id = p_resource_id and tp.thread_id = e.thread_id
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and (p_after_thread_id is null
           or (e.thread_id collate "C", e.sequence, e.id collate "C")
              > (p_after_thread_id collate "C", p_after_sequence, p_after_id collate "C"))
      and (not p_exportable
           or (is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source, true)
               and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
                              greatest(v_resource_cutoff, p_now - tp.max_age_days * interval '24 hours'), p_now)
               and not exists (select 1 from {{invalidation}} i
                               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                 and i.thread_id = e.thread_id and i.entry_id = e.id)))
    order by e.thread_id collate "C", e.sequence, e.id collate "C"
    limit p_limit;
end;
$$;
-- end of functions/list_resource_entries_v1.sql

drop function {{schema}}.is_live_v1(timestamptz, timestamptz, timestamptz, timestamptz);

-- The lineage times of the entries written before this revision: every
-- derived entry, thread by thread, as a write of it would keep them.
do $$
declare
  v_thread record;
begin
  for v_thread in
    select e.tenant_id, e.resource_id, e.thread_id, array_agg(e.id) as ids
    from {{entries}} e
    where jsonb_array_length(coalesce(e.metadata -> '_lineage' -> 'sourceIds', '[]')) > 0
    group by e.tenant_id, e.resource_id, e.thread_id
  loop
    perform {{schema}}.lineage_expiry_v1(v_thread.tenant_id, v_thread.resource_id, v_thread.thread_id, v_thread.ids);
  end loop;
end;
$$;

reset search_path;
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;
