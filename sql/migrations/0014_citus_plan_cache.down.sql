-- Reverts revision 0014.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/recall_v3.sql

reset search_path;
