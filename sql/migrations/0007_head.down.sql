-- Reverts revision 0007: recall_v1 and correct_v1 come back, and correct_v2,
-- install_info_v1 and tombstone_from_sources_v1 get their 0006 definitions,
-- each as its released revision file wrote it, with the attributes and
-- privileges revisions 0004-0005 gave them. Every other function keeps its
-- definition (0007 did not change them).

-- tombstone_from_sources_v1 has an SQL-standard body, which revision 0004
-- left on revision 0001's search_path.
select pg_catalog.set_config(
  'search_path',
  pg_catalog.format('%I, %I, pg_catalog', {{schema_literal}},
    (select n.nspname from pg_catalog.pg_extension x
     join pg_catalog.pg_namespace n on n.oid = x.extnamespace
     where x.extname = 'vector')),
  false);
\history 0001 tombstone_from_sources_v1

{{pin_search_path}}

\history 0001 recall_v1
\history 0001 correct_v1
\history 0005 correct_v2
\history 0006 install_info_v1
alter function {{schema}}.recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz) security definer;
alter function {{schema}}.correct_v1(text, text, text, text, text, vector, timestamptz) security definer;
alter function {{schema}}.correct_v2(text, text, text, text, text, vector, timestamptz) security definer;
revoke execute on function {{schema}}.recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz) from public;
revoke execute on function {{schema}}.correct_v1(text, text, text, text, text, vector, timestamptz) from public;

reset search_path;
