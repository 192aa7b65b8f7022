-- A read's selection (selection_v1) from its arguments: p_filter compiled by
-- metadata_filter_v1 (PM019 for a bad filter; NULL: no filter), and the four
-- window bounds, each NULL (open) or a time between years 1 and 9999 (PM008
-- otherwise: infinity is no bound). An empty window (after >= before) keeps
-- nothing, as asked. NULL when nothing is selected.
create or replace function {{schema}}.recall_selection_v1(
  p_filter jsonb, p_occurred_after timestamptz, p_occurred_before timestamptz,
  p_created_after timestamptz, p_created_before timestamptz)
returns {{schema}}.selection_v1
language plpgsql immutable
set search_path from current
as $$
declare
  v_bound record;
  v_path jsonpath;
begin
  for v_bound in
    select b.label, b.value
    from (values ('occurred_after', p_occurred_after), ('occurred_before', p_occurred_before),
                 ('created_after', p_created_after), ('created_before', p_created_before)) as b(label, value)
    where b.value is not null
      and not (b.value between '0001-01-02 00:00:00+00'::timestamptz and '9999-12-30 00:00:00+00'::timestamptz)
  loop
    raise exception '% must be a time between years 1 and 9999, got %', v_bound.label, v_bound.value
      using errcode = 'PM008';
  end loop;
  if p_filter is null and p_occurred_after is null and p_occurred_before is null and p_created_after is null
     and p_created_before is null then
    return null;
  end if;
  if p_filter is not null then
    v_path := metadata_filter_v1(p_filter);
  end if;
  return row(v_path, p_occurred_after, p_occurred_before, p_created_after, p_created_before)::{{schema}}.selection_v1;
end;
$$;
