-- prism-memory schema revision 0018: recall_filters. The metadata filter
-- language (docs/api.md, "Metadata filters"), and the RAG reads on it.
--
-- metadata_filter_v1(p_filter jsonb) returns jsonpath checks a filter
-- ($and/$or/$not, dotted field paths, the operators $eq $ne $gt $gte $lt
-- $lte $in $nin $exists $contains, and containment documents as before) and
-- compiles it into a strict jsonpath predicate a caller applies as
-- "metadata @@ path"; a malformed filter or one over a cap raises PM019. Its
-- parts: metadata_filter_node_v1 (a filter object) and
-- metadata_filter_contains_v1 (a containment leaf);
-- metadata_filter_is_containment_v1 says when a filter means exactly
-- "metadata @> filter". rag_query_v1, rag_lexical_query_v1 and
-- rag_estimate_candidates_v1 take filters in the language (same arguments):
-- a plain containment document is still read with @> through the GIN index,
-- any other filter with @@ and its compiled path, through rag_where_v2 (which
-- adds the @@ clause, $10, to rag_where_v1's; rag_where_v1 has no caller left).
-- A filter containment used to match literally (a key starting with $, a
-- dotted key) now follows the language, and RAG filters are capped at 16 KiB.

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

-- file functions/metadata_filter_contains_v1.sql
-- Part of metadata_filter_v1: the jsonpath predicate for a containment leaf,
-- p_base (a jsonpath accessor: "$" and quoted keys, or "@") @> p_wanted as
-- jsonb containment works below the top level: an object holds every key of
-- p_wanted, each value contained recursively; an array holds, for every
-- element of p_wanted, an element containing it (of the same JSON type); a
-- scalar equals it. Keys become jsonpath string literals through
-- to_jsonb(key)::text and scalars through their jsonb text, so nothing of the
-- filter is read as jsonpath syntax. A key starting with $ is refused (PM019,
-- naming p_at): an operator there would be read literally.
-- prism_memory.filters.json_contains mirrors it.
create or replace function {{schema}}.metadata_filter_contains_v1(p_base text, p_wanted jsonb, p_at text)
returns text
language plpgsql immutable
set search_path from current
as $$
declare
  v_parts text[];
  v_key text;
  v_value jsonb;
begin
  case jsonb_typeof(p_wanted)
    when 'object' then
      v_parts := array[p_base || '.type() == "object"'];
      for v_key, v_value in select e.key, e.value from jsonb_each(p_wanted) e loop
        if starts_with(v_key, '$') then
          raise exception 'filter: %: key % inside a containment document (operators apply to a field path)',
            p_at, to_jsonb(v_key)::text using errcode = 'PM019';
        end if;
        v_parts := v_parts || metadata_filter_contains_v1(p_base || '.' || to_jsonb(v_key)::text, v_value, p_at);
      end loop;
    when 'array' then
      v_parts := array[p_base || '.type() == "array"'];
      for v_value in select e.value from jsonb_array_elements(p_wanted) e loop
        if jsonb_typeof(v_value) in ('object', 'array') then
          v_parts := v_parts || ('exists (' || p_base || '[*] ? (' || metadata_filter_contains_v1('@', v_value, p_at) || '))');
        else
          v_parts := v_parts || ('exists (' || p_base || '[*] ? (@ == ' || v_value::text || '))');
        end if;
      end loop;
    else
      v_parts := array[p_base || ' == ' || p_wanted::text];
  end case;
  return '(' || array_to_string(v_parts, ' && ') || ')';
end;
$$;
-- end of functions/metadata_filter_contains_v1.sql

-- file functions/metadata_filter_node_v1.sql
-- Part of metadata_filter_v1: checks one filter object p_node (named p_where
-- in messages, at nesting level p_depth, the whole filter being level 1) and
-- returns its jsonpath predicate, two-valued (true or false, never unknown),
-- with p_count, the conditions counted so far, updated. Every fault raises
-- PM019 naming the path or operator; the keys are walked in jsonb order,
-- as prism_memory.filters.check_filter walks them. Each comparison L is
-- written "((L) && !((L) is unknown))": jsonpath answers unknown for a
-- missing field or mismatched types, which "!" would keep unknown, so $ne,
-- $nin and $not are exact negations. Keys and strings enter the text only as
-- jsonpath string literals (to_jsonb(text)::text), numbers as jsonb prints
-- them, true, false and null as themselves.
create or replace function {{schema}}.metadata_filter_node_v1(
  p_node jsonb, p_where text, p_depth integer, inout p_count integer, out p_predicate text)
language plpgsql immutable
set search_path from current
as $$
declare
  v_parts text[] := '{}';
  v_subs text[];
  v_sub text;
  v_key text;
  v_value jsonb;
  v_item jsonb;
  v_position bigint;
  v_at text;
  v_segments text[];
  v_path text;
  v_operator text;
  v_operand jsonb;
  v_kind text;
  v_leaf text;
begin
  if jsonb_typeof(p_node) is distinct from 'object' then
    raise exception 'filter: % must be a JSON object, got %', p_where, coalesce(jsonb_typeof(p_node), 'null')
      using errcode = 'PM019';
  end if;
  if p_depth > 8 then
    raise exception 'filter: % is nested deeper than 8 levels', p_where using errcode = 'PM019';
  end if;
  for v_key, v_value in select e.key, e.value from jsonb_each(p_node) e loop
    if v_key in ('$and', '$or') then
      if jsonb_typeof(v_value) <> 'array' or jsonb_array_length(v_value) = 0 then
        raise exception 'filter: % in % must be a non-empty array of filters', v_key, p_where using errcode = 'PM019';
      end if;
      v_subs := '{}';
      for v_item, v_position in select e.value, e.ordinality - 1 from jsonb_array_elements(v_value) with ordinality e loop
        select n.p_count, n.p_predicate into p_count, v_sub
        from metadata_filter_node_v1(v_item, p_where || '.' || v_key || '[' || v_position || ']', p_depth + 1, p_count) n;
        v_subs := v_subs || v_sub;
      end loop;
      v_parts := v_parts || ('(' || array_to_string(v_subs, case v_key when '$and' then ' && ' else ' || ' end) || ')');
    elsif v_key = '$not' then
      select n.p_count, n.p_predicate into p_count, v_sub
      from metadata_filter_node_v1(v_value, p_where || '.$not', p_depth + 1, p_count) n;
      v_parts := v_parts || ('!' || v_sub);
    elsif starts_with(v_key, '$') then
      raise exception 'filter: unknown operator % in % (a field path must not start with $)', to_jsonb(v_key)::text, p_where
        using errcode = 'PM019';
    else
      v_at := p_where || ' field ' || to_jsonb(v_key)::text;
      v_segments := string_to_array(v_key, '.');
      if v_key = '' or '' = any(v_segments) then
        raise exception 'filter: %: a field path has no empty segment', v_at using errcode = 'PM019';
      end if;
      if cardinality(v_segments) > 8 then
        raise exception 'filter: %: a field path has at most 8 segments', v_at using errcode = 'PM019';
      end if;
      if exists (select 1 from unnest(v_segments) s where starts_with(s, '$')) then
        raise exception 'filter: %: a path segment must not start with $', v_at using errcode = 'PM019';
      end if;
      v_path := '$' || (select string_agg('.' || to_jsonb(s.segment)::text, '' order by s.n)
                        from unnest(v_segments) with ordinality s(segment, n));
      if jsonb_typeof(v_value) = 'object' and exists (select 1 from jsonb_object_keys(v_value) k where starts_with(k, '$')) then
        if exists (select 1 from jsonb_object_keys(v_value) k where not starts_with(k, '$')) then
          raise exception 'filter: % mixes operators and other keys', v_at using errcode = 'PM019';
        end if;
        if p_depth + 1 > 8 then
          raise exception 'filter: % is nested deeper than 8 levels', v_at using errcode = 'PM019';
        end if;
        for v_operator, v_operand in select e.key, e.value from jsonb_each(v_value) e loop
          v_kind := jsonb_typeof(v_operand);
          case
            when v_operator in ('$eq', '$ne', '$contains') then
              if v_kind in ('object', 'array') then
                raise exception 'filter: % at % takes a scalar, got %', v_operator, v_at, v_kind using errcode = 'PM019';
              end if;
              v_leaf := case v_operator when '$contains' then 'exists (' || v_path || '[*] ? (@ == ' || v_operand::text || '))'
                                        else v_path || ' == ' || v_operand::text end;
              v_leaf := '((' || v_leaf || ') && !((' || v_leaf || ') is unknown))';
              v_parts := v_parts || (case v_operator when '$ne' then '!' else '' end || v_leaf);
            when v_operator in ('$gt', '$gte', '$lt', '$lte') then
              if v_kind not in ('number', 'string') then
                raise exception 'filter: % at % takes a number or a string, got %', v_operator, v_at, v_kind using errcode = 'PM019';
              end if;
              v_leaf := v_path || case v_operator when '$gt' then ' > ' when '$gte' then ' >= ' when '$lt' then ' < ' else ' <= ' end
                        || v_operand::text;
              v_parts := v_parts || ('((' || v_leaf || ') && !((' || v_leaf || ') is unknown))');
            when v_operator in ('$in', '$nin') then
              if v_kind <> 'array' or jsonb_array_length(v_operand) = 0
                 or exists (select 1 from jsonb_array_elements(v_operand) e where jsonb_typeof(e) in ('object', 'array')) then
                raise exception 'filter: % at % takes a non-empty array of scalars', v_operator, v_at using errcode = 'PM019';
              end if;
              if jsonb_array_length(v_operand) > 256 then
                raise exception 'filter: % at % has more than 256 elements', v_operator, v_at using errcode = 'PM019';
              end if;
              v_leaf := 'exists (' || v_path || ' ? ('
                        || (select string_agg('@ == ' || e.value::text, ' || ' order by e.n)
                            from jsonb_array_elements(v_operand) with ordinality e(value, n)) || '))';
              v_leaf := '((' || v_leaf || ') && !((' || v_leaf || ') is unknown))';
              v_parts := v_parts || (case v_operator when '$nin' then '!' else '' end || v_leaf);
            when v_operator = '$exists' then
              if v_kind <> 'boolean' then
                raise exception 'filter: $exists at % takes true or false, got %', v_at, v_kind using errcode = 'PM019';
              end if;
              v_leaf := '((exists (' || v_path || ')) && !((exists (' || v_path || ')) is unknown))';
              v_parts := v_parts || (case when v_operand = 'false'::jsonb then '!' else '' end || v_leaf);
            else
              raise exception 'filter: unknown operator % at %', to_jsonb(v_operator)::text, v_at using errcode = 'PM019';
          end case;
          p_count := p_count + 1;
          if p_count > 64 then
            raise exception 'filter: more than 64 conditions (at %)', v_at using errcode = 'PM019';
          end if;
        end loop;
      else
        if jsonb_typeof(v_value) in ('object', 'array') then
          v_leaf := metadata_filter_contains_v1(v_path, v_value, v_at);
        else
          v_leaf := v_path || ' == ' || v_value::text;
        end if;
        v_parts := v_parts || ('((' || v_leaf || ') && !((' || v_leaf || ') is unknown))');
        p_count := p_count + 1;
        if p_count > 64 then
          raise exception 'filter: more than 64 conditions (at %)', v_at using errcode = 'PM019';
        end if;
      end if;
    end if;
  end loop;
  p_predicate := '(' || coalesce(nullif(array_to_string(v_parts, ' && '), ''), '1 == 1') || ')';
end;
$$;
-- end of functions/metadata_filter_node_v1.sql

-- file functions/metadata_filter_v1.sql
-- The metadata filter language (docs/api.md, "Metadata filters"): checks
-- p_filter and compiles it into a strict jsonpath predicate that a caller
-- applies as "metadata @@ metadata_filter_v1(p_filter)", bound as a value
-- (never SQL text). NULL gives NULL; {} matches everything. A filter is a
-- JSON object whose keys are ANDed: $and / $or (a non-empty array of
-- filters), $not (a filter), or a field path ("user.tier" reads
-- metadata -> 'user' -> 'tier'); a field condition is a scalar ($eq), an
-- object of operators ($eq $ne $gt $gte $lt $lte $in $nin $exists $contains,
-- ANDed), or any other object or array: containment at that path, as jsonb
-- @> below the top level. Values compare as JSON: a number never equals a
-- string or a boolean, strings by code point, order operators only numbers
-- with numbers and strings with strings; $ne, $nin and $not are exact
-- negations, so a missing field matches $ne and {"$exists": false}.
-- Raises PM019 naming the path or operator for a filter that is not an
-- object, any malformed piece, and the caps: 16 KiB of jsonb text, JSON
-- nested 64 levels (as Python's codec), nesting depth 8 ($and/$or/$not
-- elements and operator objects one level each), 64 conditions, 256
-- elements in one $in/$nin, 8 segments in a path.
-- prism_memory.filters (check_filter, matches) mirrors it.
create or replace function {{schema}}.metadata_filter_v1(p_filter jsonb)
returns jsonpath
language plpgsql immutable
set search_path from current
as $$
declare
  v_bytes integer;
  v_count integer;
  v_predicate text;
begin
  if p_filter is null then
    return null;
  end if;
  if jsonb_typeof(p_filter) <> 'object' then
    raise exception 'filter: the filter must be a JSON object, got %', jsonb_typeof(p_filter) using errcode = 'PM019';
  end if;
  v_bytes := octet_length(p_filter::text);
  if v_bytes > 16384 then
    raise exception 'filter: % bytes of JSON, over the 16384-byte cap', v_bytes using errcode = 'PM019';
  end if;
  if jsonb_path_exists(p_filter, 'strict $.**{64 to last} ? (@.type() == "object" || @.type() == "array")') then
    raise exception 'filter: filter is nested deeper than 64 levels' using errcode = 'PM019';
  end if;
  select n.p_count, n.p_predicate into v_count, v_predicate from metadata_filter_node_v1(p_filter, 'filter', 1, 0) n;
  return ('strict ' || v_predicate)::jsonpath;
end;
$$;
-- end of functions/metadata_filter_v1.sql

-- file functions/metadata_filter_is_containment_v1.sql
-- Whether a filter metadata_filter_v1 accepted means exactly
-- "metadata @> p_filter": no $and/$or/$not, no operator object, no dotted
-- path (each key one field, each condition a scalar or a containment
-- document). The RAG reads apply such a filter with @> (through the GIN
-- index, as before the language existed), any other with @@.
-- prism_memory.filters.is_containment mirrors it.
create or replace function {{schema}}.metadata_filter_is_containment_v1(p_filter jsonb) returns boolean
language sql immutable parallel safe
return p_filter is not null and not exists (
  select 1 from jsonb_each(p_filter) f
  where starts_with(f.key, '$') or strpos(f.key, '.') > 0
     or (jsonb_typeof(f.value) = 'object'
         and exists (select 1 from jsonb_object_keys(f.value) k where starts_with(k, '$'))));
-- end of functions/metadata_filter_is_containment_v1.sql

-- file functions/rag_where_v2.sql
-- The WHERE clause every RAG read shares, over the chunk alias c, as fixed SQL
-- text (never built from input): $1 tenant, $2 scope, $3 generation, $4 the
-- filter as a containment document (p_contains: c.metadata @> $4, through
-- the GIN index), $5 principal, $6 groups, with p_sources $7, the sources the
-- reader holds grants on (a narrowing the ACL EXISTS implies, so a reader of
-- few sources reads the scope through the source index), and $10 the filter
-- compiled by metadata_filter_v1 (p_path: c.metadata @@ $10). A filter can
-- only narrow. The filter and the ACL's indexed EXISTS are included only when
-- used, so each read is planned for exactly the rules it applies. A chunk is
-- readable under ACL when the principal or one of its groups holds a grant on
-- its source at the chunk's access_version or newer; a missing grant or an
-- unresolved version denies. (rag_where_v1 had no p_path.)
create or replace function {{schema}}.rag_where_v2(p_contains boolean, p_path boolean, p_acl boolean,
                                                   p_sources boolean default false)
returns text
language sql immutable
return 'c.tenant_id = $1 and c.scope = $2 and c.generation = $3'
  || case when p_contains then ' and c.metadata @> $4' else '' end
  || case when p_path then ' and c.metadata @@ $10' else '' end
  || case when p_acl then
       ' and exists (select 1 from {{rag_source_acl}} a'
       || ' where a.tenant_id = $1 and a.source_id = c.source_id'
       || ' and ((a.grantee_kind = ''principal'' and a.grantee_id = $5)'
       || ' or (a.grantee_kind = ''group'' and a.grantee_id = any($6)))'
       || ' and a.access_version >= coalesce(c.access_version, 0))'
     else '' end
  || case when p_sources then ' and c.source_id = any($7)' else '' end;
-- end of functions/rag_where_v2.sql

-- file functions/rag_estimate_candidates_v1.sql
-- The planner's estimate of the chunks of one generation of a scope whose
-- metadata satisfy p_filter (the metadata filter language: @> for a plain
-- containment document, else @@ its metadata_filter_v1 path; the planner
-- estimates both from the column statistics), among p_sources when given. EXPLAIN needs a
-- volatile function; rag_query_v1 itself stays stable, so all of its reads
-- see one snapshot.
create or replace function {{schema}}.rag_estimate_candidates_v1(
  p_tenant_id text, p_scope text, p_generation bigint, p_filter jsonb, p_sources text[] default null)
returns double precision
language plpgsql volatile
set search_path from current
as $$
declare
  v_contains constant boolean := metadata_filter_is_containment_v1(p_filter);
  v_path constant jsonpath := case when not v_contains then metadata_filter_v1(p_filter) end;
  v_plan json;
begin
  execute 'explain (format json) select 1 from {{rag_chunk}} c where '
          || rag_where_v2(v_contains, v_path is not null, false, p_sources is not null)
    into v_plan
    using p_tenant_id, p_scope, p_generation, p_filter, null::text, null::text[], p_sources,
          null::text, null::integer, v_path;
  return (v_plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
end;
$$;
-- end of functions/rag_estimate_candidates_v1.sql

-- file functions/rag_query_v1.sql
-- Top-k chunks of one generation of a scope by cosine similarity
-- (score = 1 - pgvector <=>), ties by id (code-point order), under the
-- filter and ACL of rag_where_v2, applied before ranking. The filter is in
-- the metadata filter language (metadata_filter_v1, PM019 when malformed): one
-- that is a plain containment document (metadata_filter_is_containment_v1)
-- is applied as metadata @> filter, any other as metadata @@ its compiled
-- jsonpath, bound as a parameter.
--
-- Path: how many candidates there are decides. Without a filter they are
-- counted through the scope (or, for an ACL reader of at most 100 sources,
-- the source) index, up to 2000; with a filter the planner's estimate is
-- taken (jsonb @> and @@ are estimated from the column statistics; under Citus
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
  v_contains constant boolean := metadata_filter_is_containment_v1(v_filter);
  v_path jsonpath := metadata_filter_v1(v_filter);  -- checks the filter (PM019)
  v_sources text[];
  v_narrow boolean := false;
  v_candidates double precision := 2000;
  v_ids text[];
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
            || rag_where_v2(v_contains, v_path is not null, false, v_narrow) || ' limit 2000) x'
      into v_candidates
      using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
            p_embedding, p_top_k, v_path;
  end if;

  if v_candidates >= 2000 and {{dimensions}}::integer is not null then
    perform set_config('hnsw.ef_search', greatest(40, 4 * p_top_k)::text, true);
    execute 'select coalesce(array_agg(n.id), ''{}'') from (select c.id from {{rag_chunk}} c where '
            || rag_where_v2(v_contains, v_path is not null, p_acl, false) || ' order by c.embedding <=> $8 limit $9) n'
      into v_ids
      using p_tenant_id, p_scope, v_generation, v_filter, p_principal_id, p_group_ids, v_sources,
            p_embedding, p_top_k, v_path;
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

-- file functions/rag_lexical_query_v1.sql
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
-- end of functions/rag_lexical_query_v1.sql


reset search_path;
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;
