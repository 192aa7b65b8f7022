-- prism-memory schema revision 0010: lexical_v2. The lexical leg finds
-- morphological variants and CJK substrings (issue 15):
-- * lexical_terms_v2, query_terms_v2, lexical_tokens_v2 and
--   lexical_cjk_tokens_v2 (new) are tokenizer v2: v1's splitting, ASCII
--   lower-casing and stopwords, then Porter stems of ASCII words (the new
--   text search dictionary porter_stem_v1, sql/schema/text_search.sql),
--   overlapping character bigrams of Han, Hiragana, Katakana and Hangul
--   runs, other terms over 64 characters cut to 64 instead of dropped, and
--   the first 100,000 characters read (200,000 in v1);
-- * text_tsv of the entries and of the RAG chunks holds lexical_terms_v2:
--   the column is dropped and added again (Citus refuses ALTER COLUMN ...
--   SET EXPRESSION on a distributed table), which rewrites each table once
--   and rebuilds its indexes under an ACCESS EXCLUSIVE lock, then its GIN
--   index is built again (the cost on a large table: docs/sql.md, "Revision
--   0010 on a large table");
-- * recall_v2 and rag_lexical_query_v1 score by query_terms_v2;
-- * lexical_terms_v1 and query_terms_v1 stay (the hash embedder's features),
--   with comments saying so.
-- The functions are created in the order their SQL bodies name each other.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/text_search.sql
\ir ../schema/functions/lexical_cjk_tokens_v2.sql
\ir ../schema/functions/lexical_tokens_v2.sql
\ir ../schema/functions/lexical_terms_v2.sql
\ir ../schema/functions/query_terms_v2.sql
\ir ../schema/functions/lexical_terms_v1.sql
\ir ../schema/functions/query_terms_v1.sql
\ir ../schema/functions/rag_lexical_query_v1.sql
\ir ../schema/functions/recall_v2.sql

alter table {{entries}} drop column text_tsv;
alter table {{entries}} add column text_tsv tsvector generated always as
  (array_to_tsvector({{schema}}.lexical_terms_v2(text))) stored;
create index {{entries_tsv_idx}} on {{entries}} using gin (text_tsv);
alter table {{rag_chunk}} drop column text_tsv;
alter table {{rag_chunk}} add column text_tsv tsvector generated always as
  (array_to_tsvector({{schema}}.lexical_terms_v2(text))) stored;
create index {{rag_chunk_tsv_idx}} on {{rag_chunk}} using gin (text_tsv);

revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
