-- Recency of an entry created at p_created_at, at p_now:
-- 0.5 ^ (max(0, age in ms) / p_half_life_ms), the age exact to the
-- microsecond; 0 past 1074 half-lives, where the power underflows (tested
-- as age / 1074 > half-life, which cannot overflow).
create or replace function {{schema}}.recency_v1(p_now timestamptz, p_created_at timestamptz, p_half_life_ms double precision)
returns double precision
language sql immutable parallel safe
return (select case when v.age_ms / 1074 > p_half_life_ms then 0::float8
                    else power(0.5::float8, v.age_ms / p_half_life_ms) end
        from (select greatest(0::float8, (extract(epoch from (p_now - p_created_at)) * 1000)::float8)
                     as age_ms) as v);
