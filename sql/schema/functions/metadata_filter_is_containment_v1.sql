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
