-- Reverts revision 0009.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
drop function {{schema}}.citus_installed_v1();
drop function {{schema}}.lock_key_v1(text, bigint);
\ir ../schema/functions/lock_thread_v1.sql
\ir ../schema/functions/rag_query_v1.sql
\ir ../schema/functions/rag_set_generation_v1.sql
\ir ../schema/functions/rag_upsert_v1.sql
\ir ../schema/functions/recall_v2.sql
\ir ../schema/functions/remember_batch_v1.sql
\ir ../schema/functions/remember_v1.sql
\ir ../schema/functions/tombstone_from_sources_v1.sql
\ir ../schema/functions/update_working_v1.sql

reset search_path;
