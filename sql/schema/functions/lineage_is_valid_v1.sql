-- metadata._lineage: absent, or {"sourceIds": [at most 32 ids of at most 512
-- bytes (is_id_v1)], "reason": optional text}.
create or replace function {{schema}}.lineage_is_valid_v1(p_lineage jsonb) returns boolean
language sql immutable parallel safe
return p_lineage is null or (
  jsonb_typeof(p_lineage) = 'object'
  and jsonb_typeof(p_lineage -> 'sourceIds') = 'array'
  and jsonb_array_length(p_lineage -> 'sourceIds') <= 32
  and (p_lineage -> 'reason' is null or jsonb_typeof(p_lineage -> 'reason') in ('string', 'null'))
  and not exists (select 1 from jsonb_array_elements(p_lineage -> 'sourceIds') as source(value)
                  where jsonb_typeof(source.value) <> 'string'
                     or not {{schema}}.is_id_v1(source.value #>> '{}', 512)));
