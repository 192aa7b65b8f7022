"""Tenant-bound roles, share grants of entries as they are when granted, queries scored by at most 32 terms.

Revision ID: 0008
Revises: 0007
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0008", "0007"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
