"""RAG vector store: chunks, source access versions, the rag_*_v1 functions; HNSW moves to the chunks.

Revision ID: 0002
Revises: 0001
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0002", "0001"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
