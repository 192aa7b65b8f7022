"""correct_v2: a corrected entry is re-derived from its sources (lineage cycles).

Revision ID: 0005
Revises: 0004
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0005", "0004"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
