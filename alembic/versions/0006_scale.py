"""remember_batch_v1: one call writes the entries of many threads of one tenant (bulk ingest).

Revision ID: 0006
Revises: 0005
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0006", "0005"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
