-- Reverts revision 0010.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
drop function {{schema}}.leaves_thread_v1(text);
drop function {{schema}}.recall_v3(text, text, text, vector, text, integer, integer, boolean, text, boolean,
                                  timestamptz, double precision, double precision, double precision, boolean);
\ir ../schema/functions/recall_v2.sql

reset search_path;
