"""citus: say what this revision changes.

Revision ID: 0009
Revises: 0008
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0009", "0008"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
