-- Reverts revision 0010: text_tsv of both tables holds lexical_terms_v1 again
-- (each table rewritten once, as on upgrade), recall_v2 and
-- rag_lexical_query_v1 score by query_terms_v1, and tokenizer v2 and its
-- dictionary are dropped (each function before those its SQL body names).

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
alter table {{entries}} drop column text_tsv;
alter table {{entries}} add column text_tsv tsvector generated always as
  (array_to_tsvector({{schema}}.lexical_terms_v1(text))) stored;
create index {{entries_tsv_idx}} on {{entries}} using gin (text_tsv);
alter table {{rag_chunk}} drop column text_tsv;
alter table {{rag_chunk}} add column text_tsv tsvector generated always as
  (array_to_tsvector({{schema}}.lexical_terms_v1(text))) stored;
create index {{rag_chunk_tsv_idx}} on {{rag_chunk}} using gin (text_tsv);
drop function {{schema}}.query_terms_v2(text);
drop function {{schema}}.lexical_terms_v2(text);
drop function {{schema}}.lexical_tokens_v2(text);
drop function {{schema}}.lexical_cjk_tokens_v2(text);
drop text search dictionary {{schema}}.porter_stem_v1;
\ir ../schema/functions/lexical_terms_v1.sql
\ir ../schema/functions/query_terms_v1.sql
\ir ../schema/functions/rag_lexical_query_v1.sql
\ir ../schema/functions/recall_v2.sql

reset search_path;
