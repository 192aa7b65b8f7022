"""scale_paths: RAG readers of few sources ranked exactly, a wider HNSW search over a half-precision graph.

Revision ID: 0019
Revises: 0018
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0019", "0018"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
