-- prism-memory schema revision 0014: citus_plan_cache. recall_v3 no longer
-- sets every statement of a call on a distributed install to be planned per
-- call: the plan mode is the one prism_memory.citus.distribute() sets on every
-- API function, on every node (auto where Citus reuses the local plans it
-- caches, force_custom_plan where it leaks them: docs/scaling.md). With auto,
-- a recall's single-shard statements run from cached plans, about a third
-- faster than planned per call. Plain PostgreSQL runs the same body as before.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/recall_v3.sql

reset search_path;
