-- Reverts revision 0012 (and brings back revision 0011's recall_guarded_v1).

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
drop function {{schema}}.assert_now_v1(timestamptz);
drop function {{schema}}.assert_resource_cursor_v1(text, bigint, text);
drop function {{schema}}.count_resource_entries_v1(text, text);
drop function {{schema}}.get_retention_policy_v1(text, text, text);
drop function {{schema}}.invalidate_resource_v1(text, text, text, bigint, text, integer, boolean, timestamptz);
drop function {{schema}}.is_live_v1(timestamptz, timestamptz, timestamptz, timestamptz);
drop function {{schema}}.leaves_thread_v1(text);
drop function {{schema}}.list_entries_v2(text, text, text, bigint, text, integer, boolean, timestamptz);
drop function {{schema}}.list_resource_entries_v1(text, text, text, bigint, text, integer, boolean, timestamptz);
drop function {{schema}}.purge_resource_v1(text, text, text[], text[]);
drop function {{schema}}.recall_top_v1({{schema}}.recall_probe_v1[], text, text, text[], tsquery, timestamptz, timestamptz, integer);
drop function {{schema}}.recall_v3(text, text, text, vector, text, integer, integer, boolean, text, boolean, timestamptz,
                                  double precision, double precision, double precision, boolean, text);
drop function {{schema}}.remember_batch_v2(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[],
                                          jsonb[], timestamptz[], interval[], timestamptz);
drop function {{schema}}.remember_v2(text, text, text, text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[],
                                    timestamptz[], interval[], timestamptz);
drop function {{schema}}.retention_candidates_v2(text, text, text, double precision, integer, integer, timestamptz);
drop function {{schema}}.retention_cutoff_v1(text, text, text, timestamptz);
drop function {{schema}}.set_retention_policy_v1(text, text, text, double precision, timestamptz);
\ir ../schema/functions/assert_embedding_model_v1.sql
\ir ../schema/functions/list_entries_v1.sql
\ir ../schema/functions/recall_v2.sql
\ir ../schema/functions/remember_batch_v1.sql
\ir ../schema/functions/remember_v1.sql
\ir ../schema/functions/recall_guarded_v1.sql
drop index {{schema}}.{{entries_travel_idx}};
drop type {{schema}}.recall_probe_v1;
drop type {{schema}}.recall_candidate_v1;
drop table {{retention_policy}};
alter table {{entries}} drop column expires_at;
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
