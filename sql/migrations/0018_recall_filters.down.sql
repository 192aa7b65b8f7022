-- Reverts revision 0018: restores the functions it replaced, drops the ones it added, the
-- selection and entry_record_v2 types and the entries' occurred_at.

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

-- file functions/remember_batch_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- Writes the entries of many threads of one tenant in one transaction: all of
-- them or none. p_resource_ids and p_thread_ids name each entry's thread and
-- run parallel to the other arrays, which mean what they mean for remember_v2;
-- the rows of one thread must be contiguous (PM002 otherwise), and an entry's
-- position ("entry N") in an error is its position within its thread's rows.
-- Arrays must be one-dimensional and start at index 1 (PM002 otherwise).
-- Every thread's lock is taken first, in lock-key order (the order every
-- batch uses, so concurrent batches cannot deadlock, even when two threads
-- share a lock key); then the threads are checked and written one by one in
-- (resource_id, thread_id) code-point order. Returns one row per thread, in
-- that order: entries written and the ids invalidated (as remember_v2
-- returns them).
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
                          (array_ndims(p_ttl), array_lower(p_ttl, 1))) as a(ndims, lower)
             where a.ndims > 1 or a.lower <> 1) then
    raise exception 'remember_batch_v2: arrays must be one-dimensional and start at index 1'
      using errcode = 'PM002';
  end if;
  if coalesce(cardinality(p_resource_ids), 0) <> v_count or coalesce(cardinality(p_thread_ids), 0) <> v_count
     or coalesce(cardinality(p_texts), 0) <> v_count or coalesce(cardinality(p_embeddings), 0) <> v_count
     or coalesce(cardinality(p_metadata), v_count) <> v_count or coalesce(cardinality(p_sequences), v_count) <> v_count
     or coalesce(cardinality(p_importance), v_count) <> v_count or coalesce(cardinality(p_consent), v_count) <> v_count
     or coalesce(cardinality(p_expires_at), v_count) <> v_count or coalesce(cardinality(p_ttl), v_count) <> v_count then
    raise exception 'remember_batch_v2: the argument arrays differ in length' using errcode = 'PM002';
  end if;
  -- The keys lock_thread_v1 takes, in one global order; remember_v2 takes its
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
      raise exception 'remember_batch_v2: the rows of thread % (resource %) are not contiguous',
        v_group.thread_id, v_group.resource_id using errcode = 'PM002';
    end if;
    return query
      select v_group.resource_id, v_group.thread_id, r.written, r.invalidated
      from remember_v2(p_tenant_id, v_group.resource_id, v_group.thread_id,
                       p_ids[v_group.first : v_group.last], p_texts[v_group.first : v_group.last],
                       p_embeddings[v_group.first : v_group.last], p_metadata[v_group.first : v_group.last],
                       p_sequences[v_group.first : v_group.last], p_importance[v_group.first : v_group.last],
                       p_consent[v_group.first : v_group.last], p_expires_at[v_group.first : v_group.last],
                       p_ttl[v_group.first : v_group.last], p_now) as r;
  end loop;
end;
$$;
-- end of functions/remember_batch_v2.sql

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

-- file functions/rag_estimate_candidates_v1.sql
-- The planner's estimate of the chunks of one generation of a scope whose
-- metadata contains p_filter (from the column statistics; jsonb @> is
-- estimated against them), among p_sources when given. EXPLAIN needs a
-- volatile function; rag_query_v1 itself stays stable, so all of its reads
-- see one snapshot.
create or replace function {{schema}}.rag_estimate_candidates_v1(
  p_tenant_id text, p_scope text, p_generation bigint, p_filter jsonb, p_sources text[] default null)
returns double precision
language plpgsql volatile
set search_path from current
as $$
declare
  v_plan json;
begin
  execute 'explain (format json) select 1 from {{rag_chunk}} c where '
          || rag_where_v1(p_filter is not null, false, p_sources is not null)
    into v_plan
    using p_tenant_id, p_scope, p_generation, p_filter, null::text, null::text[], p_sources;
  return (v_plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
end;
$$;
-- end of functions/rag_estimate_candidates_v1.sql

-- file functions/rag_query_v1.sql
-- Top-k chunks of one generation of a scope by cosine similarity
-- (score = 1 - pgvector <=>), ties by id (code-point order), under the
-- filter and ACL of rag_where_v1, applied before ranking.
--
-- Path: how many candidates there are decides. Without a filter they are
-- counted through the scope (or, for an ACL reader of at most 100 sources,
-- the source) index, up to 2000; with a filter the planner's estimate is
-- taken (jsonb @> is estimated from the column statistics; under Citus
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
  v_sources text[];
  v_narrow boolean := false;
  v_candidates double precision := 2000;
  v_ids text[];
begin
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
            || rag_where_v1(v_filter is not null, false, v_narrow) || ' limit 2000) x'
      into v_candidates
      using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources;
  end if;

  if v_candidates >= 2000 and {{dimensions}}::integer is not null then
    perform set_config('hnsw.ef_search', greatest(40, 4 * p_top_k)::text, true);
    execute 'select coalesce(array_agg(n.id), ''{}'') from (select c.id from {{rag_chunk}} c where '
            || rag_where_v1(v_filter is not null, p_acl, false) || ' order by c.embedding <=> $8 limit $9) n'
      into v_ids
      using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
            p_embedding, p_top_k;
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
    || ' from {{rag_chunk}} c where ' || rag_where_v1(v_filter is not null, p_acl, v_narrow) || ' offset 0),'
    || ' top as (select s.id, s.score from scored s order by s.score desc, s.id collate "C" limit $9)'
    || ' select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version, t.score'
    || ' from top t join {{rag_chunk}} c'
    || ' on c.tenant_id = $1 and c.scope = $2 and c.generation = $3 and c.id = t.id'
    || ' order by t.score desc, c.id collate "C"'
    using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
          p_embedding, p_top_k;
end;
$$;
-- end of functions/rag_query_v1.sql

-- file functions/rag_lexical_query_v1.sql
-- Full-text leg: top-k chunks of one generation whose text_tsv
-- (lexical_terms_v2) holds any of the query's lexical terms (through the GIN
-- index), scored by the share of the query's terms (query_terms_v2: at most
-- 32; stemmed, CJK as bigrams) they hold (lexical_score_v1, as in recall), ties
-- by id, under the filter and ACL of rag_where_v1. A query with no terms
-- returns nothing.
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
  v_terms text[];
  v_any_term tsquery;
begin
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
    || ' from {{rag_chunk}} c where ' || rag_where_v1(v_filter is not null, p_acl)
    || ' and c.text_tsv @@ $8 offset 0),'
    || ' top as (select s.id, s.score from scored s order by s.score desc, s.id collate "C" limit $9)'
    || ' select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version, t.score'
    || ' from top t join {{rag_chunk}} c'
    || ' on c.tenant_id = $1 and c.scope = $2 and c.generation = $3 and c.id = t.id'
    || ' order by t.score desc, c.id collate "C"'
    using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids,
          v_terms, v_any_term, p_top_k;
end;
$$;
-- end of functions/rag_lexical_query_v1.sql

drop function {{schema}}.rag_where_v2(boolean, boolean, boolean, boolean);
drop function {{schema}}.metadata_filter_is_containment_v1(jsonb);
drop function {{schema}}.metadata_filter_v1(jsonb);
drop function {{schema}}.metadata_filter_node_v1(jsonb, text, integer, integer);
drop function {{schema}}.metadata_filter_contains_v1(text, jsonb, text);
drop function {{schema}}.list_resource_entries_v2(text, text, text, bigint, text, integer, boolean, timestamptz, jsonb, timestamptz, timestamptz, timestamptz, timestamptz);
drop function {{schema}}.list_entries_v3(text, text, text, bigint, text, integer, boolean, timestamptz, jsonb, timestamptz, timestamptz, timestamptz, timestamptz);
drop function {{schema}}.correct_v3(text, text, text, text, text, vector, timestamptz);
drop function {{schema}}.set_consent_v2(text, text, text, text, boolean, text, text, timestamptz, timestamptz, timestamptz);
drop function {{schema}}.recall_v4(text, text, text, vector, text, integer, integer, boolean, text, boolean, timestamptz, double precision, double precision, double precision, boolean, text, jsonb, timestamptz, timestamptz, timestamptz, timestamptz, double precision);
drop function {{schema}}.recall_gates_v2(text, text, text, text, boolean, boolean, integer, text[], timestamptz, {{schema}}.selection_v1);
drop function {{schema}}.recall_travellers_v2(text, text, text, vector, text[], tsquery, boolean, text[], timestamptz, integer, double precision, {{schema}}.selection_v1, double precision, {{schema}}.date_terms_v1);
drop function {{schema}}.recall_travellers_probe_v2(text, text, text, vector, tsquery, boolean, text[], timestamptz, timestamptz, integer, boolean, {{schema}}.selection_v1, double precision, {{schema}}.date_terms_v1);
drop function {{schema}}.recall_top_v2({{schema}}.recall_probe_v1[], text, text, text[], tsquery, timestamptz, timestamptz, integer, double precision);
drop function {{schema}}.recall_rescore_v2(text, text, text, tid[], vector, text[], tsquery, {{schema}}.date_terms_v1);
drop function {{schema}}.recall_bounds_v2(text, text, text, vector, tsquery, boolean, timestamptz, timestamptz, integer, {{schema}}.selection_v1, double precision, {{schema}}.date_terms_v1);
drop function {{schema}}.recall_selection_v1(jsonb, timestamptz, timestamptz, timestamptz, timestamptz);
drop function {{schema}}.selects_v1(jsonb, timestamptz, timestamptz, {{schema}}.selection_v1);
drop function {{schema}}.lexical_score_v2(tsvector, timestamptz, text[], tsquery, {{schema}}.date_terms_v1);
drop function {{schema}}.held_terms_v2(tsvector, timestamptz, {{schema}}.date_terms_v1);
drop function {{schema}}.event_date_terms_v2(timestamptz, {{schema}}.date_terms_v1);
drop function {{schema}}.names_event_date_v1(timestamptz, {{schema}}.date_terms_v1);
drop function {{schema}}.query_dates_v1(text[]);
drop function {{schema}}.might_name_a_date_v1(text[]);
drop function {{schema}}.query_date_terms_v1(text[]);
drop function {{schema}}.date_words_v1();
drop function {{schema}}.remember_batch_v3(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz[], interval[], timestamptz, timestamptz[]);
drop function {{schema}}.remember_v3(text, text, text, text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz[], interval[], timestamptz, timestamptz[]);

-- On a distributed install, the delegated copies of set_consent_v2,
-- correct_v3 and list_entries_v3 (prism_memory/citus.py) still return
-- entry_record_v2: they go with it (distribute() copies the functions this
-- downgrade restores afterwards).
do $$
declare
  v_function regprocedure;
begin
  for v_function in
    select d.objid::regprocedure from pg_depend d
    where d.classid = 'pg_proc'::regclass and d.refclassid = 'pg_type'::regclass
      and d.refobjid = '{{schema}}.entry_record_v2'::regtype
  loop
    execute format('drop function %s', v_function);
  end loop;
end $$;
drop type {{schema}}.date_terms_v1;
drop type {{schema}}.selection_v1;
drop type {{schema}}.entry_record_v2;
alter table {{entries}} drop column occurred_at;

reset search_path;
