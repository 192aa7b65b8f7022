-- prism-memory schema revision 0009: citus. Bodies that run on a Citus
-- cluster (tables distributed by tenant_id, API functions delegated by their
-- tenant: prism_memory.citus.distribute) and answer exactly as before on
-- plain PostgreSQL:
-- * no parameter or now() in ON CONFLICT DO UPDATE (Citus refuses them):
--   remember_v1, rag_upsert_v1 and rag_set_generation_v1 take excluded's
--   stamp; update_working_v1 updates the locked record, else inserts;
-- * citus_installed_v1 (new) tells the bodies they may run under Citus;
-- * recall_v2 joins its hits back by tenant and ctid (ctids repeat across
--   shards: without the tenant it read other tenants' rows), and plans each
--   call under Citus (a generic plan cannot be routed);
-- * rag_query_v1 counts filtered candidates under Citus (an EXPLAIN
--   inside a delegated call breaks the next statement);
-- * lock_key_v1 (new) takes the per-thread and per-scope advisory locks
--   (lock_thread_v1, remember_batch_v1, rag_upsert_v1), and under Citus
--   refuses (PM017) a call that runs on a node without the tenant's shards,
--   where its lock would exclude none of the tenant's other writers;
-- * tombstone_from_sources_v1 has a string body (Citus propagates no
--   BEGIN ATOMIC body to workers).

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

-- file functions/citus_installed_v1.sql
-- True where Citus is loaded and installed in this database (its metadata
-- catalog exists), so the tables may be distributed (prism_memory.citus):
-- recall_v2 and rag_query_v1 then take the paths Citus can route. Plain
-- PostgreSQL, and a database without the extension on a server that preloads
-- Citus, answer false.
create or replace function {{schema}}.citus_installed_v1() returns boolean
language sql stable parallel safe
return pg_catalog.current_setting('citus.version', true) is not null
       and pg_catalog.to_regclass('pg_catalog.pg_dist_partition') is not null;
-- end of functions/citus_installed_v1.sql

-- file functions/lock_key_v1.sql
-- Takes the transaction-level advisory lock p_key, which serialises the
-- writers of one of p_tenant_id's threads or RAG scopes (lock_thread_v1,
-- remember_batch_v1, rag_upsert_v1). Under Citus the lock must be taken on
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

-- file functions/lock_thread_v1.sql
-- Serialises every writer of one thread (remember, consent, correct,
-- invalidate, purge, reembed, share) for the rest of the transaction:
-- automatic sequences never interleave, an unpinned thread's first width is
-- fixed before a second writer checks it, and no tombstone or share grant is
-- lost to a race. The lock only helps a transaction that reads what the
-- writer before it committed, so any isolation level but READ COMMITTED
-- raises PM017 (a REPEATABLE READ snapshot predates the lock), as does a
-- call Citus did not delegate (lock_key_v1).
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
  perform lock_key_v1(p_tenant_id,
    hashtextextended(p_tenant_id || chr(31) || p_resource_id || chr(31) || p_thread_id, 0));
end;
$$;
-- end of functions/lock_thread_v1.sql

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
  on conflict (tenant_id, scope) do update set generation = excluded.generation, updated_at = excluded.updated_at;
  return p_generation;
end;
$$;
-- end of functions/rag_set_generation_v1.sql

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
  perform lock_key_v1(p_tenant_id, hashtextextended('rag' || chr(31) || p_tenant_id || chr(31) || p_scope, 0));
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
        embedding = excluded.embedding, access_version = excluded.access_version, updated_at = excluded.updated_at;
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
-- of a thread), except under Citus, which routes custom plans only. Plain index scans and merge joins are off, so the thread is
-- read by a bitmap scan and the tombstones are hashed; hits and adjacent rows
-- are joined back to their entries by tenant and ctid (the row scored, same
-- snapshot; ctids repeat across a distributed table's shards).
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
      join {{entries}} e on e.tenant_id = p_tenant_id and e.ctid = h.row_id  -- the row scored above, in this snapshot
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
    join {{entries}} e on e.tenant_id = p_tenant_id and e.ctid = p.row_id  -- the row scored above, in this snapshot
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
    perform lock_key_v1(p_tenant_id, v_key);
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
        consent_revoked_at = excluded.consent_revoked_at, updated_at = excluded.updated_at;
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

-- file functions/tombstone_from_sources_v1.sql
-- Tombstones each of p_ids (that has none) whose metadata._lineage names a
-- source that is tombstoned, revoked, invisible or held: "multi-source facts
-- stay injectable only if none of their sources are invalidated". (A string
-- body, not BEGIN ATOMIC: Citus propagates only string bodies to workers.)
create or replace function {{schema}}.tombstone_from_sources_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_now timestamptz)
returns void
language sql volatile
set search_path from current
as $$
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
$$;
-- end of functions/tombstone_from_sources_v1.sql

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

revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
