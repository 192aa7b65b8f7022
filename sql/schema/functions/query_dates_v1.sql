-- A query's date terms (query_date_terms_v1 over p_terms) as recall_v4 reads
-- them against each entry (date_terms_v1): each term at the subscript of the
-- value it names, in its part's array; terms naming one value (sep, sept)
-- share it. NULL when no term names a part of a date (or p_terms is NULL).
create or replace function {{schema}}.query_dates_v1(p_terms text[])
returns {{schema}}.date_terms_v1
language plpgsql immutable
set search_path from current
as $$
declare
  v_term record;
  v_found boolean := false;
  v_months tsvector[];
  v_weekdays tsvector[];
  v_days tsvector[];
  v_years tsvector[];
begin
  for v_term in select d.term, d.part, d.value, array_to_tsvector(array[d.term]) as lexeme
                from query_date_terms_v1(p_terms) as d loop
    v_found := true;
    case v_term.part
      when 'month' then v_months[v_term.value] := coalesce(v_months[v_term.value], '') || v_term.lexeme;
      when 'weekday' then v_weekdays[v_term.value] := coalesce(v_weekdays[v_term.value], '') || v_term.lexeme;
      when 'day' then v_days[v_term.value] := coalesce(v_days[v_term.value], '') || v_term.lexeme;
      else v_years[v_term.value] := coalesce(v_years[v_term.value], '') || v_term.lexeme;
    end case;
  end loop;
  return case when v_found then row(v_months, v_weekdays, v_days, v_years)::{{schema}}.date_terms_v1 end;
end;
$$;
