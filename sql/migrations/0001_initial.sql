-- prism-memory schema revision 0001: tables, indexes and the v1 API functions.
--
-- This file is a template rendered by prism_memory.schema.render(); every placeholder
-- in double braces is replaced by a validated, quoted identifier or a literal. Each
-- "\ir ../schema/functions/<name>.sql" line is that function's definition as of this
-- revision: the head file with the later revisions' NNNN_<name>.schema.diff undone
-- (prism_memory/sql_source.py). What a revision installs never changes once it is
-- released: later changes go into a new revision, never into this one.
--
-- Rules (../shared/DESIGN.md): tenant_id leads every primary key and unique
-- index, every API function takes the tenant first and touches one tenant, and
-- every function the Python calls carries a _vN suffix.

create extension if not exists vector;
create schema if not exists {{schema}};

-- Functions below are created with "set search_path from current": this
-- install's schema, the schema holding pgvector, then pg_catalog. Callers'
-- own search_path never changes what a function resolves. Reset at the end.
{{search_path_0001}}

\ir ../schema/functions/lexical_terms_v1.sql

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

\ir ../schema/functions/install_info_v1.sql

\ir ../schema/functions/is_blank_v1.sql

\ir ../schema/functions/assert_scope_v1.sql

\ir ../schema/functions/assert_embedding_v1.sql

\ir ../schema/functions/assert_dimensions_v1.sql

\ir ../schema/functions/is_injectable_v1.sql

\ir ../schema/functions/lineage_is_valid_v1.sql

\ir ../schema/functions/consent_is_valid_v1.sql

\ir ../schema/functions/get_working_v1.sql

\ir ../schema/functions/update_working_v1.sql

\ir ../schema/functions/lock_thread_v1.sql

\ir ../schema/functions/assert_time_v1.sql

\ir ../schema/functions/tombstone_from_sources_v1.sql

\ir ../schema/functions/remember_v1.sql

\ir ../schema/functions/lexical_score_v1.sql

\ir ../schema/functions/recall_v1.sql

\ir ../schema/functions/share_with_v1.sql


-- One stored entry as the lifecycle functions return it. "invalidated" lists
-- the ids a set_consent_v1 / correct_v1 call tombstoned (empty elsewhere).
create type {{schema}}.entry_record_v1 as (
  id text, text text, metadata jsonb, sequence bigint, importance double precision,
  consent_source text, consent_scope text, consent_visible boolean,
  consent_granted_at timestamptz, consent_revoked_at timestamptz, legal_hold boolean,
  created_at timestamptz, updated_at timestamptz, invalidated text[]);

\ir ../schema/functions/invalidate_v1.sql

\ir ../schema/functions/purge_v1.sql

\ir ../schema/functions/set_consent_v1.sql

\ir ../schema/functions/correct_v1.sql

\ir ../schema/functions/retention_candidates_v1.sql

\ir ../schema/functions/list_entries_v1.sql

\ir ../schema/functions/count_entries_v1.sql

\ir ../schema/functions/reembed_v1.sql

reset search_path;
