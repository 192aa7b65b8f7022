-- Whether a query's terms (p_terms, as query_terms_v2 gives them) may name a
-- part of a date: one of them is a date word (date_words_v1) or starts with a
-- digit. A cheap test that spares most queries query_dates_v1; false does not
-- miss a date term (query_date_terms_v1 finds none then). One expression,
-- inlined into the statement that uses it.
create or replace function {{schema}}.might_name_a_date_v1(p_terms text[])
returns boolean
language sql immutable parallel safe
return {{schema}}.date_words_v1() ?| p_terms or array_to_string(p_terms, ' ') ~ '(^| )[0-9]';
