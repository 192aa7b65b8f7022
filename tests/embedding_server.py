"""A small OpenAI-compatible embeddings server on 127.0.0.1, started by the tests that need one.

``POST /v1/embeddings`` answers as OpenAI does (``{"object": "list", "data": [{"object": "embedding",
"index": i, "embedding": [...]}], "model": ..., "usage": ...}``), with the hash embedder's vectors (small
integers, so a test can compare them exactly), cut to the request's ``dimensions`` when it names one.
Every request is kept in ``requests`` (its JSON body and ``Authorization`` header). The model name picks
a failure: ``fail-500`` (always HTTP 500), ``flaky`` (HTTP 500 once per input list, then the answer),
``slow`` (answers after ``slow_seconds``), ``wrong-width`` (one dimension short), ``short`` (one
embedding short). A key other than ``api_key`` gets HTTP 401. ``base_url`` is ``http://127.0.0.1:PORT/v1``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prism_memory import create_hash_embedder


class EmbeddingServer:
    """``with EmbeddingServer() as server:`` serves until the block ends (a daemon thread, loopback only)."""

    def __init__(self, dimensions: int = 64, api_key: str = "test-key", slow_seconds: float = 2.0) -> None:
        self.dimensions = dimensions
        self.api_key = api_key
        self.slow_seconds = slow_seconds
        self.requests: list[dict[str, Any]] = []
        self._seen: set[tuple[str, ...]] = set()
        self._embedder = create_hash_embedder(dimensions)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def vectors(self, texts: list[str], dimensions: int | None = None) -> list[list[float]]:
        """What the server answers for ``texts``: the hash embedder's vectors, cut to ``dimensions``."""
        return [vector[: dimensions or self.dimensions] for vector in (self._embedder.embed_one(text) for text in texts)]

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, body: dict[str, Any], authorization: str | None) -> tuple[int, dict[str, Any]]:
        if authorization != f"Bearer {self.api_key}":
            return 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}}
        model, texts = body.get("model"), body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            return 400, {"error": {"message": "input must be a string or a list of strings", "type": "invalid_request_error"}}
        if model == "fail-500" or (model == "flaky" and tuple(texts) not in self._seen):
            self._seen.add(tuple(texts))
            return 500, {"error": {"message": "The server had an error", "type": "server_error"}}
        if model == "slow":
            time.sleep(self.slow_seconds)
        vectors = self.vectors(texts, body.get("dimensions"))
        if model == "wrong-width":
            vectors = [vector[:-1] for vector in vectors]
        if model == "short":
            vectors = vectors[:-1]
        data = [{"object": "embedding", "index": index, "embedding": vector} for index, vector in enumerate(vectors)]
        tokens = sum(len(text.split()) for text in texts)
        return 200, {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                authorization = self.headers.get("Authorization")
                if self.path.rstrip("/") != "/v1/embeddings":
                    status, answer = 404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                else:
                    server.requests.append({"body": body, "authorization": authorization})
                    status, answer = server._answer(body, authorization)
                payload = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

            def log_message(self, *args: object) -> None:
                """Quiet: the tests read ``requests`` instead."""

        return Handler
