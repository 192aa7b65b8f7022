"""erasure_tombstones: say what this revision changes.

Revision ID: 0015
Revises: 0014
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0015", "0014"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
