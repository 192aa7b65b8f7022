-- prism-memory schema revision 0007: the head schema becomes the source.
--
-- From this revision on, every function's live definition is the file
-- sql/schema/functions/<name>.sql, with its attributes in its CREATE
-- statement; this revision (re)creates all of them from there (as they were
-- at 0007: see prism_memory/sql_source.py). 0007_head.schema.diff shows what
-- changed; every body and attribute stays as 0006 had it but for:
--
-- * recall_v1 and correct_v1 are retired: dropped, with their grants.
--   recall_v2 answers every recall_v1 call (same arguments, plus optional
--   ones); correct_v2 replaces correct_v1, whose entry could stay injectable
--   in a lineage cycle. correct_v2 no longer calls correct_v1: its body now
--   does the whole correction.
-- * tombstone_from_sources_v1 (an SQL-standard body, which 0004's pinning
--   skipped) runs on the pinned search_path like every other function.
-- * install_info_v1 reports schema revision 7.
--
-- Frozen once released: a later change to a function ships as that
-- revision's NNNN_<name>.schema.diff (docs/architecture.md).

{{pin_search_path}}

drop function {{schema}}.recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz);
drop function {{schema}}.correct_v1(text, text, text, text, text, vector, timestamptz);

\ir ../schema/functions/lexical_terms_v1.sql
\ir ../schema/functions.sql

reset search_path;
