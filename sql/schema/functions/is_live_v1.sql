-- Whether an entry has not expired at p_now: created at p_cutoff or later
-- (retention_cutoff_v1: its stored retention policies) and its own
-- expires_at, if any, still ahead. Inlined into the queries that use it; the
-- emulator's _Row.live mirrors it.
create or replace function {{schema}}.is_live_v1(
  p_created_at timestamptz, p_expires_at timestamptz, p_cutoff timestamptz, p_now timestamptz)
returns boolean
language sql immutable parallel safe
return p_created_at >= p_cutoff and (p_expires_at is null or p_expires_at > p_now);
