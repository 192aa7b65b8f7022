-- prism-memory schema revision 0001: tables, indexes and the v1 API functions.
--
-- This file is a template rendered by prism_memory.schema.render(); every placeholder
-- in double braces is replaced by a validated, quoted identifier or a literal. Each
-- function is written out in full between "-- file functions/<name>.sql" and
-- "-- end of functions/<name>.sql": the text of that head file as this revision
-- installed it. What a revision installs never changes once it is released
-- (prism_memory.revision.RELEASED): later changes go into a new revision.
--
-- Rules: tenant_id leads every primary key and unique index, every API
-- function takes the tenant first and touches one tenant, and every function
-- the Python calls carries a _vN suffix.

create extension if not exists vector;
create schema if not exists {{schema}};

-- Functions below are created with "set search_path from current": this
-- install's schema, the schema holding pgvector, then pg_catalog. Callers'
-- own search_path never changes what a function resolves. Reset at the end.
{{search_path_0001}}

-- file functions/lexical_terms_v1.sql
-- Lexical terms: the one tokenizer for text_tsv, the lexical leg of recall and
-- the emulator (prism_memory/lexical.py mirrors it exactly). Lower-cases ASCII
-- only (collation "C"), splits on everything but ASCII letters/digits and
-- code points from U+00C0 up (minus the General Punctuation and CJK
-- punctuation blocks), drops stopwords and terms over 64 characters, reads at
-- most the first 200,000 characters (so a tsvector stays far below 1 MB), and
-- returns the distinct terms in code-point order.
create or replace function {{schema}}.lexical_terms_v1(p_text text) returns text[]
language sql immutable strict parallel safe
return (
  select coalesce(array_agg(distinct term order by term), '{}'::text[])
  from regexp_split_to_table(
         lower(left(p_text, 200000) collate "C"),
         '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') as term
  where term <> ''
    and char_length(term) <= 64
    and term <> all ({{stopwords}}::text[])
);
-- end of functions/lexical_terms_v1.sql


-- Working memory: one versioned JSON document per tenant/resource, or per
-- tenant/resource/thread. thread_id = '' is the resource-scoped record.
create table {{working}} (
  tenant_id   text        not null,
  resource_id text        not null,
  thread_id   text        not null default '',
  data        jsonb       not null,
  version     bigint      not null check (version >= 1),
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  primary key (tenant_id, resource_id, thread_id)
);

-- Semantic memory entries.
create table {{entries}} (
  tenant_id          text        not null,
  resource_id        text        not null,
  thread_id          text        not null,
  id                 text        not null,
  text               text        not null,
  metadata           jsonb       not null default '{}'::jsonb,
  embedding          {{embedding_type}} not null,
  sequence           bigint      not null,
  importance         double precision check (importance between 0 and 1),
  consent_source     text        check (consent_source in ('user', 'agent', 'system')),
  consent_scope      text        check (consent_scope in ('thread', 'profile', 'user')),
  consent_visible    boolean     not null default true,
  consent_granted_at timestamptz,
  consent_revoked_at timestamptz,
  legal_hold         boolean     not null default false,
  created_at         timestamptz not null default now(),
  updated_at         timestamptz not null default now(),
  text_tsv           tsvector    generated always as
                       (array_to_tsvector({{schema}}.lexical_terms_v1(text))) stored,
  primary key (tenant_id, resource_id, thread_id, id)
);
alter table {{entries}} alter column embedding set storage {{embedding_storage}};

-- Scoped recall and adjacency: an exact scan of one thread in sequence order.
create index {{entries_scope_idx}} on {{entries}} (tenant_id, resource_id, thread_id, sequence);
create index {{entries_tsv_idx}} on {{entries}} using gin (text_tsv);
create index {{entries_lineage_idx}} on {{entries}} using gin ((metadata -> '_lineage' -> 'sourceIds'));
-- tenant, resource and thread are strongly correlated: without these the planner
-- multiplies their selectivities and expects a few rows per thread.
create statistics {{entries_scope_stats}} (ndistinct, dependencies)
  on tenant_id, resource_id, thread_id from {{entries}};

-- Tombstones: recall excludes an entry with an indexed NOT EXISTS on this key.
create table {{invalidation}} (
  tenant_id       text        not null,
  resource_id     text        not null,
  thread_id       text        not null,
  entry_id        text        not null,
  reason          text        not null,
  source_entry_id text,
  sequence        bigint,  -- the entry's sequence, so a deleted one is never reused
  created_at      timestamptz not null default now(),
  primary key (tenant_id, resource_id, thread_id, entry_id)
);
create statistics {{invalidation_scope_stats}} (ndistinct, dependencies)
  on tenant_id, resource_id, thread_id from {{invalidation}};

-- Parent-to-child thread share grants: the child thread (of the parent's or a
-- derived child resource) may recall the listed entries of the parent thread
-- until expires_at. Tenant-bound by the key; read with the child's key.
create table {{share_grant}} (
  tenant_id         text        not null,
  resource_id       text        not null,
  parent_thread_id  text        not null,
  child_resource_id text        not null,
  child_thread_id   text        not null,
  source_ids        text[]      not null,
  expires_at        timestamptz,
  created_at        timestamptz not null default now(),
  primary key (tenant_id, resource_id, parent_thread_id, child_resource_id, child_thread_id)
);
create index {{share_grant_child_idx}} on {{share_grant}}
  (tenant_id, child_resource_id, child_thread_id, parent_thread_id);

-- RAG document ACL: grants of a source to a principal or a group.
create table {{rag_source_acl}} (
  tenant_id      text        not null,
  source_id      text        not null,
  grantee_kind   text        not null check (grantee_kind in ('principal', 'group')),
  grantee_id     text        not null,
  access_version bigint      not null,
  created_at     timestamptz not null default now(),
  primary key (tenant_id, source_id, grantee_kind, grantee_id)
);
create index {{rag_source_acl_grantee_idx}} on {{rag_source_acl}} (tenant_id, grantee_kind, grantee_id, source_id);

-- RAG per-scope generation pointer.
create table {{rag_scope_generations}} (
  tenant_id  text        not null,
  scope      text        not null,
  generation bigint      not null,
  updated_at timestamptz not null default now(),
  primary key (tenant_id, scope)
);

-- file functions/install_info_v1.sql
-- What this install is: checked by the Python caller before any other call.
create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
as $$
  select {{schema_version}}, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;
-- end of functions/install_info_v1.sql


-- file functions/is_blank_v1.sql
-- True when p_text is empty or holds only whitespace: exactly the characters
-- Python's str.isspace() accepts, so the emulator's check is the same.
create or replace function {{schema}}.is_blank_v1(p_text text) returns boolean
language sql immutable strict parallel safe
return p_text ~ '^[\t\n\x0b\f\r\x1c-\x1f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$';
-- end of functions/is_blank_v1.sql


-- file functions/assert_scope_v1.sql
-- Raises PM001 unless tenant, resource (and thread, when required) are
-- non-blank strings of at most 256 bytes.
create or replace function {{schema}}.assert_scope_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_thread_required boolean)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_tenant_id is null or is_blank_v1(p_tenant_id) or octet_length(p_tenant_id) > 256 then
    raise exception 'tenant_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if p_resource_id is null or is_blank_v1(p_resource_id) or octet_length(p_resource_id) > 256 then
    raise exception 'resource_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if (p_thread_required or p_thread_id is not null)
     and (p_thread_id is null or is_blank_v1(p_thread_id) or octet_length(p_thread_id) > 256) then
    raise exception 'thread_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
end;
$$;
-- end of functions/assert_scope_v1.sql


-- file functions/assert_embedding_v1.sql
-- Raises PM003 unless the embedding's L2 norm is within [1e-15, 1e15]:
-- pgvector sums squares in float32, so a larger vector overflows and a
-- smaller one underflows, and either would score NaN.
create or replace function {{schema}}.assert_embedding_v1(p_embedding vector, p_label text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_embedding is null or not (vector_norm(p_embedding) between 1e-15 and 1e15) then
    raise exception '% must have an L2 norm between 1e-15 and 1e15 (not zero)', p_label
      using errcode = 'PM003';
  end if;
end;
$$;
-- end of functions/assert_embedding_v1.sql


-- file functions/assert_dimensions_v1.sql
-- Raises PM004 when an embedding's width differs from the install's pinned
-- dimension, or (unpinned) from the entries already stored in the thread.
create or replace function {{schema}}.assert_dimensions_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_dimensions integer)
returns void
language plpgsql stable
set search_path from current
as $$
declare
  v_expected integer := {{dimensions}};
begin
  if v_expected is null then
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
-- end of functions/assert_dimensions_v1.sql


-- file functions/is_injectable_v1.sql
-- Whether an entry may reach a prompt, an export or telemetry by its own
-- columns (tombstones are checked separately, with an indexed NOT EXISTS):
-- visible, not revoked, not under legal hold, and explicitly consented when
-- p_require_consent. Inlined into the queries that use it.
create or replace function {{schema}}.is_injectable_v1(
  p_visible boolean, p_revoked_at timestamptz, p_legal_hold boolean, p_consent_source text,
  p_require_consent boolean)
returns boolean
language sql immutable parallel safe
return p_visible and p_revoked_at is null and not p_legal_hold
       and (not p_require_consent or p_consent_source is not null);
-- end of functions/is_injectable_v1.sql


-- file functions/lineage_is_valid_v1.sql
-- metadata._lineage: absent, or {"sourceIds": [1..32 non-blank ids of at most
-- 512 bytes], "reason": optional text}.
create or replace function {{schema}}.lineage_is_valid_v1(p_lineage jsonb) returns boolean
language sql immutable parallel safe
return p_lineage is null or (
  jsonb_typeof(p_lineage) = 'object'
  and jsonb_typeof(p_lineage -> 'sourceIds') = 'array'
  and jsonb_array_length(p_lineage -> 'sourceIds') <= 32
  and (p_lineage -> 'reason' is null or jsonb_typeof(p_lineage -> 'reason') in ('string', 'null'))
  and not exists (select 1 from jsonb_array_elements(p_lineage -> 'sourceIds') as source(value)
                  where jsonb_typeof(source.value) <> 'string'
                     or {{schema}}.is_blank_v1(source.value #>> '{}')
                     or octet_length(source.value #>> '{}') > 512));
-- end of functions/lineage_is_valid_v1.sql


-- file functions/consent_is_valid_v1.sql
-- A consent object: absent, or {"source", "scope", "visible", "grantedAt",
-- "revokedAt"} holding the documented values (missing keys take the
-- defaults user / thread / visible).
create or replace function {{schema}}.consent_is_valid_v1(p_consent jsonb) returns boolean
language sql immutable parallel safe
return p_consent is null or (
  jsonb_typeof(p_consent) = 'object'
  and coalesce(p_consent ->> 'source', 'user') in ('user', 'agent', 'system')
  and coalesce(p_consent ->> 'scope', 'thread') in ('thread', 'profile', 'user')
  and jsonb_typeof(coalesce(p_consent -> 'visible', 'true')) = 'boolean'
  and jsonb_typeof(coalesce(p_consent -> 'grantedAt', 'null')) in ('string', 'null')
  and jsonb_typeof(coalesce(p_consent -> 'revokedAt', 'null')) in ('string', 'null'));
-- end of functions/consent_is_valid_v1.sql


-- file functions/get_working_v1.sql
create or replace function {{schema}}.get_working_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text default null)
returns table (data jsonb, version bigint, created_at timestamptz, updated_at timestamptz)
language plpgsql stable
set search_path from current
as $$
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


-- file functions/update_working_v1.sql
-- Replaces the working-memory document and increments its version (1 for a
-- new record). With p_expected_version set, the current version (0 when there
-- is no record) must equal it, else PM009 and nothing changes.
create or replace function {{schema}}.update_working_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_data jsonb,
  p_expected_version bigint default null)
returns table (data jsonb, version bigint, created_at timestamptz, updated_at timestamptz)
language plpgsql volatile
set search_path from current
as $$
declare
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


-- file functions/lock_thread_v1.sql
-- Serialises every writer of one thread (remember, consent, correct,
-- invalidate, purge, reembed) for the rest of the transaction: automatic
-- sequences never interleave, an unpinned thread's first width is fixed
-- before a second writer checks it, and no tombstone is lost to a race.
create or replace function {{schema}}.lock_thread_v1(p_tenant_id text, p_resource_id text, p_thread_id text)
returns void
language sql volatile
begin atomic
  select pg_advisory_xact_lock(
    hashtextextended(p_tenant_id || chr(31) || p_resource_id || chr(31) || p_thread_id, 0));
end;
-- end of functions/lock_thread_v1.sql


-- file functions/assert_time_v1.sql
-- Raises PM002 unless p_time is NULL or within years 1 to 9999 (UTC), the
-- range every client (and Python's datetime) can read back.
create or replace function {{schema}}.assert_time_v1(p_time timestamptz, p_label text)
returns void
language plpgsql immutable
as $$
begin
  if p_time is not null
     and not (p_time between '0001-01-02 00:00:00+00'::timestamptz and '9999-12-30 00:00:00+00'::timestamptz) then
    raise exception '% must be between years 1 and 9999, got %', p_label, p_time using errcode = 'PM002';
  end if;
end;
$$;
-- end of functions/assert_time_v1.sql


-- file functions/tombstone_from_sources_v1.sql
-- Tombstones each of p_ids (that has none) whose metadata._lineage names a
-- source that is tombstoned, revoked, invisible or held: "multi-source facts
-- stay injectable only if none of their sources are invalidated".
create or replace function {{schema}}.tombstone_from_sources_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_now timestamptz)
returns void
language sql volatile
set search_path from current
begin atomic
  insert into {{invalidation}}
    (tenant_id, resource_id, thread_id, entry_id, reason, source_entry_id, sequence, created_at)
  select p_tenant_id, p_resource_id, p_thread_id, e.id, 'source-invalidated', min(source.id), e.sequence, p_now
  from {{entries}} e
  cross join lateral jsonb_array_elements_text(coalesce(e.metadata -> '_lineage' -> 'sourceIds', '[]')) as source(id)
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = any(p_ids) and source.id <> e.id
    and (exists (select 1 from {{invalidation}} i
                 where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                   and i.thread_id = p_thread_id and i.entry_id = source.id)
         or exists (select 1 from {{entries}} x
                    where x.tenant_id = p_tenant_id and x.resource_id = p_resource_id
                      and x.thread_id = p_thread_id and x.id = source.id
                      and (not x.consent_visible or x.consent_revoked_at is not null or x.legal_hold)))
  group by e.id, e.sequence
  on conflict do nothing;
end;
-- end of functions/tombstone_from_sources_v1.sql


-- file functions/remember_v1.sql
-- Upserts a batch of entries into one thread, all or nothing. Arrays are
-- parallel (one element per entry); p_metadata, p_sequences, p_importance and
-- p_consent may be null. A missing sequence keeps the stored entry's sequence,
-- or for a new entry takes (max sequence in the thread) + (position in the
-- batch); a missing consent keeps the stored one (legacy for a new entry).
-- Importance is clamped to [0, 1]; metadata._lineage is checked; created_at
-- and updated_at are p_now. A written entry is tombstoned exactly when one of
-- its lineage sources is invalid. Returns the number of entries written.
create or replace function {{schema}}.remember_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_now timestamptz default now())
returns table (written integer, invalidated text[])
language plpgsql volatile
set search_path from current
as $$
declare
  v_count integer := coalesce(cardinality(p_ids), 0);
  v_max_sequence bigint;
  v_problem text;
  v_dimensions integer;
  v_invalid text[];
  v_dependents text[] := '{}';
  v_offset integer;
begin
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


-- file functions/lexical_score_v1.sql
-- The lexical leg of the score: the share of the query's distinct terms
-- (p_terms, with p_any_term their OR) that the entry's text_tsv holds; 0 when
-- the query has no terms. Inlined into recall.
create or replace function {{schema}}.lexical_score_v1(p_text_tsv tsvector, p_terms text[], p_any_term tsquery)
returns double precision
language sql immutable parallel safe
return case when coalesce(cardinality(p_terms), 0) = 0 or not (p_text_tsv @@ p_any_term) then 0::float8
            else (length(p_text_tsv) - length(ts_delete(p_text_tsv, p_terms)))::float8 / cardinality(p_terms)
       end;
-- end of functions/lexical_score_v1.sql


-- file functions/recall_v1.sql
-- Semantic recall over one thread, behind the consent gate, plus the entries a
-- live share grant from p_share_parent_thread_id lets this thread read.
--   similarity = 1 - cosine distance (pgvector <=>), in [-1, 1]
--   lexical    = share of the query's distinct lexical terms found in the entry, in [0, 1]
--   score      = similarity + 0.25 * lexical
-- Only injectable entries take part: visible, not revoked, not held, not
-- tombstoned (an indexed NOT EXISTS), explicitly consented when
-- p_require_consent. Hits (kind 'hit', rank 1..top_k) are ordered by score
-- desc, sequence asc, id asc (code-point order), then thread and resource;
-- then come the entries within p_message_range sequences of a hit in the same
-- thread, under the same gate and grants (kind 'adjacent', ordered by
-- sequence, id), with no scores.
create or replace function {{schema}}.recall_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_query_embedding vector, p_query_text text default '',
  p_top_k integer default 8, p_message_range integer default 0,
  p_require_consent boolean default false, p_share_parent_thread_id text default null,
  p_now timestamptz default now())
returns table (kind text, rank integer, resource_id text, thread_id text, id text, text text,
               metadata jsonb, sequence bigint, importance double precision,
               similarity double precision, lexical double precision, score double precision,
               created_at timestamptz, updated_at timestamptz)
language plpgsql stable
set search_path from current
-- One cached plan (planning per call costs more than the scan of a thread),
-- costed for data in memory or on SSD, so the thread is read through its index.
set plan_cache_mode = force_generic_plan
set random_page_cost = 1.1
as $$
declare
  v_terms text[] := lexical_terms_v1(coalesce(p_query_text, ''));
  -- Any-term query: terms hold no quote or backslash, so quote_literal is a safe operand.
  v_any_term tsquery := (select string_agg(quote_literal(term), ' | ')::tsquery from unnest(v_terms) as term);
begin
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
  if p_share_parent_thread_id is not null and is_blank_v1(p_share_parent_thread_id) then
    raise exception 'share_from_parent_thread_id must not be blank' using errcode = 'PM001';
  end if;
  perform assert_embedding_v1(p_query_embedding, 'the query embedding');
  perform assert_dimensions_v1(p_tenant_id, p_resource_id, p_thread_id, vector_dims(p_query_embedding));

  return query
    with grants as (
      select g.resource_id, g.parent_thread_id as thread_id, g.source_ids
      from {{share_grant}} g
      where p_share_parent_thread_id is not null
        and g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
        and g.child_thread_id = p_thread_id and g.parent_thread_id = p_share_parent_thread_id
        and (g.expires_at is null or g.expires_at > p_now)
    ), scored as (
      -- Narrow rows only (no text or metadata); "offset 0" keeps each distance
      -- computed once. The thread's own entries, then the shared ones.
      (select e.resource_id, e.thread_id, e.id, e.sequence,
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
      (select e.resource_id, e.thread_id, e.id, e.sequence,
              1::float8 - (e.embedding <=> p_query_embedding) as similarity,
              lexical_score_v1(e.text_tsv, v_terms, v_any_term) as lexical
       from grants g
       join {{entries}} e
         on e.tenant_id = p_tenant_id and e.resource_id = g.resource_id
        and e.thread_id = g.thread_id and e.id = any(g.source_ids)
       where vector_dims(e.embedding) = vector_dims(p_query_embedding)  -- another width cannot be compared
         and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                              p_require_consent)
         and not exists (select 1 from {{invalidation}} i
                         where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                           and i.thread_id = e.thread_id and i.entry_id = e.id)
       offset 0)
    ), hits as (
      select s.resource_id, s.thread_id, s.id, s.sequence, s.similarity, s.lexical,
             s.similarity + 0.25::float8 * s.lexical as score
      from scored s
      order by score desc, s.sequence asc, s.id collate "C" asc,
               s.thread_id collate "C" asc, s.resource_id collate "C" asc
      limit p_top_k
    ), adjacent as (
      select distinct e.resource_id, e.thread_id, e.id, e.sequence
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
    ), picked as (
      select 'hit'::text as kind,
             (row_number() over (order by h.score desc, h.sequence asc, h.id collate "C" asc,
                                          h.thread_id collate "C" asc, h.resource_id collate "C" asc))::integer as rank,
             h.resource_id, h.thread_id, h.id, h.similarity, h.lexical, h.score
      from hits h
      union all
      select 'adjacent'::text,
             (row_number() over (order by a.sequence, a.id collate "C", a.thread_id collate "C",
                                          a.resource_id collate "C"))::integer,
             a.resource_id, a.thread_id, a.id, null::float8, null::float8, null::float8
      from adjacent a
    )
    select p.kind, p.rank, e.resource_id, e.thread_id, e.id, e.text, e.metadata, e.sequence, e.importance,
           p.similarity, p.lexical, p.score, e.created_at, e.updated_at
    from picked p
    join {{entries}} e
      on e.tenant_id = p_tenant_id and e.resource_id = p.resource_id
     and e.thread_id = p.thread_id and e.id = p.id
    order by p.kind desc, p.rank;
end;
$$;
-- end of functions/recall_v1.sql


-- file functions/share_with_v1.sql
-- Grants the child thread (child_resource_id, child_thread_id; by default of
-- the parent's resource) recall of p_source_ids (at most 256) from the parent
-- thread, until p_expires_at (NULL: no expiry). An empty list revokes the
-- grant. Expiry is checked whenever the grant is read, never by a sweeper.
-- Returns the number of ids granted (0 when revoked).
create or replace function {{schema}}.share_with_v1(
  p_tenant_id text, p_resource_id text, p_parent_thread_id text,
  p_child_resource_id text, p_child_thread_id text, p_source_ids text[],
  p_expires_at timestamptz default null, p_now timestamptz default now())
returns integer
language plpgsql volatile
set search_path from current
as $$
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_parent_thread_id, true);
  perform assert_scope_v1(p_tenant_id, p_child_resource_id, p_child_thread_id, true);
  if p_child_resource_id = p_resource_id and p_child_thread_id = p_parent_thread_id then
    raise exception 'a thread cannot share with itself' using errcode = 'PM002';
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
  if coalesce(cardinality(p_source_ids), 0) = 0 then
    delete from {{share_grant}} g
    where g.tenant_id = p_tenant_id and g.resource_id = p_resource_id and g.parent_thread_id = p_parent_thread_id
      and g.child_resource_id = p_child_resource_id and g.child_thread_id = p_child_thread_id;
    return 0;
  end if;
  insert into {{share_grant}} as g
    (tenant_id, resource_id, parent_thread_id, child_resource_id, child_thread_id, source_ids, expires_at, created_at)
  values (p_tenant_id, p_resource_id, p_parent_thread_id, p_child_resource_id, p_child_thread_id,
          array(select distinct source.id collate "C" from unnest(p_source_ids) as source(id) order by 1), p_expires_at, p_now)
  on conflict (tenant_id, resource_id, parent_thread_id, child_resource_id, child_thread_id) do update
    set source_ids = excluded.source_ids, expires_at = excluded.expires_at, created_at = excluded.created_at;
  return (select count(distinct source.id) from unnest(p_source_ids) as source(id))::integer;
end;
$$;
-- end of functions/share_with_v1.sql



-- One stored entry as the lifecycle functions return it. "invalidated" lists
-- the ids a set_consent_v1 / correct_v1 call tombstoned (empty elsewhere).
create type {{schema}}.entry_record_v1 as (
  id text, text text, metadata jsonb, sequence bigint, importance double precision,
  consent_source text, consent_scope text, consent_visible boolean,
  consent_granted_at timestamptz, consent_revoked_at timestamptz, legal_hold boolean,
  created_at timestamptz, updated_at timestamptz, invalidated text[]);

-- file functions/invalidate_v1.sql
-- Tombstones p_ids' dependents (every entry of the thread whose
-- _lineage.sourceIds holds an invalidated id, transitively) and, unless
-- p_reason is 'corrected', p_ids themselves; with 'held' it also sets the legal
-- hold. The walk is breadth-first over distinct lineage edges. Caps: at most
-- 64 ids, 256 edges, and new dependents no deeper than 8 levels;
-- over a cap raises PM010 and nothing changes. Returns every tombstoned id.
-- Reasons: deleted, held, revoked, corrected, expired, source-invalidated.
create or replace function {{schema}}.invalidate_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_reason text,
  p_now timestamptz default now())
returns table (entry_id text)
language plpgsql volatile
set search_path from current
as $$
declare
  v_visited text[] := array(select distinct x from unnest(p_ids) as x);
  v_frontier text[] := v_visited;
  v_edges text[] := '{}';  -- 'source' || chr(31) || 'dependent'
  v_found text[];
  v_new text[];
  v_depth integer := 0;
begin
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
    v_found := array(
      select distinct source.id || chr(31) || d.id
      from unnest(v_frontier) as source(id)
      join {{entries}} d
        on d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
       and (d.metadata -> '_lineage' -> 'sourceIds') ? source.id
      where d.id <> source.id);
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


-- file functions/purge_v1.sql
-- Deletes the bodies of p_ids (at most 64), skipping entries under legal
-- hold, and drops their ids from this thread's share grants; returns how many
-- rows were deleted. Every entry must already carry
-- its tombstone (invalidate_v1 first, so dependents never outlive the walk):
-- otherwise PM012 and nothing is deleted.
create or replace function {{schema}}.purge_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[])
returns integer
language plpgsql volatile
set search_path from current
as $$
declare
  v_deleted integer;
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
  ), unshared as (
    -- A grant shares entries, not ids: a later entry under a deleted id is not shared.
    update {{share_grant}} g
    set source_ids = array(select x from unnest(g.source_ids) as x
                           where x not in (select d.id from deleted d))
    where g.tenant_id = p_tenant_id and g.resource_id = p_resource_id
      and g.parent_thread_id = p_thread_id and g.source_ids && array(select d.id from deleted d)
  )
  select count(*) into v_deleted from deleted;
  return v_deleted;
end;
$$;
-- end of functions/purge_v1.sql


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
language plpgsql volatile
set search_path from current
as $$
declare
  v_revoking boolean := p_visible is false or p_revoked_at is not null;
  v_granting boolean := p_visible is true and p_revoked_at is null;
  v_invalidated text[] := '{}';
begin
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


-- file functions/correct_v1.sql
-- Replaces an entry's text and embedding, keeps its consent, sets
-- metadata._lineage.reason to 'corrected' and invalidates its dependents
-- (not the entry itself: "corrected keeps the source").
create or replace function {{schema}}.correct_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_text text, p_embedding vector, p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile
set search_path from current
as $$
declare
  v_invalidated text[];
begin
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
  v_invalidated := array(select x.entry_id
                         from invalidate_v1(p_tenant_id, p_resource_id, p_thread_id,
                                            array[p_entry_id], 'corrected', p_now) as x);
  return query
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
              e.created_at, e.updated_at, v_invalidated;
end;
$$;
-- end of functions/correct_v1.sql


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
language plpgsql stable
set search_path from current
as $$
begin
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
language plpgsql stable
set search_path from current
as $$
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


-- file functions/count_entries_v1.sql
create or replace function {{schema}}.count_entries_v1(p_tenant_id text, p_resource_id text, p_thread_id text)
returns bigint
language plpgsql stable
set search_path from current
as $$
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  return (select count(*) from {{entries}} e
          where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id);
end;
$$;
-- end of functions/count_entries_v1.sql


-- file functions/reembed_v1.sql
-- Replaces the embeddings of existing entries (rebuild_index) whose text is
-- still the text that was embedded (a concurrent correct_v1 wins); text,
-- consent and timestamps are untouched. Returns how many entries were updated.
create or replace function {{schema}}.reembed_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_texts text[],
  p_embeddings vector[])
returns integer
language plpgsql volatile
set search_path from current
as $$
declare
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


reset search_path;
