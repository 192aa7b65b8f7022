-- prism-memory schema revision 0005: correct_v2.
--
-- correct_v1 invalidates the corrected entry's dependents but never the entry
-- itself; in a lineage cycle (a derived from c, c derived from a) that left the
-- entry injectable although one of its own sources had just been invalidated.
-- correct_v2 re-derives the corrected entry from its sources afterwards
-- ("multi-source facts stay injectable only if none of their sources are
-- invalidated"). correct_v1 stays for direct callers. Template rules as in
-- 0001; frozen once released.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql

\ir ../schema/functions/correct_v2.sql

revoke execute on function {{schema}}.correct_v2(text, text, text, text, text, vector, timestamptz) from public;
alter function {{schema}}.correct_v2(text, text, text, text, text, vector, timestamptz) security definer;

reset search_path;
