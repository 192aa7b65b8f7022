-- prism-memory schema revision 0008: tenancy, snapshot share grants, bounded queries.
--
-- * Tenant-bound roles: <table>_tenant_binding lists the tenants a database
--   role (by OID; with every role that is a member of it) may act for. Every
--   API function first calls tenant_access_v1, which refuses any other tenant
--   (PM016) and gives such a role the server's clock instead of its p_now.
--   Roles with no binding keep their access.
-- * Writers refuse any isolation level but READ COMMITTED (lock_thread_v1,
--   PM017): under REPEATABLE READ the per-thread lock came after the
--   snapshot, so a writer could miss the tombstone or grant committed before it.
-- * A share grant shares the entries as they are when it is made: only ids
--   the parent thread holds are granted, and a later write under a granted
--   id (remember_v1, correct_v2), like its deletion (purge_v1), takes it out
--   of the grant (unshare_v1). The child's resource must be the parent's own
--   or a delegated agent's (PM001).
-- * A query is scored by its first 32 distinct terms (query_terms_v1), in
--   recall_v2 and rag_lexical_query_v1, which bounds a query's cost; recall_v2
--   refuses a blank query (PM008).

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

create table {{tenant_binding}} (
  tenant_id  text        not null,
  role_oid   oid         not null,
  created_at timestamptz not null default now(),
  primary key (tenant_id, role_oid)
);
create index {{tenant_binding_role_idx}} on {{tenant_binding}} (role_oid, tenant_id);
alter table {{tenant_binding}} enable row level security;
create policy tenant_isolation on {{tenant_binding}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

-- file functions/tenant_access_v1.sql
-- Every API function calls this first. A role bound to tenants may act only
-- for those tenants: any other tenant raises PM016, inside the function,
-- whatever the caller passes. Such a role also gets the server's clock: the
-- result is now() whatever p_now it sent, so the rows it writes are stamped,
-- aged by retention and checked against share-grant expiry on the server's
-- time. A role with no binding (the owner, a trusted service) keeps its p_now.
--
-- The session's login role (session_user) is bound when it, or any role it
-- is a member of (may SET ROLE to), has rows in the tenant binding table (by
-- role OID, so a rename keeps them; prism_memory.schema.grant_app_role writes
-- them): a member of a bound group is held to the group's tenants, however it
-- calls. A superuser is never bound. Row-level security
-- is off for the lookup: if someone forces it on the binding table, every
-- call fails rather than read no binding and trust the caller.
create or replace function {{schema}}.tenant_access_v1(p_tenant_id text, p_now timestamptz)
returns timestamptz
language plpgsql stable
set search_path from current
set row_security = off
as $$
declare
  v_bound boolean;
  v_allowed boolean;
begin
  if (select r.rolsuper from pg_catalog.pg_roles r where r.rolname = session_user) then
    return p_now;  -- a superuser is a member of every role, and bound by none
  end if;
  select count(*) > 0, coalesce(bool_or(b.tenant_id = p_tenant_id), false)
  into v_bound, v_allowed
  from {{tenant_binding}} b
  where case when exists (select 1 from pg_catalog.pg_roles r where r.oid = b.role_oid)
             then pg_catalog.pg_has_role(session_user, b.role_oid, 'MEMBER')
             else false end;  -- a dropped role's leftover rows bind nobody
  if not v_bound then
    return p_now;
  end if;
  if not v_allowed then
    raise exception 'role % may not act for tenant %', session_user, coalesce(quote_literal(p_tenant_id), 'NULL')
      using errcode = 'PM016';
  end if;
  return now();
end;
$$;
-- end of functions/tenant_access_v1.sql

-- file functions/query_terms_v1.sql
-- The lexical terms a query is scored by: lexical_terms_v1's terms (the same
-- splitting, lower-casing, stopwords and 64-character cap), keeping only the
-- first 32 distinct ones in order of appearance, returned in code-point
-- order. The cap bounds what one query costs: the lexical leg tests each
-- term against each row, so an uncapped 64 KiB query (about 10,900 distinct
-- terms) cost 100x a typical one. The text is read in growing prefixes (the
-- last, maybe cut, piece of a prefix left out) until 32 distinct terms are
-- found, so a long query costs little more than a short one to tokenize.
-- prism_memory/lexical.py mirrors it.
create or replace function {{schema}}.query_terms_v1(p_text text) returns text[]
language plpgsql immutable strict parallel safe
set search_path from current
as $$
declare
  v_length integer := least(char_length(p_text), 200000);
  v_window integer := 2048;
  v_terms text[];
begin
  loop
    v_window := least(v_window, v_length);
    v_terms := array(
      select kept.term from (
        select p.term
        from (select t.term, t.position, count(*) over () as pieces
              from regexp_split_to_table(
                     lower(left(p_text, v_window) collate "C"),
                     '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') with ordinality as t(term, position)) as p
        where p.term <> ''
          and char_length(p.term) <= 64
          and p.term <> all ({{stopwords}}::text[])
          -- a prefix's last piece may be a term cut in two: it waits for a longer prefix
          and (v_window = v_length or p.position < p.pieces)
        group by p.term
        order by min(p.position)
        limit 32) as kept
      order by kept.term);
    exit when cardinality(v_terms) >= 32 or v_window >= v_length;
    v_window := v_window * 8;
  end loop;
  return v_terms;
end;
$$;
-- end of functions/query_terms_v1.sql

-- file functions/unshare_v1.sql
-- A share grant shares entries as they were when it was made: a later write
-- under a shared id (remember_v1, correct_v2) or the entry's deletion
-- (purge_v1) takes the id out of every grant of its thread, until the thread
-- shares it again.
create or replace function {{schema}}.unshare_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[])
returns void
language plpgsql volatile
set search_path from current
as $$
begin
  update {{share_grant}} g
  set source_ids = array(select x from unnest(g.source_ids) as x where x <> all (p_ids))
  where g.tenant_id = p_tenant_id and g.resource_id = p_resource_id
    and g.parent_thread_id = p_thread_id and g.source_ids && p_ids;
end;
$$;
-- end of functions/unshare_v1.sql

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
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if p_text is null or is_blank_v1(p_text) then
    raise exception 'the corrected text must not be blank' using errcode = 'PM002';
  end if;
  if octet_length(p_text) > 67108864 then
    raise exception 'the corrected text is over the 64 MiB hard cap' using errcode = 'PM006';
  end if;
  perform assert_embedding_v1(p_embedding, 'the embedding');
  perform assert_dimensions_v1(p_tenant_id, p_resource_id, p_thread_id, vector_dims(p_embedding));
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

-- file functions/count_entries_v1.sql
create or replace function {{schema}}.count_entries_v1(p_tenant_id text, p_resource_id text, p_thread_id text)
returns bigint
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  return (select count(*) from {{entries}} e
          where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id);
end;
$$;
-- end of functions/count_entries_v1.sql

-- file functions/get_working_v1.sql
create or replace function {{schema}}.get_working_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text default null)
returns table (data jsonb, version bigint, created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform {{schema}}.assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, false);
  return query
    select w.data, w.version, w.created_at, w.updated_at
    from {{working}} w
    where w.tenant_id = p_tenant_id and w.resource_id = p_resource_id
      and w.thread_id = coalesce(p_thread_id, '');
end;
$$;
-- end of functions/get_working_v1.sql

-- file functions/invalidate_v1.sql
-- Tombstones p_ids' dependents (every entry of the thread whose
-- _lineage.sourceIds holds an invalidated id, transitively) and, unless
-- p_reason is 'corrected', p_ids themselves; with 'held' it also sets the legal
-- hold. The walk is breadth-first over distinct lineage edges. Caps: at most
-- 64 ids, 256 edges, and new dependents no deeper than 8 levels;
-- over a cap raises PM010 and nothing changes. Returns every tombstoned id.
-- Reasons: deleted, held, revoked, corrected, expired, source-invalidated.
-- Each step of the walk is one pass over the thread, whatever the frontier's size.
create or replace function {{schema}}.invalidate_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_reason text,
  p_now timestamptz default now())
returns table (entry_id text)
language plpgsql volatile security definer
set search_path from current
as $$
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

-- file functions/lock_thread_v1.sql
-- Serialises every writer of one thread (remember, consent, correct,
-- invalidate, purge, reembed, share) for the rest of the transaction:
-- automatic sequences never interleave, an unpinned thread's first width is
-- fixed before a second writer checks it, and no tombstone or share grant is
-- lost to a race. The lock only helps a transaction that reads what the
-- writer before it committed, so any isolation level but READ COMMITTED
-- raises PM017 (a REPEATABLE READ snapshot predates the lock).
create or replace function {{schema}}.lock_thread_v1(p_tenant_id text, p_resource_id text, p_thread_id text)
returns void
language plpgsql volatile
set search_path from current
as $$
begin
  if pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
    raise exception 'writes need READ COMMITTED isolation; this transaction is %',
      pg_catalog.current_setting('transaction_isolation') using errcode = 'PM017';
  end if;
  perform pg_advisory_xact_lock(
    hashtextextended(p_tenant_id || chr(31) || p_resource_id || chr(31) || p_thread_id, 0));
end;
$$;
-- end of functions/lock_thread_v1.sql

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

-- file functions/purge_v1.sql
-- Deletes the bodies of p_ids (at most 64), skipping entries under legal
-- hold, and drops their ids from this thread's share grants; returns how many
-- rows were deleted. Every entry must already carry
-- its tombstone (invalidate_v1 first, so dependents never outlive the walk):
-- otherwise PM012 and nothing is deleted.
create or replace function {{schema}}.purge_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[])
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_ids text[];
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if coalesce(cardinality(p_ids), 0) not between 1 and 64 then
    raise exception 'purge: between 1 and 64 ids per call, got %', coalesce(cardinality(p_ids), 0)
      using errcode = 'PM005';
  end if;
  if exists (select 1 from {{entries}} e
             where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
               and e.thread_id = p_thread_id and e.id = any(p_ids) and not e.legal_hold
               and not exists (select 1 from {{invalidation}} i
                               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                 and i.thread_id = p_thread_id and i.entry_id = e.id)) then
    raise exception 'purge: invalidate the entries (invalidate_v1) before deleting them' using errcode = 'PM012';
  end if;
  with deleted as (
    delete from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids) and not e.legal_hold
    returning e.id
  )
  select coalesce(array_agg(d.id), '{}') into v_ids from deleted d;
  perform unshare_v1(p_tenant_id, p_resource_id, p_thread_id, v_ids);
  return cardinality(v_ids);
end;
$$;
-- end of functions/purge_v1.sql

-- file functions/rag_check_source_access_v1.sql
-- Whether the principal (or one of its groups) holds a grant on the source,
-- at p_access_version or newer when given: the rule query, lexical_query and
-- get_by_source apply to every chunk (with the chunk's access_version).
create or replace function {{schema}}.rag_check_source_access_v1(
  p_tenant_id text, p_source_id text, p_principal_id text, p_group_ids text[] default '{}',
  p_access_version bigint default null)
returns boolean
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  if p_tenant_id is null or is_blank_v1(p_tenant_id) or octet_length(p_tenant_id) > 256 then
    raise exception 'tenant_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if p_source_id is null or is_blank_v1(p_source_id) or octet_length(p_source_id) > 512 then
    raise exception 'source_id must be a non-blank string of at most 512 bytes' using errcode = 'PM002';
  end if;
  perform rag_assert_principal_v1(p_principal_id, p_group_ids);
  return exists (
    select 1 from {{rag_source_acl}} a
    where a.tenant_id = p_tenant_id and a.source_id = p_source_id
      and ((a.grantee_kind = 'principal' and a.grantee_id = p_principal_id)
           or (a.grantee_kind = 'group' and a.grantee_id = any(p_group_ids)))
      and a.access_version >= coalesce(p_access_version, 0));
end;
$$;
-- end of functions/rag_check_source_access_v1.sql

-- file functions/rag_delete_v1.sql
-- Deletes the scope's chunks that match every criterion given: p_ids (at most
-- 1000), p_source_id, p_generation (NULL: every generation). At least one is
-- required. Returns the number deleted.
create or replace function {{schema}}.rag_delete_v1(
  p_tenant_id text, p_scope text, p_ids text[] default null, p_source_id text default null,
  p_generation bigint default null)
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_deleted integer;
begin
  perform rag_assert_scope_v1(p_tenant_id, p_scope);
  perform rag_assert_generation_v1(p_generation);
  if p_ids is null and p_source_id is null and p_generation is null then
    raise exception 'delete needs ids, a source_id or a generation' using errcode = 'PM002';
  end if;
  if coalesce(cardinality(p_ids), 0) > 1000 then
    raise exception 'delete takes at most 1000 ids per call, got %', cardinality(p_ids) using errcode = 'PM005';
  end if;
  delete from {{rag_chunk}} c
  where c.tenant_id = p_tenant_id and c.scope = p_scope
    and (p_ids is null or c.id = any(p_ids))
    and (p_source_id is null or c.source_id = p_source_id)
    and (p_generation is null or c.generation = p_generation);
  get diagnostics v_deleted = row_count;
  return v_deleted;
end;
$$;
-- end of functions/rag_delete_v1.sql

-- file functions/rag_get_by_source_v1.sql
-- The chunks of one source in one generation (the current one by default),
-- by id (code-point order) after p_after_id, at most p_limit (1..1000),
-- under the ACL of rag_where_v1 when p_acl.
create or replace function {{schema}}.rag_get_by_source_v1(
  p_tenant_id text, p_scope text, p_source_id text, p_after_id text default null,
  p_limit integer default 1000, p_acl boolean default false, p_principal_id text default null,
  p_group_ids text[] default '{}', p_generation bigint default null)
returns table (id text, source_id text, text text, metadata jsonb, generation bigint,
               access_version bigint, embedding vector, created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_generation bigint := rag_read_generation_v1(p_tenant_id, p_scope, 1, null, p_acl,
                                                p_principal_id, p_group_ids, p_generation);
begin
  if p_source_id is null or is_blank_v1(p_source_id) or octet_length(p_source_id) > 512 then
    raise exception 'source_id must be a non-blank string of at most 512 bytes' using errcode = 'PM002';
  end if;
  if p_limit is null or p_limit < 1 or p_limit > 1000 then
    raise exception 'limit must be between 1 and 1000, got %', p_limit using errcode = 'PM005';
  end if;
  return query execute
    'select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version, c.embedding::vector,'
    || ' c.created_at, c.updated_at from {{rag_chunk}} c where ' || rag_where_v1(false, p_acl)
    || ' and c.source_id = $7 and ($8::text is null or c.id collate "C" > $8::text collate "C")'
    || ' order by c.id collate "C" limit $9'
    using p_tenant_id, p_scope, v_generation, null::jsonb, p_principal_id, p_group_ids,
          p_source_id, p_after_id, p_limit;
end;
$$;
-- end of functions/rag_get_by_source_v1.sql

-- file functions/rag_get_generation_v1.sql
-- The scope's current generation: the pointer, or 0 when never set.
create or replace function {{schema}}.rag_get_generation_v1(p_tenant_id text, p_scope text)
returns bigint
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform rag_assert_scope_v1(p_tenant_id, p_scope);
  return coalesce((select g.generation from {{rag_scope_generations}} g
                   where g.tenant_id = p_tenant_id and g.scope = p_scope), 0);
end;
$$;
-- end of functions/rag_get_generation_v1.sql

-- file functions/rag_lexical_query_v1.sql
-- Full-text leg: top-k chunks of one generation whose text_tsv holds any of
-- the query's lexical terms (through the GIN index), scored by the share of
-- the query's terms (query_terms_v1: at most 32) they hold (lexical_score_v1, as in recall), ties
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
  v_terms := query_terms_v1(p_query_text);
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

-- file functions/rag_query_v1.sql
-- Top-k chunks of one generation of a scope by cosine similarity
-- (score = 1 - pgvector <=>), ties by id (code-point order), under the
-- filter and ACL of rag_where_v1, applied before ranking.
--
-- Path: how many candidates there are decides. Without a filter they are
-- counted through the scope (or, for an ACL reader of at most 100 sources,
-- the source) index, up to 2000; with a filter the planner's estimate is
-- taken (jsonb @> is estimated from the column statistics); a reader of more
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
  perform rag_assert_dimensions_v1(p_tenant_id, p_scope, vector_dims(p_embedding));
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

  if v_filter is not null and (not p_acl or v_narrow) then
    v_candidates := rag_estimate_candidates_v1(p_tenant_id, p_scope, v_generation, v_filter,
                                               case when v_narrow then v_sources end);
  elsif not p_acl or v_narrow then
    execute 'select count(*)::integer from (select 1 from {{rag_chunk}} c where '
            || rag_where_v1(false, false, v_narrow) || ' limit 2000) x'
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

-- file functions/rag_set_generation_v1.sql
-- Points the scope at p_generation (any generation, so a rebuild can be rolled
-- back); reads without an explicit generation switch at commit. Returns it.
create or replace function {{schema}}.rag_set_generation_v1(p_tenant_id text, p_scope text, p_generation bigint)
returns bigint
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform rag_assert_scope_v1(p_tenant_id, p_scope);
  if p_generation is null then
    raise exception 'generation is required' using errcode = 'PM002';
  end if;
  perform rag_assert_generation_v1(p_generation);
  insert into {{rag_scope_generations}} as g (tenant_id, scope, generation, updated_at)
  values (p_tenant_id, p_scope, p_generation, now())
  on conflict (tenant_id, scope) do update set generation = excluded.generation, updated_at = now();
  return p_generation;
end;
$$;
-- end of functions/rag_set_generation_v1.sql

-- file functions/rag_set_source_access_v1.sql
-- Replaces a source's grants, all or nothing: p_principal_ids and p_group_ids
-- (at most 1024 in all; both empty revokes every grant) at p_access_version,
-- which must not be lower than the version already stored (PM014), so an
-- update that arrives late never restores a revoked grant. Returns the number
-- of grants stored.
create or replace function {{schema}}.rag_set_source_access_v1(
  p_tenant_id text, p_source_id text, p_principal_ids text[], p_group_ids text[],
  p_access_version bigint)
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_current bigint;
  v_granted integer;
begin
  if p_tenant_id is null or is_blank_v1(p_tenant_id) or octet_length(p_tenant_id) > 256 then
    raise exception 'tenant_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if p_source_id is null or is_blank_v1(p_source_id) or octet_length(p_source_id) > 512 then
    raise exception 'source_id must be a non-blank string of at most 512 bytes' using errcode = 'PM002';
  end if;
  if p_access_version is null or p_access_version < 0 then
    raise exception 'access_version must be an integer >= 0' using errcode = 'PM002';
  end if;
  if coalesce(cardinality(p_principal_ids), 0) + coalesce(cardinality(p_group_ids), 0) > 1024 then
    raise exception 'a source has at most 1024 grants' using errcode = 'PM005';
  end if;
  if exists (select 1 from unnest(coalesce(p_principal_ids, '{}') || coalesce(p_group_ids, '{}')) as g(id)
             where g.id is null or is_blank_v1(g.id) or octet_length(g.id) > 256) then
    raise exception 'principal and group ids must be non-blank strings of at most 256 bytes'
      using errcode = 'PM013';
  end if;

  insert into {{rag_source_version}} (tenant_id, source_id, access_version, updated_at)
  values (p_tenant_id, p_source_id, p_access_version, now())
  on conflict (tenant_id, source_id) do nothing;
  select v.access_version into v_current
  from {{rag_source_version}} v
  where v.tenant_id = p_tenant_id and v.source_id = p_source_id
  for update;
  if p_access_version < v_current then
    raise exception 'source % is at access version %, newer than %', p_source_id, v_current, p_access_version
      using errcode = 'PM014';
  end if;
  update {{rag_source_version}} v set access_version = p_access_version, updated_at = now()
  where v.tenant_id = p_tenant_id and v.source_id = p_source_id;

  delete from {{rag_source_acl}} a where a.tenant_id = p_tenant_id and a.source_id = p_source_id;
  insert into {{rag_source_acl}} (tenant_id, source_id, grantee_kind, grantee_id, access_version)
  select distinct p_tenant_id, p_source_id, g.kind, g.id, p_access_version
  from (select 'principal'::text, id from unnest(p_principal_ids) as id
        union all
        select 'group'::text, id from unnest(p_group_ids) as id) as g(kind, id);
  get diagnostics v_granted = row_count;
  return v_granted;
end;
$$;
-- end of functions/rag_set_source_access_v1.sql

-- file functions/rag_upsert_v1.sql
-- Upserts a batch of chunks (1..1000) into one generation of a scope (the
-- current one when p_generation is NULL), all or nothing. Arrays are parallel;
-- p_metadata and p_access_versions may be NULL. Returns the number written.
create or replace function {{schema}}.rag_upsert_v1(
  p_tenant_id text, p_scope text,
  p_ids text[], p_source_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_access_versions bigint[] default null,
  p_generation bigint default null)
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_count integer := coalesce(cardinality(p_ids), 0);
  v_generation bigint;
  v_problem text;
begin
  perform rag_assert_scope_v1(p_tenant_id, p_scope);
  perform rag_assert_generation_v1(p_generation);
  if v_count = 0 then
    return 0;
  end if;
  if v_count > 1000 then
    raise exception 'upsert takes at most 1000 chunks per call, got %', v_count using errcode = 'PM005';
  end if;
  if coalesce(cardinality(p_source_ids), 0) <> v_count
     or coalesce(cardinality(p_texts), 0) <> v_count
     or coalesce(cardinality(p_embeddings), 0) <> v_count
     or coalesce(cardinality(p_metadata), v_count) <> v_count
     or coalesce(cardinality(p_access_versions), v_count) <> v_count then
    raise exception 'rag_upsert_v1: the argument arrays differ in length' using errcode = 'PM002';
  end if;
  select case
           when c.id is null or is_blank_v1(c.id) or octet_length(c.id) > 512
             then format('chunk %s: id must be a non-blank string of at most 512 bytes', c.ord)
           when c.source_id is null or is_blank_v1(c.source_id) or octet_length(c.source_id) > 512
             then format('chunk %s (%s): source_id must be a non-blank string of at most 512 bytes', c.ord, c.id)
           when c.text is null or is_blank_v1(c.text)
             then format('chunk %s (%s): text must not be blank', c.ord, c.id)
           when c.metadata is not null and jsonb_typeof(c.metadata) <> 'object'
             then format('chunk %s (%s): metadata must be a JSON object', c.ord, c.id)
           when c.access_version < 0
             then format('chunk %s (%s): access_version must be >= 0', c.ord, c.id)
           when c.embedding is null
             then format('chunk %s (%s): embedding is missing', c.ord, c.id)
         end
  into v_problem
  from unnest(p_ids, p_source_ids, p_texts, p_metadata, p_access_versions, p_embeddings)
         with ordinality as c(id, source_id, text, metadata, access_version, embedding, ord)
  where c.id is null or is_blank_v1(c.id) or octet_length(c.id) > 512
     or c.source_id is null or is_blank_v1(c.source_id) or octet_length(c.source_id) > 512
     or c.text is null or is_blank_v1(c.text)
     or (c.metadata is not null and jsonb_typeof(c.metadata) <> 'object')
     or c.access_version < 0
     or c.embedding is null
  order by c.ord
  limit 1;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'PM002';
  end if;
  if (select count(distinct id) from unnest(p_ids) as id) <> v_count then
    raise exception 'rag_upsert_v1: a chunk id appears twice in the batch' using errcode = 'PM002';
  end if;
  if (select max(octet_length(t) + coalesce(octet_length(m::text), 0))
      from unnest(p_texts, p_metadata) as x(t, m)) > 8388608 then
    raise exception 'a chunk is over the 8 MiB hard cap on text plus metadata' using errcode = 'PM006';
  end if;
  perform assert_embedding_v1(v, 'an embedding') from unnest(p_embeddings) as v;
  if (select count(distinct vector_dims(v)) from unnest(p_embeddings) as v) > 1 then
    raise exception 'the embeddings in one batch differ in dimensions' using errcode = 'PM004';
  end if;

  -- Serialises the scope's writers: an unpinned scope's first width is fixed
  -- before a second writer checks it.
  perform pg_advisory_xact_lock(hashtextextended('rag' || chr(31) || p_tenant_id || chr(31) || p_scope, 0));
  perform rag_assert_dimensions_v1(p_tenant_id, p_scope, vector_dims(p_embeddings[1]));
  v_generation := coalesce(p_generation, rag_get_generation_v1(p_tenant_id, p_scope));

  insert into {{rag_chunk}} as t
    (tenant_id, scope, generation, id, source_id, text, metadata, embedding, access_version,
     created_at, updated_at)
  select p_tenant_id, p_scope, v_generation, c.id, c.source_id, c.text,
         coalesce(c.metadata, '{}'::jsonb), c.embedding, c.access_version, now(), now()
  from unnest(p_ids, p_source_ids, p_texts, p_embeddings, p_metadata, p_access_versions)
         as c(id, source_id, text, embedding, metadata, access_version)
  on conflict (tenant_id, scope, generation, id) do update
    set source_id = excluded.source_id, text = excluded.text, metadata = excluded.metadata,
        embedding = excluded.embedding, access_version = excluded.access_version, updated_at = now();
  return v_count;
end;
$$;
-- end of functions/rag_upsert_v1.sql

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
--   lexical    = share of the query's terms (query_terms_v1: at most 32) found in the entry, in [0, 1]
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
-- of a thread). Plain index scans and merge joins are off, so the thread is
-- read by a bitmap scan and the tombstones are hashed; hits and adjacent rows
-- are joined back to their entries by ctid (the row scored, same snapshot).
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
  v_terms text[] := query_terms_v1(coalesce(p_query_text, ''));
  -- Any-term query: terms hold no quote or backslash, so quote_literal is a safe operand.
  v_any_term tsquery := (select string_agg(quote_literal(term), ' | ')::tsquery from unnest(v_terms) as term);
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
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

-- file functions/reembed_v1.sql
-- Replaces the embeddings of existing entries (rebuild_index) whose text is
-- still the text that was embedded (a concurrent correct_v1 wins); text,
-- consent and timestamps are untouched. Returns how many entries were updated.
create or replace function {{schema}}.reembed_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_texts text[],
  p_embeddings vector[])
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_updated integer;
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if coalesce(cardinality(p_ids), 0) <> coalesce(cardinality(p_embeddings), 0)
     or coalesce(cardinality(p_ids), 0) <> coalesce(cardinality(p_texts), 0)
     or coalesce(cardinality(p_ids), 0) > 128 then
    raise exception 'reembed: ids, texts and embeddings must pair up, at most 128' using errcode = 'PM005';
  end if;
  if coalesce(cardinality(p_ids), 0) = 0 then
    return 0;
  end if;
  perform assert_embedding_v1(v, 'an embedding') from unnest(p_embeddings) as v;
  perform assert_dimensions_v1(p_tenant_id, p_resource_id, p_thread_id, vector_dims(v))
  from unnest(p_embeddings) as v;
  update {{entries}} e set embedding = x.embedding
  from unnest(p_ids, p_texts, p_embeddings) as x(id, text, embedding)
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = x.id and e.text = x.text;
  get diagnostics v_updated = row_count;
  return v_updated;
end;
$$;
-- end of functions/reembed_v1.sql

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
        consent_revoked_at = excluded.consent_revoked_at, updated_at = p_now;
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

-- file functions/retention_candidates_v1.sql
-- The next retention sweep: entries of the thread older than p_max_age_days
-- (created_at before p_now minus that many 24-hour days) or beyond the newest
-- p_max_entries (by sequence, id), oldest first, until p_batch_size (1..64)
-- entries not under legal hold are found. Held entries are returned with
-- held = true (scanned, never deleted).
create or replace function {{schema}}.retention_candidates_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_max_age_days double precision, p_max_entries integer, p_batch_size integer,
  p_now timestamptz default now())
returns table (entry_id text, held boolean)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_batch_size is null or p_batch_size not between 1 and 64 then
    raise exception 'batch_size must be between 1 and 64, got %', p_batch_size using errcode = 'PM005';
  end if;
  if p_max_age_days is null and p_max_entries is null then
    raise exception 'retention needs max_age_days or max_entries' using errcode = 'PM005';
  end if;
  if p_max_age_days not between 0 and 36500 or p_max_entries < 0 then
    raise exception 'max_age_days must be within 0..36500 and max_entries >= 0' using errcode = 'PM005';
  end if;
  return query
    with ranked as (
      select e.id, e.legal_hold, e.sequence, e.created_at,
             row_number() over (order by e.sequence desc, e.id collate "C" desc) as newest_rank
      from {{entries}} e
      where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    ), expired as (
      select r.id, r.legal_hold, r.sequence,
             count(*) filter (where not r.legal_hold)
               over (order by r.sequence, r.id collate "C" rows unbounded preceding) as deletable_so_far
      from ranked r
      where (p_max_age_days is not null and r.created_at < p_now - p_max_age_days * interval '24 hours')
         or (p_max_entries is not null and r.newest_rank > p_max_entries)
    )
    select x.id, x.legal_hold
    from expired x
    where x.deletable_so_far <= p_batch_size
    order by x.sequence, x.id collate "C";
end;
$$;
-- end of functions/retention_candidates_v1.sql

-- file functions/set_consent_v1.sql
-- Grants or revokes consent on one entry without re-embedding. NULL leaves a
-- field as it is. Revoking (p_visible false, or p_revoked_at given) writes the
-- tombstones first (invalidate_v1 'revoked'); granting (p_visible true) clears
-- the entry's tombstone and its revoked_at, unless one of its own sources is
-- still invalid (dependents stay invalidated: regenerate them from the
-- remaining evidence). A legacy entry
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
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
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
      and i.thread_id = p_thread_id and i.entry_id = p_entry_id;
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

-- file functions/share_with_v1.sql
-- Grants the child thread (child_resource_id, child_thread_id) recall of the
-- entries p_source_ids (at most 256) name in the parent thread, as they are
-- now, until p_expires_at (NULL: no expiry). The child's resource is the
-- parent's own or a delegated agent's ("<resource>/agent:<agent id>"; PM001
-- otherwise). Only ids the thread holds are granted, and a later write under
-- a granted id, or its deletion, takes it out of the grant (unshare_v1): a
-- grant never shares what was written after it. A list that grants nothing
-- (empty, or no id the thread holds) revokes the grant. Expiry is checked
-- whenever the grant is read, never by a sweeper. Returns the number of ids
-- granted.
create or replace function {{schema}}.share_with_v1(
  p_tenant_id text, p_resource_id text, p_parent_thread_id text,
  p_child_resource_id text, p_child_thread_id text, p_source_ids text[],
  p_expires_at timestamptz default null, p_now timestamptz default now())
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_granted text[];
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_parent_thread_id, true);
  perform assert_scope_v1(p_tenant_id, p_child_resource_id, p_child_thread_id, true);
  if p_child_resource_id = p_resource_id and p_child_thread_id = p_parent_thread_id then
    raise exception 'a thread cannot share with itself' using errcode = 'PM002';
  end if;
  if p_child_resource_id <> p_resource_id
     and not (starts_with(p_child_resource_id, p_resource_id || '/agent:')
              and substr(p_child_resource_id, char_length(p_resource_id) + 8) ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$') then
    raise exception 'child_resource_id must be the parent''s resource or a delegated agent''s (<resource>/agent:<agent id>)'
      using errcode = 'PM001';
  end if;
  if coalesce(cardinality(p_source_ids), 0) > 256 then
    raise exception 'a share grant lists at most 256 ids, got %', cardinality(p_source_ids) using errcode = 'PM005';
  end if;
  if exists (select 1 from unnest(p_source_ids) as source(id)
             where source.id is null or is_blank_v1(source.id) or octet_length(source.id) > 512) then
    raise exception 'shared ids must be non-blank strings of at most 512 bytes' using errcode = 'PM002';
  end if;
  perform assert_time_v1(p_expires_at, 'expires_at');
  if p_now is null then
    raise exception 'share_with: p_now is required' using errcode = 'PM005';
  end if;
  if p_expires_at is not null and p_expires_at <= p_now then
    raise exception 'expires_at must be in the future' using errcode = 'PM005';
  end if;
  -- The parent thread's lock: no write can slip between choosing the ids and granting them.
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_parent_thread_id);
  v_granted := array(select e.id from {{entries}} e
                     where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
                       and e.thread_id = p_parent_thread_id and e.id = any(p_source_ids)
                     order by e.id collate "C");
  if cardinality(v_granted) = 0 then
    delete from {{share_grant}} g
    where g.tenant_id = p_tenant_id and g.resource_id = p_resource_id and g.parent_thread_id = p_parent_thread_id
      and g.child_resource_id = p_child_resource_id and g.child_thread_id = p_child_thread_id;
    return 0;
  end if;
  insert into {{share_grant}} as g
    (tenant_id, resource_id, parent_thread_id, child_resource_id, child_thread_id, source_ids, expires_at, created_at)
  select p_tenant_id, p_resource_id, p_parent_thread_id, p_child_resource_id, p_child_thread_id,
         v_granted, p_expires_at, p_now
  on conflict (tenant_id, resource_id, parent_thread_id, child_resource_id, child_thread_id) do update
    set source_ids = excluded.source_ids, expires_at = excluded.expires_at, created_at = excluded.created_at;
  return cardinality(v_granted);
end;
$$;
-- end of functions/share_with_v1.sql

-- file functions/update_working_v1.sql
-- Replaces the working-memory document and increments its version (1 for a
-- new record). With p_expected_version set, the current version (0 when there
-- is no record) must equal it, else PM009 and nothing changes.
create or replace function {{schema}}.update_working_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_data jsonb,
  p_expected_version bigint default null)
returns table (data jsonb, version bigint, created_at timestamptz, updated_at timestamptz)
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_current bigint;
begin
  perform {{schema}}.assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, false);
  if p_data is null or jsonb_typeof(p_data) <> 'object' then
    raise exception 'working memory must be a JSON object' using errcode = 'PM007';
  end if;
  if pg_column_size(p_data) > 8388608 then
    raise exception 'working memory is % bytes, over the 8 MiB hard cap of the SQL function',
      pg_column_size(p_data) using errcode = 'PM006';
  end if;
  if p_expected_version < 0 then
    raise exception 'expected_version must be >= 0, got %', p_expected_version using errcode = 'PM005';
  end if;
  select w.version into v_current
  from {{working}} w
  where w.tenant_id = p_tenant_id and w.resource_id = p_resource_id
    and w.thread_id = coalesce(p_thread_id, '')
  for update;
  v_current := coalesce(v_current, 0);
  if p_expected_version is not null and p_expected_version <> v_current then
    raise exception 'working memory is at version %, expected %', v_current, p_expected_version
      using errcode = 'PM009';
  end if;
  return query
    insert into {{working}} as w (tenant_id, resource_id, thread_id, data, version)
    values (p_tenant_id, p_resource_id, coalesce(p_thread_id, ''), p_data, 1)
    on conflict (tenant_id, resource_id, thread_id) do update
      set data = excluded.data, version = w.version + 1, updated_at = now()
      where p_expected_version is null or w.version = v_current
    returning w.data, w.version, w.created_at, w.updated_at;
  if not found then
    -- With an expected version: a concurrent writer created the record first.
    raise exception 'working memory changed concurrently (expected version %)', v_current
      using errcode = 'PM009';
  end if;
end;
$$;
-- end of functions/update_working_v1.sql

revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
