-- Whether an entry has not expired at p_now, it and its lineage sources
-- alike ("a fact dies with its sources"): the oldest of its created_at and
-- p_sources_created_at (its sources', transitively, kept by lineage_expiry_v1)
-- is at p_cutoff or later (retention_cutoff_v1: the stored retention
-- policies; a source shares its dependent's thread, so one cutoff covers
-- both), and the earliest of its expires_at and p_sources_expire_at, if any,
-- is still ahead. Two columns of the row, no walk: inlined into the queries
-- that use it; the emulator's EmulatorState._live mirrors it. Written as one
-- comparison per column (not least()) so the planner estimates each from the
-- column's statistics (the lineage columns are mostly NULL): a default guess
-- would turn the travellers' HNSW probe into a sequential scan.
create or replace function {{schema}}.is_live_v2(
  p_created_at timestamptz, p_expires_at timestamptz, p_sources_created_at timestamptz,
  p_sources_expire_at timestamptz, p_cutoff timestamptz, p_now timestamptz)
returns boolean
language sql immutable parallel safe
return p_created_at >= p_cutoff
       and (p_sources_created_at is null or p_sources_created_at >= p_cutoff)
       and (p_expires_at is null or p_expires_at > p_now)
       and (p_sources_expire_at is null or p_sources_expire_at > p_now);
