-- Every live function but the tokenizer's (install.sql creates them before the
-- tables, whose text_tsv calls lexical_terms_v2), in
-- install order: SQL-language helpers before the functions whose SQL bodies
-- call them. Each file holds one function's whole definition. Revision 0007
-- (re)creates the functions listed here as they were at that revision.
\ir functions/install_info_v1.sql
\ir functions/tenant_access_v1.sql
\ir functions/is_blank_v1.sql
\ir functions/citus_installed_v1.sql
\ir functions/assert_scope_v1.sql
\ir functions/assert_embedding_v1.sql
\ir functions/assert_dimensions_v1.sql
\ir functions/assert_embedding_model_v1.sql
\ir functions/assert_time_v1.sql
\ir functions/is_injectable_v1.sql
\ir functions/lineage_is_valid_v1.sql
\ir functions/consent_is_valid_v1.sql
\ir functions/lock_key_v1.sql
\ir functions/lock_thread_v1.sql
\ir functions/get_working_v1.sql
\ir functions/update_working_v1.sql
\ir functions/tombstone_from_sources_v1.sql
\ir functions/unshare_v1.sql
\ir functions/remember_v1.sql
\ir functions/remember_batch_v1.sql
\ir functions/lexical_score_v1.sql
\ir functions/query_terms_v1.sql
\ir functions/query_terms_v2.sql
\ir functions/scoring_weights_v1.sql
\ir functions/recency_v1.sql
\ir functions/recall_v2.sql
\ir functions/share_with_v1.sql
\ir functions/invalidate_v1.sql
\ir functions/purge_v1.sql
\ir functions/set_consent_v1.sql
\ir functions/correct_v2.sql
\ir functions/retention_candidates_v1.sql
\ir functions/list_entries_v1.sql
\ir functions/count_entries_v1.sql
\ir functions/reembed_v1.sql
\ir functions/use_embedding_model_v1.sql
\ir functions/recall_guarded_v1.sql
\ir functions/rag_assert_scope_v1.sql
\ir functions/rag_assert_generation_v1.sql
\ir functions/rag_get_generation_v1.sql
\ir functions/rag_set_generation_v1.sql
\ir functions/rag_assert_dimensions_v1.sql
\ir functions/rag_assert_principal_v1.sql
\ir functions/rag_upsert_v1.sql
\ir functions/rag_delete_v1.sql
\ir functions/rag_set_source_access_v1.sql
\ir functions/rag_check_source_access_v1.sql
\ir functions/rag_where_v1.sql
\ir functions/rag_read_generation_v1.sql
\ir functions/rag_estimate_candidates_v1.sql
\ir functions/rag_query_v1.sql
\ir functions/rag_lexical_query_v1.sql
\ir functions/rag_get_by_source_v1.sql
