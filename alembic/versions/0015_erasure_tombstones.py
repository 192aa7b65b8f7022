"""erasure_tombstones: a grant never clears an erasure's tombstone, and an erasure's reason replaces another.

Revision ID: 0015
Revises: 0014
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0015", "0014"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
