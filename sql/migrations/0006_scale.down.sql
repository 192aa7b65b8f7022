-- Reverts revision 0006: remember_batch_v1 goes, and recall_v2 and
-- invalidate_v1 get back their 0005 definitions.

{{pin_search_path}}

drop function if exists {{schema}}.remember_batch_v1(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz);
\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/recall_v2.sql
\ir ../schema/functions/invalidate_v1.sql

reset search_path;
