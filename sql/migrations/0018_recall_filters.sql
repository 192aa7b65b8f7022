-- prism-memory schema revision 0018: recall_filters. Recall that answers
-- "which" and "when": a metadata filter language, time windows and event
-- time, applied inside the reads before the top_k cut, and the lexical weight
-- of recall's fused score.
--
-- metadata_filter_v1(p_filter jsonb) returns jsonpath checks a filter
-- ($and/$or/$not, dotted field paths, the operators $eq $ne $gt $gte $lt
-- $lte $in $nin $exists $contains, and containment documents as before) and
-- compiles it into a strict jsonpath predicate a caller applies as
-- "metadata @@ path"; a malformed filter or one over a cap raises PM019. Its
-- parts: metadata_filter_node_v1 (a filter object) and
-- metadata_filter_contains_v1 (a containment leaf);
-- metadata_filter_is_containment_v1 says when a filter means exactly
-- "metadata @> filter". rag_query_v1, rag_lexical_query_v1 and
-- rag_estimate_candidates_v1 take filters in the language (same arguments):
-- a plain containment document is still read with @> through the GIN index,
-- any other filter with @@ and its compiled path, through rag_where_v2 (which
-- adds the @@ clause, $10, to rag_where_v1's; rag_where_v1 has no caller left).
-- A filter containment used to match literally (a key starting with $, a
-- dotted key) now follows the language, and RAG filters are capped at 16 KiB.
--
-- The entries get occurred_at (the event time; NULL reads as created_at).
-- selection_v1 carries what a read keeps besides its gates (a filter's
-- jsonpath and four half-open window bounds), recall_selection_v1 builds and
-- checks it (NULL when nothing is selected), selects_v1 applies it. recall_v4
-- applies it in the thread's pass (recall_bounds_v2), the travellers
-- (recall_travellers_v2, recall_travellers_probe_v2, recall_top_v2), the
-- grants' leg, adjacency and the explain counts (recall_gates_v2: a
-- 'selection' gate), and ranks by similarity + p_lexical_weight * lexical
-- (0.75 unless given); list_entries_v3 and list_resource_entries_v2 list what
-- it keeps. remember_v3 and remember_batch_v3 take each entry's occurred_at
-- (a stored entry keeps its own when none is given); set_consent_v2,
-- correct_v3 and list_entries_v3 return the entry's event time in
-- entry_record_v2. recall_v3 and its helpers stay for the callers of the
-- release before; remember_v2, remember_batch_v2, list_entries_v2,
-- list_resource_entries_v1, set_consent_v1 and correct_v2 answer through
-- their successors.
--
-- The lexical leg sees an entry's event date, at query time (no table is
-- rewritten): query_date_terms_v1(p_terms text[]) says which of a query's
-- terms name a month, weekday, year or day of the month (as tokenizer v2
-- stems them; the words: date_words_v1), might_name_a_date_v1 spares the
-- queries that name none the rest, query_dates_v1 gathers them by what they name (date_terms_v1:
-- per part, the terms at the subscript of their value), names_event_date_v1
-- says whether one names a part of an event date (occurred_at, else
-- created_at, in UTC: one subscript per part a term names, so a query
-- without date terms pays one test per row), and held_terms_v2 adds those
-- terms (event_date_terms_v2) to an entry's text_tsv, and lexical_score_v2 scores over them, each
-- term counted once. recall_v4 scores every leg with it (the thread's
-- through recall_rescore_v2, which replaces recall_rescore_v1 there;
-- recall_v3 keeps v1), and its exact first passes (recall_bounds_v2,
-- recall_travellers_probe_v2) give a row the + p_lexical_weight bound when a
-- date term names a part of its event date. A query without date terms
-- scores as before.

{{pin_search_path}}

alter table {{entries}} add column occurred_at timestamptz;
create type {{schema}}.entry_record_v2 as (
  id text, text text, metadata jsonb, sequence bigint, importance double precision,
  consent_source text, consent_scope text, consent_visible boolean,
  consent_granted_at timestamptz, consent_revoked_at timestamptz, legal_hold boolean,
  created_at timestamptz, updated_at timestamptz, invalidated text[], occurred_at timestamptz);
create type {{schema}}.selection_v1 as (
  path jsonpath, occurred_after timestamptz, occurred_before timestamptz,
  created_after timestamptz, created_before timestamptz);
create type {{schema}}.date_terms_v1 as (
  months tsvector[], weekdays tsvector[], days tsvector[], years tsvector[]);

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

-- file functions/remember_v3.sql
-- API function (prism_memory/operations.py; security definer, see recall_v4).
--
-- Upserts a batch of entries into one thread, all or nothing. Arrays are
-- parallel (one element per entry); p_metadata, p_sequences, p_importance,
-- p_consent, p_expires_at, p_ttl and p_occurred_at may be null. An entry's
-- occurred_at is when the thing it tells of happened or was said (its event
-- time, between years 1 and 9999: PM002); without one a stored entry keeps
-- its own, and a new one has none (reads take its created_at). An entry expires (is no
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
create or replace function {{schema}}.remember_v3(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_expires_at timestamptz[] default null, p_ttl interval[] default null,
  p_now timestamptz default now(), p_occurred_at timestamptz[] default null)
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
     or coalesce(cardinality(p_ttl), v_count) <> v_count
     or coalesce(cardinality(p_occurred_at), v_count) <> v_count then
    raise exception 'remember_v3: the argument arrays differ in length' using errcode = 'PM002';
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
    raise exception 'remember_v3: an entry id appears twice in the batch' using errcode = 'PM002';
  end if;
  perform assert_time_v1(x, 'expires_at') from unnest(p_expires_at) as x where x is not null;
  perform assert_time_v1(x, 'occurred_at') from unnest(p_occurred_at) as x where x is not null;
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

  -- A stored entry keeps its sequence, consent and occurred_at unless the batch gives new ones.
  insert into {{entries}} as t
    (tenant_id, resource_id, thread_id, id, text, metadata, embedding, sequence, importance,
     consent_source, consent_scope, consent_visible, consent_granted_at, consent_revoked_at,
     created_at, updated_at, expires_at, occurred_at)
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
         p_now, p_now, coalesce(e.expires_at, ((p_now at time zone 'UTC') + e.ttl) at time zone 'UTC', s.expires_at),
         coalesce(e.occurred_at, s.occurred_at)
  from unnest(p_ids, p_texts, p_embeddings, p_metadata, p_sequences, p_importance, p_consent, p_expires_at, p_ttl,
              p_occurred_at)
         with ordinality as e(id, text, embedding, metadata, sequence, importance, consent, expires_at, ttl,
                              occurred_at, ord)
  left join {{entries}} s
    on s.tenant_id = p_tenant_id and s.resource_id = p_resource_id
   and s.thread_id = p_thread_id and s.id = e.id
  on conflict (tenant_id, resource_id, thread_id, id) do update
    set text = excluded.text, metadata = excluded.metadata, embedding = excluded.embedding,
        sequence = excluded.sequence, importance = excluded.importance,
        consent_source = excluded.consent_source, consent_scope = excluded.consent_scope,
        consent_visible = excluded.consent_visible, consent_granted_at = excluded.consent_granted_at,
        consent_revoked_at = excluded.consent_revoked_at, updated_at = excluded.updated_at,
        expires_at = excluded.expires_at, occurred_at = excluded.occurred_at;
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
-- end of functions/remember_v3.sql

-- file functions/remember_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: remember_v3 without occurred_at
-- (a stored entry keeps its own), which answers it.
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
begin
  return query
    select r.written, r.invalidated
    from remember_v3(p_tenant_id, p_resource_id, p_thread_id, p_ids, p_texts, p_embeddings, p_metadata, p_sequences,
                 p_importance, p_consent, p_expires_at, p_ttl, p_now) as r;
end;
$$;
-- end of functions/remember_v2.sql

-- file functions/remember_batch_v3.sql
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
-- end of functions/remember_batch_v3.sql

-- file functions/remember_batch_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: remember_batch_v3 without occurred_at
-- (a stored entry keeps its own), which answers it.
create or replace function {{schema}}.remember_batch_v2(
  p_tenant_id text, p_resource_ids text[], p_thread_ids text[],
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_expires_at timestamptz[] default null, p_ttl interval[] default null,
  p_now timestamptz default now())
returns table (resource_id text, thread_id text, written integer, invalidated text[])
language plpgsql volatile security definer
set search_path from current
as $$
begin
  return query
    select r.resource_id, r.thread_id, r.written, r.invalidated
    from remember_batch_v3(p_tenant_id, p_resource_ids, p_thread_ids, p_ids, p_texts, p_embeddings, p_metadata,
                           p_sequences, p_importance, p_consent, p_expires_at, p_ttl, p_now) as r;
end;
$$;
-- end of functions/remember_batch_v2.sql

-- file functions/date_words_v1.sql
-- The words that name a month or a weekday, as tokenizer v2 stems them, each
-- with what it names ('month:1' .. 'month:12', 'weekday:1' .. 'weekday:7'):
-- the English names and jan ... dec, sept, mon, tue, tues, thu, thur, thurs
-- (not wed, fri, sat or sun: the stems of wedding, fried, sat and sun); may
-- stems to mai, so the modal verb names May too. A constant, folded into the
-- queries that use it (query_date_terms_v1, might_name_a_date_v1).
create or replace function {{schema}}.date_words_v1()
returns jsonb
language sql immutable parallel safe
return '{"januari": "month:1", "jan": "month:1", "februari": "month:2", "feb": "month:2",
       "march": "month:3", "mar": "month:3", "april": "month:4", "apr": "month:4",
       "mai": "month:5", "june": "month:6", "jun": "month:6", "juli": "month:7",
       "jul": "month:7", "august": "month:8", "aug": "month:8", "septemb": "month:9",
       "sep": "month:9", "sept": "month:9", "octob": "month:10", "oct": "month:10",
       "novemb": "month:11", "nov": "month:11", "decemb": "month:12", "dec": "month:12",
       "mondai": "weekday:1", "mon": "weekday:1", "tuesdai": "weekday:2", "tue": "weekday:2",
       "wednesdai": "weekday:3", "thursdai": "weekday:4", "thu": "weekday:4",
       "thur": "weekday:4", "fridai": "weekday:5", "saturdai": "weekday:6",
       "sundai": "weekday:7"}'::jsonb;
-- end of functions/date_words_v1.sql

-- file functions/query_date_terms_v1.sql
-- What each of a query's terms (p_terms, as query_terms_v2 gives them) that
-- names a part of a date denotes, one row per such term in the order of
-- p_terms (none for NULL):
--   part 'month',   value 1-12, and
--   part 'weekday', value 1-7 (ISO, Monday 1): a date word (date_words_v1);
--   part 'year',    value 1000-9999: four digits;
--   part 'day',     value 1-31 (of the month): one or two digits (7, 07) or
--                   an ordinal (7th, 21st).
-- query_dates_v1 gathers them for recall_v4. prism_memory/lexical_dates.py
-- mirrors it (query_date_terms). A body parsed when it is created, so that it
-- is inlined into the query that calls it.
create or replace function {{schema}}.query_date_terms_v1(p_terms text[])
returns table (term text, part text, value integer)
language sql immutable parallel safe
begin atomic
  select t.term, split_part(t.denotes, ':', 1), split_part(t.denotes, ':', 2)::integer
  from (select u.term, u.position,
               -- A word is looked up (date_words_v1: a binary search); only a term
               -- that starts with a digit is matched against the patterns.
               coalesce({{schema}}.date_words_v1() ->> u.term,
                        case when ascii(u.term) between 48 and 57 then  -- 0-9
                          case when u.term ~ '^[1-9][0-9]{3}$' then 'year:' || u.term
                               when u.term ~ '^(0?[1-9]|[12][0-9]|3[01])(st|nd|rd|th)?$'
                               then 'day:' || substring(u.term from '^[0-9]+')::integer
                          end
                        end) as denotes
        from unnest(p_terms) with ordinality as u(term, position)) as t
  where t.denotes is not null
  order by t.position;
end;
-- end of functions/query_date_terms_v1.sql

-- file functions/might_name_a_date_v1.sql
-- Whether a query's terms (p_terms, as query_terms_v2 gives them) may name a
-- part of a date: one of them is a date word (date_words_v1) or starts with a
-- digit. A cheap test that spares most queries query_dates_v1; false does not
-- miss a date term (query_date_terms_v1 finds none then). One expression,
-- inlined into the statement that uses it.
create or replace function {{schema}}.might_name_a_date_v1(p_terms text[])
returns boolean
language sql immutable parallel safe
return {{schema}}.date_words_v1() ?| p_terms or array_to_string(p_terms, ' ') ~ '(^| )[0-9]';
-- end of functions/might_name_a_date_v1.sql

-- file functions/query_dates_v1.sql
-- A query's date terms (query_date_terms_v1 over p_terms) as recall_v4 reads
-- them against each entry (date_terms_v1): each term at the subscript of the
-- value it names, in its part's array; terms naming one value (sep, sept)
-- share it. NULL when no term names a part of a date (or p_terms is NULL).
create or replace function {{schema}}.query_dates_v1(p_terms text[])
returns {{schema}}.date_terms_v1
language plpgsql immutable
set search_path from current
as $$
declare
  v_term record;
  v_found boolean := false;
  v_months tsvector[];
  v_weekdays tsvector[];
  v_days tsvector[];
  v_years tsvector[];
begin
  for v_term in select d.term, d.part, d.value, array_to_tsvector(array[d.term]) as lexeme
                from query_date_terms_v1(p_terms) as d loop
    v_found := true;
    case v_term.part
      when 'month' then v_months[v_term.value] := coalesce(v_months[v_term.value], '') || v_term.lexeme;
      when 'weekday' then v_weekdays[v_term.value] := coalesce(v_weekdays[v_term.value], '') || v_term.lexeme;
      when 'day' then v_days[v_term.value] := coalesce(v_days[v_term.value], '') || v_term.lexeme;
      else v_years[v_term.value] := coalesce(v_years[v_term.value], '') || v_term.lexeme;
    end case;
  end loop;
  return case when v_found then row(v_months, v_weekdays, v_days, v_years)::{{schema}}.date_terms_v1 end;
end;
$$;
-- end of functions/query_dates_v1.sql

-- file functions/names_event_date_v1.sql
-- Whether a date term of p_dates (query_dates_v1) names a part of the event
-- date p_event_at (an entry's occurred_at, else its created_at), the date
-- taken in UTC: its month, ISO weekday, day of the month or year. False for a
-- NULL p_dates (a query without date terms), at the cost of one test; a
-- part's array that is NULL is never subscripted, so a part no term names
-- costs next to nothing. It calls no function of this schema (Citus: see
-- event_date_terms_v2). One expression, inlined into the queries that use it.
create or replace function {{schema}}.names_event_date_v1(p_event_at timestamptz, p_dates {{schema}}.date_terms_v1)
returns boolean
language sql immutable parallel safe
return not (p_dates is null)
       and ((p_dates).months[date_part('month', p_event_at at time zone 'UTC')::integer] is not null
            or (p_dates).weekdays[date_part('isodow', p_event_at at time zone 'UTC')::integer] is not null
            or (p_dates).days[date_part('day', p_event_at at time zone 'UTC')::integer] is not null
            or (p_dates).years[date_part('year', p_event_at at time zone 'UTC')::integer] is not null);
-- end of functions/names_event_date_v1.sql

-- file functions/event_date_terms_v2.sql
-- The date terms of p_dates (query_dates_v1) that name a part of the event
-- date p_event_at (in UTC), as one tsvector: those at the subscript of its
-- month, ISO weekday, day of the month and year; empty when none does. Only
-- held_terms_v2 calls it, after names_event_date_v1. It reads date_terms_v1's
-- fields and calls no function of this schema (nor does names_event_date_v1):
-- Citus counts a function that reads a composite type's fields among the
-- dependencies of that type, so one that also called another such reader
-- would depend on itself. One expression, inlined into the queries that use it.
create or replace function {{schema}}.event_date_terms_v2(p_event_at timestamptz, p_dates {{schema}}.date_terms_v1)
returns tsvector
language sql immutable parallel safe
return coalesce((p_dates).months[date_part('month', p_event_at at time zone 'UTC')::integer], '')
       || coalesce((p_dates).weekdays[date_part('isodow', p_event_at at time zone 'UTC')::integer], '')
       || coalesce((p_dates).days[date_part('day', p_event_at at time zone 'UTC')::integer], '')
       || coalesce((p_dates).years[date_part('year', p_event_at at time zone 'UTC')::integer], '');
-- end of functions/event_date_terms_v2.sql

-- file functions/held_terms_v2.sql
-- The terms an entry holds for a query: those of its text (p_text_tsv) and
-- the query's date terms (p_dates, from query_dates_v1) that name a part of
-- its event date p_event_at (names_event_date_v1, event_date_terms_v2). A
-- term held both ways is one lexeme. p_text_tsv as it is when no date term
-- names its event date. lexical_score_v2 scores it. One expression, inlined
-- into the queries that use it.
create or replace function {{schema}}.held_terms_v2(
  p_text_tsv tsvector, p_event_at timestamptz, p_dates {{schema}}.date_terms_v1)
returns tsvector
language sql immutable parallel safe
return case when {{schema}}.names_event_date_v1(p_event_at, p_dates)
            then p_text_tsv || {{schema}}.event_date_terms_v2(p_event_at, p_dates)
            else p_text_tsv
       end;
-- end of functions/held_terms_v2.sql

-- file functions/lexical_score_v2.sql
-- The lexical leg of recall_v4's score: lexical_score_v1 over the terms the
-- entry holds for the query (held_terms_v2: those of its text p_text_tsv,
-- and the date terms of p_dates that name a part of its event date
-- p_event_at), each term counted once. When no date term names its event
-- date (always, for a NULL p_dates), lexical_score_v1 over p_text_tsv,
-- inlined: one expression, inlined into the queries that use it.
create or replace function {{schema}}.lexical_score_v2(
  p_text_tsv tsvector, p_event_at timestamptz, p_terms text[], p_any_term tsquery,
  p_dates {{schema}}.date_terms_v1)
returns double precision
language sql immutable parallel safe
return case when {{schema}}.names_event_date_v1(p_event_at, p_dates)
            then {{schema}}.lexical_score_v1({{schema}}.held_terms_v2(p_text_tsv, p_event_at, p_dates), p_terms,
                                             p_any_term)
            else {{schema}}.lexical_score_v1(p_text_tsv, p_terms, p_any_term)
       end;
-- end of functions/lexical_score_v2.sql

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
--   upper = similarity + p_lexical_weight when the row holds a query term, else similarity
-- (lexical <= 1, so no row's exact score exceeds it): its tsvector holds a
-- term of p_any_term, or a date term of p_dates names a part of its event
-- date (occurred_at, else created_at: names_event_date_v1; a NULL p_dates, a
-- query without date terms, costs one test per row that holds no term). Tombstones are not read
-- here. One single-table statement on the tenant's predicate, which Citus
-- plans on its fast path (for the shard directly, never printed back to text);
-- plain PostgreSQL runs it from its plan cache.
create or replace function {{schema}}.recall_bounds_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_any_term tsquery,
  p_require_consent boolean, p_cutoff timestamptz, p_now timestamptz, p_limit integer,
  p_selection {{schema}}.selection_v1, p_lexical_weight double precision, p_dates {{schema}}.date_terms_v1)
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
           + case when e.text_tsv @@ p_any_term
                    or names_event_date_v1(coalesce(e.occurred_at, e.created_at), p_dates)
                  then p_lexical_weight else 0::float8 end as upper
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

-- file functions/recall_rescore_v2.sql
-- recall_v4's exact scores of rows its first pass kept (p_row_ids: ctids of
-- the tenant's entries in the thread, read in the caller's snapshot):
--   similarity = 1 - cosine distance, lexical = lexical_score_v2 over p_terms,
--   the query's date terms p_dates matched against the entry's event date
--   (occurred_at, else created_at)
-- Rows of other scopes (none, from recall_bounds_v2) are left out;
-- tombstones are the caller's to apply. A single-table statement on the
-- tenant's predicate (see recall_bounds_v2), read by a TID scan only: a
-- generic plan otherwise took a bitmap scan of the thread and compared every
-- row with every ctid given.
create or replace function {{schema}}.recall_rescore_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_row_ids tid[], p_query_embedding vector,
  p_terms text[], p_any_term tsquery, p_dates {{schema}}.date_terms_v1)
returns table (row_id tid, id text, sequence bigint, importance double precision, created_at timestamptz,
               similarity double precision, lexical double precision)
language plpgsql stable
set search_path from current
set enable_seqscan = off
set enable_bitmapscan = off
as $$
begin
  return query
    select e.ctid, e.id, e.sequence, e.importance, e.created_at,
           1::float8 - (e.embedding <=> p_query_embedding),
           lexical_score_v2(e.text_tsv, coalesce(e.occurred_at, e.created_at), p_terms, p_any_term, p_dates)
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.ctid = any(p_row_ids)
      and e.resource_id = p_resource_id and e.thread_id = p_thread_id;
end;
$$;
-- end of functions/recall_rescore_v2.sql

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
-- p_selection (selects_v1), as probes. A probe's text_tsv is the terms the
-- row holds for the query (held_terms_v2: its text's, and the query's date
-- terms, p_dates, that name a part of its event date).
-- p_exact: as the thread's own are read (recall_bounds_v1), one narrow pass
-- bounds each row's score (similarity, plus p_lexical_weight when its text holds a term of
-- p_any_term or a date term of p_dates names a part of its event date), then the p_limit best bounds (every row when NULL) are read
-- again; floor is the lowest bound among them (the highest a row left out
-- could have). Otherwise the p_limit nearest are read through the travellers'
-- partial HNSW index (pinned installs of at most 2,000 dimensions, whose width
-- is the query's), by pgvector's iterative scan, planned per call so that the
-- planner sees the resource's size; floor is the lowest similarity among them
-- plus p_lexical_weight. probed: how many were read.
create or replace function {{schema}}.recall_travellers_probe_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_any_term tsquery,
  p_require_consent boolean, p_foreign text[], p_resource_cutoff timestamptz, p_now timestamptz, p_limit integer,
  p_exact boolean, p_selection {{schema}}.selection_v1, p_lexical_weight double precision,
  p_dates {{schema}}.date_terms_v1, out probes {{schema}}.recall_probe_v1[], out probed bigint, out floor double precision)
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
               + case when e.text_tsv @@ p_any_term
                        or names_event_date_v1(coalesce(e.occurred_at, e.created_at), p_dates)
                      then p_lexical_weight else 0::float8 end as upper
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
                              1::float8 - (e.embedding <=> p_query_embedding),
                              held_terms_v2(e.text_tsv, coalesce(e.occurred_at, e.created_at), p_dates),
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
          || ' e.expires_at, e.sources_created_at, e.sources_expire_at,'
          || ' {{schema}}.held_terms_v2(e.text_tsv, coalesce(e.occurred_at, e.created_at), $12) as text_tsv,'
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
          p_now, p_limit, p_foreign, p_selection, p_lexical_weight, p_dates;
  perform set_config('enable_indexscan', 'off', true);  -- as recall_v4 runs
end;
$$;
-- end of functions/recall_travellers_probe_v2.sql

-- file functions/recall_travellers_v2.sql
-- recall_v4's best p_keep candidates (recall_top_v2: scored exactly, in score
-- order) among the travellers of p_resource_id's other threads than
-- p_thread_id: the entries that may leave them (leaves_thread_v1, which have
-- an index of their own), outside the threads of p_foreign, read by
-- recall_travellers_probe_v2, kept by p_selection, their lexical leg with
-- the query's date terms (p_dates). Up to 5,000 travellers are ranked exactly, as
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
  p_bar double precision, p_selection {{schema}}.selection_v1, p_lexical_weight double precision,
  p_dates {{schema}}.date_terms_v1)
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
                                    p_selection, p_lexical_weight, p_dates) as t;
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
-- end of functions/recall_v4.sql

-- file functions/set_consent_v2.sql
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
-- Returns the entry's record (entry_record_v2: with its occurred_at) and the
-- ids invalidated.
create or replace function {{schema}}.set_consent_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_visible boolean default null, p_source text default null, p_scope text default null,
  p_granted_at timestamptz default null, p_revoked_at timestamptz default null,
  p_now timestamptz default now())
returns setof {{schema}}.entry_record_v2
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
           e.created_at, e.updated_at, v_invalidated,
           coalesce(e.occurred_at, e.created_at)
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = p_entry_id;
end;
$$;
-- end of functions/set_consent_v2.sql

-- file functions/set_consent_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: set_consent_v2 less its record's
-- occurred_at, which answers it.
create or replace function {{schema}}.set_consent_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_visible boolean default null, p_source text default null, p_scope text default null,
  p_granted_at timestamptz default null, p_revoked_at timestamptz default null,
  p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile security definer
set search_path from current
as $$
begin
  return query
    select r.id, r.text, r.metadata, r.sequence, r.importance, r.consent_source, r.consent_scope, r.consent_visible,
           r.consent_granted_at, r.consent_revoked_at, r.legal_hold, r.created_at, r.updated_at, r.invalidated
    from set_consent_v2(p_tenant_id, p_resource_id, p_thread_id, p_entry_id, p_visible, p_source, p_scope,
                        p_granted_at, p_revoked_at, p_now) as r;
end;
$$;
-- end of functions/set_consent_v1.sql

-- file functions/correct_v3.sql
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
-- end of functions/correct_v3.sql

-- file functions/correct_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: correct_v3 less its record's
-- occurred_at, which answers it.
create or replace function {{schema}}.correct_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_text text, p_embedding vector, p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile security definer
set search_path from current
as $$
begin
  return query
    select r.id, r.text, r.metadata, r.sequence, r.importance, r.consent_source, r.consent_scope, r.consent_visible,
           r.consent_granted_at, r.consent_revoked_at, r.legal_hold, r.created_at, r.updated_at, r.invalidated
    from correct_v3(p_tenant_id, p_resource_id, p_thread_id, p_entry_id, p_text, p_embedding, p_now) as r;
end;
$$;
-- end of functions/correct_v2.sql

-- file functions/list_entries_v3.sql
-- API function (prism_memory/operations.py; security definer, see recall_v4).
--
-- Entries of the thread after the (sequence, id) cursor, in (sequence, id)
-- order, at most p_limit (1..200). With p_exportable only what an export may
-- contain: explicitly consented, visible, not revoked, not held, not
-- tombstoned, and not expired at p_now (is_live_v2; the server's clock for a
-- tenant-bound role).
-- Only the entries the selection keeps are listed (recall_selection_v1 and
-- selects_v1, as recall_v4 applies them: p_filter over the metadata, the
-- event-time and write-time windows), so paging a selection with its last
-- row's cursor lists exactly the entries it keeps; each row carries the
-- entry's event time (its occurred_at, else its created_at). PM019 a bad filter, PM008 a bound
-- out of range.
create or replace function {{schema}}.list_entries_v3(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false, p_now timestamptz default now(),
  p_filter jsonb default null, p_occurred_after timestamptz default null,
  p_occurred_before timestamptz default null, p_created_after timestamptz default null,
  p_created_before timestamptz default null)
returns setof {{schema}}.entry_record_v2
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_cutoff timestamptz;
  v_selection {{schema}}.selection_v1 := recall_selection_v1(p_filter, p_occurred_after, p_occurred_before,
                                                             p_created_after, p_created_before);
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
           e.created_at, e.updated_at, '{}'::text[],
           coalesce(e.occurred_at, e.created_at)
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and (p_after_sequence is null
           or (e.sequence, e.id collate "C") > (p_after_sequence, p_after_id collate "C"))
      and selects_v1(e.metadata, e.occurred_at, e.created_at, v_selection)
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
-- end of functions/list_entries_v3.sql

-- file functions/list_entries_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: list_entries_v3 with no
-- selection, less its occurred_at column, which answers it.
create or replace function {{schema}}.list_entries_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false, p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql stable security definer
set search_path from current
as $$
begin
  return query
    select r.id, r.text, r.metadata, r.sequence, r.importance, r.consent_source, r.consent_scope, r.consent_visible,
           r.consent_granted_at, r.consent_revoked_at, r.legal_hold, r.created_at, r.updated_at, r.invalidated
    from list_entries_v3(p_tenant_id, p_resource_id, p_thread_id, p_after_sequence, p_after_id, p_limit,
                         p_exportable, p_now) as r;
end;
$$;
-- end of functions/list_entries_v2.sql

-- file functions/list_resource_entries_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v4).
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
-- Only the entries the selection keeps are listed (recall_selection_v1 and
-- selects_v1, as recall_v4 applies them: p_filter over the metadata, the
-- event-time and write-time windows), so paging a selection with its last
-- row's cursor lists exactly the entries it keeps; each row carries the
-- entry's event time (its occurred_at, else its created_at). PM019 a bad filter, PM008 a bound
-- out of range.
create or replace function {{schema}}.list_resource_entries_v2(
  p_tenant_id text, p_resource_id text,
  p_after_thread_id text default null, p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false, p_now timestamptz default now(),
  p_filter jsonb default null, p_occurred_after timestamptz default null,
  p_occurred_before timestamptz default null, p_created_after timestamptz default null,
  p_created_before timestamptz default null)
returns table (thread_id text, id text, text text, metadata jsonb, sequence bigint, importance double precision,
               consent_source text, consent_scope text, consent_visible boolean,
               consent_granted_at timestamptz, consent_revoked_at timestamptz, legal_hold boolean,
               created_at timestamptz, updated_at timestamptz, occurred_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_resource_cutoff timestamptz;
  v_selection {{schema}}.selection_v1 := recall_selection_v1(p_filter, p_occurred_after, p_occurred_before,
                                                             p_created_after, p_created_before);
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
           e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold, e.created_at, e.updated_at,
           coalesce(e.occurred_at, e.created_at)
    from {{entries}} e
    left join {{retention_policy}} tp  -- a policy of the entry's own thread
      on tp.tenant_id = p_tenant_id and tp.resource_id = p_resource_id and tp.thread_id = e.thread_id
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and (p_after_thread_id is null
           or (e.thread_id collate "C", e.sequence, e.id collate "C")
              > (p_after_thread_id collate "C", p_after_sequence, p_after_id collate "C"))
      and selects_v1(e.metadata, e.occurred_at, e.created_at, v_selection)
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
-- end of functions/list_resource_entries_v2.sql

-- file functions/list_resource_entries_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: list_resource_entries_v2 with
-- no selection, less its occurred_at column, which answers it.
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
begin
  return query
    select r.thread_id, r.id, r.text, r.metadata, r.sequence, r.importance, r.consent_source, r.consent_scope,
           r.consent_visible, r.consent_granted_at, r.consent_revoked_at, r.legal_hold, r.created_at, r.updated_at
    from list_resource_entries_v2(p_tenant_id, p_resource_id, p_after_thread_id, p_after_sequence, p_after_id,
                                  p_limit, p_exportable, p_now) as r;
end;
$$;
-- end of functions/list_resource_entries_v1.sql

-- file functions/metadata_filter_contains_v1.sql
-- Part of metadata_filter_v1: the jsonpath predicate for a containment leaf,
-- p_base (a jsonpath accessor: "$" and quoted keys, or "@") @> p_wanted as
-- jsonb containment works below the top level: an object holds every key of
-- p_wanted, each value contained recursively; an array holds, for every
-- element of p_wanted, an element containing it (of the same JSON type); a
-- scalar equals it. Keys become jsonpath string literals through
-- to_jsonb(key)::text and scalars through their jsonb text, so nothing of the
-- filter is read as jsonpath syntax. A key starting with $ is refused (PM019,
-- naming p_at): an operator there would be read literally.
-- prism_memory.filters.json_contains mirrors it.
create or replace function {{schema}}.metadata_filter_contains_v1(p_base text, p_wanted jsonb, p_at text)
returns text
language plpgsql immutable
set search_path from current
as $$
declare
  v_parts text[];
  v_key text;
  v_value jsonb;
begin
  case jsonb_typeof(p_wanted)
    when 'object' then
      v_parts := array[p_base || '.type() == "object"'];
      for v_key, v_value in select e.key, e.value from jsonb_each(p_wanted) e loop
        if starts_with(v_key, '$') then
          raise exception 'filter: %: key % inside a containment document (operators apply to a field path)',
            p_at, to_jsonb(v_key)::text using errcode = 'PM019';
        end if;
        v_parts := v_parts || metadata_filter_contains_v1(p_base || '.' || to_jsonb(v_key)::text, v_value, p_at);
      end loop;
    when 'array' then
      v_parts := array[p_base || '.type() == "array"'];
      for v_value in select e.value from jsonb_array_elements(p_wanted) e loop
        if jsonb_typeof(v_value) in ('object', 'array') then
          v_parts := v_parts || ('exists (' || p_base || '[*] ? (' || metadata_filter_contains_v1('@', v_value, p_at) || '))');
        else
          v_parts := v_parts || ('exists (' || p_base || '[*] ? (@ == ' || v_value::text || '))');
        end if;
      end loop;
    else
      v_parts := array[p_base || ' == ' || p_wanted::text];
  end case;
  return '(' || array_to_string(v_parts, ' && ') || ')';
end;
$$;
-- end of functions/metadata_filter_contains_v1.sql

-- file functions/metadata_filter_node_v1.sql
-- Part of metadata_filter_v1: checks one filter object p_node (named p_where
-- in messages, at nesting level p_depth, the whole filter being level 1) and
-- returns its jsonpath predicate, two-valued (true or false, never unknown),
-- with p_count, the conditions counted so far, updated. Every fault raises
-- PM019 naming the path or operator; the keys are walked in jsonb order,
-- as prism_memory.filters.check_filter walks them. Each comparison L is
-- written "((L) && !((L) is unknown))": jsonpath answers unknown for a
-- missing field or mismatched types, which "!" would keep unknown, so $ne,
-- $nin and $not are exact negations. Keys and strings enter the text only as
-- jsonpath string literals (to_jsonb(text)::text), numbers as jsonb prints
-- them, true, false and null as themselves.
create or replace function {{schema}}.metadata_filter_node_v1(
  p_node jsonb, p_where text, p_depth integer, inout p_count integer, out p_predicate text)
language plpgsql immutable
set search_path from current
as $$
declare
  v_parts text[] := '{}';
  v_subs text[];
  v_sub text;
  v_key text;
  v_value jsonb;
  v_item jsonb;
  v_position bigint;
  v_at text;
  v_segments text[];
  v_path text;
  v_operator text;
  v_operand jsonb;
  v_kind text;
  v_leaf text;
begin
  if jsonb_typeof(p_node) is distinct from 'object' then
    raise exception 'filter: % must be a JSON object, got %', p_where, coalesce(jsonb_typeof(p_node), 'null')
      using errcode = 'PM019';
  end if;
  if p_depth > 8 then
    raise exception 'filter: % is nested deeper than 8 levels', p_where using errcode = 'PM019';
  end if;
  for v_key, v_value in select e.key, e.value from jsonb_each(p_node) e loop
    if v_key in ('$and', '$or') then
      if jsonb_typeof(v_value) <> 'array' or jsonb_array_length(v_value) = 0 then
        raise exception 'filter: % in % must be a non-empty array of filters', v_key, p_where using errcode = 'PM019';
      end if;
      v_subs := '{}';
      for v_item, v_position in select e.value, e.ordinality - 1 from jsonb_array_elements(v_value) with ordinality e loop
        select n.p_count, n.p_predicate into p_count, v_sub
        from metadata_filter_node_v1(v_item, p_where || '.' || v_key || '[' || v_position || ']', p_depth + 1, p_count) n;
        v_subs := v_subs || v_sub;
      end loop;
      v_parts := v_parts || ('(' || array_to_string(v_subs, case v_key when '$and' then ' && ' else ' || ' end) || ')');
    elsif v_key = '$not' then
      select n.p_count, n.p_predicate into p_count, v_sub
      from metadata_filter_node_v1(v_value, p_where || '.$not', p_depth + 1, p_count) n;
      v_parts := v_parts || ('!' || v_sub);
    elsif starts_with(v_key, '$') then
      raise exception 'filter: unknown operator % in % (a field path must not start with $)', to_jsonb(v_key)::text, p_where
        using errcode = 'PM019';
    else
      v_at := p_where || ' field ' || to_jsonb(v_key)::text;
      v_segments := string_to_array(v_key, '.');
      if v_key = '' or '' = any(v_segments) then
        raise exception 'filter: %: a field path has no empty segment', v_at using errcode = 'PM019';
      end if;
      if cardinality(v_segments) > 8 then
        raise exception 'filter: %: a field path has at most 8 segments', v_at using errcode = 'PM019';
      end if;
      if exists (select 1 from unnest(v_segments) s where starts_with(s, '$')) then
        raise exception 'filter: %: a path segment must not start with $', v_at using errcode = 'PM019';
      end if;
      v_path := '$' || (select string_agg('.' || to_jsonb(s.segment)::text, '' order by s.n)
                        from unnest(v_segments) with ordinality s(segment, n));
      if jsonb_typeof(v_value) = 'object' and exists (select 1 from jsonb_object_keys(v_value) k where starts_with(k, '$')) then
        if exists (select 1 from jsonb_object_keys(v_value) k where not starts_with(k, '$')) then
          raise exception 'filter: % mixes operators and other keys', v_at using errcode = 'PM019';
        end if;
        if p_depth + 1 > 8 then
          raise exception 'filter: % is nested deeper than 8 levels', v_at using errcode = 'PM019';
        end if;
        for v_operator, v_operand in select e.key, e.value from jsonb_each(v_value) e loop
          v_kind := jsonb_typeof(v_operand);
          case
            when v_operator in ('$eq', '$ne', '$contains') then
              if v_kind in ('object', 'array') then
                raise exception 'filter: % at % takes a scalar, got %', v_operator, v_at, v_kind using errcode = 'PM019';
              end if;
              v_leaf := case v_operator when '$contains' then 'exists (' || v_path || '[*] ? (@ == ' || v_operand::text || '))'
                                        else v_path || ' == ' || v_operand::text end;
              v_leaf := '((' || v_leaf || ') && !((' || v_leaf || ') is unknown))';
              v_parts := v_parts || (case v_operator when '$ne' then '!' else '' end || v_leaf);
            when v_operator in ('$gt', '$gte', '$lt', '$lte') then
              if v_kind not in ('number', 'string') then
                raise exception 'filter: % at % takes a number or a string, got %', v_operator, v_at, v_kind using errcode = 'PM019';
              end if;
              v_leaf := v_path || case v_operator when '$gt' then ' > ' when '$gte' then ' >= ' when '$lt' then ' < ' else ' <= ' end
                        || v_operand::text;
              v_parts := v_parts || ('((' || v_leaf || ') && !((' || v_leaf || ') is unknown))');
            when v_operator in ('$in', '$nin') then
              if v_kind <> 'array' or jsonb_array_length(v_operand) = 0
                 or exists (select 1 from jsonb_array_elements(v_operand) e where jsonb_typeof(e) in ('object', 'array')) then
                raise exception 'filter: % at % takes a non-empty array of scalars', v_operator, v_at using errcode = 'PM019';
              end if;
              if jsonb_array_length(v_operand) > 256 then
                raise exception 'filter: % at % has more than 256 elements', v_operator, v_at using errcode = 'PM019';
              end if;
              v_leaf := 'exists (' || v_path || ' ? ('
                        || (select string_agg('@ == ' || e.value::text, ' || ' order by e.n)
                            from jsonb_array_elements(v_operand) with ordinality e(value, n)) || '))';
              v_leaf := '((' || v_leaf || ') && !((' || v_leaf || ') is unknown))';
              v_parts := v_parts || (case v_operator when '$nin' then '!' else '' end || v_leaf);
            when v_operator = '$exists' then
              if v_kind <> 'boolean' then
                raise exception 'filter: $exists at % takes true or false, got %', v_at, v_kind using errcode = 'PM019';
              end if;
              v_leaf := '((exists (' || v_path || ')) && !((exists (' || v_path || ')) is unknown))';
              v_parts := v_parts || (case when v_operand = 'false'::jsonb then '!' else '' end || v_leaf);
            else
              raise exception 'filter: unknown operator % at %', to_jsonb(v_operator)::text, v_at using errcode = 'PM019';
          end case;
          p_count := p_count + 1;
          if p_count > 64 then
            raise exception 'filter: more than 64 conditions (at %)', v_at using errcode = 'PM019';
          end if;
        end loop;
      else
        if jsonb_typeof(v_value) in ('object', 'array') then
          v_leaf := metadata_filter_contains_v1(v_path, v_value, v_at);
        else
          v_leaf := v_path || ' == ' || v_value::text;
        end if;
        v_parts := v_parts || ('((' || v_leaf || ') && !((' || v_leaf || ') is unknown))');
        -- A containment document counts each element of its arrays (at least 1): a stored
        -- array is compared with each, so the cap bounds a row's cost by 64 passes over it.
        p_count := p_count + greatest(1, (select coalesce(sum(jsonb_array_length(a.item)), 0)::integer
                                          from jsonb_path_query(v_value, 'strict $.** ? (@.type() == "array")') a(item)));
        if p_count > 64 then
          raise exception 'filter: more than 64 conditions (at %)', v_at using errcode = 'PM019';
        end if;
      end if;
    end if;
  end loop;
  p_predicate := '(' || coalesce(nullif(array_to_string(v_parts, ' && '), ''), '1 == 1') || ')';
end;
$$;
-- end of functions/metadata_filter_node_v1.sql

-- file functions/metadata_filter_v1.sql
-- The metadata filter language (docs/api.md, "Metadata filters"): checks
-- p_filter and compiles it into a strict jsonpath predicate that a caller
-- applies as "metadata @@ metadata_filter_v1(p_filter)", bound as a value
-- (never SQL text). NULL gives NULL; {} matches everything. A filter is a
-- JSON object whose keys are ANDed: $and / $or (a non-empty array of
-- filters), $not (a filter), or a field path ("user.tier" reads
-- metadata -> 'user' -> 'tier'); a field condition is a scalar ($eq), an
-- object of operators ($eq $ne $gt $gte $lt $lte $in $nin $exists $contains,
-- ANDed), or any other object or array: containment at that path, as jsonb
-- @> below the top level. Values compare as JSON: a number never equals a
-- string or a boolean, strings by code point, order operators only numbers
-- with numbers and strings with strings; $ne, $nin and $not are exact
-- negations, so a missing field matches $ne and {"$exists": false}.
-- Raises PM019 naming the path or operator for a filter that is not an
-- object, any malformed piece, and the caps: 16 KiB of jsonb text, JSON
-- nested 64 levels (as Python's codec), nesting depth 8 ($and/$or/$not
-- elements and operator objects one level each), 64 conditions, 256
-- elements in one $in/$nin, 8 segments in a path.
-- prism_memory.filters (check_filter, matches) mirrors it.
create or replace function {{schema}}.metadata_filter_v1(p_filter jsonb)
returns jsonpath
language plpgsql immutable
set search_path from current
as $$
declare
  v_bytes integer;
  v_count integer;
  v_predicate text;
begin
  if p_filter is null then
    return null;
  end if;
  if jsonb_typeof(p_filter) <> 'object' then
    raise exception 'filter: the filter must be a JSON object, got %', jsonb_typeof(p_filter) using errcode = 'PM019';
  end if;
  v_bytes := octet_length(p_filter::text);
  if v_bytes > 16384 then
    raise exception 'filter: % bytes of JSON, over the 16384-byte cap', v_bytes using errcode = 'PM019';
  end if;
  if jsonb_path_exists(p_filter, 'strict $.**{64 to last} ? (@.type() == "object" || @.type() == "array")') then
    raise exception 'filter: filter is nested deeper than 64 levels' using errcode = 'PM019';
  end if;
  select n.p_count, n.p_predicate into v_count, v_predicate from metadata_filter_node_v1(p_filter, 'filter', 1, 0) n;
  return ('strict ' || v_predicate)::jsonpath;
end;
$$;
-- end of functions/metadata_filter_v1.sql

-- file functions/metadata_filter_is_containment_v1.sql
-- Whether a filter metadata_filter_v1 accepted means exactly
-- "metadata @> p_filter": no $and/$or/$not, no operator object, no dotted
-- path (each key one field, each condition a scalar or a containment
-- document). The RAG reads apply such a filter with @> (through the GIN
-- index, as before the language existed), any other with @@.
-- prism_memory.filters.is_containment mirrors it.
create or replace function {{schema}}.metadata_filter_is_containment_v1(p_filter jsonb) returns boolean
language sql immutable parallel safe
return p_filter is not null and not exists (
  select 1 from jsonb_each(p_filter) f
  where starts_with(f.key, '$') or strpos(f.key, '.') > 0
     or (jsonb_typeof(f.value) = 'object'
         and exists (select 1 from jsonb_object_keys(f.value) k where starts_with(k, '$'))));
-- end of functions/metadata_filter_is_containment_v1.sql

-- file functions/rag_where_v2.sql
-- The WHERE clause every RAG read shares, over the chunk alias c, as fixed SQL
-- text (never built from input): $1 tenant, $2 scope, $3 generation, $4 the
-- filter as a containment document (p_contains: c.metadata @> $4, through
-- the GIN index), $5 principal, $6 groups, with p_sources $7, the sources the
-- reader holds grants on (a narrowing the ACL EXISTS implies, so a reader of
-- few sources reads the scope through the source index), and $10 the filter
-- compiled by metadata_filter_v1 (p_path: c.metadata @@ $10). A filter can
-- only narrow. The filter and the ACL's indexed EXISTS are included only when
-- used, so each read is planned for exactly the rules it applies. A chunk is
-- readable under ACL when the principal or one of its groups holds a grant on
-- its source at the chunk's access_version or newer; a missing grant or an
-- unresolved version denies. (rag_where_v1 had no p_path.)
create or replace function {{schema}}.rag_where_v2(p_contains boolean, p_path boolean, p_acl boolean,
                                                   p_sources boolean default false)
returns text
language sql immutable
return 'c.tenant_id = $1 and c.scope = $2 and c.generation = $3'
  || case when p_contains then ' and c.metadata @> $4' else '' end
  || case when p_path then ' and c.metadata @@ $10' else '' end
  || case when p_acl then
       ' and exists (select 1 from {{rag_source_acl}} a'
       || ' where a.tenant_id = $1 and a.source_id = c.source_id'
       || ' and ((a.grantee_kind = ''principal'' and a.grantee_id = $5)'
       || ' or (a.grantee_kind = ''group'' and a.grantee_id = any($6)))'
       || ' and a.access_version >= coalesce(c.access_version, 0))'
     else '' end
  || case when p_sources then ' and c.source_id = any($7)' else '' end;
-- end of functions/rag_where_v2.sql

-- file functions/rag_estimate_candidates_v1.sql
-- The planner's estimate of the chunks of one generation of a scope whose
-- metadata satisfy p_filter (the metadata filter language: @> for a plain
-- containment document, else @@ its metadata_filter_v1 path; the planner
-- estimates both from the column statistics), among p_sources when given. EXPLAIN needs a
-- volatile function; rag_query_v1 itself stays stable, so all of its reads
-- see one snapshot.
create or replace function {{schema}}.rag_estimate_candidates_v1(
  p_tenant_id text, p_scope text, p_generation bigint, p_filter jsonb, p_sources text[] default null)
returns double precision
language plpgsql volatile
set search_path from current
as $$
declare
  v_contains constant boolean := metadata_filter_is_containment_v1(p_filter);
  v_path constant jsonpath := case when not v_contains then metadata_filter_v1(p_filter) end;
  v_plan json;
begin
  execute 'explain (format json) select 1 from {{rag_chunk}} c where '
          || rag_where_v2(v_contains, v_path is not null, false, p_sources is not null)
    into v_plan
    using p_tenant_id, p_scope, p_generation, p_filter, null::text, null::text[], p_sources,
          null::text, null::integer, v_path;
  return (v_plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
end;
$$;
-- end of functions/rag_estimate_candidates_v1.sql

-- file functions/rag_query_v1.sql
-- Top-k chunks of one generation of a scope by cosine similarity
-- (score = 1 - pgvector <=>), ties by id (code-point order), under the
-- filter and ACL of rag_where_v2, applied before ranking. The filter is in
-- the metadata filter language (metadata_filter_v1, PM019 when malformed): one
-- that is a plain containment document (metadata_filter_is_containment_v1)
-- is applied as metadata @> filter, any other as metadata @@ its compiled
-- jsonpath, bound as a parameter.
--
-- Path: how many candidates there are decides. Without a filter they are
-- counted through the scope (or, for an ACL reader of at most 100 sources,
-- the source) index, up to 2000; with a filter the planner's estimate is
-- taken (jsonb @> and @@ are estimated from the column statistics; under Citus
-- they are counted with the filter, up to 2000); a reader of more
-- than 100 sources counts as many. Fewer than 2000 are ranked exactly, which
-- costs less than an HNSW search. More are read through HNSW (pinned
-- installs) with pgvector's iterative scan and re-scored exactly; if HNSW
-- finds fewer than top_k, all candidates are ranked exactly after all. So a
-- query always returns min(top_k, matches), whichever path it takes.
create or replace function {{schema}}.rag_query_v1(
  p_tenant_id text, p_scope text, p_embedding vector, p_top_k integer default 10,
  p_filter jsonb default null, p_acl boolean default false, p_principal_id text default null,
  p_group_ids text[] default '{}', p_generation bigint default null)
returns table (id text, source_id text, text text, metadata jsonb, generation bigint,
               access_version bigint, score double precision)
language plpgsql stable security definer
set search_path from current
set hnsw.iterative_scan = 'relaxed_order'
set hnsw.ef_search = 40
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_filter jsonb := nullif(p_filter, '{}'::jsonb);
  v_generation bigint := rag_read_generation_v1(p_tenant_id, p_scope, p_top_k, p_filter, p_acl,
                                                p_principal_id, p_group_ids, p_generation);
  v_contains constant boolean := metadata_filter_is_containment_v1(v_filter);
  v_path jsonpath := metadata_filter_v1(v_filter);  -- checks the filter (PM019)
  v_sources text[];
  v_narrow boolean := false;
  v_candidates double precision := 2000;
  v_ids text[];
begin
  if v_contains then
    v_path := null;  -- read with @> instead
  end if;
  perform assert_embedding_v1(p_embedding, 'the query embedding');
  perform assert_dimensions_v2(p_tenant_id, p_scope, null, vector_dims(p_embedding));
  if p_acl then
    v_sources := array(
      select a.source_id from {{rag_source_acl}} a
      where a.tenant_id = p_tenant_id
        and ((a.grantee_kind = 'principal' and a.grantee_id = p_principal_id)
             or (a.grantee_kind = 'group' and a.grantee_id = any(p_group_ids)))
      group by a.source_id
      limit 101);
    if cardinality(v_sources) = 0 then
      return;  -- no grant at all: nothing is readable
    end if;
    v_narrow := cardinality(v_sources) <= 100;
  end if;

  if v_filter is not null and (not p_acl or v_narrow) and not citus_installed_v1() then
    v_candidates := rag_estimate_candidates_v1(p_tenant_id, p_scope, v_generation, v_filter,
                                               case when v_narrow then v_sources end);
  elsif not p_acl or v_narrow then
    -- Counted, filter included under Citus: an EXPLAIN inside a
    -- delegated call breaks the transaction's next statement there.
    execute 'select count(*)::integer from (select 1 from {{rag_chunk}} c where '
            || rag_where_v2(v_contains, v_path is not null, false, v_narrow) || ' limit 2000) x'
      into v_candidates
      using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
            p_embedding, p_top_k, v_path;
  end if;

  if v_candidates >= 2000 and {{dimensions}}::integer is not null then
    perform set_config('hnsw.ef_search', greatest(40, 4 * p_top_k)::text, true);
    execute 'select coalesce(array_agg(n.id), ''{}'') from (select c.id from {{rag_chunk}} c where '
            || rag_where_v2(v_contains, v_path is not null, p_acl, false) || ' order by c.embedding <=> $8 limit $9) n'
      into v_ids
      using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
            p_embedding, p_top_k, v_path;
    if cardinality(v_ids) >= p_top_k then
      return query
        select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version,
               1::float8 - (c.embedding <=> p_embedding)
        from {{rag_chunk}} c
        where c.tenant_id = p_tenant_id and c.scope = p_scope and c.generation = v_generation
          and c.id = any(v_ids)
        order by 1::float8 - (c.embedding <=> p_embedding) desc, c.id collate "C";
      return;
    end if;
  end if;

  -- Exact: every candidate scored ("offset 0" keeps the planner from
  -- ordering through the HNSW index), the top k kept.
  return query execute
    'with scored as (select c.id, 1::float8 - (c.embedding <=> $8) as score'
    || ' from {{rag_chunk}} c where ' || rag_where_v2(v_contains, v_path is not null, p_acl, v_narrow) || ' offset 0),'
    || ' top as (select s.id, s.score from scored s order by s.score desc, s.id collate "C" limit $9)'
    || ' select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version, t.score'
    || ' from top t join {{rag_chunk}} c'
    || ' on c.tenant_id = $1 and c.scope = $2 and c.generation = $3 and c.id = t.id'
    || ' order by t.score desc, c.id collate "C"'
    using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
          p_embedding, p_top_k, v_path;
end;
$$;
-- end of functions/rag_query_v1.sql

-- file functions/rag_lexical_query_v1.sql
-- Full-text leg: top-k chunks of one generation whose text_tsv
-- (lexical_terms_v2) holds any of the query's lexical terms (through the GIN
-- index), scored by the share of the query's terms (query_terms_v2: at most
-- 32; stemmed, CJK as bigrams) they hold (lexical_score_v1, as in recall), ties
-- by id, under the filter and ACL of rag_where_v2 (the filter as in
-- rag_query_v1: @> for a plain containment document, else @@ its
-- metadata_filter_v1 path). A query with no terms returns nothing.
create or replace function {{schema}}.rag_lexical_query_v1(
  p_tenant_id text, p_scope text, p_query_text text, p_top_k integer default 10,
  p_filter jsonb default null, p_acl boolean default false, p_principal_id text default null,
  p_group_ids text[] default '{}', p_generation bigint default null)
returns table (id text, source_id text, text text, metadata jsonb, generation bigint,
               access_version bigint, score double precision)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_filter jsonb := nullif(p_filter, '{}'::jsonb);
  v_generation bigint := rag_read_generation_v1(p_tenant_id, p_scope, p_top_k, p_filter, p_acl,
                                                p_principal_id, p_group_ids, p_generation);
  v_contains constant boolean := metadata_filter_is_containment_v1(v_filter);
  v_path jsonpath := metadata_filter_v1(v_filter);  -- checks the filter (PM019)
  v_terms text[];
  v_any_term tsquery;
begin
  if v_contains then
    v_path := null;  -- read with @> instead
  end if;
  if p_query_text is null then
    raise exception 'the query text is required' using errcode = 'PM008';
  end if;
  if octet_length(p_query_text) > 65536 then
    raise exception 'the query text is % bytes, over the 64 KiB hard cap', octet_length(p_query_text)
      using errcode = 'PM006';
  end if;
  v_terms := query_terms_v2(p_query_text);
  if cardinality(v_terms) = 0 then
    return;
  end if;
  -- Terms hold no quote or backslash, so quote_literal is a safe tsquery operand.
  v_any_term := (select string_agg(quote_literal(term), ' | ')::tsquery from unnest(v_terms) as term);
  return query execute
    'with scored as (select c.id, lexical_score_v1(c.text_tsv, $7, $8) as score'
    || ' from {{rag_chunk}} c where ' || rag_where_v2(v_contains, v_path is not null, p_acl)
    || ' and c.text_tsv @@ $8 offset 0),'
    || ' top as (select s.id, s.score from scored s order by s.score desc, s.id collate "C" limit $9)'
    || ' select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version, t.score'
    || ' from top t join {{rag_chunk}} c'
    || ' on c.tenant_id = $1 and c.scope = $2 and c.generation = $3 and c.id = t.id'
    || ' order by t.score desc, c.id collate "C"'
    using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids,
          v_terms, v_any_term, p_top_k, v_path;
end;
$$;
-- end of functions/rag_lexical_query_v1.sql


reset search_path;
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;
