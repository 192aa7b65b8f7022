-- A consent object: absent, or {"source", "scope", "visible", "grantedAt",
-- "revokedAt"} holding the documented values (missing keys take the
-- defaults user / thread / visible).
create or replace function {{schema}}.consent_is_valid_v1(p_consent jsonb) returns boolean
language sql immutable parallel safe
return p_consent is null or (
  jsonb_typeof(p_consent) = 'object'
  and coalesce(p_consent ->> 'source', 'user') in ('user', 'agent', 'system')
  and coalesce(p_consent ->> 'scope', 'thread') in ('thread', 'profile', 'user')
  and jsonb_typeof(coalesce(p_consent -> 'visible', 'true')) = 'boolean'
  and jsonb_typeof(coalesce(p_consent -> 'grantedAt', 'null')) in ('string', 'null')
  and jsonb_typeof(coalesce(p_consent -> 'revokedAt', 'null')) in ('string', 'null'));
