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
        -- A containment document counts each element of its arrays (at least 1): a stored
        -- array is compared with each, so the cap bounds a row's cost by 64 passes over it.
        p_count := p_count + greatest(1, (select coalesce(sum(jsonb_array_length(a.item)), 0)::integer
                                          from jsonb_path_query(v_value, 'strict $.** ? (@.type() == "array")') a(item)));
        if p_count > 64 then
          raise exception 'filter: more than 64 conditions (at %)', v_at using errcode = 'PM019';
        end if;
      end if;
    end if;
  end loop;
  p_predicate := '(' || coalesce(nullif(array_to_string(v_parts, ' && '), ''), '1 == 1') || ')';
end;
$$;
