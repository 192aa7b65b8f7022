-- Reverts revision 0008: every function it changed goes back to its 0007
-- definition, then the functions and the table it added go.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/correct_v2.sql
\ir ../schema/functions/count_entries_v1.sql
\ir ../schema/functions/get_working_v1.sql
\ir ../schema/functions/invalidate_v1.sql
\ir ../schema/functions/lock_thread_v1.sql
\ir ../schema/functions/list_entries_v1.sql
\ir ../schema/functions/purge_v1.sql
\ir ../schema/functions/rag_check_source_access_v1.sql
\ir ../schema/functions/rag_delete_v1.sql
\ir ../schema/functions/rag_get_by_source_v1.sql
\ir ../schema/functions/rag_get_generation_v1.sql
\ir ../schema/functions/rag_lexical_query_v1.sql
\ir ../schema/functions/rag_query_v1.sql
\ir ../schema/functions/rag_set_generation_v1.sql
\ir ../schema/functions/rag_set_source_access_v1.sql
\ir ../schema/functions/rag_upsert_v1.sql
\ir ../schema/functions/recall_v2.sql
\ir ../schema/functions/reembed_v1.sql
\ir ../schema/functions/remember_batch_v1.sql
\ir ../schema/functions/remember_v1.sql
\ir ../schema/functions/retention_candidates_v1.sql
\ir ../schema/functions/set_consent_v1.sql
\ir ../schema/functions/share_with_v1.sql
\ir ../schema/functions/update_working_v1.sql
drop function {{schema}}.tenant_access_v1(text, timestamptz);
drop function {{schema}}.query_terms_v1(text);
drop function {{schema}}.unshare_v1(text, text, text, text[]);
drop table {{tenant_binding}};

reset search_path;
