"""resource: recall across a user's threads as far as consent allows (recall_v3), resource-wide lifecycle, read-time expiry.

Revision ID: 0010
Revises: 0009
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0010", "0009"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
