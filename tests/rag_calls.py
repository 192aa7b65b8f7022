"""RAG store calls for tests: a chunk with defaults, and bad calls with the error each must raise on both backends."""

from __future__ import annotations

import numpy as np
from prism_memory import (
    DimensionMismatchError,
    InvalidAuthorizationError,
    InvalidEmbeddingError,
    InvalidEntryError,
    InvalidFilterError,
    InvalidQueryError,
    InvalidScopeError,
    LimitExceededError,
    PayloadTooLargeError,
    RagAccessConstraint,
    RagChunk,
)


def chunk(**fields):
    base = {"id": "c1", "source_id": "s1", "text": "some text", "embedding": [1.0] + [0.0] * 63}
    return RagChunk(**{**base, **fields})


BAD_CALLS = [
    ("blank tenant", lambda s: s.upsert(" ", "kb", [chunk()]), InvalidScopeError),
    ("blank scope", lambda s: s.query("t1", "", [1.0] * 64), InvalidScopeError),
    ("scope not a string", lambda s: s.get_current_generation("t1", 7), InvalidScopeError),
    ("blank id", lambda s: s.upsert("t1", "kb", [chunk(id=" ")]), InvalidEntryError),
    ("blank source", lambda s: s.upsert("t1", "kb", [chunk(source_id="")]), InvalidEntryError),
    ("blank text", lambda s: s.upsert("t1", "kb", [chunk(text="\n")]), InvalidEntryError),
    ("NUL in text", lambda s: s.upsert("t1", "kb", [chunk(text="a\x00b")]), InvalidEntryError),
    ("lone surrogate", lambda s: s.upsert("t1", "kb", [chunk(text="a\ud800")]), InvalidEntryError),
    ("metadata not an object", lambda s: s.upsert("t1", "kb", [chunk(metadata=[1])]), InvalidEntryError),
    ("metadata NaN", lambda s: s.upsert("t1", "kb", [chunk(metadata={"x": float("nan")})]), InvalidEntryError),
    ("duplicate ids", lambda s: s.upsert("t1", "kb", [chunk(), chunk()]), InvalidEntryError),
    ("negative access version", lambda s: s.upsert("t1", "kb", [chunk(access_version=-1)]), InvalidEntryError),
    ("too big", lambda s: s.upsert("t1", "kb", [chunk(text="x" * (8 * 1024 * 1024 + 1))]), PayloadTooLargeError),
    ("too many", lambda s: s.upsert("t1", "kb", [chunk(id=str(i)) for i in range(1001)]), LimitExceededError),
    ("NaN embedding", lambda s: s.upsert("t1", "kb", [chunk(embedding=[float("nan")] * 64)]), InvalidEmbeddingError),
    ("zero embedding", lambda s: s.upsert("t1", "kb", [chunk(embedding=[0.0] * 64)]), InvalidEmbeddingError),
    ("text embedding", lambda s: s.upsert("t1", "kb", [chunk(embedding="1,2")]), InvalidEmbeddingError),
    ("dict embedding", lambda s: s.upsert("t1", "kb", [chunk(embedding={i: 1.0 for i in range(64)})]), InvalidEmbeddingError),
    ("2-D embedding", lambda s: s.upsert("t1", "kb", [chunk(embedding=np.ones((64, 1)))]), InvalidEmbeddingError),
    ("huge int in embedding", lambda s: s.query("t1", "kb", [10**400] + [1.0] * 63), InvalidEmbeddingError),
    ("wrong width write", lambda s: s.upsert("t1", "kb", [chunk(embedding=[1.0] * 32)]), DimensionMismatchError),
    ("wrong width query", lambda s: s.query("t1", "kb", [1.0] * 65), DimensionMismatchError),
    ("negative generation", lambda s: s.upsert("t1", "kb", [chunk()], generation=-1), InvalidEntryError),
    ("bool generation", lambda s: s.set_current_generation("t1", "kb", True), InvalidEntryError),
    ("top_k 0", lambda s: s.query("t1", "kb", [1.0] * 64, top_k=0), LimitExceededError),
    ("top_k 33", lambda s: s.lexical_query("t1", "kb", "x", top_k=33), LimitExceededError),
    ("filter not an object", lambda s: s.query("t1", "kb", [1.0] * 64, filter=["dept"]), InvalidQueryError),
    ("filter with a set", lambda s: s.query("t1", "kb", [1.0] * 64, filter={"x": {1}}), InvalidFilterError),
    ("filter operator unknown", lambda s: s.query("t1", "kb", [1.0] * 64, filter={"x": {"$regex": "a"}}), InvalidFilterError),
    ("filter $in empty", lambda s: s.lexical_query("t1", "kb", "text", filter={"x": {"$in": []}}), InvalidFilterError),
    ("filter over 16 KiB", lambda s: s.query("t1", "kb", [1.0] * 64, filter={"k": "v" * 17000}), InvalidFilterError),
    ("query text not str", lambda s: s.lexical_query("t1", "kb", b"bytes"), InvalidQueryError),
    ("query too long", lambda s: s.lexical_query("t1", "kb", "x " * 40000), PayloadTooLargeError),
    ("authorization a string", lambda s: s.query("t1", "kb", [1.0] * 64, authorization="acl"), InvalidAuthorizationError),
    ("blank principal", lambda s: s.query("t1", "kb", [1.0] * 64, authorization=RagAccessConstraint(" ")), InvalidAuthorizationError),
    ("blank group", lambda s: s.lexical_query("t1", "kb", "x", authorization=RagAccessConstraint("a", ("",))), InvalidAuthorizationError),
    ("groups a string", lambda s: s.get_by_source("t1", "kb", "s1", authorization=RagAccessConstraint("a", "eng")), InvalidAuthorizationError),
    ("grant version bool", lambda s: s.set_source_access("t1", "s1", principal_ids=["a"], access_version=True), InvalidEntryError),
    ("grant blank id", lambda s: s.set_source_access("t1", "s1", group_ids=[" "], access_version=1), InvalidAuthorizationError),
    ("too many grants", lambda s: s.set_source_access("t1", "s1", principal_ids=[str(i) for i in range(1025)], access_version=1), LimitExceededError),
    ("delete without criteria", lambda s: s.delete("t1", "kb"), InvalidEntryError),
    ("get_by_source limit", lambda s: s.get_by_source("t1", "kb", "s1", limit=1001), LimitExceededError),
    ("check without reader", lambda s: s.check_source_access("t1", "s1", None), InvalidAuthorizationError),
]
