"""recall_filters: a metadata filter language (metadata_filter_v1, PM019), time windows and event time (occurred_at) applied by recall_v4, list_entries_v3 and list_resource_entries_v2 before the top_k cut, recall_v4's lexical weight and its lexical leg's date terms (query_date_terms_v1, lexical_score_v2: a query's month, weekday, year or day matches an entry's event date), and the RAG reads on the filter language.

Revision ID: 0018
Revises: 0017
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0018", "0017"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
