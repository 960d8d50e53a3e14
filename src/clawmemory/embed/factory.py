"""Pick the embedder named in settings from a closed set of providers."""

from __future__ import annotations

from clawmemory.embed.base import Embedder, EmbedProvider
from clawmemory.embed.cache import DEFAULT_QUERY_CACHE_SIZE, CachedEmbedder
from clawmemory.errors import ConfigError

__all__ = ["make_embedder"]


def make_embedder(
    provider: str | None = "local",
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    dimensions: int | None = None,
    *,
    batch_size: int | None = None,
    query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
) -> Embedder | None:
    """The embedder for ``provider`` ("local", "openai", "ollama"; "none" or "" for none),
    with its query vectors cached (``query_cache_size`` 0 turns that off).

    Empty ``model``/``base_url`` mean the provider's default. Nothing is loaded or contacted
    here; an unknown provider, or a local model not on this machine, raises ConfigError."""
    try:
        kind = EmbedProvider((provider or "none").strip().lower())
    except ValueError as exc:
        choices = ", ".join(repr(p.value) for p in EmbedProvider)
        raise ConfigError(f"unknown embedding provider {provider!r} (expected {choices})") from exc
    embedder = _build(kind, model=model or None, base_url=base_url or None,
                      api_key=api_key or None, dimensions=dimensions, batch_size=batch_size)
    if embedder is None or query_cache_size <= 0:
        return embedder
    return CachedEmbedder(embedder, query_cache_size)


def _build(
    kind: EmbedProvider,
    *,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    dimensions: int | None,
    batch_size: int | None,
) -> Embedder | None:
    # Implementations are imported only when chosen: the local one pulls in torch.
    if kind is EmbedProvider.NONE:
        return None
    if kind is EmbedProvider.LOCAL:
        from clawmemory.embed.local import LocalEmbedder

        if base_url or api_key:
            raise ConfigError("the local embedder takes no base_url or api_key")
        return LocalEmbedder(model, batch_size=batch_size or 64, truncate_dim=dimensions)
    from clawmemory.embed.http import OllamaEmbedder, OpenAIEmbedder

    cls = OpenAIEmbedder if kind is EmbedProvider.OPENAI else OllamaEmbedder
    return cls(model, base_url=base_url, api_key=api_key, dimensions=dimensions,
               batch_size=batch_size or 96)
