-- The words that name a month or a weekday, as tokenizer v2 stems them, each
-- with what it names ('month:1' .. 'month:12', 'weekday:1' .. 'weekday:7'):
-- the English names and jan ... dec, sept, mon, tue, tues, thu, thur, thurs
-- (not wed, fri, sat or sun: the stems of wedding, fried, sat and sun); may
-- stems to mai, so the modal verb names May too. A constant, folded into the
-- queries that use it (query_date_terms_v1, might_name_a_date_v1).
create or replace function {{schema}}.date_words_v1()
returns jsonb
language sql immutable parallel safe
return '{"januari": "month:1", "jan": "month:1", "februari": "month:2", "feb": "month:2",
       "march": "month:3", "mar": "month:3", "april": "month:4", "apr": "month:4",
       "mai": "month:5", "june": "month:6", "jun": "month:6", "juli": "month:7",
       "jul": "month:7", "august": "month:8", "aug": "month:8", "septemb": "month:9",
       "sep": "month:9", "sept": "month:9", "octob": "month:10", "oct": "month:10",
       "novemb": "month:11", "nov": "month:11", "decemb": "month:12", "dec": "month:12",
       "mondai": "weekday:1", "mon": "weekday:1", "tuesdai": "weekday:2", "tue": "weekday:2",
       "wednesdai": "weekday:3", "thursdai": "weekday:4", "thu": "weekday:4",
       "thur": "weekday:4", "fridai": "weekday:5", "saturdai": "weekday:6",
       "sundai": "weekday:7"}'::jsonb;
