"""Embedders: text to unit vectors for semantic recall.

    from clawmemory.embed import make_embedder

    embedder = make_embedder("local")          # packaged all-MiniLM-L6-v2, offline, 384 dims
    vectors = embedder.embed(["User prefers dark mode"])   # float32 (1, 384), unit rows

Providers: ``local`` (sentence-transformers, default), ``openai``, ``ollama``, ``none``.
The implementations are imported on first use, so importing this package loads neither torch
nor httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from clawmemory.embed.base import Embedder, EmbedProvider, as_unit_rows
from clawmemory.embed.cache import DEFAULT_QUERY_CACHE_SIZE, CachedEmbedder
from clawmemory.embed.factory import make_embedder

if TYPE_CHECKING:
    from clawmemory.embed.http import OllamaEmbedder, OpenAIEmbedder
    from clawmemory.embed.local import LocalEmbedder

__all__ = [
    "DEFAULT_QUERY_CACHE_SIZE",
    "CachedEmbedder",
    "EmbedProvider",
    "Embedder",
    "LocalEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "as_unit_rows",
    "make_embedder",
]

_LAZY = {
    "LocalEmbedder": "clawmemory.embed.local",
    "OpenAIEmbedder": "clawmemory.embed.http",
    "OllamaEmbedder": "clawmemory.embed.http",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
