-- prism-memory schema revision 0010: lexical_v2. The lexical leg finds
-- morphological variants and CJK substrings:
-- * lexical_terms_v2, query_terms_v2, lexical_tokens_v2 and
--   lexical_cjk_tokens_v2 (new) are tokenizer v2: v1's splitting, ASCII
--   lower-casing and stopwords, then Porter stems of ASCII words (the new
--   text search dictionary porter_stem_v1, sql/schema/text_search.sql),
--   overlapping character bigrams of Han, Hiragana, Katakana and Hangul
--   runs, other terms over 64 characters cut to 64 instead of dropped, and
--   the first 100,000 characters read (200,000 in v1);
-- * text_tsv of the entries and of the RAG chunks holds lexical_terms_v2:
--   the column is dropped and added again (Citus refuses ALTER COLUMN ...
--   SET EXPRESSION on a distributed table), which rewrites each table once
--   and rebuilds its indexes under an ACCESS EXCLUSIVE lock, then its GIN
--   index is built again (the cost on a large table: docs/sql.md, "Revision
--   0010 on a large table");
-- * recall_v2 and rag_lexical_query_v1 score by query_terms_v2;
-- * lexical_terms_v1 and query_terms_v1 stay (the hash embedder's features),
--   with comments saying so.
-- The functions are created in the order their SQL bodies name each other.

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

-- file text_search.sql
-- prism-memory at head: the text search dictionary the lexical terms stem
-- with (lexical_tokens_v2; sql/schema/install.sql includes this file before
-- the tokenizer). It is Snowball's Porter stemmer (PostgreSQL's snowball
-- template, language porter) with no stopwords of its own, so ts_lexize gives
-- a stem for every word; the tokenizer drops its own stopwords first. Porter,
-- not Snowball's english (Porter2): the Porter algorithm is frozen, so every
-- PostgreSQL release and the pure-Python snowballstemmer that the emulator
-- stems with give the same stems, while english changes from one Snowball
-- snapshot to the next (PostgreSQL 18's is in no snowballstemmer release).
--
-- Under Citus the dictionary must exist on every node: lexical_tokens_v2
-- names it by a constant, so pg_depend records it as a dependency of that
-- function, and Citus creates it on each worker before the function
-- (create_distributed_function, create_distributed_table of a table whose
-- text_tsv calls it; prism_memory.citus.distribute).
create text search dictionary {{schema}}.porter_stem_v1 (template = pg_catalog.snowball, language = porter);
-- end of text_search.sql

-- file functions/lexical_cjk_tokens_v2.sql
-- lexical_tokens_v2 of a text that holds a CJK character: each of its pieces
-- (split as lexical_terms_v1 splits) is cut into maximal runs of CJK
-- characters (Han, Hiragana, Katakana and Hangul: the ranges below) and of
-- other characters, in order. A CJK run yields its overlapping character
-- bigrams (a one-character run, itself), so a substring query of a sentence
-- holds only bigrams of that sentence and no run is too long to index; any
-- other run yields its lexical_tokens_v2 term (at most one: it holds no CJK
-- character). prism_memory/lexical.py mirrors it.
create or replace function {{schema}}.lexical_cjk_tokens_v2(p_text text) returns text[]
language plpgsql immutable strict parallel safe
set search_path from current
as $$
declare
  v_cjk constant text := '\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3130-\u318f\u31c0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc\U0001aff0-\U0001b16f\U00020000-\U0003ffff';
begin
  return array(
    select t.term
    from regexp_split_to_table(lower(p_text collate "C"),
                               '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') with ordinality as p(piece, position)
    cross join lateral regexp_matches(p.piece, '([' || v_cjk || ']+)|([^' || v_cjk || ']+)', 'g')
      with ordinality as r(run, position)
    cross join lateral unnest(case when r.run[1] is null then lexical_tokens_v2(r.run[2])
                                   else array(  -- each character with the next one (a lone character alone)
                                     select c.chr || coalesce(c.next, '')
                                     from (select x.chr, x.position, count(*) over () as chars,
                                                  lead(x.chr) over (order by x.position) as next
                                           from string_to_table(r.run[1], null) with ordinality as x(chr, position)) as c
                                     where c.position < greatest(c.chars, 2)
                                     order by c.position)
                              end) with ordinality as t(term, position)
    order by p.position, r.position, t.position);
end;
$$;
-- end of functions/lexical_cjk_tokens_v2.sql

-- file functions/lexical_tokens_v2.sql
-- Lexical terms, rule v2 (revision 0010): every term of p_text in order of
-- appearance, repeats kept; lexical_terms_v2 and query_terms_v2 cut the text
-- to 100,000 characters first. prism_memory/lexical.py mirrors it exactly.
-- Lower-cases ASCII only (collation "C") and splits the text into pieces as
-- lexical_terms_v1 does. A piece is one term: over 64 characters its first 64
-- (never dropped, not stemmed); else nothing for a stopword; else, for ASCII
-- letters only, its Porter stem (porter_stem_v1, sql/schema/text_search.sql;
-- an empty stem is the word itself); else the piece as it is (digits,
-- accents, other scripts). A text holding a CJK character (Han, Hiragana,
-- Katakana, Hangul: the ranges below, as in lexical_cjk_tokens_v2) is
-- tokenized by lexical_cjk_tokens_v2, which cuts its pieces into CJK runs
-- (character bigrams) and other runs (terms as above).
create or replace function {{schema}}.lexical_tokens_v2(p_text text) returns text[]
language sql immutable strict parallel safe
return case
  when p_text ~ '[\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3130-\u318f\u31c0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc\U0001aff0-\U0001b16f\U00020000-\U0003ffff]'
    then {{schema}}.lexical_cjk_tokens_v2(p_text)
  else (
    select coalesce(array_agg(case when char_length(p.piece) > 64 then left(p.piece, 64)
                                   when p.piece ~ '^[a-z]+$' then (ts_lexize('{{schema}}.porter_stem_v1', p.piece))[1]
                                   else p.piece
                              end order by p.position), '{}'::text[])
    from regexp_split_to_table(lower(p_text collate "C"),
                               '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') with ordinality as p(piece, position)
    where p.piece <> ''
      and (char_length(p.piece) > 64 or p.piece <> all ({{stopwords}}::text[])))
end;
-- end of functions/lexical_tokens_v2.sql

-- file functions/lexical_terms_v2.sql
-- Lexical terms, rule v2: the tokenizer of text_tsv since revision 0010 (both
-- tables' generated column). The distinct terms lexical_tokens_v2 finds in
-- the first 100,000 characters of p_text, in code-point order. At most two
-- bigrams of at most 4 bytes each per character keep a tsvector below its
-- 1 MB of lexemes. prism_memory/lexical.py mirrors it (lexical_terms_v2).
create or replace function {{schema}}.lexical_terms_v2(p_text text) returns text[]
language sql immutable strict parallel safe
return (
  select coalesce(array_agg(distinct t.term order by t.term), '{}'::text[])
  from unnest({{schema}}.lexical_tokens_v2(left(p_text, 100000))) as t(term)
);
-- end of functions/lexical_terms_v2.sql

-- file functions/query_terms_v2.sql
-- The lexical terms a query is scored by since revision 0010 (recall_v2,
-- rag_lexical_query_v1): the terms lexical_tokens_v2 finds in the first
-- 100,000 characters of p_text, keeping only the first 32 distinct ones in
-- order of appearance, returned in code-point order. The cap bounds what one
-- query costs (revision 0008, query_terms_v1). The text is read in growing
-- prefixes, each without its last piece (maybe a term cut in two), until 32
-- distinct terms are found, so a long query costs little more than a short
-- one to tokenize. prism_memory/lexical.py mirrors it (query_terms_v2).
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

-- file functions/lexical_terms_v1.sql
-- Lexical terms, rule v1: the tokenizer of text_tsv and the lexical leg of
-- recall before revision 0010 (lexical_terms_v2 since), and still the hash
-- embedder's features (prism_memory/lexical.py mirrors it exactly).
-- Lower-cases ASCII only (collation "C"), splits on everything but ASCII letters/digits and
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

-- file functions/query_terms_v1.sql
-- The lexical terms a query is scored by: lexical_terms_v1's terms (the same
-- splitting, lower-casing, stopwords and 64-character cap), keeping only the
-- first 32 distinct ones in order of appearance, returned in code-point
-- order. The cap bounds what one query costs: the lexical leg tests each
-- term against each row, so an uncapped 64 KiB query (about 10,900 distinct
-- terms) cost 100x a typical one. The text is read in growing prefixes (the
-- last, maybe cut, piece of a prefix left out) until 32 distinct terms are
-- found, so a long query costs little more than a short one to tokenize.
-- prism_memory/lexical.py mirrors it. Since revision 0010, recall and RAG
-- lexical queries are scored by query_terms_v2.
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

-- file functions/rag_lexical_query_v1.sql
-- Full-text leg: top-k chunks of one generation whose text_tsv
-- (lexical_terms_v2) holds any of the query's lexical terms (through the GIN
-- index), scored by the share of the query's terms (query_terms_v2: at most
-- 32; stemmed, CJK as bigrams) they hold (lexical_score_v1, as in recall), ties
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
  v_terms := query_terms_v2(p_query_text);
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
--   lexical    = share of the query's terms (query_terms_v2: at most 32) found in the entry's
--                text_tsv (lexical_terms_v2), in [0, 1]
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
  v_terms text[] := query_terms_v2(coalesce(p_query_text, ''));
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


alter table {{entries}} drop column text_tsv;
alter table {{entries}} add column text_tsv tsvector generated always as
  (array_to_tsvector({{schema}}.lexical_terms_v2(text))) stored;
create index {{entries_tsv_idx}} on {{entries}} using gin (text_tsv);
alter table {{rag_chunk}} drop column text_tsv;
alter table {{rag_chunk}} add column text_tsv tsvector generated always as
  (array_to_tsvector({{schema}}.lexical_terms_v2(text))) stored;
create index {{rag_chunk_tsv_idx}} on {{rag_chunk}} using gin (text_tsv);

revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
