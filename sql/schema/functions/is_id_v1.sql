-- The id rule: whether p_value is a non-blank string (is_blank_v1) of at most
-- p_max_bytes UTF-8 bytes; NULL is not. 256 bytes for tenant, resource,
-- thread, RAG scope, principal, group and embedding model ids, 512 for entry,
-- chunk and source ids. Inlined into the queries that use it;
-- prism_memory.checks.check_id mirrors it.
create or replace function {{schema}}.is_id_v1(p_value text, p_max_bytes integer) returns boolean
language sql immutable parallel safe
return p_value is not null and not {{schema}}.is_blank_v1(p_value) and octet_length(p_value) <= p_max_bytes;
