"""One TLS context per process for every HTTP client clawmemory makes (the LLM providers, the
HTTP embedders, the remote client).

httpx builds a fresh context for each new client unless it is given one, and loading the CA
bundle into it costs ~40-60 ms of CPU: a process paid it again for every client it made (a
program with a few stores and a model configured paid it per store). A context is safe to share
between clients and threads; this one is made exactly as httpx makes its own (certifi's bundle,
or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` where the client trusts the environment), once, the
first time a client is made.
"""

from __future__ import annotations

import functools
import ssl

import httpx

__all__ = ["tls_context"]


@functools.cache
def tls_context(trust_env: bool = True) -> ssl.SSLContext:
    """The process's context for clients that do (``trust_env``) or do not read the
    ``SSL_CERT_*`` variables, as ``httpx.Client(trust_env=...)`` would build it."""
    return httpx.create_ssl_context(trust_env=trust_env)
