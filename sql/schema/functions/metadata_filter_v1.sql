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
