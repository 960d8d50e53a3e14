"""Profiles (profiles.py): each specification's defaults under the user's own settings, its own
environment variables and files, and ``clawmem config show`` saying where each value came
from. Run through the real settings loader, ``Memory.open`` and the installed ``clawmem``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory
from clawmemory.config import load_settings
from clawmemory.errors import ConfigError
from clawmemory.origins import settings_origins
from clawmemory.profiles import PROFILES

CLAWMEM = Path(sys.executable).parent / "clawmem"
pytestmark = pytest.mark.usefixtures("no_spec_env")


def clawmem(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLAWMEM), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)


def shown(*args: str | Path, cwd: Path) -> dict[str, tuple[Any, str]]:
    """``clawmem config show --json``: setting → (value, origin)."""
    result = clawmem("config", "show", "--json", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return {r["setting"]: (r["value"], r["from"]) for r in json.loads(result.stdout)["settings"]}


# --- choosing a profile -----------------------------------------------------------------------
def test_the_default_profile_changes_nothing() -> None:
    assert load_settings() == load_settings(profile="clawmemory")
    assert load_settings().profile == "clawmemory"


@pytest.mark.parametrize("name", [p for p in PROFILES if p != "clawmemory"])
def test_every_profile_loads_and_sets_what_its_table_says(name: str) -> None:
    settings = load_settings(profile=name)
    assert settings.profile == name
    for path, value in PROFILES[name].defaults.items():
        if path in ("home", "db", "storage.mirror_dir", "llm.cache_path"):
            continue  # paths: checked by the layout tests
        node: Any = settings
        for part in path.split("."):
            node = getattr(node, part)
        assert node == value, path


def test_a_profile_is_chosen_by_variable_file_option_and_argument(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("CLAWMEM_CONFIG", str(config))
    config.write_text('profile = "koshi"\n')
    assert load_settings().recall.stems is False
    monkeypatch.setenv("CLAWMEM_PROFILE", "sandbox")
    assert load_settings().recall.fusion == "rrf"  # the variable ranks above the file
    assert load_settings(profile="ptrclaw").recall.fusion == "weighted"  # the argument above
    assert shown("--profile", "devclaw", cwd=tmp_path)["profile"] == (
        "devclaw", "given (command line or code)")


def test_an_unknown_profile_is_refused_with_the_names() -> None:
    with pytest.raises(ConfigError, match="unknown profile 'ptrclow'; use one of: clawmemory,"
                       " ptrclaw, sclaw, devclaw, koshi, sandbox"):
        load_settings(profile="ptrclow")


def test_the_users_settings_rank_above_the_profile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("CLAWMEM_CONFIG", str(config))
    config.write_text("[recall]\nlimit = 9\n")
    monkeypatch.setenv("CLAWMEM_AGENT__TOOLS_DIALECT", "sandbox")
    settings, origins = settings_origins(profile="devclaw")
    assert (settings.recall.limit, origins["recall.limit"]) == (9, f"config file {config}")
    assert (settings.agent.tools_dialect, origins["agent.tools_dialect"]) == (
        "sandbox", "CLAWMEM_AGENT__TOOLS_DIALECT")
    assert (settings.recall.rrf_k, origins["recall.rrf_k"]) == (60, "profile devclaw")
    assert origins["recall.mode"] == "default"


def test_a_setting_the_profile_makes_inert_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The profile's formula is weighted; a calibrated-fusion weight would do nothing."""
    monkeypatch.setenv("CLAWMEM_RECALL__CALIBRATED_TEXT_WEIGHT", "0.7")
    with pytest.raises(ConfigError) as refused:
        load_settings(profile="ptrclaw")
    assert ('calibrated_text_weight is set but has no effect because recall.fusion is'
            ' "weighted"') in str(refused.value)


def test_memory_open_takes_a_profile(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "k.db", profile="koshi") as mem:
        assert (mem.settings.profile, mem.settings.recall.mode) == ("koshi", "keyword")
    with pytest.raises(ConfigError, match="a profile applies when settings are built"):
        Memory.open(tmp_path / "k.db", profile="koshi", settings=load_settings())


# --- 000 PtrClaw's variables and files (rows P14, P16, N4) ------------------------------------
def test_ptrclaw_reads_its_memory_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_RECENCY_HALF_LIFE", "259200")
    monkeypatch.setenv("MEMORY_RECALL_LIMIT", "7")
    monkeypatch.setenv("MEMORY_SYNTHESIS_INTERVAL", "3")
    monkeypatch.setenv("MEMORY_KNOWLEDGE_SURVIVAL_CHANCE", "0.5")
    monkeypatch.setenv("MEMORY_HYGIENE_MAX_AGE", "3600")
    settings, origins = settings_origins(profile="ptrclaw")
    assert (settings.recall.recency, settings.recall.recency_half_life_s) == (
        "half-life", 259200.0)
    assert origins["recall.recency_half_life_s"] == "MEMORY_RECENCY_HALF_LIFE"
    # 000's recall_limit is enrichment's; its memory_recall tool keeps its own default (5)
    assert (settings.recall.limit, settings.agent.enrich_limit) == (5, 7)
    assert settings.cognition.synthesis_interval == 3
    assert settings.lifecycle.knowledge_survival_chance == 0.5
    assert settings.lifecycle.hygiene_max_age_s == 3600
    monkeypatch.setenv("MEMORY_RECENCY_HALF_LIFE", "0")  # 000: 0 disables decay
    assert load_settings(profile="ptrclaw").recall.recency == "none"


def test_ptrclaw_half_life_ranks_as_its_formula(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """score × exp(−ln 2 × age / half_life): a one-day-old entry at a one-day half-life
    weighs half of a new one."""
    monkeypatch.setenv("MEMORY_RECENCY_HALF_LIFE", "86400")
    now = [1_700_000_000.0]
    with Memory.open(tmp_path / "p.db", profile="ptrclaw", clock=lambda: now[0]) as mem:
        mem.store("the deploy key rotates weekly")
        now[0] += 86_400
        (hit,) = mem.recall("deploy key", touch=False)
    assert math.isclose(hit.explain.factors["recency"], 0.5, rel_tol=1e-6)


def test_ptrclaw_hybrid_is_000s_weighted_formula(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """000: `text_weight × bm25/max + vector_weight × (cos+1)/2`, 0.4 and 0.6, nothing else."""
    monkeypatch.setenv("EMBEDDING_PROVIDER", "local")
    with Memory.open(tmp_path / "p.db", profile="ptrclaw") as mem:
        mem.store("Project uses Python 3.12", key="python-version")
        mem.store("The project builds with CMake", key="project-setup")
        mem.store("Deploys run every Friday")
        hits = mem.recall("python version of the project", touch=False)
    top = max(h.explain.lists.get("keyword", {}).get("bm25", 0.0) for h in hits)
    assert len(hits) == 3 and top > 0
    for hit in hits:
        bm25 = hit.explain.lists.get("keyword", {}).get("bm25", 0.0)
        cosine = hit.explain.lists["vector"]["cosine"]
        expected = 0.4 * bm25 / top + 0.6 * (cosine + 1) / 2
        assert math.isclose(hit.score, expected, rel_tol=1e-5), hit.explain


def test_ptrclaw_reads_its_config_file_below_its_variables(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAWMEM_HOME")  # a clawmemory home the user set would rank above
    home = tmp_path / "user" / ".ptrclaw"
    home.mkdir(parents=True)
    (home / "config.json").write_text(json.dumps({"memory": {
        "recall_limit": 4, "enrich_depth": 0, "synthesis": False,
        "embeddings": {"provider": "ollama", "model": "nomic-embed-text",
                       "text_weight": 0.3, "vector_weight": 0.7}}}))
    monkeypatch.setenv("EMBEDDING_MODEL", "all-minilm")
    settings, origins = settings_origins(profile="ptrclaw")
    assert (settings.agent.enrich_limit, settings.agent.enrich_depth) == (4, 0)
    assert settings.cognition.synthesis is False
    assert (settings.embedder.provider, settings.embedder.model) == ("ollama", "all-minilm")
    assert (settings.recall.text_weight, settings.recall.vector_weight) == (0.3, 0.7)
    assert origins["agent.enrich_limit"] == f"{home / 'config.json'} memory.recall_limit"
    assert origins["embedder.model"] == "EMBEDDING_MODEL"
    # 000's default file layout: ~/.ptrclaw/memory.db
    assert settings.resolved_db() == home / "memory.db"


def test_ptrclaw_config_file_that_is_not_json_is_an_error(tmp_path: Path) -> None:
    home = tmp_path / "user" / ".ptrclaw"
    home.mkdir(parents=True)
    (home / "config.json").write_text("{memory: ")
    with pytest.raises(ConfigError, match="is not a PtrClaw config"):
        load_settings(profile="ptrclaw")


def test_ptrclaw_embedding_variables_and_openai_key_auto_detection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings(profile="ptrclaw").embedder.provider == "none"  # 000: "" = off
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings, origins = settings_origins(profile="ptrclaw")
    assert settings.embedder.provider == "openai"
    assert origins["embedder.provider"] == "OPENAI_API_KEY (auto-detected, as 000)"
    monkeypatch.setenv("EMBEDDING_PROVIDER", "local")  # a provider named wins
    assert load_settings(profile="ptrclaw").embedder.provider == "local"
    monkeypatch.setenv("EMBEDDING_API_KEY", "sk-other")
    assert load_settings(profile="ptrclaw").embedder.api_key == "sk-other"
    # clawmemory's own profile never picks a remote provider from a key lying around
    assert load_settings().embedder.provider == "local"


# --- 002 DevClaw's variables and layout (rows D5, N9) ------------------------------------------
def test_devclaw_layout_and_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(profile="devclaw")
    assert (str(settings.db), str(settings.storage.mirror_dir)) == (
        "data/memory.db", "data/memory")
    monkeypatch.setenv("DEVCLAW_MEMORY_DB", str(tmp_path / "dc.db"))
    monkeypatch.setenv("DEVCLAW_MEMORY_DIR", str(tmp_path / "notes"))
    settings, origins = settings_origins(profile="devclaw")
    assert settings.resolved_db() == tmp_path / "dc.db"
    assert settings.storage.mirror_dir == tmp_path / "notes"
    assert (origins["db"], origins["storage.mirror_dir"]) == (
        "DEVCLAW_MEMORY_DB", "DEVCLAW_MEMORY_DIR")


# --- the ranking formulas, exactly (rows D5, A13, K2) --------------------------------------------
def _hybrid_hits(tmp_path: Path, profile: str) -> list[Any]:
    with Memory.open(tmp_path / f"{profile}.db", profile=profile) as mem:
        assert mem.settings.embedder.provider == "local"
        mem.store("Alice deployed the payments service on Friday")
        mem.store("The payments service runs on port 8080")
        mem.store("Alice prefers green tea in the morning")
        return mem.recall("Alice payments service", mode="hybrid", touch=False)


@pytest.mark.parametrize(("profile", "lists"), [("devclaw", {"keyword", "vector"}),
                                                 ("sandbox", {"keyword", "vector", "entity"})])
def test_rrf_profiles_score_exactly_sum_of_one_over_60_plus_rank(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str, lists: set[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the devclaw profile's notes go to ./data/memory
    hits = _hybrid_hits(tmp_path, profile)
    assert hits
    seen: set[str] = set()
    for hit in hits:
        ranks = {name: v["rank"] for name, v in hit.explain.lists.items() if "rank" in v}
        weights = {"keyword": 1.0, "vector": 1.0, "entity": 1.0 if profile == "sandbox" else 0.0}
        expected = sum(weights[n] / (60 + r) for n, r in ranks.items())
        assert math.isclose(hit.explain.fused, expected, rel_tol=1e-9)
        assert math.isclose(hit.score, expected, rel_tol=1e-9)  # no other factor moves it
        seen |= set(ranks)
    assert seen == lists


def test_koshi_ranks_bm25_times_score_weight_times_recency(tmp_path: Path) -> None:
    now = [1_700_000_000.0]
    with Memory.open(tmp_path / "k.db", profile="koshi", clock=lambda: now[0]) as mem:
        first = mem.store("payment api hmac signature without trailing empty string")
        mem.reinforce(first)  # +3
        now[0] += 10 * 86_400
        (hit,) = mem.recall("hmac", touch=False)
    bm25 = hit.explain.lists["keyword"]["bm25"]
    expected = bm25 * math.exp(3 * 0.2) * (1 / (1 + 10 * 0.01))
    assert math.isclose(hit.score, expected, rel_tol=1e-4)


def test_koshi_keeps_stop_words_and_matches_words_as_written(tmp_path: Path) -> None:
    """003's sanitiser: no stop-word list, no stemming ("runs" does not find "running")."""
    with Memory.open(tmp_path / "k.db", profile="koshi") as mem:
        mem.store("I went running in the park")
        dog = mem.store("The dog runs fast")
        about = mem.store("what about the weather")
        found = {h.memory.id for h in mem.recall("runs what", touch=False)}
    assert found == {dog, about}
    with Memory.open(tmp_path / "c.db", embedder=None) as mem:  # clawmemory's own rules
        mem.store("I went running in the park")
        mem.store("what about the weather")
        assert [h.memory.content for h in mem.recall("runs what", mode="keyword")] == [
            "I went running in the park"]


def test_koshi_co_recall_links_start_at_one_and_grow_by_one(tmp_path: Path) -> None:
    """003 v2: strength REAL DEFAULT 1.0, incremented each time two memories are recalled
    together."""
    with Memory.open(tmp_path / "k.db", profile="koshi") as mem:
        a = mem.store("payment api onboarding checklist")
        b = mem.store("payment api hmac debugging session")
        strengths = []
        for _ in range(2):
            mem.recall("payment api")
            strengths.append([(link.other_id, link.strength, link.origin)
                              for link in mem.links(a)])
    assert strengths == [[(b, 1.0, "co-recall")], [(b, 2.0, "co-recall")]]
    with Memory.open(tmp_path / "c.db", embedder=None) as mem:  # off in clawmemory's own
        a = mem.store("payment api onboarding checklist")
        mem.store("payment api hmac debugging session")
        mem.recall("payment api")
        assert mem.links(a) == []


def test_config_show_lists_every_setting_with_its_origin(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_RECALL_LIMIT", "3")
    rows = shown("--profile", "ptrclaw", cwd=tmp_path)
    assert rows["agent.enrich_limit"] == (3, "MEMORY_RECALL_LIMIT")
    assert rows["recall.fusion"] == ("weighted", "profile ptrclaw")
    assert rows["recall.candidate_pool"] == (50, "default")
    changed = clawmem("config", "show", "--profile", "ptrclaw", "--changed", "--json",
                      cwd=tmp_path)
    names = {r["setting"] for r in json.loads(changed.stdout)["settings"]}
    assert "recall.candidate_pool" not in names and "recall.fusion" in names
    bad = clawmem("config", "show", "--profile", "nope", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "unknown profile 'nope'" in bad.stderr
