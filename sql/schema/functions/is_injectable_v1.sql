-- Whether an entry may reach a prompt, an export or telemetry by its own
-- columns (tombstones are checked separately, with an indexed NOT EXISTS):
-- visible, not revoked, not under legal hold, and explicitly consented when
-- p_require_consent. Inlined into the queries that use it.
create or replace function {{schema}}.is_injectable_v1(
  p_visible boolean, p_revoked_at timestamptz, p_legal_hold boolean, p_consent_source text,
  p_require_consent boolean)
returns boolean
language sql immutable parallel safe
return p_visible and p_revoked_at is null and not p_legal_hold
       and (not p_require_consent or p_consent_source is not null);
