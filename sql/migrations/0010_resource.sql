-- prism-memory schema revision 0010: resource. Recall across a user's threads
-- as far as consent allows, and the resource-wide lifecycle:
-- * recall_v3 (new): recall_v2's arguments plus p_across_threads, which
--   searches every thread of the tenant and resource: the thread's own entries
--   and, from its other threads, those whose consent scope lets them leave
--   (leaves_thread_v1, new: 'profile' or 'user'; legacy entries stay);
-- * recall_v2 answers through recall_v3's body (p_across_threads false), with
--   the same rows as before;
-- * list_resource_entries_v1, count_resource_entries_v1 (new): a resource's
--   entries across its threads, by a (thread, sequence, id) cursor
--   (assert_resource_cursor_v1, new), and their count;
-- * invalidate_resource_v1, purge_resource_v1 (new): erase a resource in
--   bounded, resumable batches (tombstones first, then bodies; holds kept).

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/assert_resource_cursor_v1.sql
\ir ../schema/functions/count_resource_entries_v1.sql
\ir ../schema/functions/invalidate_resource_v1.sql
\ir ../schema/functions/leaves_thread_v1.sql
\ir ../schema/functions/list_resource_entries_v1.sql
\ir ../schema/functions/purge_resource_v1.sql
\ir ../schema/functions/recall_v3.sql
\ir ../schema/functions/recall_v2.sql
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
