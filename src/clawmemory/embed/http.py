"""Embedders that call an HTTP API: ``OpenAIEmbedder`` (``POST {base_url}/embeddings``, also any
OpenAI-compatible server) and ``OllamaEmbedder`` (``POST {base_url}/api/embed``).

Both send batches of inputs, learn the dimension from the first answer unless it is given, and
turn every transport, HTTP and format problem into one ``EmbeddingError`` line naming the
provider, the status and the URL, never the API key.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import httpx
import numpy as np
import numpy.typing as npt

from clawmemory.embed.base import as_unit_rows
from clawmemory.errors import ConfigError, EmbeddingError
from clawmemory.tls import tls_context

__all__ = ["HTTPEmbedder", "OllamaEmbedder", "OpenAIEmbedder"]

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 10.0
_SECRET_LIKE = re.compile(r"\b(sk|key|token)-[A-Za-z0-9_\-*.]{4,}")
_DETAIL_CHARS = 200


class HTTPEmbedder:
    """Shared machinery; subclasses say where to POST, what to send and how to read the answer.

    Thread-safe: one pooled ``httpx.Client`` serves every thread. ``retries`` extra attempts
    are made on connection failures and on 408/429/5xx answers, after ``backoff_s`` doubling
    (or the server's Retry-After, up to 10 s); other failures are raised at once.
    """

    provider: ClassVar[str]
    default_model: ClassVar[str]
    default_base_url: ClassVar[str]
    path: ClassVar[str]

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 96,
        timeout_s: float = 60.0,
        retries: int = 2,
        backoff_s: float = 0.5,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be at least 1, got {batch_size}")
        if dimensions is not None and dimensions < 1:
            raise ConfigError(f"embedding dimensions must be at least 1, got {dimensions}")
        self.model = model or self.default_model
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.url = self.base_url + self.path
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self._api_key = api_key or None
        self._timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
        self._dimension = dimensions
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            # Not given and nothing embedded yet: ask once with a throwaway text.
            self.embed(["dimension probe"])
        assert self._dimension is not None  # set by the first successful embed
        return self._dimension

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_query() for one")
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            vectors = self._parse(self._post(self._body(chunk)), len(chunk))
            rows = as_unit_rows(vectors, count=len(chunk), dimension=self._dimension,
                                source=self._where())
            self._dimension = rows.shape[1]
            parts.append(rows)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.embed([text]).reshape(-1)

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> HTTPEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- per provider -----------------------------------------------------------------------
    def _body(self, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return body

    def _parse(self, payload: Any, count: int) -> list[Any]:
        raise NotImplementedError

    # --- transport ------------------------------------------------------------------------------
    def _where(self) -> str:
        return f"{self.provider} embeddings at {redact_url(self.url)}"

    def _http(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                headers = {"User-Agent": "clawmemory"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(timeout=self._timeout, headers=headers,
                                             verify=tls_context())
            return self._client

    def _post(self, body: dict[str, Any]) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http().post(self.url, json=body)
            except httpx.TimeoutException as exc:
                raise EmbeddingError(f"{self._where()} timed out ({type(exc).__name__})") from exc
            except httpx.TransportError as exc:
                if attempt < self.retries:
                    attempt += 1
                    time.sleep(self.backoff_s * 2 ** (attempt - 1))
                    continue
                raise EmbeddingError(f"{self._where()} is unreachable: {exc}") from exc
            if response.status_code in _RETRY_STATUS and attempt < self.retries:
                attempt += 1
                time.sleep(self._retry_delay(response, attempt))
                continue
            return self._decode(response)

    def _retry_delay(self, response: httpx.Response, attempt: int) -> float:
        try:
            return min(float(response.headers["retry-after"]), _MAX_RETRY_AFTER_S)
        except (KeyError, ValueError):
            return float(self.backoff_s * 2 ** (attempt - 1))

    def _decode(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            detail = self._scrub(_error_detail(response))
            raise EmbeddingError(
                f"{self._where()} answered HTTP {response.status_code}"
                + (f": {detail}" if detail else "")
            )
        try:
            return response.json()
        except ValueError as exc:
            raise EmbeddingError(f"{self._where()} answered with malformed JSON") from exc

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return _SECRET_LIKE.sub(r"\1-***", text)

    def _malformed(self, what: str) -> EmbeddingError:
        return EmbeddingError(f"{self._where()} answered without {what}")


class OpenAIEmbedder(HTTPEmbedder):
    """``POST {base_url}/embeddings`` with ``{"model", "input": [...]}`` and a bearer key.

    ``dimensions`` is passed through (text-embedding-3 models can shorten their vectors). A key
    is required for api.openai.com; OpenAI-compatible local servers may not need one."""

    provider = "openai"
    default_model = "text-embedding-3-small"
    default_base_url = "https://api.openai.com/v1"
    path = "/embeddings"

    def __init__(self, model: str | None = None, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        if not self._api_key and urlsplit(self.base_url).hostname == "api.openai.com":
            raise ConfigError("OpenAI embeddings need an API key (embeddings api_key)")

    def _parse(self, payload: Any, count: int) -> list[Any]:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or not all(
            isinstance(item, dict) and "embedding" in item for item in data
        ):
            raise self._malformed('a "data" list of embeddings')
        if len(data) != count:
            raise EmbeddingError(f"{self._where()} returned {len(data)} vectors for {count} texts")
        # The API documents "index" as the input position; do not rely on the list order.
        if all(isinstance(item.get("index"), int) for item in data):
            data = sorted(data, key=lambda item: int(item["index"]))
        return [item["embedding"] for item in data]


class OllamaEmbedder(HTTPEmbedder):
    """``POST {base_url}/api/embed`` with ``{"model", "input": [...]}``, answered by
    ``{"embeddings": [[...], ...]}``. No key needed (one is sent if given, for proxies)."""

    provider = "ollama"
    default_model = "nomic-embed-text"
    default_base_url = "http://localhost:11434"
    path = "/api/embed"

    def _parse(self, payload: Any, count: int) -> list[Any]:
        vectors = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(vectors, list):
            raise self._malformed('an "embeddings" list')
        if len(vectors) != count:
            raise EmbeddingError(
                f"{self._where()} returned {len(vectors)} vectors for {count} texts"
            )
        return vectors


def redact_url(url: str) -> str:
    """``url`` without credentials, query or fragment, fit for an error message."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:  # a malformed port must not hide the error being reported
        port = None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _error_detail(response: httpx.Response) -> str:
    """The provider's own one-line reason, if its error body has one."""
    try:
        payload = response.json()
    except ValueError:
        text = response.text
    else:
        error = payload.get("error") if isinstance(payload, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        text = str(message) if message else ""
    return " ".join(text.split())[:_DETAIL_CHARS]
