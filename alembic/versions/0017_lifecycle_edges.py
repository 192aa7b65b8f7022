"""lifecycle_edges: Say what this revision changes and why.

Revision ID: 0017
Revises: 0016
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0017", "0016"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
