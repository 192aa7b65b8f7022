"""rule_once: each rule written once (the id rule, one scope and one width assertion, recall_v3's helpers); recall_v2, remember_v1 and the other v1 functions kept for SQL callers retired.

Revision ID: 0016
Revises: 0015
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0016", "0015"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
