-- Reverts revision 0007: recall_v1 and correct_v1 come back, and every
-- function gets its 0006 definition (includes resolve at revision 0006).

-- tombstone_from_sources_v1 has an SQL-standard body, which revision 0004
-- left on revision 0001's search_path.
{{search_path_0001}}
\ir ../schema/functions/tombstone_from_sources_v1.sql

{{pin_search_path}}

\ir ../schema/functions/recall_v1.sql
\ir ../schema/functions/correct_v1.sql
\ir ../schema/functions/correct_v2.sql
\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/invalidate_v1.sql
\ir ../schema/functions/recall_v2.sql
revoke execute on function {{schema}}.recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz) from public;
revoke execute on function {{schema}}.correct_v1(text, text, text, text, text, vector, timestamptz) from public;

-- A role that may call recall_v2 (correct_v2) may call recall_v1 (correct_v1)
-- again, as grant_app_role let it at revision 0006; the recreated functions
-- start with no grants.
do $$
declare
  grant_ record;
begin
  for grant_ in
    select distinct retired.signature, r.rolname
    from (values ('recall_v2', '{{schema}}.recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz)'),
                 ('correct_v2', '{{schema}}.correct_v1(text, text, text, text, text, vector, timestamptz)'))
         as retired (successor, signature)
    join pg_catalog.pg_proc p on p.proname = retired.successor and p.pronamespace = '{{schema}}'::regnamespace
    cross join lateral pg_catalog.aclexplode(p.proacl) a
    join pg_catalog.pg_roles r on r.oid = a.grantee  -- not PUBLIC (grantee 0)
    where a.privilege_type = 'EXECUTE' and a.grantee <> p.proowner
  loop
    execute pg_catalog.format('grant execute on function %s to %I', grant_.signature, grant_.rolname);
  end loop;
end $$;

reset search_path;
