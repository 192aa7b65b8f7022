"""Adapters that plug prism-memory into agent frameworks, each behind its own optional extra.

Each adapter maps the framework's names and shapes onto the public :class:`~prism_memory.memory.Memory`
and RAG store calls; consent, lineage, document ACL and expiry stay the SQL functions' rules
(docs/integrations.md).
"""
