-- prism-memory schema revision 0002: the standalone RAG vector store and its
-- document ACL (seed: "Standalone durable vector store for RAG", "Security and
-- performance notes").
--
-- Chunks live in <table>_rag_chunk, keyed by tenant, scope (a knowledge base),
-- generation (a build of the scope's index) and chunk id. A scope's current
-- generation is the pointer in <table>_rag_scope_generations (0 when unset);
-- reads and writes default to it. Document ACL: <table>_rag_source_acl holds a
-- source's grants to principals and groups at the source's access version,
-- <table>_rag_source_version the version itself (kept when every grant is
-- revoked, so a stale update can never bring a grant back).
--
-- Template rules as in 0001; frozen once released.

{{pin_search_path}}

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
                   (array_to_tsvector({{schema}}.lexical_terms_v1(text))) stored,
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

create table {{rag_source_version}} (
  tenant_id      text        not null,
  source_id      text        not null,
  access_version bigint      not null check (access_version >= 0),
  updated_at     timestamptz not null default now(),
  primary key (tenant_id, source_id)
);

\ir ../schema/functions/install_info_v1.sql

\ir ../schema/functions/rag_assert_scope_v1.sql

\ir ../schema/functions/rag_assert_generation_v1.sql

\ir ../schema/functions/rag_get_generation_v1.sql

\ir ../schema/functions/rag_set_generation_v1.sql

\ir ../schema/functions/rag_assert_dimensions_v1.sql

\ir ../schema/functions/rag_assert_principal_v1.sql

\ir ../schema/functions/rag_upsert_v1.sql

\ir ../schema/functions/rag_delete_v1.sql

\ir ../schema/functions/rag_set_source_access_v1.sql

\ir ../schema/functions/rag_check_source_access_v1.sql


\ir ../schema/functions/rag_where_v1.sql

\ir ../schema/functions/rag_read_generation_v1.sql

\ir ../schema/functions/rag_estimate_candidates_v1.sql

\ir ../schema/functions/rag_query_v1.sql

\ir ../schema/functions/rag_lexical_query_v1.sql

\ir ../schema/functions/rag_get_by_source_v1.sql

reset search_path;
