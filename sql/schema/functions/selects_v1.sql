-- Whether an entry is one a read's selection keeps (selection_v1, from
-- recall_selection_v1): its metadata satisfies the filter's jsonpath, and its
-- event time (occurred_at, or created_at when it has none) and its created_at
-- fall in the half-open windows [after, before). A NULL part keeps every
-- entry; a NULL selection (nothing selected) costs one test per row. One
-- expression, inlined into the queries that use it.
create or replace function {{schema}}.selects_v1(
  p_metadata jsonb, p_occurred_at timestamptz, p_created_at timestamptz, p_selection {{schema}}.selection_v1)
returns boolean
language sql immutable parallel safe
return p_selection is null
       or (((p_selection).path is null or coalesce(p_metadata @@ (p_selection).path, false))
           and ((p_selection).occurred_after is null
                or coalesce(p_occurred_at, p_created_at) >= (p_selection).occurred_after)
           and ((p_selection).occurred_before is null
                or coalesce(p_occurred_at, p_created_at) < (p_selection).occurred_before)
           and ((p_selection).created_after is null or p_created_at >= (p_selection).created_after)
           and ((p_selection).created_before is null or p_created_at < (p_selection).created_before));
