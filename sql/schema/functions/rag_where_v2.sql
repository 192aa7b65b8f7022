-- The WHERE clause every RAG read shares, over the chunk alias c, as fixed SQL
-- text (never built from input): $1 tenant, $2 scope, $3 generation, $4 the
-- filter as a containment document (p_contains: c.metadata @> $4, through
-- the GIN index), $5 principal, $6 groups, with p_sources $7, the sources the
-- reader holds grants on (a narrowing the ACL EXISTS implies, so a reader of
-- few sources reads the scope through the source index), and $10 the filter
-- compiled by metadata_filter_v1 (p_path: c.metadata @@ $10). A filter can
-- only narrow. The filter and the ACL's indexed EXISTS are included only when
-- used, so each read is planned for exactly the rules it applies. A chunk is
-- readable under ACL when the principal or one of its groups holds a grant on
-- its source at the chunk's access_version or newer; a missing grant or an
-- unresolved version denies. (rag_where_v1 had no p_path.)
create or replace function {{schema}}.rag_where_v2(p_contains boolean, p_path boolean, p_acl boolean,
                                                   p_sources boolean default false)
returns text
language sql immutable
return 'c.tenant_id = $1 and c.scope = $2 and c.generation = $3'
  || case when p_contains then ' and c.metadata @> $4' else '' end
  || case when p_path then ' and c.metadata @@ $10' else '' end
  || case when p_acl then
       ' and exists (select 1 from {{rag_source_acl}} a'
       || ' where a.tenant_id = $1 and a.source_id = c.source_id'
       || ' and ((a.grantee_kind = ''principal'' and a.grantee_id = $5)'
       || ' or (a.grantee_kind = ''group'' and a.grantee_id = any($6)))'
       || ' and a.access_version >= coalesce(c.access_version, 0))'
     else '' end
  || case when p_sources then ' and c.source_id = any($7)' else '' end;
