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
