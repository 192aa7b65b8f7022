-- prism-memory schema revision 0012: resource. Recall across a user's threads
-- as far as consent allows, the resource-wide lifecycle, and expiry enforced
-- at read time:
-- * recall_v3 (new): recall_v2's arguments plus p_across_threads, which
--   searches every thread of the tenant and resource: the thread's own entries
--   and, from its other threads, those whose consent scope lets them leave
--   (leaves_thread_v1, new: 'profile' or 'user'; legacy entries stay); each
--   source gives its best candidates (type recall_candidate_v1, new);
-- * recall_v2 answers through recall_v3's body (p_across_threads false);
-- * list_resource_entries_v1, count_resource_entries_v1 (new): a resource's
--   entries across its threads, by a (thread, sequence, id) cursor
--   (assert_resource_cursor_v1, new), and their count;
-- * invalidate_resource_v1, purge_resource_v1 (new): erase a resource in
--   bounded, resumable batches (tombstones first, then bodies; holds kept),
--   or sweep what has expired in it (p_expired_only);
-- * expiry: entries.expires_at (new column, remember_v2 / remember_batch_v2:
--   p_expires_at or p_ttl) and stored retention policies per resource or
--   thread (<table>_retention_policy, new; set_retention_policy_v1,
--   get_retention_policy_v1), enforced the moment they pass by recall, export
--   (list_entries_v2) and the sweep (retention_candidates_v2), through
--   retention_cutoff_v1 and is_live_v1 (new); remember_v1, remember_batch_v1
--   and list_entries_v1 answer through their v2 bodies; explain counts an
--   'expiry' gate.
-- * recall_v3 also takes the embedder's model id (p_model_id) and checks it in
--   the same call, as recall_guarded_v1 (revision 0011) did, which it retires;
--   across threads it leaves out the threads another model of the width wrote.
-- * assert_embedding_model_v1 names recall_v3 in its comment;
-- * the reads that measure expiry refuse a NULL or out-of-range p_now
--   (assert_now_v1, new: PM002).

{{pin_search_path}}

alter table {{entries}} add column expires_at timestamptz;
create table {{retention_policy}} (
  tenant_id    text             not null,
  resource_id  text             not null,
  thread_id    text             not null default '',
  max_age_days double precision not null check (max_age_days between 0 and 36500),
  created_at   timestamptz      not null default now(),
  updated_at   timestamptz      not null default now(),
  primary key (tenant_id, resource_id, thread_id)
);
alter table {{retention_policy}} enable row level security;
create policy tenant_isolation on {{retention_policy}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

create type {{schema}}.recall_candidate_v1 as (
  row_id tid, resource_id text, thread_id text, id text, sequence bigint, importance double precision,
  created_at timestamptz, similarity double precision, lexical double precision);

create type {{schema}}.recall_probe_v1 as (
  row_id tid, resource_id text, thread_id text, id text, sequence bigint, importance double precision,
  created_at timestamptz, similarity double precision, text_tsv tsvector, expires_at timestamptz);
create index {{entries_travel_idx}} on {{entries}} (tenant_id, resource_id, thread_id)
  where coalesce(consent_scope in ('profile', 'user'), false);


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

-- file functions/assert_now_v1.sql
-- Raises PM002 unless p_now, the time a read is made at (what expiry and the
-- retention policies are measured against), is a time within years 1 to 9999
-- (UTC): a NULL or infinite "now" would bring back every expired entry.
create or replace function {{schema}}.assert_now_v1(p_now timestamptz)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_now is null then
    raise exception 'now must be a time, got NULL' using errcode = 'PM002';
  end if;
  perform assert_time_v1(p_now, 'now');
end;
$$;
-- end of functions/assert_now_v1.sql

-- file functions/assert_resource_cursor_v1.sql
-- Raises PM005 unless a resource-wide cursor (after thread_id, sequence, id)
-- is all NULL (the start) or has all three values, the thread and the id
-- non-blank (list_resource_entries_v1, invalidate_resource_v1).
create or replace function {{schema}}.assert_resource_cursor_v1(
  p_after_thread_id text, p_after_sequence bigint, p_after_id text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if num_nonnulls(p_after_thread_id, p_after_sequence, p_after_id) not in (0, 3)
     or is_blank_v1(p_after_thread_id) or is_blank_v1(p_after_id) then
    raise exception 'a resource cursor is (thread_id, sequence, id), all given or none' using errcode = 'PM005';
  end if;
end;
$$;
-- end of functions/assert_resource_cursor_v1.sql

-- file functions/count_resource_entries_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- How many entries every thread of the tenant and resource holds (exact ids:
-- a derived resource is another one), tombstoned and held ones included: what
-- is stored.
create or replace function {{schema}}.count_resource_entries_v1(p_tenant_id text, p_resource_id text)
returns bigint
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, null, false);
  return (select count(*) from {{entries}} e where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id);
end;
$$;
-- end of functions/count_resource_entries_v1.sql

-- file functions/get_retention_policy_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The stored retention policies that cover a resource's entries: its own
-- maximum age, and (with p_thread_id) the thread's; NULL where none is stored.
create or replace function {{schema}}.get_retention_policy_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text default null)
returns table (resource_max_age_days double precision, thread_max_age_days double precision)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, false);
  return query
    select max(p.max_age_days) filter (where p.thread_id = ''),
           max(p.max_age_days) filter (where p.thread_id <> '')
    from {{retention_policy}} p
    where p.tenant_id = p_tenant_id and p.resource_id = p_resource_id
      and p.thread_id in ('', coalesce(p_thread_id, ''));
end;
$$;
-- end of functions/get_retention_policy_v1.sql

-- file functions/invalidate_resource_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The first step of erasing everything a resource holds, one bounded batch
-- at a time: picks the next p_limit (1..64) entries of every thread of the
-- tenant and resource (exact ids: a derived resource is another one) after
-- the (thread_id, sequence, id) cursor, in that order (code-point order for
-- the texts), and tombstones, thread by thread with invalidate_v1 (reason
-- 'deleted', its lock, lineage walk and caps: PM010 over them, and nothing
-- changes), those not under legal hold and their lineage dependents. Returns
-- the picked entries (picked true, in cursor order; held says whether the
-- entry stays under its hold) and then the dependents the walks reached
-- besides them (picked false), each with its thread and sequence. The next
-- batch starts after the last picked entry; fewer than p_limit picked means
-- the resource is done. purge_resource_v1 then deletes the bodies. With
-- p_expired_only it picks only the entries that have expired at p_now
-- (is_live_v1, under the policies of the resource and of each thread) and
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
  perform assert_scope_v1(p_tenant_id, p_resource_id, null, false);
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
               or not is_live_v1(e.created_at, e.expires_at,
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
    v_ids := array(select r.entry_id
                   from invalidate_v1(p_tenant_id, p_resource_id, v_thread, v_ids,
                                      case when p_expired_only then 'expired' else 'deleted' end, p_now) as r);
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

-- file functions/is_live_v1.sql
-- Whether an entry has not expired at p_now: created at p_cutoff or later
-- (retention_cutoff_v1: its stored retention policies) and its own
-- expires_at, if any, still ahead. Inlined into the queries that use it; the
-- emulator's _Row.live mirrors it.
create or replace function {{schema}}.is_live_v1(
  p_created_at timestamptz, p_expires_at timestamptz, p_cutoff timestamptz, p_now timestamptz)
returns boolean
language sql immutable parallel safe
return p_created_at >= p_cutoff and (p_expires_at is null or p_expires_at > p_now);
-- end of functions/is_live_v1.sql

-- file functions/leaves_thread_v1.sql
-- Whether an entry's consent lets it leave its thread: consent scope
-- 'profile' or 'user' may be recalled in every thread of its tenant and
-- resource (recall_v3 with p_across_threads); 'thread', and a legacy entry
-- without consent (NULL), stay in their thread. Inlined into the queries that
-- use it. prism_memory.types.TRAVELLING_SCOPES mirrors it.
create or replace function {{schema}}.leaves_thread_v1(p_consent_scope text) returns boolean
language sql immutable parallel safe
return coalesce(p_consent_scope in ('profile', 'user'), false);
-- end of functions/leaves_thread_v1.sql

-- file functions/list_entries_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- Entries of the thread after the (sequence, id) cursor, in (sequence, id)
-- order, at most p_limit (1..200). With p_exportable only what an export may
-- contain: explicitly consented, visible, not revoked, not held, not
-- tombstoned, and not expired at p_now (is_live_v1; the server's clock for a
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
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
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
               and is_live_v1(e.created_at, e.expires_at, v_cutoff, p_now)
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
-- (is_live_v1, under the policies of the resource and of each thread; the
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
  perform assert_scope_v1(p_tenant_id, p_resource_id, null, false);
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
               and is_live_v1(e.created_at, e.expires_at,
                              greatest(v_resource_cutoff, p_now - tp.max_age_days * interval '24 hours'), p_now)
               and not exists (select 1 from {{invalidation}} i
                               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                 and i.thread_id = e.thread_id and i.entry_id = e.id)))
    order by e.thread_id collate "C", e.sequence, e.id collate "C"
    limit p_limit;
end;
$$;
-- end of functions/list_resource_entries_v1.sql

-- file functions/purge_resource_v1.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The second step of erasing a resource: deletes the bodies of the entries
-- p_thread_ids[i], p_ids[i] (at most 64 pairs) of the tenant and resource,
-- thread by thread with purge_v1 (its lock; entries under legal hold are
-- kept; every other one must carry its tombstone, invalidate_resource_v1
-- first, else PM012 and nothing is deleted). Returns how many bodies were
-- deleted.
create or replace function {{schema}}.purge_resource_v1(
  p_tenant_id text, p_resource_id text, p_thread_ids text[], p_ids text[])
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_thread text;
  v_ids text[];
  v_deleted integer := 0;
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, null, false);
  if coalesce(cardinality(p_ids), 0) not between 1 and 64
     or coalesce(cardinality(p_thread_ids), 0) <> cardinality(p_ids) then
    raise exception 'purge_resource: between 1 and 64 (thread, id) pairs per call, got % threads and % ids',
      coalesce(cardinality(p_thread_ids), 0), coalesce(cardinality(p_ids), 0) using errcode = 'PM005';
  end if;
  for v_thread, v_ids in
    select x.thread_id, array_agg(x.id)
    from unnest(p_thread_ids, p_ids) as x(thread_id, id)
    group by x.thread_id
    order by x.thread_id collate "C"
  loop
    v_deleted := v_deleted + purge_v1(p_tenant_id, p_resource_id, v_thread, v_ids);
  end loop;
  return v_deleted;
end;
$$;
-- end of functions/purge_resource_v1.sql

-- file functions/recall_top_v1.sql
-- The best p_keep of recall_v3's probed rows (p_probes: rows of p_resource_id
-- read with their distance, the cheap columns of the gate already applied):
-- those not expired at p_now (is_live_v1 under p_resource_cutoff and their
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
          where is_live_v1(p.created_at, p.expires_at, greatest(p_resource_cutoff, tp.cutoff), p_now)
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
-- p_require_consent, and not expired at p_now (is_live_v1: its expires_at, and
-- the retention policies of its resource and thread, retention_cutoff_v1).
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
-- a thread another embedding model wrote).
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
-- those are read through their HNSW index and re-ranked exactly (below).
--
-- Plan: cached generic plans (planning per call costs more than the scan of
-- a thread), except under Citus, which routes custom plans only, and for the
-- HNSW read, planned per call. Plain index scans and merge joins are off, so a
-- thread is read by a bitmap scan. Each source of entries (the thread, the
-- resource's other threads, the grants) gives its own best candidates (top_k,
-- or top_k x 4 with scoring: recall_candidate_v1, in score order): a plain
-- recall of one thread returns the thread's as they are, otherwise one
-- statement ranks them together, blends, adds adjacency and gate counts. Hits
-- and adjacent rows are joined back to their entries by tenant and ctid (the
-- row scored, same snapshot; ctids repeat across a distributed table's
-- shards). Errors: PM001 scope, PM005 top_k (1..32), message_range (0..4),
-- a NULL explain or across_threads, PM006 a query over 64 KiB, PM008 a blank
-- query, PM003/PM004 the query embedding, PM015 scoring weights, PM017/PM018
-- the embedding model.
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
  v_resource_cutoff timestamptz;  -- ... in the resource's other threads, before their own policies
  v_candidates {{schema}}.recall_candidate_v1[];
  v_probe integer;                -- rows read and bounded, whose lexical leg is then scored
  v_probes {{schema}}.recall_probe_v1[];
  v_probed bigint;
  v_floor double precision;       -- the highest score a row left out could have
  v_exact boolean;                -- the travellers are ranked exactly (else read through HNSW)
  v_found {{schema}}.recall_candidate_v1[];
  v_bar double precision;         -- the thread's own v_keep-th best score: what another must beat
  v_recorded record;
  v_foreign text[] := '{}';       -- the resource's other threads whose entries another model of this width embedded
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- expiry is measured against it
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
  if p_across_threads is null then
    raise exception 'across_threads must be true or false' using errcode = 'PM005';
  end if;
  perform assert_embedding_v1(p_query_embedding, 'the query embedding');
  v_width := vector_dims(p_query_embedding);
  perform assert_dimensions_v1(p_tenant_id, p_resource_id, p_thread_id, v_width);
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
        select g.resource_id, g.parent_thread_id as thread_id, g.source_ids, m.model_id
        from {{share_grant}} g
        join {{embedding_model}} m
          on m.tenant_id = p_tenant_id and m.resource_id = g.resource_id and m.thread_id = g.parent_thread_id
        where g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
          and g.child_thread_id = p_thread_id and g.parent_thread_id = p_share_parent_thread_id
          and (g.expires_at is null or g.expires_at > p_now)
          and m.dimensions = v_width and m.model_id <> p_model_id
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
  v_resource_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, null, p_now);

  -- The thread's own best candidates, exactly. A pass over the thread reads
  -- each row's distance and whether it holds a query term, and keeps the
  -- v_probe rows whose upper bound is highest (similarity, plus 0.25 when it
  -- holds a term: lexical <= 1), each as narrow as can be (its ctid). Only
  -- those are read again, for their exact score (the lexical leg copies the
  -- tsvector) and the tombstones. They hold the exact top v_keep when fewer rows
  -- exist, or when the v_keep-th best exact score among them beats the
  -- highest bound left out (strictly: no tie can be missed); otherwise the
  -- statement runs again over every row.
  v_probe := greatest(256, 8 * v_keep);
  loop
    select c.candidates, c.probed, c.floor into v_candidates, v_probed, v_floor
    from (
      with probed as materialized (
        -- One expression per row, so nothing is computed twice and the sort's
        -- tuples are two columns wide.
        select e.ctid as row_id,
               (1::float8 - (e.embedding <=> p_query_embedding))
               + case when e.text_tsv @@ v_any_term then 0.25::float8 else 0::float8 end as upper
        from {{entries}} e
        where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
          and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                               p_require_consent)
          and is_live_v1(e.created_at, e.expires_at, v_cutoff, p_now)
        order by upper desc
        limit v_probe
      ), top as (
        select x.row_id, x.id, x.sequence, x.importance, x.created_at, x.similarity, x.lexical
        from (select p.row_id, e.id, e.sequence, e.importance, e.created_at,
                     1::float8 - (e.embedding <=> p_query_embedding) as similarity,
                     lexical_score_v1(e.text_tsv, v_terms, v_any_term) as lexical
              from probed p
              join {{entries}} e on e.tenant_id = p_tenant_id and e.ctid = p.row_id  -- the row read above, in this snapshot
              -- The thread's tombstones, hashed once (a hashed subplan; the key is never NULL).
              where e.id not in (select i.entry_id from {{invalidation}} i
                                 where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                   and i.thread_id = p_thread_id)
              offset 0) as x
        order by x.similarity + 0.25::float8 * x.lexical desc, x.sequence asc, x.id collate "C" asc
        limit v_keep
      )
      select array(select row(t.row_id, p_resource_id, p_thread_id, t.id, t.sequence, t.importance, t.created_at,
                              t.similarity, t.lexical)::{{schema}}.recall_candidate_v1
                   from top t
                   order by t.similarity + 0.25::float8 * t.lexical desc, t.sequence asc, t.id collate "C" asc)
               as candidates,
             (select count(*) from probed) as probed, (select min(p.upper) from probed p) as floor
    ) as c;
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
      join {{entries}} e on e.tenant_id = p_tenant_id and e.ctid = c.row_id  -- the row scored above, in this snapshot
      order by c.position;
    return;
  end if;

  if p_across_threads then
    -- The best of the resource's other threads, among the entries that may leave
    -- them (the travellers, which have an index of their own). Up to 5,000 of them
    -- are ranked exactly, as the thread's own are. Over that, on an install with
    -- the travellers' HNSW index (a pinned width of at most 2,000), the nearest
    -- are read through it (pgvector's iterative scan, planned per call so that the
    -- planner sees the resource's size), 256, then 786 if need be, until the
    -- v_keep-th best exact score (theirs, or the thread's own, v_bar) beats every
    -- similarity left out plus 0.25: exact when that holds (and HNSW orders
    -- exactly), approximate otherwise. If fewer than v_keep of them pass every
    -- gate (HNSW ran dry, or tombstones and thread policies, applied after it,
    -- removed them), every traveller is ranked exactly after all, so a recall
    -- always returns min(top_k, matches).
    v_bar := (v_candidates[v_keep]).similarity + 0.25::float8 * (v_candidates[v_keep]).lexical;
    v_exact := true;
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
    v_probe := greatest(256, 8 * v_keep);
    loop
      if v_exact then
        select c.probes, c.probed, c.floor into v_probes, v_probed, v_floor
        from (
          with probed as materialized (  -- as the thread's own: one narrow pass, then the best bounds read again
            select e.ctid as row_id,
                   (1::float8 - (e.embedding <=> p_query_embedding))
                   + case when e.text_tsv @@ v_any_term then 0.25::float8 else 0::float8 end as upper
            from {{entries}} e
            where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id <> p_thread_id
              and leaves_thread_v1(e.consent_scope) and vector_dims(e.embedding) = v_width
              and e.thread_id <> all (v_foreign)
              and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                                   p_require_consent)
              and is_live_v1(e.created_at, e.expires_at, v_resource_cutoff, p_now)
            order by upper desc
            limit v_probe
          )
          select array(select row(e.ctid, p_resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,
                                  1::float8 - (e.embedding <=> p_query_embedding), e.text_tsv,
                                  e.expires_at)::{{schema}}.recall_probe_v1
                       from probed p
                       join {{entries}} e on e.tenant_id = p_tenant_id and e.ctid = p.row_id) as probes,
                 (select count(*) from probed) as probed, (select min(p.upper) from probed p) as floor
        ) as c;
      else
        perform set_config('enable_indexscan', 'on', true);
        perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
        -- A search list a quarter longer than the probe: pgvector's iterative scan
        -- (when the filters leave fewer rows than asked) costs far more than a
        -- longer list.
        perform set_config('hnsw.ef_search', least(1000, v_probe + v_probe / 4 + 16)::text, true);
        execute 'select coalesce(array_agg(row(p.row_id, $2, p.thread_id, p.id, p.sequence, p.importance,'
                || ' p.created_at, p.similarity, p.text_tsv, p.expires_at)::{{schema}}.recall_probe_v1), ''{}''),'
                || ' count(*), min(p.similarity) + 0.25::float8'
                || ' from (select e.ctid as row_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,'
                || ' e.expires_at, e.text_tsv, 1::float8 - (e.embedding <=> $4) as similarity'
                || ' from {{entries}} e'
                || ' where e.tenant_id = $1 and e.resource_id = $2 and e.thread_id <> $3 and e.thread_id <> all ($9)'
                || ' and {{schema}}.leaves_thread_v1(e.consent_scope)'
                || ' and {{schema}}.is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold,'
                || ' e.consent_source, $5)'
                || ' and {{schema}}.is_live_v1(e.created_at, e.expires_at, $6, $7)'
                || ' order by e.embedding <=> $4 limit $8) as p'
          into v_probes, v_probed, v_floor
          using p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_require_consent, v_resource_cutoff,
                p_now, v_probe, v_foreign;
        perform set_config('enable_indexscan', 'off', true);
      end if;
      v_found := recall_top_v1(v_probes, p_tenant_id, p_resource_id, v_terms, v_any_term, v_resource_cutoff,
                               p_now, v_keep);
      -- Left-out travellers cannot reach the hits either when they cannot beat
      -- the thread's own v_keep-th best (v_bar).
      exit when v_probe is null or (v_exact and v_probed < v_probe)
                or greatest((v_found[v_keep]).similarity + 0.25::float8 * (v_found[v_keep]).lexical, v_bar) > v_floor;
      if v_exact then
        v_probe := null;  -- every traveller
      elsif cardinality(v_found) < v_keep and (v_probed < v_probe or v_probe >= 786) then
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
    v_candidates := v_candidates || v_found;
  end if;

  if p_share_parent_thread_id is not null then
    -- The best of the entries live grants name (those the resource's leg holds are left out).
    v_candidates := v_candidates || array(
      select row(s.row_id, s.resource_id, s.thread_id, s.id, s.sequence, s.importance, s.created_at,
                 s.similarity, s.lexical)::{{schema}}.recall_candidate_v1
      from (select e.ctid as row_id, e.resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,
                   1::float8 - (e.embedding <=> p_query_embedding) as similarity,
                   lexical_score_v1(e.text_tsv, v_terms, v_any_term) as lexical
            from (select g.resource_id, g.parent_thread_id, g.source_ids,
                         retention_cutoff_v1(p_tenant_id, g.resource_id, g.parent_thread_id, p_now) as cutoff
                  from {{share_grant}} g
                  where g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
                    and g.child_thread_id = p_thread_id and g.parent_thread_id = p_share_parent_thread_id
                    and (g.expires_at is null or g.expires_at > p_now)
                  offset 0) as g
            join {{entries}} e
              on e.tenant_id = p_tenant_id and e.resource_id = g.resource_id
             and e.thread_id = g.parent_thread_id and e.id = any(g.source_ids)
            where vector_dims(e.embedding) = v_width
              and not (p_across_threads and e.resource_id = p_resource_id and leaves_thread_v1(e.consent_scope))
              and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                                   p_require_consent)
              and is_live_v1(e.created_at, e.expires_at, g.cutoff, p_now)
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
      select g.resource_id, g.parent_thread_id as thread_id, g.source_ids
      from {{share_grant}} g
      where p_share_parent_thread_id is not null
        and g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
        and g.child_thread_id = p_thread_id and g.parent_thread_id = p_share_parent_thread_id
        and (g.expires_at is null or g.expires_at > p_now)
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
        and is_live_v1(e.created_at, e.expires_at, coalesce(greatest(rp.cutoff, tp.cutoff), '-infinity'), p_now)
        and not exists (select 1 from {{invalidation}} i
                        where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                          and i.thread_id = e.thread_id and i.entry_id = e.id)
    ), gates as (
      -- Only with p_explain: the thread's entries, the entries live grants name
      -- and, across threads, the resource's other entries (nothing else of
      -- another thread), each counted at the first gate that removes it.
      select case
               when not (e.resource_id = p_resource_id and e.thread_id = p_thread_id)
                    and not (vector_dims(e.embedding) = v_width
                             and ((p_across_threads and e.resource_id = p_resource_id
                                   and leaves_thread_v1(e.consent_scope) and e.thread_id <> all (v_foreign))
                                  or exists (select 1 from grants g
                                             where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                                               and e.id = any(g.source_ids)))) then 'scope'
               when e.legal_hold then 'hold'
               when not is_injectable_v1(e.consent_visible, e.consent_revoked_at, false, e.consent_source,
                                         p_require_consent) then 'consent'
               when exists (select 1 from {{invalidation}} i
                            where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                              and i.thread_id = e.thread_id and i.entry_id = e.id) then 'invalidation'
               when not is_live_v1(e.created_at, e.expires_at, coalesce(greatest(rp.cutoff, tp.cutoff), '-infinity'),
                                   p_now) then 'expiry'
             end as gate
      from {{entries}} e
      left join policies rp on rp.resource_id = e.resource_id and rp.thread_id = ''
      left join policies tp on tp.resource_id = e.resource_id and tp.thread_id = e.thread_id
      where p_explain
        and e.tenant_id = p_tenant_id
        and ((e.resource_id = p_resource_id and (e.thread_id = p_thread_id or p_across_threads))
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
    from unnest(array['scope', 'hold', 'consent', 'invalidation', 'expiry']) with ordinality as g(gate, position)
    left join (select x.gate, count(*) as removed from gates x where x.gate is not null group by x.gate) n
      on n.gate = g.gate
    where p_explain
    order by 1 desc, 2;
end;
$$;
-- end of functions/recall_v3.sql

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

-- file functions/remember_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- Upserts a batch of entries into one thread, all or nothing. Arrays are
-- parallel (one element per entry); p_metadata, p_sequences, p_importance,
-- p_consent, p_expires_at and p_ttl may be null. An entry expires (is no
-- longer recalled, exported or injected: is_live_v1) at its expires_at, which
-- must be after p_now, or at p_now + its ttl (more than 0, at most 36,500
-- days of 24 hours: added in UTC, so a daylight-saving change of the session's
-- time zone never moves it; p_now is the server's clock for a tenant-bound
-- role); giving both is
-- PM002, a time out of range PM005. Without either a stored entry keeps its
-- expiry (none for a new entry). A missing sequence keeps the stored entry's sequence,
-- or for a new entry takes (max sequence in the thread) + (position in the
-- batch); a missing consent keeps the stored one (legacy for a new entry).
-- Importance is clamped to [0, 1]; metadata._lineage is checked; created_at
-- and updated_at are p_now. A written entry is tombstoned exactly when one of
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
     or coalesce(cardinality(p_consent), v_count) <> v_count
     or coalesce(cardinality(p_expires_at), v_count) <> v_count
     or coalesce(cardinality(p_ttl), v_count) <> v_count then
    raise exception 'remember_v2: the argument arrays differ in length' using errcode = 'PM002';
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
           when e.expires_at is not null and e.ttl is not null
             then format('entry %s (%s): give expires_at or ttl, not both', e.ord, e.id)
         end
  into v_problem
  from unnest(p_ids, p_texts, p_metadata, p_importance, p_embeddings, p_sequences, p_consent, p_expires_at, p_ttl)
         with ordinality as e(id, text, metadata, importance, embedding, sequence, consent, expires_at, ttl, ord)
  where e.id is null or is_blank_v1(e.id) or octet_length(e.id) > 512
     or e.text is null or is_blank_v1(e.text)
     or (e.metadata is not null and jsonb_typeof(e.metadata) <> 'object')
     or e.importance in ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)
     or e.sequence not between 0 and 9007199254740991
     or e.embedding is null
     or not lineage_is_valid_v1(e.metadata -> '_lineage')
     or not consent_is_valid_v1(e.consent)
     or (e.expires_at is not null and e.ttl is not null)
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
    raise exception 'remember_v2: an entry id appears twice in the batch' using errcode = 'PM002';
  end if;
  perform assert_time_v1(x, 'expires_at') from unnest(p_expires_at) as x where x is not null;
  select format('entry %s (%s): %s', e.ord, e.id,
                case when e.expires_at <= p_now then 'expires_at must be after now'
                     else 'ttl must be more than 0 and at most 36500 days' end)
  into v_problem
  from unnest(p_ids, p_expires_at, p_ttl) with ordinality as e(id, expires_at, ttl, ord)
  where e.expires_at <= p_now or e.ttl <= interval '0' or e.ttl > interval '36500 days'
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

-- file functions/retention_candidates_v2.sql
-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- The next retention sweep: entries of the thread that have expired at p_now
-- (is_live_v1: their expires_at has passed, or they are older than a stored
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
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_batch_size is null or p_batch_size not between 1 and 64 then
    raise exception 'batch_size must be between 1 and 64, got %', p_batch_size using errcode = 'PM005';
  end if;
  if p_max_age_days not between 0 and 36500 or p_max_entries < 0 then
    raise exception 'max_age_days must be within 0..36500 and max_entries >= 0' using errcode = 'PM005';
  end if;
  v_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, p_thread_id, p_now);
  return query
    with ranked as (
      select e.id, e.legal_hold, e.sequence, e.created_at, e.expires_at,
             row_number() over (order by e.sequence desc, e.id collate "C" desc) as newest_rank
      from {{entries}} e
      where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    ), expired as (
      select r.id, r.legal_hold, r.sequence,
             count(*) filter (where not r.legal_hold)
               over (order by r.sequence, r.id collate "C" rows unbounded preceding) as deletable_so_far
      from ranked r
      where not is_live_v1(r.created_at, r.expires_at, v_cutoff, p_now)
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

-- file functions/retention_cutoff_v1.sql
-- The oldest created_at an entry of the thread (of the resource, when
-- p_thread_id is NULL: the resource's own policy only) may have at p_now and
-- still be recalled, exported or injected: p_now minus the smallest maximum
-- age (24-hour days) of the stored retention policies that cover it, the
-- resource's (thread_id '') and the thread's; '-infinity' when none does.
-- PL/pgSQL, so its plan is cached for the session (a SQL function's was made
-- again in every transaction: about 1 ms of a small thread's recall).
create or replace function {{schema}}.retention_cutoff_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_now timestamptz)
returns timestamptz
language plpgsql stable
set search_path from current
as $$
begin
  return (select coalesce(max(p_now - p.max_age_days * interval '24 hours'), '-infinity'::timestamptz)
          from {{retention_policy}} p
          where p.tenant_id = p_tenant_id and p.resource_id = p_resource_id
            and p.thread_id in ('', coalesce(p_thread_id, '')));
end;
$$;
-- end of functions/retention_cutoff_v1.sql

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
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, false);
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

-- file functions/assert_embedding_model_v1.sql
-- Raises PM017 unless p_model_id is a non-blank string of at most 256 bytes
-- and p_dimensions a width in 1..16000: the embedder identity the guard
-- takes (use_embedding_model_v1, recall_v3's p_model_id), as
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
-- API function kept for direct SQL callers (prism_memory/operations.py,
-- RETAINED_FUNCTIONS): the Python calls list_entries_v2. It answers exactly as
-- list_entries_v2 on the server's clock (p_now => now()).
create or replace function {{schema}}.list_entries_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false)
returns setof {{schema}}.entry_record_v1
language sql stable security definer
set search_path from current
as $$
  select * from list_entries_v2(p_tenant_id, p_resource_id, p_thread_id, p_after_sequence, p_after_id, p_limit,
                                p_exportable, now())
$$;
-- end of functions/list_entries_v1.sql

-- file functions/recall_v2.sql
-- API function kept for direct SQL callers (prism_memory/operations.py,
-- RETAINED_FUNCTIONS): the Python calls recall_v3. It answers exactly as
-- recall_v3 with p_across_threads false (one thread, plus the entries a live
-- share grant from p_share_parent_thread_id lets it read): the same rows,
-- ranks, scores, gates and errors, from the same body.
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
language sql stable security definer
set search_path from current
as $$
  select * from recall_v3(
    p_tenant_id => p_tenant_id, p_resource_id => p_resource_id, p_thread_id => p_thread_id,
    p_query_embedding => p_query_embedding, p_query_text => p_query_text, p_top_k => p_top_k,
    p_message_range => p_message_range, p_require_consent => p_require_consent,
    p_share_parent_thread_id => p_share_parent_thread_id, p_across_threads => false, p_now => p_now,
    p_recency_weight => p_recency_weight, p_importance_weight => p_importance_weight,
    p_half_life_ms => p_half_life_ms, p_explain => p_explain)
$$;
-- end of functions/recall_v2.sql

-- file functions/remember_batch_v1.sql
-- API function kept for direct SQL callers (prism_memory/operations.py,
-- RETAINED_FUNCTIONS): the Python calls remember_batch_v2. It answers exactly
-- as remember_batch_v2 without expiry.
create or replace function {{schema}}.remember_batch_v1(
  p_tenant_id text, p_resource_ids text[], p_thread_ids text[],
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_now timestamptz default now())
returns table (resource_id text, thread_id text, written integer, invalidated text[])
language sql volatile security definer
set search_path from current
as $$
  select * from remember_batch_v2(p_tenant_id, p_resource_ids, p_thread_ids, p_ids, p_texts, p_embeddings, p_metadata,
                                  p_sequences, p_importance, p_consent, p_now => p_now)
$$;
-- end of functions/remember_batch_v1.sql

-- file functions/remember_v1.sql
-- API function kept for direct SQL callers (prism_memory/operations.py,
-- RETAINED_FUNCTIONS): the Python calls remember_v2. It answers exactly as
-- remember_v2 without expiry (a stored entry keeps its own).
create or replace function {{schema}}.remember_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_now timestamptz default now())
returns table (written integer, invalidated text[])
language sql volatile security definer
set search_path from current
as $$
  select * from remember_v2(p_tenant_id, p_resource_id, p_thread_id, p_ids, p_texts, p_embeddings, p_metadata,
                            p_sequences, p_importance, p_consent, p_now => p_now)
$$;
-- end of functions/remember_v1.sql

drop function {{schema}}.recall_guarded_v1(text, text, text, text, integer, vector, text, integer, integer, boolean, text,
                                          timestamptz, double precision, double precision, double precision, boolean);
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
