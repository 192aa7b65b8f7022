-- prism-memory schema revision 0015: erasure_tombstones. A grant
-- (set_consent_v1 with visible true) no longer clears an erasure's tombstone
-- (reason deleted, expired or held), and invalidate_v1 with an erasure's
-- reason replaces another reason on an entry's tombstone. A forget or a
-- retention sweep tombstones its entries in one transaction and deletes them
-- in the next: a grant in between made the delete fail (PM012) and left the
-- entry recallable, and a grant after an erasure that stopped there (a crash,
-- a failing on_invalidate hook) brought the entry back. Found by a hostile
-- review through the MCP server's forget and set_consent tools.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/invalidate_v1.sql
\ir ../schema/functions/set_consent_v1.sql

reset search_path;
