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
