-- prism-memory schema revision 0003: composite recall scoring and explanations
-- (seed: "Composite recall scoring (opt-in)", "Outputs / response / events").
--
-- recall_v2 is recall_v1 plus opt-in scoring and explain; recall_v1 stays for
-- callers that use it. Template rules as in 0001; frozen once released.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql

\ir ../schema/functions/scoring_weights_v1.sql

\ir ../schema/functions/recency_v1.sql

\ir ../schema/functions/recall_v2.sql

reset search_path;
