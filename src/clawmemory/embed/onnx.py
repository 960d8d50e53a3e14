"""``OnnxEmbedder``: a sentence-transformers model run with ONNX Runtime and ``tokenizers``.

The default local embedder (ADR 0013). The same all-MiniLM-L6-v2 weights as the torch path,
exported once to an ONNX graph that returns the token states, so mean pooling (and late
chunking, ADR 0007) happen here in numpy. Starting it costs ~0.4 s instead of torch's 5-15 s,
and the install is a fraction of torch's size. Its vectors equal the torch path's (cosine
within 1e-7 measured, 1e-5 tested), so a database embedded by either needs no reindex.

Where the graph comes from is :mod:`clawmemory.embed.model_files`'s business; this module
only runs a model folder: ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``, plus
the sentence-transformers config files when present (window length, pooling mode).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawmemory.embed.base import as_unit_rows
from clawmemory.errors import ConfigError, EmbeddingError
from clawmemory.quiet import quiet_dependencies

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    F32 = npt.NDArray[np.float32]

# Batches hold sequences within this many tokens (or a quarter) of each other, and at most
# this many tokens padded (``_batches``).
SPREAD = 16
BATCH_TOKENS = 512

__all__ = ["ModelFolder", "OnnxEmbedder", "onnx_file"]

log = logging.getLogger("clawmemory")

_INSTALL_HINT = "install it with: pip install 'clawmemory[local]'"
_DEFAULT_WINDOW = 512  # tokens, when the folder does not say (BERT's position table)


def onnx_file(folder: Path) -> Path | None:
    """The ONNX graph inside a model folder: ``model.onnx`` or the hub layout's
    ``onnx/model.onnx``; None when there is none."""
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class ModelFolder:
    """What the embedder needs to know about a model folder, read from its config files."""

    graph: Path
    tokenizer: Path
    window: int  # tokens per sequence, special tokens included
    pooling: str  # "mean" or "cls"

    @classmethod
    def read(cls, folder: Path) -> ModelFolder:
        graph = onnx_file(folder)
        tokenizer = folder / "tokenizer.json"
        if graph is None or not tokenizer.is_file():
            raise ConfigError(f"{folder} is not an ONNX model folder (it needs model.onnx and"
                              " tokenizer.json)")
        window = _DEFAULT_WINDOW
        bert = _json(folder / "sentence_bert_config.json")
        if isinstance(bert.get("max_seq_length"), int):
            window = bert["max_seq_length"]
        pooling = "mean"
        pool = _json(folder / "1_Pooling" / "config.json")
        if pool.get("pooling_mode_cls_token") or pool.get("pooling_mode") == "cls":
            pooling = "cls"
        return cls(graph, tokenizer, window, pooling)


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class OnnxEmbedder:
    """A model folder run with ONNX Runtime on the CPU. Loads on first use, then thread-safe.

    ``name``: the vector space's name (the same as the torch path's for the same model, so an
    existing database binds without a reindex). ``folder``: the model folder, or a callable
    that produces it on first use (the one-time export or download). ``threads``: ONNX Runtime
    intra-op threads for this session only (the host process is left alone). ``bulk_threads``:
    how many batches of one large call (``embed`` or ``embed_in_context`` of more than
    ``batch_size`` texts: an ingest, an import, a reindex) run at once on that session; a query
    is one batch and stays on one thread. ``truncate_dim``: keep the first dimensions
    (Matryoshka models), then renormalise."""

    def __init__(
        self,
        name: str,
        folder: Path | Callable[[], Path],
        *,
        batch_size: int = 64,
        threads: int = 1,
        bulk_threads: int = 1,
        truncate_dim: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be at least 1, got {batch_size}")
        if threads < 1:
            raise ConfigError(f"embedder threads must be at least 1, got {threads}")
        if bulk_threads < 1:
            raise ConfigError(f"embedder bulk_threads must be at least 1, got {bulk_threads}")
        if truncate_dim is not None and truncate_dim < 1:
            raise ConfigError(f"embedding dimensions must be at least 1, got {truncate_dim}")
        self.model = name
        self._folder = folder
        self.batch_size = batch_size
        self.threads = threads
        self.bulk_threads = bulk_threads
        self.truncate_dim = truncate_dim
        self._runtime: _Runtime | None = None
        self._load_lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"local:{self.model}"

    @property
    def dimension(self) -> int:
        return self._load().dimension(self.truncate_dim)

    @property
    def loaded(self) -> bool:
        return self._runtime is not None

    def embed(self, texts: Sequence[str]) -> F32:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_query() for one")
        rt = self._load()
        seqs = [rt.encode(t) for t in texts]
        pooled = self._guard(lambda: rt.pool_all(seqs, [0] * len(seqs), self.batch_size,
                                                 self.bulk_threads))
        return self._finish(pooled, len(texts))

    def embed_query(self, text: str) -> F32:
        return self.embed([text]).reshape(-1)

    def embed_in_context(self, items: Sequence[tuple[str, str]]) -> F32:
        """One vector per ``(context, text)``: the text is read after its context and only its
        own tokens are pooled (late chunking, ADR 0007). A model that does not mean-pool reads
        the pair as one text instead."""
        rt = self._load()
        if rt.folder.pooling != "mean" or rt.layout is None:
            return self.embed([f"{ctx}\n{text}" if ctx else text for ctx, text in items])
        pairs = [rt.in_context(ctx, text) for ctx, text in items]
        pooled = self._guard(lambda: rt.pool_all([p[0] for p in pairs], [p[1] for p in pairs],
                                                 self.batch_size, self.bulk_threads))
        return self._finish(pooled, len(items))

    def close(self) -> None:
        """Drop the session so its memory can be freed; the next embed loads it again."""
        with self._load_lock:
            self._runtime = None

    def _guard(self, work: Callable[[], F32]) -> F32:
        try:
            return work()
        except (RuntimeError, ValueError, TypeError, IndexError) as exc:
            raise EmbeddingError(f"local embedding model {self.model!r} failed: {exc}") from exc

    def _finish(self, pooled: F32, count: int) -> F32:
        if self.truncate_dim is not None:
            pooled = pooled[:, : self.truncate_dim]
        return as_unit_rows(pooled, count=count, dimension=None, source=f"model {self.model!r}")

    def _load(self) -> _Runtime:
        rt = self._runtime
        if rt is not None:
            return rt
        with self._load_lock:
            if self._runtime is None:
                folder = self._folder() if callable(self._folder) else self._folder
                self._runtime = _Runtime(ModelFolder.read(folder), self.threads)
                log.debug("loaded ONNX embedding model %s from %s", self.model, folder)
            return self._runtime


class _Runtime:
    """An ONNX Runtime session and its tokenizers: everything loaded, nothing configurable."""

    def __init__(self, folder: ModelFolder, threads: int) -> None:
        quiet_dependencies()  # ONNX Runtime reads its telemetry switch when it loads
        try:
            import numpy as np
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(f"the local embedder needs onnxruntime and tokenizers;"
                              f" {_INSTALL_HINT}") from exc
        self.np = np
        self.folder = folder
        # Its usage events off too; this alone does not stop the native client from connecting,
        # quiet_dependencies() above does (docs/dependencies.md#network-and-telemetry).
        ort.disable_telemetry_events()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle workers must not spin on cores the agent, SQLite or the next request need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # warnings about the graph are not the user's business
        try:
            self.session = ort.InferenceSession(
                str(folder.graph), options, providers=["CPUExecutionProvider"])
            # Never mutated after this point: a tokenizer whose settings change between calls
            # is what makes Hugging Face tokenizers unsafe to share between threads.
            self.tok = Tokenizer.from_file(str(folder.tokenizer))
        except Exception as exc:  # ORT raises its own exception types, not in any public tree
            raise ConfigError(f"cannot load the ONNX model in {folder.graph.parent}: {exc}"
                              ) from exc
        self.tok.no_padding()
        self.tok.no_truncation()
        self.inputs = {i.name for i in self.session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= self.inputs:
            raise ConfigError(f"{folder.graph} does not take input_ids and attention_mask")
        pad = self.tok.token_to_id("[PAD]")
        self.pad = int(pad) if pad is not None else 0
        self.layout = self._layout()
        self._dimension: int | None = None

    def _layout(self) -> tuple[list[int], list[int]] | None:
        """The special tokens wrapped around a text ([CLS] ... [SEP] for BERT), read off a
        one-word probe; None when the layout cannot be read (late chunking then does not
        apply)."""
        bare = self.tok.encode("a", add_special_tokens=False).ids
        wrapped = self.tok.encode("a").ids
        lead = next((i for i in range(len(wrapped)) if wrapped[i : i + len(bare)] == bare), None)
        if not bare or lead is None:
            return None
        return list(wrapped[:lead]), list(wrapped[lead + len(bare) :])

    def dimension(self, truncate: int | None) -> int:
        if self._dimension is None:
            width = self.session.get_outputs()[0].shape[-1]  # static in BERT exports
            self._dimension = width if isinstance(width, int) else int(
                self._pool_batch([self.encode("dimension")], [0], [0]).shape[1])
        return min(self._dimension, truncate) if truncate else self._dimension

    def encode(self, text: str) -> list[int]:
        """Token ids of one text as the model reads it alone: specials included, cut to the
        window the way sentence-transformers cuts (the end goes, [SEP] stays)."""
        ids = self.tok.encode(text).ids
        if len(ids) <= self.folder.window:
            return list(ids)
        if self.layout is None:
            return list(ids[: self.folder.window])
        head, tail = self.layout
        body = self.tok.encode(text, add_special_tokens=False).ids
        return [*head, *body[: self.folder.window - len(head) - len(tail)], *tail]

    def in_context(self, context: str, text: str) -> tuple[list[int], int]:
        """``[specials] context text [specials]`` and where the text starts. The context is cut
        from its start when the pair is longer than the window, so the text is read whole."""
        assert self.layout is not None
        head, tail = self.layout
        room_total = self.folder.window - len(head) - len(tail)
        t = self.tok.encode(text, add_special_tokens=False).ids[:room_total]
        c = self.tok.encode(context, add_special_tokens=False).ids if context else []
        room = room_total - len(t)
        c = c[len(c) - room :] if 0 < room < len(c) else (c if room > 0 else [])
        return [*head, *c, *t, *tail], (len(head) + len(c) if t else 0)

    def pool_all(self, seqs: Sequence[list[int]], starts: Sequence[int], batch: int,
                 workers: int = 1) -> F32:
        """Pooled vectors of token sequences: the mean of the token states from ``start`` on
        (mean pooling), or the first token's state (CLS pooling). Sequences of similar length
        share a batch, so little is padded. With ``workers`` > 1 and more than one batch, the
        batches run on that many threads over this one session: ``run`` is thread-safe and
        releases the GIL, and each call computes on its own thread when the session has one
        intra-op thread, so two cores embed twice the batches. The batches are the same as on
        one thread, so are the vectors."""
        np = self.np
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        batches = _batches(order, [len(s) for s in seqs], batch)
        if not batches:
            empty: F32 = np.zeros((0, self.dimension(None)), dtype=np.float32)
            return empty
        # Longest first: the batches left for the end are short ones, so neither thread
        # waits long for the other's last batch.
        batches.reverse()
        if workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(min(workers, len(batches)), "clawmemory-embed") as pool:
                pooled = list(pool.map(lambda c: self._pool_batch(seqs, starts, c), batches))
        else:
            pooled = [self._pool_batch(seqs, starts, c) for c in batches]
        out: F32 = np.zeros((len(seqs), pooled[0].shape[1]), dtype=np.float32)
        for chosen, rows in zip(batches, pooled, strict=True):
            out[chosen] = rows
        return out

    def _pool_batch(self, seqs: Sequence[list[int]], starts: Sequence[int],
                    chosen: Sequence[int]) -> F32:
        """The pooled vectors of the sequences ``chosen`` (one forward pass), in that order."""
        np = self.np
        width = max(len(seqs[i]) for i in chosen)
        ids = np.full((len(chosen), width), self.pad, dtype=np.int64)
        mask = np.zeros((len(chosen), width), dtype=np.int64)
        for row, i in enumerate(chosen):
            ids[row, : len(seqs[i])] = seqs[i]
            mask[row, : len(seqs[i])] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:  # the hub's exports take it too
            feed["token_type_ids"] = np.zeros_like(ids)
        states: F32 = self.session.run(None, feed)[0]
        out: F32 = np.zeros((len(chosen), states.shape[-1]), dtype=np.float32)
        for row, i in enumerate(chosen):
            if self.folder.pooling == "cls":
                out[row] = states[row, 0]
            else:
                out[row] = states[row, starts[i] : len(seqs[i])].mean(0, dtype=np.float64)
        return out


def _batches(order: Sequence[int], lengths: Sequence[int], size: int) -> list[list[int]]:
    """``order`` (by length, shortest first) cut into batches of at most ``size`` sequences
    and ``BATCH_TOKENS`` padded tokens, whose longest sequence is at most ``SPREAD`` tokens
    (or a quarter) longer than their shortest. Every sequence of a batch is padded to its
    longest, and attention's cost grows with the square of the width: a session's few turns,
    a short question beside a 250-token answer, used to share one batch padded to the answer.
    And the batches are what the threads share: one session's ten turns read in context
    (each ~256 tokens with the turn before it) made one batch, so one core did all of it."""
    out: list[list[int]] = []
    for i in order:
        batch = out[-1] if out else None
        if (batch is not None and len(batch) < size
                and lengths[i] <= _widest(lengths[batch[0]])
                and (len(batch) + 1) * lengths[i] <= BATCH_TOKENS):
            batch.append(i)
        else:
            out.append([i])
    return out


def _widest(shortest: int) -> int:
    return max(shortest + SPREAD, shortest + shortest // 4)
