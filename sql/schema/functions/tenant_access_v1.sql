-- Every API function calls this first. A role bound to tenants may act only
-- for those tenants: any other tenant raises PM016, inside the function,
-- whatever the caller passes. Such a role also gets the server's clock: the
-- result is now() whatever p_now it sent, so the rows it writes are stamped,
-- aged by retention and checked against share-grant expiry on the server's
-- time. A role with no binding (the owner, a trusted service) keeps its p_now.
--
-- The session's login role (session_user) is bound when it, or any role it
-- is a member of (may SET ROLE to), has rows in the tenant binding table (by
-- role OID, so a rename keeps them; prism_memory.schema.grant_app_role writes
-- them): a member of a bound group is held to the group's tenants, however it
-- calls. A superuser is never bound. Row-level security
-- is off for the lookup: if someone forces it on the binding table, every
-- call fails rather than read no binding and trust the caller.
create or replace function {{schema}}.tenant_access_v1(p_tenant_id text, p_now timestamptz)
returns timestamptz
language plpgsql stable
set search_path from current
set row_security = off
as $$
declare
  v_bound boolean;
  v_allowed boolean;
begin
  if (select r.rolsuper from pg_catalog.pg_roles r where r.rolname = session_user) then
    return p_now;  -- a superuser is a member of every role, and bound by none
  end if;
  select count(*) > 0, coalesce(bool_or(b.tenant_id = p_tenant_id), false)
  into v_bound, v_allowed
  from {{tenant_binding}} b
  where case when exists (select 1 from pg_catalog.pg_roles r where r.oid = b.role_oid)
             then pg_catalog.pg_has_role(session_user, b.role_oid, 'MEMBER')
             else false end;  -- a dropped role's leftover rows bind nobody
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
