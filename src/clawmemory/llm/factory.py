"""``make_llm(settings.llm)``: the configured ``LLM``, None when none is configured, or a
``ConfigError`` that says what to set.

The API key is read from the environment variable NAMED by ``api_key_env``, never from the
config file. Which key goes where:

- the provider's official API (api.openai.com, api.anthropic.com): ``api_key_env`` or the
  provider's own variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``); unset is a ConfigError;
- any other server: only the variable ``api_key_env`` names; none by default, so a key kept for
  OpenAI is never sent to a server it was not meant for;
- a server on loopback (localhost, 127.0.0.0/8, ::1) never needs a key: a named variable that is
  unset there is simply not sent.
"""

from __future__ import annotations

import ipaddress
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from clawmemory.config import LLMProviderName, LLMSettings
from clawmemory.errors import ConfigError
from clawmemory.llm.base import LLM
from clawmemory.llm.cache import CachedLLM, ResponseCache

if TYPE_CHECKING:
    from clawmemory.llm.anthropic import AnthropicLLM
    from clawmemory.llm.openai import OpenAILLM

__all__ = ["close_llm", "is_loopback", "make_llm", "provider_class"]


def provider_class(provider: LLMProviderName | str) -> type[OpenAILLM] | type[AnthropicLLM]:
    """The class of a provider (imported only when chosen)."""
    if LLMProviderName(provider) is LLMProviderName.ANTHROPIC:
        from clawmemory.llm.anthropic import AnthropicLLM

        return AnthropicLLM
    if LLMProviderName(provider) is LLMProviderName.OPENAI:
        from clawmemory.llm.openai import OpenAILLM

        return OpenAILLM
    raise ConfigError(f"LLM provider {provider!r} has no implementation")


def make_llm(settings: LLMSettings) -> LLM | None:
    """The ``LLM`` that ``settings`` describe (behind the response cache when it is on), or
    None for provider ``none``. Nothing is contacted here."""
    if LLMProviderName(settings.provider) is LLMProviderName.NONE:
        return None
    cls = provider_class(settings.provider)
    base_url = (settings.base_url or cls.default_base_url).strip().rstrip("/")
    host = _host(base_url)
    official = host == urlsplit(cls.default_base_url).hostname
    model = (settings.model or "").strip() or (cls.default_model if official else "")
    if not model:
        raise ConfigError(f"[llm] model is not set: name the model {base_url} serves "
                          "(model = \"...\" in [llm], or CLAWMEM_LLM__MODEL)")
    key_env = settings.api_key_env or (cls.key_env if official else None)
    llm: LLM = cls(model, base_url=base_url, api_key=_api_key(key_env, host, base_url),
                   timeout_s=settings.timeout_s, max_retries=settings.max_retries,
                   backoff_s=settings.backoff_s, default_max_tokens=settings.max_tokens)
    if not settings.response_cache:
        return llm
    cache = ResponseCache(settings.resolved_cache_path(), ttl_s=settings.cache_ttl_s,
                          max_entries=settings.cache_max_entries)
    return CachedLLM(llm, cache)


def _host(base_url: str) -> str:
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"[llm] base_url {base_url!r} is not an http(s) URL "
                          "(e.g. http://localhost:11434/v1)")
    return parts.hostname


def _api_key(key_env: str | None, host: str, where: str) -> str | None:
    if key_env is None:
        return None
    key = os.environ.get(key_env, "").strip()
    if key or is_loopback(host):
        return key or None
    raise ConfigError(
        f"the LLM at {where} needs an API key: set the environment variable {key_env} "
        "(or point [llm] api_key_env / CLAWMEM_LLM__API_KEY_ENV at the variable that holds it)")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (localhost, 127.0.0.0/8, ::1)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def close_llm(llm: LLM | None) -> None:
    """Release an LLM's connections if it holds any (every ``make_llm`` result does)."""
    close = getattr(llm, "close", None)
    if callable(close):
        close()
