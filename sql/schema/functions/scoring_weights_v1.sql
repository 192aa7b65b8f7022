-- The normalised weights of a scoring request (similarity, recency,
-- importance), or NULLs when neither weight is given (plain recall). Raises
-- PM015 unless each given weight is finite and within [0, 1] and, when a
-- recency weight is given, p_half_life_ms is a positive finite number.
-- Similarity keeps what remains of 1; weights summing over 1 are scaled down
-- to sum 1 (similarity 0).
create or replace function {{schema}}.scoring_weights_v1(
  p_recency_weight double precision, p_importance_weight double precision, p_half_life_ms double precision,
  out similarity_weight double precision, out recency_weight double precision,
  out importance_weight double precision)
language plpgsql immutable
set search_path from current
as $$
declare
  v_total double precision;
begin
  if p_recency_weight is not null and not (p_recency_weight between 0 and 1) then
    raise exception 'recency_weight must be a finite number within [0, 1], got %', p_recency_weight
      using errcode = 'PM015';
  end if;
  if p_importance_weight is not null and not (p_importance_weight between 0 and 1) then
    raise exception 'importance_weight must be a finite number within [0, 1], got %', p_importance_weight
      using errcode = 'PM015';
  end if;
  if p_recency_weight is not null and p_half_life_ms is null then
    raise exception 'half_life_ms is required with a recency weight' using errcode = 'PM015';
  end if;
  if p_half_life_ms is not null
     and not (p_half_life_ms > 0 and p_half_life_ms < 'Infinity'::double precision) then
    raise exception 'half_life_ms must be a positive finite number, got %', p_half_life_ms
      using errcode = 'PM015';
  end if;
  if p_recency_weight is null and p_importance_weight is null then
    return;
  end if;
  recency_weight := coalesce(p_recency_weight, 0);
  importance_weight := coalesce(p_importance_weight, 0);
  v_total := recency_weight + importance_weight;
  if v_total > 1 then
    recency_weight := recency_weight / v_total;
    importance_weight := importance_weight / v_total;
    similarity_weight := 0;
  else
    similarity_weight := 1 - v_total;
  end if;
end;
$$;
