-- Full-text leg: top-k chunks of one generation whose text_tsv
-- (lexical_terms_v2) holds any of the query's lexical terms (through the GIN
-- index), scored by the share of the query's terms (query_terms_v2: at most
-- 32; stemmed, CJK as bigrams) they hold (lexical_score_v1, as in recall), ties
-- by id, under the filter and ACL of rag_where_v2 (the filter as in
-- rag_query_v1: @> for a plain containment document, else @@ its
-- metadata_filter_v1 path). A query with no terms returns nothing.
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
  v_contains constant boolean := metadata_filter_is_containment_v1(v_filter);
  v_path jsonpath := metadata_filter_v1(v_filter);  -- checks the filter (PM019)
  v_terms text[];
  v_any_term tsquery;
begin
  if v_contains then
    v_path := null;  -- read with @> instead
  end if;
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
    || ' from {{rag_chunk}} c where ' || rag_where_v2(v_contains, v_path is not null, p_acl)
    || ' and c.text_tsv @@ $8 offset 0),'
    || ' top as (select s.id, s.score from scored s order by s.score desc, s.id collate "C" limit $9)'
    || ' select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version, t.score'
    || ' from top t join {{rag_chunk}} c'
    || ' on c.tenant_id = $1 and c.scope = $2 and c.generation = $3 and c.id = t.id'
    || ' order by t.score desc, c.id collate "C"'
    using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids,
          v_terms, v_any_term, p_top_k, v_path;
end;
$$;
