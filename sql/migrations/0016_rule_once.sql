-- prism-memory schema revision 0016: rule_once. Each rule is written once.
-- The id rule (non-blank, at most N bytes) is is_id_v1, raised by
-- assert_id_v1 with the caller's label and SQLSTATE, where 22 checks wrote it
-- out; remember_v2 and rag_upsert_v1 list each check of a batch once. One
-- scope assertion, assert_scope_v2 (a RAG scope takes the resource's place,
-- named in the message), and one width assertion, assert_dimensions_v2 (a
-- thread's entries, or a RAG scope's chunks), serve the memory and the RAG
-- functions. recall_v3 checks p_share_parent_thread_id's 256-byte cap and
-- remember_batch_v2 its tenant's, as the Python stores do. recall_v3's leg
-- across threads (recall_travellers_v1, reading through
-- recall_travellers_probe_v1), its explain counts (recall_gates_v1) and its
-- live grants (recall_grants_v1) become helpers: the same answers, and the
-- same plan for a thread's plain recall.
-- Retired (direct callers get undefined_function): recall_v2, remember_v1,
-- remember_batch_v1, list_entries_v1, retention_candidates_v1, which no
-- Python has called since revision 0012 (call recall_v3, remember_v2,
-- remember_batch_v2, list_entries_v2, retention_candidates_v2);
-- query_terms_v1, which nothing calls (lexical_terms_v1 stays: the hash
-- embedder's features are its terms); and the assertions replaced.

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

-- file functions/is_id_v1.sql
-- The id rule: whether p_value is a non-blank string (is_blank_v1) of at most
-- p_max_bytes UTF-8 bytes; NULL is not. 256 bytes for tenant, resource,
-- thread, RAG scope, principal, group and embedding model ids, 512 for entry,
-- chunk and source ids. Inlined into the queries that use it;
-- prism_memory.checks.check_id mirrors it.
create or replace function {{schema}}.is_id_v1(p_value text, p_max_bytes integer) returns boolean
language sql immutable parallel safe
return p_value is not null and not {{schema}}.is_blank_v1(p_value) and octet_length(p_value) <= p_max_bytes;
-- end of functions/is_id_v1.sql

-- file functions/assert_id_v1.sql
-- Raises SQLSTATE p_errcode unless p_value passes the id rule (is_id_v1) for
-- p_max_bytes, naming it by p_label as prism_memory.checks.check_id does:
-- "<label> must be a non-blank string of at most <N> bytes".
create or replace function {{schema}}.assert_id_v1(p_value text, p_label text, p_max_bytes integer, p_errcode text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if not is_id_v1(p_value, p_max_bytes) then
    raise exception '% must be a non-blank string of at most % bytes', p_label, p_max_bytes using errcode = p_errcode;
  end if;
end;
$$;
-- end of functions/assert_id_v1.sql

-- file functions/citus_installed_v1.sql
-- True where Citus is loaded and installed in this database (its metadata
-- catalog exists), so the tables may be distributed (prism_memory.citus):
-- recall_v3 and rag_query_v1 then take the paths Citus can route. Plain
-- PostgreSQL, and a database without the extension on a server that preloads
-- Citus, answer false.
create or replace function {{schema}}.citus_installed_v1() returns boolean
language sql stable parallel safe
return pg_catalog.current_setting('citus.version', true) is not null
       and pg_catalog.to_regclass('pg_catalog.pg_dist_partition') is not null;
-- end of functions/citus_installed_v1.sql

-- file functions/assert_scope_v2.sql
-- Raises PM001 unless every id naming a scope passes the id rule for 256
-- bytes (assert_id_v1): the tenant; the resource, or the RAG scope, which
-- takes its place (p_resource_label names it in the message: 'scope'); and
-- the thread, when p_thread_required or given. prism_memory.checks.check_scope
-- mirrors it.
create or replace function {{schema}}.assert_scope_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_thread_required boolean,
  p_resource_label text default 'resource_id')
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  perform assert_id_v1(p_tenant_id, 'tenant_id', 256, 'PM001');
  perform assert_id_v1(p_resource_id, p_resource_label, 256, 'PM001');
  if p_thread_required or p_thread_id is not null then
    perform assert_id_v1(p_thread_id, 'thread_id', 256, 'PM001');
  end if;
end;
$$;
-- end of functions/assert_scope_v2.sql

-- file functions/assert_dimensions_v2.sql
-- Raises PM004 when an embedding's width (p_dimensions) differs from the
-- install's pinned dimension or, unpinned, from the width of what its scope
-- already stores: the entries of the thread (p_resource_id, p_thread_id) or,
-- with p_thread_id NULL, the chunks of the RAG scope p_resource_id, in any
-- generation (a RAG scope takes the resource's place, as in assert_scope_v2).
create or replace function {{schema}}.assert_dimensions_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_dimensions integer)
returns void
language plpgsql stable
set search_path from current
as $$
declare
  v_expected integer := {{dimensions}};
begin
  if v_expected is null and p_thread_id is null then
    select vector_dims(c.embedding) into v_expected
    from {{rag_chunk}} c where c.tenant_id = p_tenant_id and c.scope = p_resource_id
    limit 1;
  elsif v_expected is null then
    select vector_dims(e.embedding) into v_expected
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    limit 1;
  end if;
  if v_expected is not null and p_dimensions <> v_expected then
    raise exception 'embedding has % dimensions, expected %', p_dimensions, v_expected
      using errcode = 'PM004';
  end if;
end;
$$;
-- end of functions/assert_dimensions_v2.sql

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
  perform assert_id_v1(p_model_id, 'the embedding model id', 256, 'PM017');
  if p_dimensions is null or p_dimensions not between 1 and 16000 then
    raise exception 'the embedding model''s width must be between 1 and 16000, got %', p_dimensions
      using errcode = 'PM017';
  end if;
end;
$$;
-- end of functions/assert_embedding_model_v1.sql

-- file functions/lineage_is_valid_v1.sql
-- metadata._lineage: absent, or {"sourceIds": [at most 32 ids of at most 512
-- bytes (is_id_v1)], "reason": optional text}.
create or replace function {{schema}}.lineage_is_valid_v1(p_lineage jsonb) returns boolean
language sql immutable parallel safe
return p_lineage is null or (
  jsonb_typeof(p_lineage) = 'object'
  and jsonb_typeof(p_lineage -> 'sourceIds') = 'array'
  and jsonb_array_length(p_lineage -> 'sourceIds') <= 32
  and (p_lineage -> 'reason' is null or jsonb_typeof(p_lineage -> 'reason') in ('string', 'null'))
  and not exists (select 1 from jsonb_array_elements(p_lineage -> 'sourceIds') as source(value)
                  where jsonb_typeof(source.value) <> 'string'
                     or not {{schema}}.is_id_v1(source.value #>> '{}', 512)));
-- end of functions/lineage_is_valid_v1.sql

-- file functions/lock_key_v1.sql
-- Takes the transaction-level advisory lock p_key, which serialises the
-- writers of one of p_tenant_id's threads or RAG scopes (lock_thread_v1,
-- remember_batch_v2, rag_upsert_v1). Under Citus the lock must be taken on
-- the node that holds the tenant's shards, where every delegated call runs
-- and takes its locks. A call Citus did not delegate (any shape but
-- "select f(...)" or "select * from f(...)", or a call from another
-- function) runs on the coordinator, where its lock would exclude none of the
-- tenant's other writers: it raises PM017 instead.
create or replace function {{schema}}.lock_key_v1(p_tenant_id text, p_key bigint)
returns void
language plpgsql volatile
set search_path from current
as $$
declare
  v_here boolean;
begin
  if citus_installed_v1() then
    -- (An install not yet distributed has no placements: its locks are local.)
    execute 'select coalesce(bool_or(p.groupid = (select l.groupid from pg_catalog.pg_dist_local_group l)), true) '
            'from pg_catalog.pg_dist_partition d '
            'join pg_catalog.pg_dist_placement p '
            '  on p.shardid = pg_catalog.get_shard_id_for_distribution_column(d.logicalrelid, $2) '
            'where d.logicalrelid = $1'
      into v_here using '{{entries}}'::regclass, p_tenant_id;
    if not v_here then
      raise exception 'this call runs on a node that does not hold tenant %: under Citus call an API function '
                      'alone, as select * from f(...), so that it is delegated', quote_literal(p_tenant_id)
        using errcode = 'PM017';
    end if;
  end if;
  perform pg_advisory_xact_lock(p_key);
end;
$$;
-- end of functions/lock_key_v1.sql

-- file functions/get_working_v1.sql
-- API function: the working-memory document of a resource (p_thread_id NULL)
-- or of one of its threads, with its version and times; no row when there is
-- none. PM001 for a bad scope.
create or replace function {{schema}}.get_working_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text default null)
returns table (data jsonb, version bigint, created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform {{schema}}.assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, false);
  return query
    select w.data, w.version, w.created_at, w.updated_at
    from {{working}} w
    where w.tenant_id = p_tenant_id and w.resource_id = p_resource_id
      and w.thread_id = coalesce(p_thread_id, '');
end;
$$;
-- end of functions/get_working_v1.sql

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
  perform {{schema}}.assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, false);
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
  -- Update the record in place if there is one; else insert it. Citus routes
  -- neither statement with a parameter or now() in ON CONFLICT DO UPDATE, so
  -- the upsert is spelled out; a record created concurrently between the two
  -- is taken up by the next pass (or, with an expected version, is PM009).
  loop
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
    if v_current > 0 then
      return query
        update {{working}} w set data = p_data, version = w.version + 1, updated_at = now()
        where w.tenant_id = p_tenant_id and w.resource_id = p_resource_id
          and w.thread_id = coalesce(p_thread_id, '')
        returning w.data, w.version, w.created_at, w.updated_at;
      return;
    end if;
    return query
      insert into {{working}} as w (tenant_id, resource_id, thread_id, data, version)
      values (p_tenant_id, p_resource_id, coalesce(p_thread_id, ''), p_data, 1)
      on conflict (tenant_id, resource_id, thread_id) do nothing
      returning w.data, w.version, w.created_at, w.updated_at;
    if found then
      return;
    end if;
    if p_expected_version is not null then
      -- With an expected version: a concurrent writer created the record first.
      raise exception 'working memory changed concurrently (expected version %)', v_current
        using errcode = 'PM009';
    end if;
  end loop;
end;
$$;
-- end of functions/update_working_v1.sql

-- file functions/unshare_v1.sql
-- A share grant shares entries as they were when it was made: a later write
-- under a shared id (remember_v2, correct_v2) or the entry's deletion
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

-- file functions/query_terms_v2.sql
-- The lexical terms a query is scored by since revision 0010 (recall_v3,
-- rag_lexical_query_v1): the terms lexical_tokens_v2 finds in the first
-- 100,000 characters of p_text, keeping only the first 32 distinct ones in
-- order of appearance, returned in code-point order. The cap bounds what one
-- query costs. The text is read in growing prefixes, each without its last
-- piece (maybe a term cut in two), until 32 distinct terms are found, so a
-- long query costs little more than a short one to tokenize.
-- prism_memory/lexical.py mirrors it (query_terms_v2).
create or replace function {{schema}}.query_terms_v2(p_text text) returns text[]
language plpgsql immutable strict parallel safe
set search_path from current
as $$
declare
  v_length integer := least(char_length(p_text), 100000);
  v_window integer := 2048;
  v_prefix text;
  v_terms text[];
begin
  loop
    v_window := least(v_window, v_length);
    v_prefix := lower(left(p_text, v_window) collate "C");
    if v_window < v_length then
      -- the prefix's last piece may be a term cut in two: it waits for a longer prefix
      v_prefix := regexp_replace(v_prefix, '[a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+$', '');
    end if;
    v_terms := array(
      select kept.term from (
        select t.term
        from unnest(lexical_tokens_v2(v_prefix)) with ordinality as t(term, position)
        group by t.term
        order by min(t.position)
        limit 32) as kept
      order by kept.term collate "C");
    exit when cardinality(v_terms) >= 32 or v_window >= v_length;
    v_window := v_window * 8;
  end loop;
  return v_terms;
end;
$$;
-- end of functions/query_terms_v2.sql

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
          and is_live_v1(e.created_at, e.expires_at, p_resource_cutoff, p_now)
        order by upper desc
        limit p_limit
      )
      select array(select row(e.ctid, p_resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,
                              1::float8 - (e.embedding <=> p_query_embedding), e.text_tsv,
                              e.expires_at)::{{schema}}.recall_probe_v1
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
    into probes, probed, floor
    using p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_require_consent, p_resource_cutoff,
          p_now, p_limit, p_foreign;
  perform set_config('enable_indexscan', 'off', true);  -- as recall_v3 runs
end;
$$;
-- end of functions/recall_travellers_probe_v1.sql

-- file functions/recall_travellers_v1.sql
-- recall_v3's best p_keep candidates (recall_top_v1: scored exactly, in score
-- order) among the travellers of p_resource_id's other threads than
-- p_thread_id: the entries that may leave them (leaves_thread_v1, which have
-- an index of their own), outside the threads of p_foreign, read by
-- recall_travellers_probe_v1. Up to 5,000 travellers are ranked exactly, as
-- the thread's own are. Over that, on an install with the travellers' HNSW
-- index (a pinned width of at most 2,000), the nearest are read through it,
-- 256, then 786 if need be, until the p_keep-th best exact score (theirs, or
-- p_bar: the thread's own p_keep-th best, which a traveller must beat to
-- matter) beats every similarity left out plus 0.25: exact when that holds
-- (and HNSW orders exactly), approximate otherwise. If fewer than p_keep of
-- them pass every gate (HNSW ran dry, or tombstones and thread policies,
-- applied after it, removed them), every traveller is ranked exactly after
-- all, so a recall always returns min(top_k, matches).
create or replace function {{schema}}.recall_travellers_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_terms text[],
  p_any_term tsquery, p_require_consent boolean, p_foreign text[], p_now timestamptz, p_keep integer,
  p_bar double precision)
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
    from recall_travellers_probe_v1(p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_any_term,
                                    p_require_consent, p_foreign, v_resource_cutoff, p_now, v_probe, v_exact) as t;
    v_found := recall_top_v1(v_probes, p_tenant_id, p_resource_id, p_terms, p_any_term, v_resource_cutoff,
                             p_now, p_keep);
    exit when v_probe is null or (v_exact and v_probed < v_probe)
              or greatest((v_found[p_keep]).similarity + 0.25::float8 * (v_found[p_keep]).lexical, p_bar) > v_floor;
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
-- end of functions/recall_travellers_v1.sql

-- file functions/recall_grants_v1.sql
-- The live share grants recall_v3 reads for a child thread (p_resource_id,
-- p_thread_id) from its parent thread p_parent_thread_id: each grant's
-- resource (the child's own, or the one a delegated agent's derives from),
-- parent thread and granted ids, unexpired at p_now; none when
-- p_parent_thread_id is NULL. One single-table statement on the tenant's
-- predicate.
create or replace function {{schema}}.recall_grants_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_parent_thread_id text, p_now timestamptz)
returns table (resource_id text, thread_id text, source_ids text[])
language plpgsql stable
rows 1
set search_path from current
as $$
begin
  return query
    select g.resource_id, g.parent_thread_id, g.source_ids
    from {{share_grant}} g
    where p_parent_thread_id is not null
      and g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
      and g.child_thread_id = p_thread_id and g.parent_thread_id = p_parent_thread_id
      and (g.expires_at is null or g.expires_at > p_now);
end;
$$;
-- end of functions/recall_grants_v1.sql

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
      select e.resource_id, e.thread_id, e.created_at, e.expires_at,
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
               where c.gate is not null or not is_live_v1(c.created_at, c.expires_at, t.cutoff, p_now)
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
        and is_live_v1(e.created_at, e.expires_at, coalesce(greatest(rp.cutoff, tp.cutoff), '-infinity'), p_now)
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
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_parent_thread_id, true);
  perform assert_scope_v2(p_tenant_id, p_child_resource_id, p_child_thread_id, true);
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
  perform assert_id_v1(source.id, 'shared id', 512, 'PM002')
  from unnest(p_source_ids) as source(id) where not is_id_v1(source.id, 512);
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
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
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
  perform assert_scope_v2(p_tenant_id, p_resource_id, null, false);
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
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, false);
  return query
    select max(p.max_age_days) filter (where p.thread_id = ''),
           max(p.max_age_days) filter (where p.thread_id <> '')
    from {{retention_policy}} p
    where p.tenant_id = p_tenant_id and p.resource_id = p_resource_id
      and p.thread_id in ('', coalesce(p_thread_id, ''));
end;
$$;
-- end of functions/get_retention_policy_v1.sql

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

-- file functions/count_entries_v1.sql
-- API function: how many entries one thread holds, every one counted (tombstoned,
-- held, expired and not yet swept included). PM001 for a bad scope.
create or replace function {{schema}}.count_entries_v1(p_tenant_id text, p_resource_id text, p_thread_id text)
returns bigint
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  return (select count(*) from {{entries}} e
          where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id);
end;
$$;
-- end of functions/count_entries_v1.sql

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
  perform assert_scope_v2(p_tenant_id, p_resource_id, null, false);
  return (select count(*) from {{entries}} e where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id);
end;
$$;
-- end of functions/count_resource_entries_v1.sql

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
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
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
  perform assert_dimensions_v2(p_tenant_id, p_resource_id, p_thread_id, vector_dims(v))
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

-- file functions/use_embedding_model_v1.sql
-- API function (prism_memory/operations.py, a guard): it runs as the schema
-- owner (security definer), like every API function.
--
-- The embedding-model guard of a write. Call it in the same transaction as,
-- and before, the write it guards (remember_v2, remember_batch_v2, correct_v2,
-- reembed_v1): it takes the lock of each thread named (lock_thread_v1, in
-- lock-key order, as remember_batch_v2 does), so the record it checks cannot
-- change before the write commits. The threads are p_resource_ids[i] /
-- p_thread_ids[i] (parallel, one-dimensional, at most 10,000; a thread may
-- repeat). For each thread, in (resource_id, thread_id) code-point order:
--   1. the width rule first (assert_dimensions_v2: the pinned width, else
--      the width of the thread's stored entries): PM004;
--   2. the thread's record (model id and width) is compared with p_model_id
--      and p_dimensions. Another model id, while the thread holds entries and
--      p_switch is false, raises PM018: the write would mix two vector spaces.
--      Otherwise the record becomes (p_model_id, p_dimensions): a thread
--      without a record (new, or written before this guard or by embedders
--      without an identity) records the first model that writes it, an
--      emptied thread takes the new model, and p_switch (rebuild_index: the
--      write re-embeds the thread's entries with the new model) switches it.
-- PM001 for a bad scope or arrays, PM017 for a model id that is not a
-- non-blank string of at most 256 bytes, a width outside 1..16000, or a null
-- p_switch (never read as a switch).
create or replace function {{schema}}.use_embedding_model_v1(
  p_tenant_id text, p_resource_ids text[], p_thread_ids text[],
  p_model_id text, p_dimensions integer, p_switch boolean default false)
returns void
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_thread record;
  v_recorded record;
begin
  if coalesce(cardinality(p_resource_ids), 0) <> coalesce(cardinality(p_thread_ids), 0)
     or coalesce(cardinality(p_thread_ids), 0) not between 1 and 10000
     or array_ndims(p_resource_ids) > 1 or array_ndims(p_thread_ids) > 1 then
    raise exception 'use_embedding_model_v1: name 1 to 10000 threads in two parallel one-dimensional arrays'
      using errcode = 'PM001';
  end if;
  perform assert_scope_v2(p_tenant_id, g.resource_id, g.thread_id, true)
  from unnest(p_resource_ids, p_thread_ids) as g(resource_id, thread_id);
  perform assert_embedding_model_v1(p_model_id, p_dimensions);
  if p_switch is null then
    raise exception 'p_switch must be true (rebuild_index switches the model) or false' using errcode = 'PM017';
  end if;
  for v_thread in
    select distinct g.resource_id, g.thread_id,
           hashtextextended(p_tenant_id || chr(31) || g.resource_id || chr(31) || g.thread_id, 0) as key
    from unnest(p_resource_ids, p_thread_ids) as g(resource_id, thread_id)
    order by 3
  loop
    perform lock_thread_v1(p_tenant_id, v_thread.resource_id, v_thread.thread_id);
  end loop;
  for v_thread in
    select t.resource_id, t.thread_id
    from (select distinct g.resource_id, g.thread_id
          from unnest(p_resource_ids, p_thread_ids) as g(resource_id, thread_id)) as t
    order by t.resource_id collate "C", t.thread_id collate "C"
  loop
    perform assert_dimensions_v2(p_tenant_id, v_thread.resource_id, v_thread.thread_id, p_dimensions);
    select m.model_id, m.dimensions into v_recorded
    from {{embedding_model}} m
    where m.tenant_id = p_tenant_id and m.resource_id = v_thread.resource_id and m.thread_id = v_thread.thread_id;
    continue when found and v_recorded.model_id = p_model_id and v_recorded.dimensions = p_dimensions;
    if found and v_recorded.model_id <> p_model_id and not p_switch
       and exists (select 1 from {{entries}} e
                   where e.tenant_id = p_tenant_id and e.resource_id = v_thread.resource_id
                     and e.thread_id = v_thread.thread_id) then
      raise exception 'thread % (resource %) holds entries embedded with model % (% dimensions), not %: '
                      'run rebuild_index with the new embedder to switch the thread''s model',
        quote_literal(v_thread.thread_id), quote_literal(v_thread.resource_id),
        quote_literal(v_recorded.model_id), v_recorded.dimensions, quote_literal(p_model_id)
        using errcode = 'PM018';
    end if;
    insert into {{embedding_model}} as m (tenant_id, resource_id, thread_id, model_id, dimensions, updated_at)
    values (p_tenant_id, v_thread.resource_id, v_thread.thread_id, p_model_id, p_dimensions, now())
    on conflict (tenant_id, resource_id, thread_id) do update
      set model_id = excluded.model_id, dimensions = excluded.dimensions, updated_at = excluded.updated_at;
  end loop;
end;
$$;
-- end of functions/use_embedding_model_v1.sql

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
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
  return coalesce((select g.generation from {{rag_scope_generations}} g
                   where g.tenant_id = p_tenant_id and g.scope = p_scope), 0);
end;
$$;
-- end of functions/rag_get_generation_v1.sql

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
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
  if p_generation is null then
    raise exception 'generation is required' using errcode = 'PM002';
  end if;
  perform rag_assert_generation_v1(p_generation);
  insert into {{rag_scope_generations}} as g (tenant_id, scope, generation, updated_at)
  values (p_tenant_id, p_scope, p_generation, now())
  on conflict (tenant_id, scope) do update set generation = excluded.generation, updated_at = excluded.updated_at;
  return p_generation;
end;
$$;
-- end of functions/rag_set_generation_v1.sql

-- file functions/rag_assert_principal_v1.sql
-- Raises PM013 unless an ACL read names a principal and groups that are
-- non-blank strings of at most 256 bytes (at most 1,024 groups).
create or replace function {{schema}}.rag_assert_principal_v1(p_principal_id text, p_group_ids text[])
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  perform assert_id_v1(p_principal_id, 'principal_id', 256, 'PM013');
  if coalesce(cardinality(p_group_ids), 0) > 1024 then
    raise exception 'an ACL read names at most 1024 groups, got %', cardinality(p_group_ids)
      using errcode = 'PM013';
  end if;
  perform assert_id_v1(g.id, 'group id', 256, 'PM013') from unnest(p_group_ids) as g(id) where not is_id_v1(g.id, 256);
end;
$$;
-- end of functions/rag_assert_principal_v1.sql

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
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
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
  -- The first problem of the first chunk that has one.
  select x.problem into v_problem
  from (select c.ord, case
                 when not is_id_v1(c.id, 512)
                   then format('chunk %s: id must be a non-blank string of at most 512 bytes', c.ord)
                 when not is_id_v1(c.source_id, 512)
                   then format('chunk %s (%s): source_id must be a non-blank string of at most 512 bytes', c.ord, c.id)
                 when c.text is null or is_blank_v1(c.text)
                   then format('chunk %s (%s): text must not be blank', c.ord, c.id)
                 when c.metadata is not null and jsonb_typeof(c.metadata) <> 'object'
                   then format('chunk %s (%s): metadata must be a JSON object', c.ord, c.id)
                 when c.access_version < 0
                   then format('chunk %s (%s): access_version must be >= 0', c.ord, c.id)
                 when c.embedding is null
                   then format('chunk %s (%s): embedding is missing', c.ord, c.id)
               end as problem
        from unnest(p_ids, p_source_ids, p_texts, p_metadata, p_access_versions, p_embeddings)
               with ordinality as c(id, source_id, text, metadata, access_version, embedding, ord)) as x
  where x.problem is not null
  order by x.ord
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
  perform lock_key_v1(p_tenant_id, hashtextextended('rag' || chr(31) || p_tenant_id || chr(31) || p_scope, 0));
  perform assert_dimensions_v2(p_tenant_id, p_scope, null, vector_dims(p_embeddings[1]));
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
        embedding = excluded.embedding, access_version = excluded.access_version, updated_at = excluded.updated_at;
  return v_count;
end;
$$;
-- end of functions/rag_upsert_v1.sql

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
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
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
  perform assert_id_v1(p_tenant_id, 'tenant_id', 256, 'PM001');
  perform assert_id_v1(p_source_id, 'source_id', 512, 'PM002');
  if p_access_version is null or p_access_version < 0 then
    raise exception 'access_version must be an integer >= 0' using errcode = 'PM002';
  end if;
  if coalesce(cardinality(p_principal_ids), 0) + coalesce(cardinality(p_group_ids), 0) > 1024 then
    raise exception 'a source has at most 1024 grants' using errcode = 'PM005';
  end if;
  perform assert_id_v1(g.id, 'a principal or group id', 256, 'PM013')
  from unnest(coalesce(p_principal_ids, '{}') || coalesce(p_group_ids, '{}')) as g(id)
  where not is_id_v1(g.id, 256);

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
  perform assert_id_v1(p_tenant_id, 'tenant_id', 256, 'PM001');
  perform assert_id_v1(p_source_id, 'source_id', 512, 'PM002');
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

-- file functions/rag_read_generation_v1.sql
-- Checks shared by the RAG reads; returns the generation to read (the
-- scope's current one when p_generation is NULL).
create or replace function {{schema}}.rag_read_generation_v1(
  p_tenant_id text, p_scope text, p_top_k integer, p_filter jsonb, p_acl boolean,
  p_principal_id text, p_group_ids text[], p_generation bigint)
returns bigint
language plpgsql stable
set search_path from current
as $$
begin
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
  perform rag_assert_generation_v1(p_generation);
  if p_top_k is null or p_top_k < 1 or p_top_k > 32 then
    raise exception 'top_k must be between 1 and 32, got %', p_top_k using errcode = 'PM005';
  end if;
  if p_filter is not null and jsonb_typeof(p_filter) <> 'object' then
    raise exception 'filter must be a JSON object' using errcode = 'PM008';
  end if;
  if octet_length(p_filter::text) > 65536 then
    raise exception 'filter is over the 64 KiB hard cap' using errcode = 'PM006';
  end if;
  if p_acl is null then
    raise exception 'acl must be true or false' using errcode = 'PM013';
  end if;
  if p_acl then
    perform rag_assert_principal_v1(p_principal_id, p_group_ids);
  end if;
  return coalesce(p_generation, rag_get_generation_v1(p_tenant_id, p_scope));
end;
$$;
-- end of functions/rag_read_generation_v1.sql

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
  perform assert_id_v1(p_source_id, 'source_id', 512, 'PM002');
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

drop function {{schema}}.assert_dimensions_v1(text, text, text, integer);
drop function {{schema}}.assert_scope_v1(text, text, text, boolean);
drop function {{schema}}.list_entries_v1(text, text, text, bigint, text, integer, boolean);
drop function {{schema}}.query_terms_v1(text);
drop function {{schema}}.rag_assert_dimensions_v1(text, text, integer);
drop function {{schema}}.rag_assert_scope_v1(text, text);
drop function {{schema}}.recall_v2(text, text, text, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean);
drop function {{schema}}.remember_batch_v1(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz);
drop function {{schema}}.remember_v1(text, text, text, text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz);
drop function {{schema}}.retention_candidates_v1(text, text, text, double precision, integer, integer, timestamptz);

reset search_path;
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;
