"""Every statement the Python sends: one ``select`` of one versioned SQL function each.

Arguments are named and cast (``fn(p_x => %s::text)``) so overloads never
become ambiguous; the schema and pgvector's ``vector`` type are quoted,
qualified identifiers rendered once per store, so the session's
``search_path`` never matters.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql


@dataclass(frozen=True, slots=True)
class Queries:
    get_working: sql.Composed
    update_working: sql.Composed
    remember: sql.Composed
    remember_batch: sql.Composed
    recall: sql.Composed
    invalidate: sql.Composed
    purge: sql.Composed
    erase_walk: sql.Composed
    purge_tombstoned: sql.Composed
    set_consent: sql.Composed
    correct: sql.Composed
    retention_candidates: sql.Composed
    list_entries: sql.Composed
    count_entries: sql.Composed
    list_resource_entries: sql.Composed
    count_resource_entries: sql.Composed
    invalidate_resource: sql.Composed
    purge_resource: sql.Composed
    set_retention_policy: sql.Composed
    get_retention_policy: sql.Composed
    reembed: sql.Composed
    share_with: sql.Composed
    rag_upsert: sql.Composed
    rag_query: sql.Composed
    rag_lexical_query: sql.Composed
    rag_get_by_source: sql.Composed
    rag_delete: sql.Composed
    rag_get_generation: sql.Composed
    rag_set_generation: sql.Composed
    rag_set_source_access: sql.Composed
    rag_check_source_access: sql.Composed
    use_embedding_model: sql.Composed


#: The columns of a RAG match (rag_query_v1, rag_lexical_query_v1), in order.
MATCH = "id, source_id, text, metadata, generation, access_version, score"
#: The arguments every RAG read shares after its own: the filter, the ACL reader, the generation.
READ_ARGS = (
    "p_filter => %s::jsonb, p_acl => %s::boolean, p_principal_id => %s::text, "
    "p_group_ids => %s::text[], p_generation => %s::bigint)"
)
#: The columns of a recall row (recall_v4), in order.
RECALL = ("kind, rank, resource_id, thread_id, id, text, metadata, sequence, importance, similarity, lexical, recency, score, "
          "created_at, updated_at")
#: The columns of ``entry_record_v2``, in order.
RECORD = ("id, text, metadata, sequence, importance, consent_source, consent_scope, consent_visible, consent_granted_at, "
          "consent_revoked_at, legal_hold, created_at, updated_at, invalidated, occurred_at")
#: A read's selection, as ``recall_v4``, ``list_entries_v3`` and ``list_resource_entries_v2`` take it.
SELECTION = ("p_filter => %s::jsonb, p_occurred_after => %s::timestamptz, p_occurred_before => %s::timestamptz, "
             "p_created_after => %s::timestamptz, p_created_before => %s::timestamptz")


def install_info_query(schema: str) -> sql.Composed:
    """``install_info_v1()``: schema revision, table, pinned dimension and pgvector's schema."""
    return sql.SQL("select schema_version, table_name, dimensions, vector_schema from {s}.install_info_v1()").format(
        s=sql.Identifier(schema)
    )


def build_queries(schema: str, vector_schema: str) -> Queries:
    """Render the named queries for ``schema`` (already validated); ``vector`` is qualified by ``vector_schema``."""
    s = sql.Identifier(schema)
    vector = sql.Identifier(vector_schema, "vector")

    def q(text: str) -> sql.Composed:
        return sql.SQL(text).format(s=s, vector=vector)

    return Queries(
        get_working=q(
            "select data, version, created_at, updated_at from {s}.get_working_v1("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text)"
        ),
        update_working=q(
            "select data, version, created_at, updated_at from {s}.update_working_v1("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, "
            "p_data => %s::jsonb, p_expected_version => %s::bigint)"
        ),
        remember=q(
            "select written, invalidated from {s}.remember_v3("
            "p_tenant_id => %b::text, p_resource_id => %b::text, p_thread_id => %b::text, "
            "p_ids => %b::text[], p_texts => %b::text[], p_embeddings => %b::{vector}[], "
            "p_metadata => %b::jsonb[], p_sequences => %b::bigint[], p_importance => %b::float8[], "
            "p_consent => %b::jsonb[], p_expires_at => %b::timestamptz[], p_ttl => %b::interval[], "
            "p_occurred_at => %b::timestamptz[], p_now => %b::timestamptz)"
        ),
        remember_batch=q(
            "select resource_id, thread_id, written, invalidated from {s}.remember_batch_v3("
            "p_tenant_id => %b::text, p_resource_ids => %b::text[], p_thread_ids => %b::text[], "
            "p_ids => %b::text[], p_texts => %b::text[], p_embeddings => %b::{vector}[], "
            "p_metadata => %b::jsonb[], p_sequences => %b::bigint[], p_importance => %b::float8[], "
            "p_consent => %b::jsonb[], p_expires_at => %b::timestamptz[], p_ttl => %b::interval[], "
            "p_occurred_at => %b::timestamptz[], p_now => %b::timestamptz)"
        ),
        recall=q(
            f"select {RECALL} from {{s}}.recall_v4("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, "
            "p_query_embedding => %b::{vector}, p_query_text => %s::text, "
            "p_top_k => %s::integer, p_message_range => %s::integer, p_require_consent => %s::boolean, "
            "p_share_parent_thread_id => %s::text, p_across_threads => %s::boolean, p_now => %s::timestamptz, "
            "p_recency_weight => %s::float8, p_importance_weight => %s::float8, p_half_life_ms => %s::float8, "
            f"p_explain => %s::boolean, p_model_id => %s::text, {SELECTION}, p_lexical_weight => %s::float8)"
        ),
        invalidate=q(
            "select entry_id from {s}.invalidate_v1("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, "
            "p_ids => %s::text[], p_reason => %s::text, p_now => %s::timestamptz)"
        ),
        purge=q(
            "select {s}.purge_v1("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, p_ids => %s::text[])"
        ),
        erase_walk=q(
            "select tombstoned, pending from {s}.erase_walk_v1("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, "
            "p_ids => %s::text[], p_reason => %s::text, p_now => %s::timestamptz)"
        ),
        purge_tombstoned=q(
            "select deleted, kept from {s}.purge_v2("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, p_ids => %s::text[])"
        ),
        set_consent=q(
            f"select {RECORD} from {{s}}.set_consent_v2("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, p_entry_id => %s::text, "
            "p_visible => %s::boolean, p_source => %s::text, p_scope => %s::text, "
            "p_granted_at => %s::timestamptz, p_revoked_at => %s::timestamptz, p_now => %s::timestamptz)"
        ),
        correct=q(
            f"select {RECORD} from {{s}}.correct_v3("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, p_entry_id => %s::text, "
            "p_text => %s::text, p_embedding => %b::{vector}, p_now => %s::timestamptz)"
        ),
        retention_candidates=q(
            "select entry_id, held from {s}.retention_candidates_v2("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, "
            "p_max_age_days => %s::float8, p_max_entries => %s::integer, p_batch_size => %s::integer, "
            "p_now => %s::timestamptz)"
        ),
        list_entries=q(
            f"select {RECORD} from {{s}}.list_entries_v3("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, "
            "p_after_sequence => %s::bigint, p_after_id => %s::text, p_limit => %s::integer, "
            f"p_exportable => %s::boolean, p_now => %s::timestamptz, {SELECTION})"
        ),
        count_entries=q(
            "select {s}.count_entries_v1(p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text)"
        ),
        list_resource_entries=q(
            "select thread_id, id, text, metadata, sequence, importance, consent_source, consent_scope, "
            "consent_visible, consent_granted_at, consent_revoked_at, legal_hold, created_at, updated_at, occurred_at "
            "from {s}.list_resource_entries_v2(p_tenant_id => %s::text, p_resource_id => %s::text, "
            "p_after_thread_id => %s::text, p_after_sequence => %s::bigint, p_after_id => %s::text, "
            f"p_limit => %s::integer, p_exportable => %s::boolean, p_now => %s::timestamptz, {SELECTION})"
        ),
        count_resource_entries=q(
            "select {s}.count_resource_entries_v1(p_tenant_id => %s::text, p_resource_id => %s::text)"
        ),
        invalidate_resource=q(
            "select thread_id, entry_id, sequence, held, picked from {s}.invalidate_resource_v1("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_after_thread_id => %s::text, "
            "p_after_sequence => %s::bigint, p_after_id => %s::text, p_limit => %s::integer, "
            "p_expired_only => %s::boolean, p_now => %s::timestamptz)"
        ),
        purge_resource=q(
            "select {s}.purge_resource_v1(p_tenant_id => %s::text, p_resource_id => %s::text, "
            "p_thread_ids => %s::text[], p_ids => %s::text[])"
        ),
        set_retention_policy=q(
            "select {s}.set_retention_policy_v1(p_tenant_id => %s::text, p_resource_id => %s::text, "
            "p_thread_id => %s::text, p_max_age_days => %s::float8, p_now => %s::timestamptz)"
        ),
        get_retention_policy=q(
            "select resource_max_age_days, thread_max_age_days from {s}.get_retention_policy_v1("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text)"
        ),
        reembed=q(
            "select {s}.reembed_v1("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_thread_id => %s::text, "
            "p_ids => %s::text[], p_texts => %s::text[], p_embeddings => %b::{vector}[])"
        ),
        share_with=q(
            "select {s}.share_with_v1("
            "p_tenant_id => %s::text, p_resource_id => %s::text, p_parent_thread_id => %s::text, "
            "p_child_resource_id => %s::text, p_child_thread_id => %s::text, p_source_ids => %s::text[], "
            "p_expires_at => %s::timestamptz, p_now => %s::timestamptz)"
        ),
        rag_upsert=q(
            "select {s}.rag_upsert_v1(p_tenant_id => %s::text, p_scope => %s::text, "
            "p_ids => %s::text[], p_source_ids => %s::text[], p_texts => %s::text[], "
            "p_embeddings => %b::{vector}[], p_metadata => %s::jsonb[], p_access_versions => %s::bigint[], "
            "p_generation => %s::bigint)"
        ),
        rag_query=q(
            f"select {MATCH} from {{s}}.rag_query_v1(p_tenant_id => %s::text, p_scope => %s::text, "
            f"p_embedding => %b::{{vector}}, p_top_k => %s::integer, {READ_ARGS}"
        ),
        rag_lexical_query=q(
            f"select {MATCH} from {{s}}.rag_lexical_query_v1(p_tenant_id => %s::text, p_scope => %s::text, "
            f"p_query_text => %s::text, p_top_k => %s::integer, {READ_ARGS}"
        ),
        rag_get_by_source=q(
            "select id, source_id, text, metadata, embedding, generation, access_version, created_at, updated_at "
            "from {s}.rag_get_by_source_v1(p_tenant_id => %s::text, p_scope => %s::text, p_source_id => %s::text, "
            "p_after_id => %s::text, p_limit => %s::integer, p_acl => %s::boolean, p_principal_id => %s::text, "
            "p_group_ids => %s::text[], p_generation => %s::bigint)"
        ),
        rag_delete=q(
            "select {s}.rag_delete_v1(p_tenant_id => %s::text, p_scope => %s::text, p_ids => %s::text[], "
            "p_source_id => %s::text, p_generation => %s::bigint)"
        ),
        rag_get_generation=q("select {s}.rag_get_generation_v1(p_tenant_id => %s::text, p_scope => %s::text)"),
        rag_set_generation=q(
            "select {s}.rag_set_generation_v1(p_tenant_id => %s::text, p_scope => %s::text, p_generation => %s::bigint)"
        ),
        rag_set_source_access=q(
            "select {s}.rag_set_source_access_v1(p_tenant_id => %s::text, p_source_id => %s::text, "
            "p_principal_ids => %s::text[], p_group_ids => %s::text[], p_access_version => %s::bigint)"
        ),
        use_embedding_model=q(
            "select {s}.use_embedding_model_v1(p_tenant_id => %s::text, p_resource_ids => %s::text[], "
            "p_thread_ids => %s::text[], p_model_id => %s::text, p_dimensions => %s::integer, p_switch => %s::boolean)"
        ),
        rag_check_source_access=q(
            "select {s}.rag_check_source_access_v1(p_tenant_id => %s::text, p_source_id => %s::text, "
            "p_principal_id => %s::text, p_group_ids => %s::text[], p_access_version => %s::bigint)"
        ),
    )
