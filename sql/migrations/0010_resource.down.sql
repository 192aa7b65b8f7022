-- Reverts revision 0010.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
drop function {{schema}}.assert_resource_cursor_v1(text, bigint, text);
drop function {{schema}}.count_resource_entries_v1(text, text);
drop function {{schema}}.invalidate_resource_v1(text, text, text, bigint, text, integer, timestamptz);
drop function {{schema}}.leaves_thread_v1(text);
drop function {{schema}}.list_resource_entries_v1(text, text, text, bigint, text, integer, boolean);
drop function {{schema}}.purge_resource_v1(text, text, text[], text[]);
drop function {{schema}}.recall_v3(text, text, text, vector, text, integer, integer, boolean, text, boolean, timestamptz,
                                  double precision, double precision, double precision, boolean);
\ir ../schema/functions/recall_v2.sql

reset search_path;
