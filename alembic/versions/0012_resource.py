"""resource: recall across a user's threads as far as consent allows (recall_v3), resource-wide lifecycle, read-time expiry.

Revision ID: 0012
Revises: 0011
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0012", "0011"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
