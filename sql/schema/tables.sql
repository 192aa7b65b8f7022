-- prism-memory at head: every table, index, statistics object and row-level
-- security policy, as a fresh install creates them (sql/schema/install.sql
-- includes this file). A revision that changes a table changes this file too;
-- tests/schema/test_schema_source.py installs from here and diffs the catalog against
-- a database migrated through the whole Alembic chain.
--
-- Rules: tenant_id leads every primary key and unique index; every table has
-- the tenant_isolation policy. The API functions run as the owner, who
-- bypasses row-level security: they are keyed by their tenant argument. A
-- role granted a table directly sees only the rows of the tenant named by its
-- prism_memory.tenant_id setting, none without one.

-- One row of an entry as set_consent_v1, correct_v2 and list_entries_v2 return it.
create type {{schema}}.entry_record_v1 as (
  id text, text text, metadata jsonb, sequence bigint, importance double precision,
  consent_source text, consent_scope text, consent_visible boolean,
  consent_granted_at timestamptz, consent_revoked_at timestamptz, legal_hold boolean,
  created_at timestamptz, updated_at timestamptz, invalidated text[]);

-- The same with the entry's event time (its occurred_at, else its
-- created_at), as set_consent_v2, correct_v3 and list_entries_v3 return it.
create type {{schema}}.entry_record_v2 as (
  id text, text text, metadata jsonb, sequence bigint, importance double precision,
  consent_source text, consent_scope text, consent_visible boolean,
  consent_granted_at timestamptz, consent_revoked_at timestamptz, legal_hold boolean,
  created_at timestamptz, updated_at timestamptz, invalidated text[], occurred_at timestamptz);

-- One candidate hit of recall_v3: the row scored (its ctid, joined back in the
-- same snapshot), where it lives, and its score's components.
create type {{schema}}.recall_candidate_v1 as (
  row_id tid, resource_id text, thread_id text, id text, sequence bigint, importance double precision,
  created_at timestamptz, similarity double precision, lexical double precision);

-- One row recall_v3 read (a probe), before its lexical leg, tombstones and
-- expiry: recall_top_v1 takes them from there.
create type {{schema}}.recall_probe_v1 as (
  row_id tid, resource_id text, thread_id text, id text, sequence bigint, importance double precision,
  created_at timestamptz, similarity double precision, text_tsv tsvector, expires_at timestamptz,
  sources_created_at timestamptz, sources_expire_at timestamptz);

-- What a read keeps besides its gates (recall_selection_v1 builds it,
-- selects_v1 applies it): entries whose metadata satisfies a filter (the
-- jsonpath metadata_filter_v1 compiles; NULL: every entry) and whose event
-- time and write time fall in half-open windows [after, before) (NULL: open).
create type {{schema}}.selection_v1 as (
  path jsonpath, occurred_after timestamptz, occurred_before timestamptz,
  created_after timestamptz, created_before timestamptz);

-- A query's date terms (query_dates_v1 builds it) by what each names: months,
-- weekdays, days and years each hold, at the subscript of the value a term
-- names (month 1-12, ISO weekday 1-7, day of the month 1-31, year
-- 1000-9999), the terms that name it; NULL at a value no term names. An
-- entry's event date is matched with one subscript per part (names_event_date_v1).
create type {{schema}}.date_terms_v1 as (
  months tsvector[], weekdays tsvector[], days tsvector[], years tsvector[]);

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
alter table {{working}} enable row level security;
create policy tenant_isolation on {{working}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

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
                       (array_to_tsvector({{schema}}.lexical_terms_v2(text))) stored,
  -- When the entry stops being recalled, exported or injected (remember_v2's
  -- expires_at or ttl); NULL: never by itself. Revision 0012 added it.
  expires_at         timestamptz,
  -- The oldest created_at and the earliest expires_at among the entry's stored
  -- lineage sources, transitively (NULL: no stored source; none that
  -- expires), kept by lineage_expiry_v1 when the entry or a source of it is
  -- written. is_live_v2 reads them beside the entry's own: a derived entry
  -- expires with its sources, at read time. Revision 0017 added them.
  sources_created_at timestamptz,
  sources_expire_at  timestamptz,
  -- When the thing the entry tells of happened or was said (its event time);
  -- NULL: its created_at. Read windows compare coalesce(occurred_at,
  -- created_at) (selects_v1). Revision 0018 added it.
  occurred_at        timestamptz,
  primary key (tenant_id, resource_id, thread_id, id)
);
alter table {{entries}} alter column embedding set storage {{embedding_storage}};

-- Scoped recall and adjacency: an exact scan of one thread in sequence order.
create index {{entries_scope_idx}} on {{entries}} (tenant_id, resource_id, thread_id, sequence);
create index {{entries_tsv_idx}} on {{entries}} using gin (text_tsv);
create index {{entries_lineage_idx}} on {{entries}} using gin ((metadata -> '_lineage' -> 'sourceIds'));
-- Recall across threads: the entries whose consent lets them leave their
-- thread (leaves_thread_v1), by resource and thread (the travellers).
create index {{entries_travel_idx}} on {{entries}} (tenant_id, resource_id, thread_id)
  where coalesce(consent_scope in ('profile', 'user'), false);
-- tenant, resource and thread are strongly correlated: without these the planner
-- multiplies their selectivities and expects a few rows per thread.
create statistics {{entries_scope_stats}} (ndistinct, dependencies)
  on tenant_id, resource_id, thread_id from {{entries}};
alter table {{entries}} enable row level security;
create policy tenant_isolation on {{entries}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

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
  -- An erasure's walk (erase_walk_v1) has not yet reached every entry derived
  -- from this one: the next call continues from here. Revision 0017 added it.
  pending         boolean     not null default false,
  primary key (tenant_id, resource_id, thread_id, entry_id)
);
create statistics {{invalidation_scope_stats}} (ndistinct, dependencies)
  on tenant_id, resource_id, thread_id from {{invalidation}};
alter table {{invalidation}} enable row level security;
create policy tenant_isolation on {{invalidation}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

-- The embedding model of each thread: the model id and width of the embedder
-- whose vectors the thread's entries hold, recorded by use_embedding_model_v1
-- in the transaction of each guarded write (docs/embedders.md, "The embedding-model
-- guard"). A thread written only by embedders without an identity has no row.
create table {{embedding_model}} (
  tenant_id   text        not null,
  resource_id text        not null,
  thread_id   text        not null,
  model_id    text        not null,
  dimensions  integer     not null check (dimensions between 1 and 16000),
  updated_at  timestamptz not null default now(),
  primary key (tenant_id, resource_id, thread_id)
);
alter table {{embedding_model}} enable row level security;
create policy tenant_isolation on {{embedding_model}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

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
alter table {{share_grant}} enable row level security;
create policy tenant_isolation on {{share_grant}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

-- Stored retention policies: the maximum age (24-hour days since created_at)
-- of a resource's entries (thread_id = '') or of one thread's. Recall, export
-- and the context gate leave out an entry older than any policy that covers
-- it, the moment it passes (retention_cutoff_v1); the sweep
-- (retention_candidates_v2) then deletes it.
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

-- RAG chunks: keyed by tenant, scope (a knowledge base), generation (a build
-- of the scope's index) and chunk id.
create table {{rag_chunk}} (
  tenant_id      text        not null,
  scope          text        not null,
  generation     bigint      not null check (generation between 0 and 9007199254740991),
  id             text        not null,
  source_id      text        not null,
  text           text        not null,
  metadata       jsonb       not null default '{}'::jsonb,
  embedding      {{embedding_type}} not null,
  -- The source permission version this chunk's content was indexed under:
  -- readable under ACL only once the source's grants are at that version or newer.
  access_version bigint      check (access_version >= 0),
  created_at     timestamptz not null default now(),
  updated_at     timestamptz not null default now(),
  text_tsv       tsvector    generated always as
                   (array_to_tsvector({{schema}}.lexical_terms_v2(text))) stored,
  primary key (tenant_id, scope, generation, id)
);
alter table {{rag_chunk}} alter column embedding set storage {{embedding_storage}};
-- get_by_source, delete by source, and the exact ranking of one scope.
create index {{rag_chunk_source_idx}} on {{rag_chunk}} (tenant_id, scope, generation, source_id, id);
create index {{rag_chunk_tsv_idx}} on {{rag_chunk}} using gin (text_tsv);
-- Metadata filters are containment (metadata @> filter).
create index {{rag_chunk_meta_idx}} on {{rag_chunk}} using gin (metadata jsonb_path_ops);
create statistics {{rag_chunk_stats}} (ndistinct, dependencies)
  on tenant_id, scope, generation from {{rag_chunk}};
alter table {{rag_chunk}} enable row level security;
create policy tenant_isolation on {{rag_chunk}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

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
alter table {{rag_source_acl}} enable row level security;
create policy tenant_isolation on {{rag_source_acl}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

-- RAG source permission version: kept when every grant is revoked, so a
-- stale update can never bring a grant back.
create table {{rag_source_version}} (
  tenant_id      text        not null,
  source_id      text        not null,
  access_version bigint      not null check (access_version >= 0),
  updated_at     timestamptz not null default now(),
  primary key (tenant_id, source_id)
);
alter table {{rag_source_version}} enable row level security;
create policy tenant_isolation on {{rag_source_version}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

-- RAG per-scope generation pointer.
create table {{rag_scope_generations}} (
  tenant_id  text        not null,
  scope      text        not null,
  generation bigint      not null,
  updated_at timestamptz not null default now(),
  primary key (tenant_id, scope)
);
alter table {{rag_scope_generations}} enable row level security;
create policy tenant_isolation on {{rag_scope_generations}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

-- Tenant-bound roles: a database role listed here, and every role that is a
-- member of it, may call the API functions only for these tenants, on the
-- server's clock (tenant_access_v1). A role is listed by OID, so a rename keeps
-- its binding. A role with no row, and no bound role it belongs to, is trusted
-- with every tenant. Written by the schema owner
-- (prism_memory.schema.grant_app_role); the API functions only read it.
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
