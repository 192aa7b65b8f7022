"""lexical_v2: tokenizer v2 (Porter stems, CJK bigrams) for text_tsv, recall and RAG lexical queries.

Revision ID: 0010
Revises: 0009
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0010", "0009"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
