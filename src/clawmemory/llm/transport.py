"""HTTP for the LLM providers: one pooled httpx client, timeouts, retries with backoff, and every
failure turned into one ``LLMError`` line.

Retried: connection failures (the request never reached the model, so repeating it cannot
double-bill), 408, 429 and 5xx answers. Waits double from ``backoff_s`` with jitter (so clients
that failed together do not retry together), or follow the server's ``retry-after-ms`` /
``Retry-After`` header. A server asking for a wait longer than ``MAX_RETRY_AFTER_S`` is not
waited for: the call fails at once and says how long the server asked for. Never retried: other
4xx answers (the request itself is wrong: a bad key, an unknown model) and read timeouts (the
model may still be generating; repeating would pay twice for a call that is too slow anyway).
"""

from __future__ import annotations

import email.utils
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from clawmemory.embed.http import redact_url
from clawmemory.errors import LLMError, LLMUnavailableError
from clawmemory.tls import tls_context

__all__ = [
    "MAX_RETRY_AFTER_S",
    "RETRY_STATUS",
    "JSONTransport",
    "body_error",
    "error_detail",
    "token_counts",
]

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})  # 529: Anthropic "overloaded"
MAX_RETRY_AFTER_S = 60.0
_SECRET_LIKE = re.compile(r"\b(sk|key|token)-[A-Za-z0-9_\-*.]{4,}")
_DETAIL_CHARS = 200


class JSONTransport:
    """POSTs JSON to one URL and returns the decoded JSON answer. Thread-safe.

    ``where`` names the endpoint in errors ("openai LLM at http://host/v1/chat/completions");
    ``secret`` (the API key) is scrubbed from every message. ``sleep`` is how retries wait.
    """

    def __init__(
        self,
        url: str,
        *,
        provider: str,
        headers: Mapping[str, str],
        timeout_s: float,
        max_retries: int,
        backoff_s: float,
        secret: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url
        self.where = f"{provider} LLM at {redact_url(url)}"
        self.max_retries = max(0, max_retries)
        self.backoff_s = max(0.0, backoff_s)
        self.timeout_s = timeout_s
        self._headers = {"User-Agent": "clawmemory", **headers}
        self._timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
        self._secret = secret or None
        self._sleep = sleep
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def post(self, body: Mapping[str, Any]) -> Any:
        """The answer's JSON, after up to ``max_retries`` retries; ``LLMError`` otherwise."""
        attempt = 1
        while True:
            outcome = self._attempt(body)
            if attempt > self.max_retries or not (
                    isinstance(outcome, Exception) or outcome.status_code in RETRY_STATUS):
                return self._decode(outcome, attempt)
            self._sleep(self._wait(outcome, attempt))
            attempt += 1

    def _attempt(self, body: Mapping[str, Any]) -> httpx.Response | httpx.TransportError:
        """The answer, or the connection failure to retry; other failures raise at once."""
        try:
            return self._http().post(self.url, json=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            return exc
        except httpx.TimeoutException as exc:
            raise LLMUnavailableError(f"{self.where} timed out after {self.timeout_s:g} s "
                           f"({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:  # the connection broke mid-answer: not retried
            detail = self._scrub(_one_line(str(exc))) or type(exc).__name__
            raise LLMError(f"{self.where} failed: {detail}") from exc

    def _wait(self, response: httpx.Response | httpx.TransportError, attempt: int) -> float:
        asked = None if isinstance(response, Exception) else _retry_after(response.headers)
        if asked is None:
            span = self.backoff_s * 2 ** (attempt - 1)
            return float(span / 2 + random.uniform(0, span / 2))
        if asked > MAX_RETRY_AFTER_S:
            assert isinstance(response, httpx.Response)
            raise LLMError(f"{self.where} answered HTTP {response.status_code} and asks to retry "
                           f"after {asked:g} s{self._detail(response)}")
        return asked

    def _decode(self, response: httpx.Response | httpx.TransportError, attempt: int) -> Any:
        tries = f" after {attempt} attempts" if attempt > 1 else ""
        if isinstance(response, Exception):
            raise LLMUnavailableError(f"{self.where} is unreachable{tries}: "
                           f"{self._scrub(_one_line(str(response))) or type(response).__name__}"
                           ) from response
        if response.status_code >= 400:
            raise LLMError(f"{self.where} answered HTTP {response.status_code}{tries}"
                           f"{self._detail(response)}")
        try:
            return response.json()
        except ValueError as exc:
            raise LLMError(f"{self.where} answered HTTP {response.status_code} with malformed "
                           f"JSON: {self._scrub(_one_line(response.text))!r}") from exc

    def _detail(self, response: httpx.Response) -> str:
        detail = self._scrub(error_detail(response))
        return f": {detail}" if detail else ""

    def _scrub(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "***")
        return _SECRET_LIKE.sub(r"\1-***", text)

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self._timeout, headers=self._headers,
                                             verify=tls_context())
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms`` (OpenAI, Anthropic), then
    ``Retry-After`` as seconds or an HTTP date; None when it did not ask."""
    try:
        return max(0.0, float(headers["retry-after-ms"]) / 1000)
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_detail(response: httpx.Response) -> str:
    """The provider's own one-line reason for an HTTP error, else the body's first characters."""
    try:
        payload = response.json()
    except ValueError:
        return _one_line(response.text)
    return body_error(payload) or _one_line(response.text)


def body_error(payload: Any) -> str:
    """The reason a decoded body gives: ``error.message`` (OpenAI and Anthropic both answer
    ``{"error": {"message": ...}}``) or a bare ``error`` string; "" when it gives none."""
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return _one_line(str(message)) if message else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())[:_DETAIL_CHARS]


def token_counts(payload: Mapping[str, Any], *keys: str) -> int:
    """The sum of ``payload["usage"][key]`` over ``keys``; a missing or odd count is 0."""
    usage = payload.get("usage")
    if not isinstance(usage, Mapping):
        return 0
    return sum(v for v in (usage.get(k) for k in keys)
               if isinstance(v, int) and not isinstance(v, bool) and v > 0)
