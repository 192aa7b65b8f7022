"""Composite recall scoring and explain: recall_v2 and scoring_weights_v1.

Revision ID: 0003
Revises: 0002
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0003", "0002"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
