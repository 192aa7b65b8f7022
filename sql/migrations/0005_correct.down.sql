-- Reverts revision 0005.

{{pin_search_path}}

drop function if exists {{schema}}.correct_v2(text, text, text, text, text, vector, timestamptz);
\ir ../schema/functions/install_info_v1.sql

reset search_path;
