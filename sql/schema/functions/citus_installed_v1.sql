-- True where Citus is loaded and installed in this database (its metadata
-- catalog exists), so the tables may be distributed (prism_memory.citus):
-- recall_v3 and rag_query_v1 then take the paths Citus can route. Plain
-- PostgreSQL, and a database without the extension on a server that preloads
-- Citus, answer false.
create or replace function {{schema}}.citus_installed_v1() returns boolean
language sql stable parallel safe
return pg_catalog.current_setting('citus.version', true) is not null
       and pg_catalog.to_regclass('pg_catalog.pg_dist_partition') is not null;
