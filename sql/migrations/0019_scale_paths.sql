-- prism-memory schema revision 0019: scale_paths. RAG queries: a reader of at most 1000 sources is ranked exactly up to 10000 chunks (HNSW missed one hit in eight for a reader holding 5% of a scope), the HNSW search is wider (ef_search 64) and orders by the half-precision graph of 0019_vector_search.sql.

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

-- file functions/rag_query_v1.sql
-- Top-k chunks of one generation of a scope by cosine similarity
-- (score = 1 - pgvector <=>), ties by id (code-point order), under the
-- filter and ACL of rag_where_v2, applied before ranking. The filter is in
-- the metadata filter language (metadata_filter_v1, PM019 when malformed): one
-- that is a plain containment document (metadata_filter_is_containment_v1)
-- is applied as metadata @> filter, any other as metadata @@ its compiled
-- jsonpath, bound as a parameter.
--
-- Path: how many candidates there are decides. An ACL reader of at most 1000
-- sources has the chunks of those sources read through the source index and
-- ranked exactly, as long as they are at most 10000 (filter applied): HNSW
-- finds a selective reader's best chunks poorly (at 5% of a scope it missed
-- one in eight, and a search wide enough to miss fewer cost more than the
-- exact ranking of her 5000 chunks). Otherwise, without a filter the
-- candidates are counted through the scope index, up to 2000; with a filter
-- the planner's estimate is taken (jsonb @> and @@ are estimated from the
-- column statistics; under Citus they are counted with the filter, up to
-- 2000); a reader of more
-- sources, or of more chunks, counts as many. Fewer than 2000 are ranked
-- exactly. More are read through HNSW (pinned installs; the graph holds
-- half-precision copies) with pgvector's iterative scan (ef_search at least
-- 64: recall@10 about 0.99 at 100,000 chunks) and re-scored exactly; if HNSW
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
set hnsw.ef_search = 64
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_filter jsonb := nullif(p_filter, '{}'::jsonb);
  v_generation bigint := rag_read_generation_v1(p_tenant_id, p_scope, p_top_k, p_filter, p_acl,
                                                p_principal_id, p_group_ids, p_generation);
  v_contains constant boolean := metadata_filter_is_containment_v1(v_filter);
  v_path jsonpath := metadata_filter_v1(v_filter);  -- checks the filter (PM019)
  v_sources text[];
  v_narrow boolean := false;
  v_candidates double precision := 2000;
  v_count integer;
  v_ids text[];                   -- the chunks to return, once a path has found them
begin
  if v_contains then
    v_path := null;  -- read with @> instead
  end if;
  perform assert_embedding_v1(p_embedding, 'the query embedding');
  perform assert_dimensions_v2(p_tenant_id, p_scope, null, vector_dims(p_embedding));
  if p_acl then
    v_sources := array(
      select a.source_id from {{rag_source_acl}} a
      where a.tenant_id = p_tenant_id
        and ((a.grantee_kind = 'principal' and a.grantee_id = p_principal_id)
             or (a.grantee_kind = 'group' and a.grantee_id = any(p_group_ids)))
      group by a.source_id
      limit 1001);
    if cardinality(v_sources) = 0 then
      return;  -- no grant at all: nothing is readable
    end if;
    v_narrow := cardinality(v_sources) <= 1000;
  end if;

  if v_narrow then
    -- The reader's chunks, exactly, when there are at most 10000 of them.
    execute 'with scored as materialized (select c.id, 1::float8 - (c.embedding <=> $8) as score'
            || ' from {{rag_chunk}} c where ' || rag_where_v2(v_contains, v_path is not null, true, true)
            || ' limit 10001)'
            || ' select (select count(*)::integer from scored),'
            || ' array(select s.id from scored s order by s.score desc, s.id collate "C" limit $9)'
      into v_count, v_ids
      using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
            p_embedding, p_top_k, v_path;
    if v_count > 10000 then
      v_ids := null;
    end if;
  elsif v_filter is not null and not p_acl and not citus_installed_v1() then
    v_candidates := rag_estimate_candidates_v1(p_tenant_id, p_scope, v_generation, v_filter, null);
  elsif not p_acl then
    -- Counted, filter included under Citus: an EXPLAIN inside a
    -- delegated call breaks the transaction's next statement there.
    execute 'select count(*)::integer from (select 1 from {{rag_chunk}} c where '
            || rag_where_v2(v_contains, v_path is not null, false, false) || ' limit 2000) x'
      into v_candidates
      using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
            p_embedding, p_top_k, v_path;
  end if;

  if v_ids is null and v_candidates >= 2000 and {{dimensions}}::integer is not null then
    perform set_config('hnsw.ef_search', greatest(64, 4 * p_top_k)::text, true);
    -- The graph's order (half precision: the index's expression); the chunks found are re-scored below.
    execute 'select coalesce(array_agg(n.id), ''{}'') from (select c.id from {{rag_chunk}} c where '
            || rag_where_v2(v_contains, v_path is not null, p_acl, false)
            || ' order by c.embedding::halfvec({{dimensions}}) <=> $8::halfvec({{dimensions}}) limit $9) n'
      into v_ids
      using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
            p_embedding, p_top_k, v_path;
    if cardinality(v_ids) < p_top_k then
      v_ids := null;
    end if;
  end if;
  if v_ids is not null then
    return query
      select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version,
             1::float8 - (c.embedding <=> p_embedding)
      from {{rag_chunk}} c
      where c.tenant_id = p_tenant_id and c.scope = p_scope and c.generation = v_generation
        and c.id = any(v_ids)
      order by 1::float8 - (c.embedding <=> p_embedding) desc, c.id collate "C";
    return;
  end if;

  -- Exact: every candidate scored ("offset 0" keeps the planner from
  -- ordering through the HNSW index), the top k kept.
  return query execute
    'with scored as (select c.id, 1::float8 - (c.embedding <=> $8) as score'
    || ' from {{rag_chunk}} c where ' || rag_where_v2(v_contains, v_path is not null, p_acl, v_narrow) || ' offset 0),'
    || ' top as (select s.id, s.score from scored s order by s.score desc, s.id collate "C" limit $9)'
    || ' select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version, t.score'
    || ' from top t join {{rag_chunk}} c'
    || ' on c.tenant_id = $1 and c.scope = $2 and c.generation = $3 and c.id = t.id'
    || ' order by t.score desc, c.id collate "C"'
    using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
          p_embedding, p_top_k, v_path;
end;
$$;
-- end of functions/rag_query_v1.sql


reset search_path;
