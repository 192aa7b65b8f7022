"""lifecycle_edges: a derived entry expires with its lineage sources at read time (sources_created_at,

Revision ID: 0017
Revises: 0016
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0017", "0016"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
