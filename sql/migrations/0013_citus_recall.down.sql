-- Reverts revision 0013.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
drop function {{schema}}.recall_bounds_v1(text, text, text, vector, tsquery, boolean, timestamptz, timestamptz, integer);
drop function {{schema}}.recall_rescore_v1(text, text, text, tid[], vector, text[], tsquery);
drop function {{schema}}.recall_rows_v1(text, tid[]);
\ir ../schema/functions/recall_v3.sql
\ir ../schema/functions/retention_cutoff_v1.sql

reset search_path;
