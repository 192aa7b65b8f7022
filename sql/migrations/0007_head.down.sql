-- Reverts revision 0007: recall_v1 and correct_v1 come back, and every
-- function gets its 0006 definition (includes resolve at revision 0006).

-- tombstone_from_sources_v1 has an SQL-standard body, which revision 0004
-- left on revision 0001's search_path.
{{search_path_0001}}
\ir ../schema/functions/tombstone_from_sources_v1.sql

{{pin_search_path}}

\ir ../schema/functions/recall_v1.sql
\ir ../schema/functions/correct_v1.sql
\ir ../schema/functions/correct_v2.sql
\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/invalidate_v1.sql
\ir ../schema/functions/recall_v2.sql
revoke execute on function {{schema}}.recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz) from public;
revoke execute on function {{schema}}.correct_v1(text, text, text, text, text, vector, timestamptz) from public;

reset search_path;
