"""Any OpenAI-compatible ``/v1/embeddings`` endpoint, on the official ``openai`` client (extra ``openai``).

``base_url`` points the client at the server: OpenAI (the default), Azure OpenAI's v1 endpoint
(``https://<resource>.openai.azure.com/openai/v1/``), Ollama (``http://localhost:11434/v1``), vLLM,
LM Studio, or Hugging Face TEI (``http://host:port/v1``). A client of your own (an ``AsyncAzureOpenAI``,
say) can be passed instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import (
    ConfigurationError,
    DimensionMismatchError,
    EmbeddingFailedError,
    EmbeddingUnavailableError,
    InvalidEmbeddingError,
)
from . import require

#: OpenAI's limits on one embeddings request: inputs, and tokens over all inputs.
MAX_BATCH_INPUTS = 2048
MAX_BATCH_TOKENS = 300_000
#: OpenAI's models that accept the ``dimensions`` request option (a shorter vector of the same model).
SHORTENING_MODELS = ("text-embedding-3-small", "text-embedding-3-large")


class OpenAIEmbedder:
    """An :class:`~prism_memory.embedding.Embedder` over ``client.embeddings.create``.

    ``model``: the model name as the server knows it (also the ``model_id`` the embedding-model guard
    records, unless ``model_id`` is given). ``dimensions``: the width of its vectors (required: the
    memory checks every vector against it). ``request_dimensions``: send ``dimensions`` with each request
    so the server shortens the vectors (only models trained for it accept it, e.g. OpenAI's
    text-embedding-3 family); by default it is sent exactly for :data:`SHORTENING_MODELS`. ``base_url``,
    ``api_key`` (default ``$OPENAI_API_KEY``; a server that needs none gets a placeholder when
    ``base_url`` is given), ``timeout`` (seconds per request, default 60) and ``max_retries`` (the
    client's retries of connection errors, 408, 409, 429 and 5xx, with backoff; default 2) configure the
    client, or ``client`` is an ``openai.AsyncOpenAI`` of your own. ``batch_size`` (default and cap
    2,048, OpenAI's limit; TEI's default limit is 32) and ``max_batch_tokens`` (default 300,000,
    OpenAI's; a token is at least one UTF-8 byte, so a batch's bytes bound its tokens) split the texts
    of one call into requests. Vectors are asked for as floats (``encoding_format="float"``), which every
    compatible server speaks. The embedder has no query/document distinction (OpenAI's models have none),
    so queries are embedded with ``embed``.

    Errors (the client's exception is ``__cause__``): :class:`EmbeddingUnavailableError` for a timeout,
    a connection failure, HTTP 429 or 5xx once the retries are spent (retry later);
    :class:`EmbeddingFailedError` for any other refusal (401/403: the key; 400/404: the model or the
    input); :class:`DimensionMismatchError` for vectors of another width; :class:`InvalidEmbeddingError`
    for a response that does not hold one vector per input. :class:`ConfigurationError` for bad options.
    """

    def __init__(
        self,
        model: str,
        *,
        dimensions: int,
        base_url: str | None = None,
        api_key: str | None = None,
        model_id: str | None = None,
        request_dimensions: bool | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        batch_size: int = MAX_BATCH_INPUTS,
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        client: Any | None = None,
    ) -> None:
        openai = require("openai", "openai")
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"model must be a non-blank string, got {model!r}")
        for name, value, cap in (("dimensions", dimensions, 16000), ("batch_size", batch_size, MAX_BATCH_INPUTS),
                                 ("max_batch_tokens", max_batch_tokens, 2**31)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= cap:
                raise ConfigurationError(f"{name} must be an int between 1 and {cap}, got {value!r}")
        self.model = model
        self.model_id = model if model_id is None else model_id
        self.dimensions = dimensions
        self.request_dimensions = model in SHORTENING_MODELS if request_dimensions is None else request_dimensions
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        if client is None:
            api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
            if api_key is None and base_url is None:
                raise ConfigurationError("pass api_key= or set OPENAI_API_KEY (or give the base_url of a server that needs no key)")
            client = openai.AsyncOpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=timeout,
                                        max_retries=max_retries)
        self.client = client
        self._openai = openai

    def _batches(self, texts: Sequence[str]) -> Iterator[list[str]]:
        """``texts`` in order, in requests of at most ``batch_size`` inputs and ``max_batch_tokens`` bytes."""
        batch: list[str] = []
        size = 0
        for text in texts:
            length = len(text.encode("utf-8", "surrogatepass"))
            if batch and (len(batch) == self.batch_size or size + length > self.max_batch_tokens):
                yield batch
                batch, size = [], 0
            batch.append(text)
            size += length
        if batch:
            yield batch

    async def _request(self, batch: list[str]) -> list[list[float]]:
        openai = self._openai
        options = {"dimensions": self.dimensions} if self.request_dimensions else {}
        where = f"the embeddings endpoint ({self.model!r})"
        try:
            response = await self.client.embeddings.create(model=self.model, input=batch, encoding_format="float", **options)
        except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
            raise EmbeddingUnavailableError(f"{where} is unavailable: {type(exc).__name__}: {exc}; retry later") from exc
        except openai.APIStatusError as exc:
            raise EmbeddingFailedError(f"{where} refused the request with HTTP {exc.status_code}: {exc}") from exc
        except openai.OpenAIError as exc:
            raise EmbeddingFailedError(f"{where} failed: {type(exc).__name__}: {exc}") from exc
        data = sorted(getattr(response, "data", None) or [], key=lambda item: item.index)
        if [item.index for item in data] != list(range(len(batch))):
            raise InvalidEmbeddingError(f"{where} returned {len(data)} embeddings for {len(batch)} inputs")
        vectors = []
        for item in data:
            vector = item.embedding
            if not isinstance(vector, list):
                raise InvalidEmbeddingError(f"{where} returned a {type(vector).__name__} embedding, not a list of floats")
            if len(vector) != self.dimensions:
                raise DimensionMismatchError(
                    f"{where} returned {len(vector)}-dimensional embeddings; this embedder is configured for {self.dimensions}"
                )
            vectors.append(vector)
        return vectors

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector of ``dimensions`` floats per text, in order, in as few requests as the limits allow."""
        vectors: list[list[float]] = []
        for batch in self._batches(texts):
            vectors.extend(await self._request(batch))
        return vectors

    async def close(self) -> None:
        """Close the client's HTTP connections."""
        await self.client.close()
