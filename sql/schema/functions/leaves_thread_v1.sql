-- Whether an entry's consent lets it leave its thread: consent scope
-- 'profile' or 'user' may be recalled in every thread of its tenant and
-- resource (recall_v3 with p_across_threads); 'thread', and a legacy entry
-- without consent (NULL), stay in their thread. Inlined into the queries that
-- use it. prism_memory.types.TRAVELLING_SCOPES mirrors it.
create or replace function {{schema}}.leaves_thread_v1(p_consent_scope text) returns boolean
language sql immutable parallel safe
return coalesce(p_consent_scope in ('profile', 'user'), false);
