"""recall_filters: recall_v4 takes a metadata filter, event-time and write-time windows (applied before the top_k cut) and the lexical weight; the entries get occurred_at.

Revision ID: 0018
Revises: 0017
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0018", "0017"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
