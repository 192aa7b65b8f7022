"""recall_filters: the metadata filter language (metadata_filter_v1 compiles a filter into a strict jsonpath
predicate, PM019 for a bad one), and the RAG reads (rag_query_v1, rag_lexical_query_v1) on it: @> for a plain
containment document, @@ for any other filter (rag_where_v2).

Revision ID: 0018
Revises: 0017
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0018", "0017"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
