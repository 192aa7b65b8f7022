-- prism-memory schema revision 0002: the standalone RAG vector store and its
-- document ACL.
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

-- file functions/install_info_v1.sql
create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
as $$
  select {{schema_version}}, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;
-- end of functions/install_info_v1.sql


-- file functions/rag_assert_scope_v1.sql
-- Raises PM001 unless tenant and scope are non-blank strings of at most 256 bytes.
create or replace function {{schema}}.rag_assert_scope_v1(p_tenant_id text, p_scope text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_tenant_id is null or is_blank_v1(p_tenant_id) or octet_length(p_tenant_id) > 256 then
    raise exception 'tenant_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if p_scope is null or is_blank_v1(p_scope) or octet_length(p_scope) > 256 then
    raise exception 'scope must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
end;
$$;
-- end of functions/rag_assert_scope_v1.sql


-- file functions/rag_assert_generation_v1.sql
-- Raises PM002 unless p_generation is NULL or within 0 .. 2^53 - 1.
create or replace function {{schema}}.rag_assert_generation_v1(p_generation bigint)
returns void
language plpgsql immutable
as $$
begin
  if p_generation is not null and p_generation not between 0 and 9007199254740991 then
    raise exception 'generation must be between 0 and 2^53 - 1, got %', p_generation using errcode = 'PM002';
  end if;
end;
$$;
-- end of functions/rag_assert_generation_v1.sql


-- file functions/rag_get_generation_v1.sql
-- The scope's current generation: the pointer, or 0 when never set.
create or replace function {{schema}}.rag_get_generation_v1(p_tenant_id text, p_scope text)
returns bigint
language plpgsql stable
set search_path from current
as $$
begin
  perform rag_assert_scope_v1(p_tenant_id, p_scope);
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
language plpgsql volatile
set search_path from current
as $$
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


-- file functions/rag_assert_dimensions_v1.sql
-- Raises PM004 when p_dimensions differs from the pinned dimension or
-- (unpinned) from the chunks already stored in the scope, any generation.
create or replace function {{schema}}.rag_assert_dimensions_v1(p_tenant_id text, p_scope text, p_dimensions integer)
returns void
language plpgsql stable
set search_path from current
as $$
declare
  v_expected integer := {{dimensions}};
begin
  if v_expected is null then
    select vector_dims(c.embedding) into v_expected
    from {{rag_chunk}} c where c.tenant_id = p_tenant_id and c.scope = p_scope
    limit 1;
  end if;
  if v_expected is not null and p_dimensions <> v_expected then
    raise exception 'embedding has % dimensions, expected %', p_dimensions, v_expected
      using errcode = 'PM004';
  end if;
end;
$$;
-- end of functions/rag_assert_dimensions_v1.sql


-- file functions/rag_assert_principal_v1.sql
-- Raises PM013 unless an ACL read names a principal and groups that are
-- non-blank strings of at most 256 bytes (at most 1,024 groups).
create or replace function {{schema}}.rag_assert_principal_v1(p_principal_id text, p_group_ids text[])
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_principal_id is null or is_blank_v1(p_principal_id) or octet_length(p_principal_id) > 256 then
    raise exception 'an ACL read needs a principal_id: a non-blank string of at most 256 bytes'
      using errcode = 'PM013';
  end if;
  if coalesce(cardinality(p_group_ids), 0) > 1024 then
    raise exception 'an ACL read names at most 1024 groups, got %', cardinality(p_group_ids)
      using errcode = 'PM013';
  end if;
  if exists (select 1 from unnest(p_group_ids) as g(id)
             where g.id is null or is_blank_v1(g.id) or octet_length(g.id) > 256) then
    raise exception 'group ids must be non-blank strings of at most 256 bytes' using errcode = 'PM013';
  end if;
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
language plpgsql volatile
set search_path from current
as $$
declare
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


-- file functions/rag_delete_v1.sql
-- Deletes the scope's chunks that match every criterion given: p_ids (at most
-- 1000), p_source_id, p_generation (NULL: every generation). At least one is
-- required. Returns the number deleted.
create or replace function {{schema}}.rag_delete_v1(
  p_tenant_id text, p_scope text, p_ids text[] default null, p_source_id text default null,
  p_generation bigint default null)
returns integer
language plpgsql volatile
set search_path from current
as $$
declare
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
language plpgsql volatile
set search_path from current
as $$
declare
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


-- file functions/rag_check_source_access_v1.sql
-- Whether the principal (or one of its groups) holds a grant on the source,
-- at p_access_version or newer when given: the rule query, lexical_query and
-- get_by_source apply to every chunk (with the chunk's access_version).
create or replace function {{schema}}.rag_check_source_access_v1(
  p_tenant_id text, p_source_id text, p_principal_id text, p_group_ids text[] default '{}',
  p_access_version bigint default null)
returns boolean
language plpgsql stable
set search_path from current
as $$
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



-- file functions/rag_where_v1.sql
-- The WHERE clause every RAG read shares, over the chunk alias c, as fixed SQL
-- text (never built from input): $1 tenant, $2 scope, $3 generation, $4
-- filter, $5 principal, $6 groups, and with p_sources $7, the sources the
-- reader holds grants on (a narrowing the ACL EXISTS implies, so a reader of
-- few sources reads the scope through the source index). The filter (jsonb @>: it can only narrow)
-- and the ACL's indexed EXISTS are included only when used, so each read is
-- planned for exactly the rules it applies. A chunk is readable under ACL when
-- the principal or one of its groups holds a grant on its source at the
-- chunk's access_version or newer; a missing grant or an unresolved version denies.
create or replace function {{schema}}.rag_where_v1(p_filter boolean, p_acl boolean, p_sources boolean default false)
returns text
language sql immutable
return 'c.tenant_id = $1 and c.scope = $2 and c.generation = $3'
  || case when p_filter then ' and c.metadata @> $4' else '' end
  || case when p_acl then
       ' and exists (select 1 from {{rag_source_acl}} a'
       || ' where a.tenant_id = $1 and a.source_id = c.source_id'
       || ' and ((a.grantee_kind = ''principal'' and a.grantee_id = $5)'
       || ' or (a.grantee_kind = ''group'' and a.grantee_id = any($6)))'
       || ' and a.access_version >= coalesce(c.access_version, 0))'
     else '' end
  || case when p_sources then ' and c.source_id = any($7)' else '' end;
-- end of functions/rag_where_v1.sql


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
  perform rag_assert_scope_v1(p_tenant_id, p_scope);
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
language plpgsql stable
set search_path from current
set hnsw.iterative_scan = 'relaxed_order'
set hnsw.ef_search = 40
as $$
declare
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


-- file functions/rag_lexical_query_v1.sql
-- Full-text leg: top-k chunks of one generation whose text_tsv holds any of
-- the query's lexical terms (through the GIN index), scored by the share of
-- the query's distinct terms they hold (lexical_score_v1, as in recall), ties
-- by id, under the filter and ACL of rag_where_v1. A query with no terms
-- returns nothing.
create or replace function {{schema}}.rag_lexical_query_v1(
  p_tenant_id text, p_scope text, p_query_text text, p_top_k integer default 10,
  p_filter jsonb default null, p_acl boolean default false, p_principal_id text default null,
  p_group_ids text[] default '{}', p_generation bigint default null)
returns table (id text, source_id text, text text, metadata jsonb, generation bigint,
               access_version bigint, score double precision)
language plpgsql stable
set search_path from current
as $$
declare
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
  v_terms := lexical_terms_v1(p_query_text);
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
language plpgsql stable
set search_path from current
as $$
declare
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


reset search_path;
