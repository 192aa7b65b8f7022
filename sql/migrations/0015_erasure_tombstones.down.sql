-- Reverts revision 0015.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/invalidate_v1.sql
\ir ../schema/functions/set_consent_v1.sql

reset search_path;
