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

__all__ = ["INT8_SUFFIX", "RUNTIMES", "LocalOptions", "make_embedder"]

RUNTIMES = ("auto", "onnx", "torch")
# The int8 model's vectors are its own space: cosine 0.992 to fp32's on average, not 1, so a
# database embedded by one is not searched with the other's queries (ADR 0013).
INT8_SUFFIX = ":int8"


class LocalOptions:
    """How the local provider runs: ``runtime`` ("auto": ONNX Runtime when the model has or can
    get an ONNX graph, else torch), ``threads`` (None: half the usable CPUs for ONNX Runtime,
    torch's own default for torch), ``bulk_threads`` (ONNX Runtime: batches of one large call
    run at once; None: the usable CPUs), the model cache folder, whether downloads are allowed
    and whether the default model runs ``quantized`` (int8; ONNX Runtime only)."""

    def __init__(
        self,
        runtime: str = "auto",
        *,
        threads: int | None = None,
        bulk_threads: int | None = None,
        cache_dir: Path | str | None = None,
        allow_download: bool = False,
        quantized: bool = False,
    ) -> None:
        runtime = (runtime or "auto").strip().lower()
        if runtime not in RUNTIMES:
            raise ConfigError(f"unknown embedder runtime {runtime!r} (expected auto, onnx or"
                              " torch)")
        for setting, value in (("threads", threads), ("bulk_threads", bulk_threads)):
            if value is not None and value < 1:
                raise ConfigError(f"embedder {setting} must be at least 1, got {value}")
        if quantized and runtime == "torch":
            raise ConfigError("embedder.quantized runs on ONNX Runtime, not runtime = \"torch\"")
        self.runtime = runtime
        self.threads = threads
        self.bulk_threads = bulk_threads
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else None
        self.allow_download = allow_download
        self.quantized = quantized


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
        usable_cpus,
    )

    name = canonical_name(model)
    if opts.quantized and name != DEFAULT_LOCAL_MODEL:
        raise ConfigError("embedder.quantized applies to the default model only; give an int8"
                          " model's folder as embedder.model instead")
    if opts.runtime == "torch":
        return LocalEmbedder(name, batch_size=batch, threads=opts.threads, truncate_dim=dims)
    # Queries keep half the CPUs (local.default_threads says why); a bulk call is the one job
    # of its moment (an ingest, an import, a reindex), so its batches may use every core.
    threads, bulk = opts.threads or default_threads(), opts.bulk_threads or usable_cpus()

    def onnx(source: Path | Callable[[], Path], space: str = name) -> Embedder:
        return OnnxEmbedder(space, source, batch_size=batch, threads=threads,
                            bulk_threads=bulk, truncate_dim=dims)

    if name != DEFAULT_LOCAL_MODEL:
        folder = Path(name).expanduser()
        if folder.is_dir() and onnx_file(folder) is not None:
            return onnx(folder)
        if opts.runtime == "onnx":
            raise ConfigError(f"local embedding model {name!r} is not a folder with an ONNX"
                              " graph (model.onnx); use runtime = \"torch\" for it")
        return LocalEmbedder(name, batch_size=batch, threads=opts.threads, truncate_dim=dims)
    cache = (opts.cache_dir or files.default_cache_dir()).expanduser()
    target, legacy = cache / files.DEFAULT_FOLDER_NAME, cache / files.LEGACY_FOLDER_NAME
    if opts.quantized:
        return onnx(_int8_source(target, cache / files.INT8_FOLDER_NAME), name + INT8_SUFFIX)
    if onnx_file(target) is not None:
        return onnx(target)
    if onnx_file(legacy) is not None:  # an earlier version's folder: the same vectors
        return onnx((lambda: files.export_default(target)) if files.quantize_available()
                    else legacy)
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


def _int8_source(fp32: Path, int8: Path) -> Path | Callable[[], Path]:
    """The int8 folder, or how to quantise it on first use: from the fp32 folder (exported
    first where torch is installed), never downloaded."""
    if onnx_file(int8) is not None:
        return int8
    if files.quantize_available() and (onnx_file(fp32) is not None or files.torch_available()
                                       or onnx_file(fp32.parent / files.LEGACY_FOLDER_NAME)):
        return lambda: files.quantize_default(fp32, int8)
    raise ConfigError(
        f"the int8 model (embedder.quantized) is not in {int8.parent}. Create it once with"
        " `python -m clawmemory.embed.model_files --int8` (needs onnx, and clawmemory[torch]"
        " when the fp32 model is not there either)")
