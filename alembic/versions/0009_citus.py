"""citus: bodies that run on a Citus cluster distributed by tenant, and answer as before on plain PostgreSQL.

Revision ID: 0009
Revises: 0008
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0009", "0008"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
