-- Every API function calls this first. A role bound to tenants (rows of the
-- tenant binding table for the role the session logged in as; see
-- prism_memory.schema.bind_role_tenants) may act only for those tenants:
-- any other tenant raises PM016, inside the function, whatever the caller
-- passes. Such a role also gets the server's clock: the result is now()
-- whatever p_now it sent, so it can neither backdate nor future-date what it
-- writes, nor read past a share grant's expiry. A role with no binding (the
-- owner, a trusted service) keeps its own p_now.
create or replace function {{schema}}.tenant_access_v1(p_tenant_id text, p_now timestamptz)
returns timestamptz
language plpgsql stable
set search_path from current
as $$
declare
  v_bound boolean;
  v_allowed boolean;
begin
  select count(*) > 0, coalesce(bool_or(b.tenant_id = p_tenant_id), false)
  into v_bound, v_allowed
  from {{tenant_binding}} b
  where b.role_name = session_user::text;
  if not v_bound then
    return p_now;
  end if;
  if not v_allowed then
    raise exception 'role % may not act for tenant %', session_user, coalesce(quote_literal(p_tenant_id), 'NULL')
      using errcode = 'PM016';
  end if;
  return now();
end;
$$;
