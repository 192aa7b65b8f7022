"""citus_recall: say what this revision changes.

Revision ID: 0013
Revises: 0012
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0013", "0012"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
