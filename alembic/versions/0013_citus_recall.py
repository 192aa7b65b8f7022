"""citus_recall: a thread's recall reads its tables through single-table statements (recall_bounds_v1, recall_rescore_v1, recall_rows_v1).

Revision ID: 0013
Revises: 0012
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0013", "0012"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
