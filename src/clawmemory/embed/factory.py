"""Pick the embedder named in settings from a closed set of providers."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from clawmemory.embed import model_files as files
from clawmemory.embed.base import Embedder, EmbedProvider
from clawmemory.embed.cache import DEFAULT_QUERY_CACHE_SIZE, CachedEmbedder
from clawmemory.embed.onnx import OnnxEmbedder, onnx_file
from clawmemory.errors import ConfigError

__all__ = ["RUNTIMES", "LocalOptions", "make_embedder"]

RUNTIMES = ("auto", "onnx", "torch")


class LocalOptions:
    """How the local provider runs: ``runtime`` ("auto": ONNX Runtime when the model has or can
    get an ONNX graph, else torch), ``threads`` (None: half the usable CPUs for ONNX Runtime,
    torch's own default for torch), the model cache folder and whether downloads are allowed."""

    def __init__(
        self,
        runtime: str = "auto",
        *,
        threads: int | None = None,
        cache_dir: Path | str | None = None,
        allow_download: bool = False,
    ) -> None:
        runtime = (runtime or "auto").strip().lower()
        if runtime not in RUNTIMES:
            raise ConfigError(f"unknown embedder runtime {runtime!r} (expected auto, onnx or"
                              " torch)")
        if threads is not None and threads < 1:
            raise ConfigError(f"embedder threads must be at least 1, got {threads}")
        self.runtime = runtime
        self.threads = threads
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else None
        self.allow_download = allow_download


def make_embedder(
    provider: str | None = "local",
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    dimensions: int | None = None,
    *,
    batch_size: int | None = None,
    query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
    local: LocalOptions | None = None,
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
    if kind is EmbedProvider.LOCAL:
        if base_url or api_key:
            raise ConfigError("the local embedder takes no base_url or api_key")
        embedder: Embedder | None = _local(model or None, dimensions, batch_size or 64,
                                           local or LocalOptions())
    else:
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
    if kind is EmbedProvider.NONE:
        return None
    # Imported only when chosen: the HTTP embedders load httpx and numpy.
    from clawmemory.embed.http import OllamaEmbedder, OpenAIEmbedder

    cls = OpenAIEmbedder if kind is EmbedProvider.OPENAI else OllamaEmbedder
    return cls(model, base_url=base_url, api_key=api_key, dimensions=dimensions,
               batch_size=batch_size or 96)


def _local(model: str | None, dims: int | None, batch: int, opts: LocalOptions) -> Embedder:
    """The local embedder: nothing is loaded here, only where its files will come from is
    decided (ADR 0013), so a model that cannot be had is a ConfigError now."""
    # Imported here: the torch runtime's module loads numpy, which a store that never embeds
    # (a keyword-only command) must not pay for.
    from clawmemory.embed.local import (
        DEFAULT_LOCAL_MODEL,
        LocalEmbedder,
        canonical_name,
        default_threads,
    )

    name = canonical_name(model)
    if opts.runtime == "torch":
        return LocalEmbedder(name, batch_size=batch, threads=opts.threads, truncate_dim=dims)
    threads = opts.threads or default_threads()

    def onnx(source: Path | Callable[[], Path]) -> Embedder:
        return OnnxEmbedder(name, source, batch_size=batch, threads=threads, truncate_dim=dims)

    if name != DEFAULT_LOCAL_MODEL:
        folder = Path(name).expanduser()
        if folder.is_dir() and onnx_file(folder) is not None:
            return onnx(folder)
        if opts.runtime == "onnx":
            raise ConfigError(f"local embedding model {name!r} is not a folder with an ONNX"
                              " graph (model.onnx); use runtime = \"torch\" for it")
        return LocalEmbedder(name, batch_size=batch, threads=opts.threads, truncate_dim=dims)
    target = (opts.cache_dir or files.default_cache_dir()).expanduser() / (
        files.DEFAULT_FOLDER_NAME)
    if onnx_file(target) is not None:
        return onnx(target)
    if files.torch_available():
        return onnx(lambda: files.export_default(target))
    if opts.allow_download:
        return onnx(lambda: files.download_default(target))
    if opts.runtime == "auto" and importlib.util.find_spec("sentence_transformers"):
        return LocalEmbedder(name, batch_size=batch, threads=opts.threads, truncate_dim=dims)
    if importlib.util.find_spec("onnxruntime") is None:
        # A plain `pipx install clawmemory`: the runtime is missing before the model is.
        raise ConfigError("the local embedder needs ONNX Runtime: install clawmemory[local]"
                          f" (then its model, in {target.parent}: docs/install.md)")
    raise ConfigError(
        f"the ONNX export of the default embedding model is not in {target.parent}. Create it"
        " once with `python -m clawmemory.embed.model_files` (needs clawmemory[torch]), or"
        " allow a download (embedder.allow_download = true)"
    )
