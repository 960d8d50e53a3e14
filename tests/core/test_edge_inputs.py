"""Every input is checked at the edge: each case seen failing (issue 9) gets the library's own
error naming the allowed range, exit code 2 in the CLI and an ``isError`` result from a tool;
settings are range-checked, and an unknown or inert setting is refused with the fix.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clawmemory import ConfigError, InvalidInputError, Memory, Settings
from clawmemory.config import load_settings
from clawmemory.tools import call_tool

MAIN = "import sys\nfrom clawmemory.interfaces.cli import main\nsys.exit(main())\n"


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    return Memory.open(tmp_path / "m.db", settings=Settings(embedder={"provider": "none"}))


def clawmem(db: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """The real CLI in a subprocess; bytes arguments reach argv as they are (not UTF-8)."""
    env = {**os.environ, "CLAWMEM_EMBEDDER__PROVIDER": "none"}
    return subprocess.run([sys.executable, "-c", MAIN, "--db", str(db), *args],
                          capture_output=True, timeout=120, env=env, check=False)


# --- the cases of issue 9, through the real CLI ----------------------------------------------
def test_cli_refuses_bad_ids_offsets_and_weights_with_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    assert clawmem(db, "add", "User likes tea", "--key", "tea").returncode == 0
    cases = [
        (["get", b"\xff"], "error: id or key is not valid Unicode (surrogates not allowed)"),
        (["list", "--offset", "99999999999999999999999"],
         "error: offset must be an integer from 0 to 1,000,000,000"),
        (["reinforce", "tea", "--weight", "99999999999999999999"],
         "error: weight must be an integer from 0 to 100"),
        (["demote", "tea", "--weight", "101"], "error: weight must be an integer from 0 to 100"),
        (["recall", "x" * 10_001], "error: query is 10,001 characters; the limit is 10,000 "
         "(recall.max_query_chars). Search with a few specific words."),
        (["add", "tea", "--event-time", "99999-01-01"],
         "error: event_time: cannot read '99999-01-01' as an ISO-8601 time"),
    ]
    for args, line in cases:
        done = clawmem(db, *args)
        assert (done.returncode, done.stderr.decode()) == (2, line + "\n"), args
        assert done.stdout == b""
    shown = clawmem(db, "--json", "get", "tea")  # the refused calls changed nothing
    assert shown.returncode == 0
    record = json.loads(shown.stdout)
    assert (record["content"], record["score"]) == ("User likes tea", 0)
    assert len(json.loads(clawmem(db, "--json", "list").stdout)["memories"]) == 1


# --- the Python API ----------------------------------------------------------------------------
def test_list_offset_and_limit_ranges(mem: Memory) -> None:
    mem.store("one")
    assert mem.list(offset=1_000_000_000) == []
    for offset in (10**30, -1, 1.5, "3", True):
        with pytest.raises(InvalidInputError, match="offset must be an integer from 0 to "
                           "1,000,000,000"):
            mem.list(offset=offset)
    with pytest.raises(InvalidInputError, match=r"limit must be a positive integer \(at most "
                       "10,000 results are returned\\)"):
        mem.list(limit=0)
    assert len(mem.list(limit=10**30)) == 1  # a huge limit is capped, not refused


@pytest.mark.parametrize("strength", [math.nan, math.inf, -math.inf, 0, -1, 1000.5, "1", True,
                                      None])
def test_link_strength_must_be_finite_and_in_range(mem: Memory, strength: Any) -> None:
    a, b = mem.store("alpha"), mem.store("beta")
    with pytest.raises(InvalidInputError) as refused:
        mem.link(a, b, strength=strength)
    assert str(refused.value) == "strength must be a number greater than 0 and at most 1,000"
    assert mem.neighbors(a) == []


def test_link_strength_in_range_is_stored(mem: Memory) -> None:
    a, b = mem.store("alpha"), mem.store("beta")
    assert mem.link(a, b, strength=1000)
    assert [(lk.other_id, lk.strength) for lk in mem.store_backend.links("default", [a])[a]] == [
        (b, 1000.0)]


def test_metadata_depth_and_size_are_limited(mem: Memory) -> None:
    def nested(depth: int) -> dict[str, Any]:
        value: dict[str, Any] = {"leaf": 1}
        for _ in range(depth - 1):
            value = {"k": value}
        return value

    ok = mem.store("twenty levels", metadata=nested(20))
    assert mem.get(ok).metadata == nested(20)
    for depth in (21, 50_000):  # 50,000 used to raise RecursionError from the JSON encoder
        with pytest.raises(InvalidInputError) as refused:
            mem.store("too deep", metadata=nested(depth))
        assert str(refused.value) == ("metadata is nested more than 20 levels deep "
                                      "(storage.max_metadata_depth)")
    with pytest.raises(InvalidInputError, match=r"metadata is 100,0\d\d characters of JSON; "
                       r"the limit is 100,000 \(storage.max_metadata_chars\)"):
        mem.store("too big", metadata={"blob": "x" * 100_000})
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(InvalidInputError, match="nested more than 20 levels"):
        mem.store("cycle", metadata=cyclic)
    assert mem.count() == 1


def test_weights_and_scores_stay_in_range(mem: Memory) -> None:
    mid = mem.store("useful fact")
    for _ in range(40):  # 4,000 points: exp(800) would overflow the reinforcement factor
        mem.reinforce(mid, 100)
    assert mem.get(mid).score == 4000
    (hit,) = mem.recall("useful fact")
    assert hit.explain.factors["reinforcement"] == math.exp(700)
    with pytest.raises(InvalidInputError, match="weight must be an integer from 0 to 100"):
        mem.reinforce(mid, 101)
    with pytest.raises(InvalidInputError, match="weight must be an integer from 0 to 100"):
        mem.demote(mid, -1)
    assert mem.get(mid).score == 4000


@pytest.mark.parametrize("ref", ["\udcff", "a\x00b", "", "   ", "x" * 4097, None, 1.5, ["x"],
                                 {"a": 1}])
def test_every_lookup_checks_the_reference(mem: Memory, ref: Any) -> None:
    mem.store("kept")
    for call in (mem.get, mem.forget, mem.reinforce, mem.demote, mem.confirm, mem.history,
                 mem.neighbors, lambda r: mem.link(r, r), lambda r: mem.unlink(r, r)):
        with pytest.raises(InvalidInputError, match="id or key"):
            call(ref)
    assert [r.content for r in mem.list()] == ["kept"]


def test_tool_calls_refuse_huge_offsets_as_tool_errors(mem: Memory) -> None:
    result = call_tool(mem, "memory_list", {"offset": 10**30})
    assert result.is_error
    assert result.text == ("Invalid argument 'offset' for memory_list: Input should be less "
                           "than or equal to 1000000000.")
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"a": deep}
    result = call_tool(mem, "memory", {"action": deep}, dialect="devclaw")
    assert result.is_error
    assert result.text == "memory: 'action' must be one of save, search, list, index, not dict."


# --- settings ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("values", "message"), [
    ({"storage": {"busy_timeout_ms": -1}},
     "invalid setting storage.busy_timeout_ms: Input should be greater than or equal to 0"),
    ({"recall": {"fusion": "bogus"}},
     "invalid setting recall.fusion: Input should be 'calibrated', 'weighted' or 'rrf'"),
    ({"recall": {"mode": "fast"}}, "invalid setting recall.mode: Input should be 'auto', "
     "'keyword', 'vector' or 'hybrid'"),
    ({"recall": {"link_decay": math.nan}},
     "invalid setting recall.link_decay: Input should be a finite number"),
    ({"lifecycle": {"knowledge_survival_chance": 1.5}}, "invalid setting "
     "lifecycle.knowledge_survival_chance: Input should be less than or equal to 1"),
    ({"recall": {"list_weights": {"keywords": 1.0}}}, "invalid setting recall.list_weights: "
     "unknown candidate list 'keywords'; the lists are keyword, vector, entity"),
    ({"log_level": "LOUD"},
     "invalid setting log_level: unknown level 'LOUD'; use DEBUG, INFO, WARNING or ERROR"),
    ({"recall": {"limt": 3}}, "unknown setting recall.limt: did you mean recall.limit? Fix or "
     "remove it (docs/configuration.md lists every setting)"),
])
def test_bad_settings_are_config_errors(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings(**values)
    assert str(refused.value) == message


@pytest.mark.parametrize(("recall", "fix"), [
    ({"recency": "koshi", "recency_half_life_s": 3600}, 'recency_half_life_s is set but has no'
     ' effect because recall.recency is "koshi"; set recall.recency = "half-life" to use it,'
     ' or remove recall.recency_half_life_s'),
    ({"recency": "half-life"}, 'recency = "half-life" needs recency_half_life_s > 0'),
    ({"recency": "none", "recency_per_day": 0.5}, 'recency_per_day is set but has no effect'),
    ({"rrf_k": 30}, 'rrf_k is set but has no effect because recall.fusion is "calibrated"; '
     'set recall.fusion = "rrf" to use it, or remove recall.rrf_k'),
    ({"fusion": "weighted", "keyword_tie": 0.1}, 'keyword_tie is set but has no effect '
     'because recall.fusion is "weighted"; set recall.fusion = "calibrated" to use it'),
    ({"fusion": "rrf", "text_weight": 0.5}, 'text_weight is set but has no effect because '
     'recall.fusion is "rrf"'),
    ({"co_recall_boost": 0.1}, "co_recall_boost is set but has no effect because "
     "recall.co_recall is false"),
])
def test_inert_settings_fail_loudly_with_the_fix(recall: dict[str, Any], fix: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings(recall=recall)
    assert str(refused.value).startswith("invalid setting recall: " + fix)


def test_the_settings_an_inert_check_points_to_take_effect() -> None:
    half = Settings(recall={"recency": "half-life", "recency_half_life_s": 3600})
    assert (half.recall.recency, half.recall.recency_half_life_s) == ("half-life", 3600.0)
    rrf = Settings(recall={"fusion": "rrf", "rrf_k": 30, "list_weights": {"keyword": 2.0}})
    assert (rrf.recall.rrf_k, rrf.recall.list_weights) == (30, {"keyword": 2.0})
    co = Settings(recall={"co_recall": True, "co_recall_boost": 0.1})
    assert co.recall.co_recall_boost == 0.1


def test_a_half_life_alone_selects_ptrclaws_recency() -> None:
    """000 has one setting, `recency_half_life`: giving the half-life alone is enough."""
    alone = Settings(recall={"recency_half_life_s": 3600})
    assert (alone.recall.recency, alone.recall.recency_half_life_s) == ("half-life", 3600.0)
    assert Settings().recall.recency == "koshi"


def test_unknown_keys_in_the_file_and_environment_name_their_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("CLAWMEM_CONFIG", str(config))
    config.write_text('backend = "sqlite"\nbogus_key = 1\n')
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert str(refused.value).startswith(
        f"unknown setting bogus_key (in {config} or given in code): remove it (known here:"
        " profile, home, db, namespace,")
    config.write_text("[recal]\nlimit = 3\n")
    with pytest.raises(ConfigError, match=r"unknown setting recal .*did you mean recall\?"):
        load_settings()
    config.write_text("[recall]\nlimit = 3\n")
    assert load_settings().recall.limit == 3
    monkeypatch.setenv("CLAWMEM_STORAGE__BUSY_TIMEOUT", "10")
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert str(refused.value) == (
        "unknown setting storage.busy_timeout (from CLAWMEM_STORAGE__BUSY_TIMEOUT): did you "
        "mean storage.busy_timeout_ms? Fix or remove it (docs/configuration.md lists every "
        "setting)")


def test_a_bad_config_file_is_exit_2_before_anything_is_created(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[recall]\nfusion = "bogus"\n')
    env = {**os.environ, "CLAWMEM_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", MAIN, "--db", str(tmp_path / "x.db"), "stats"],
                          capture_output=True, text=True, timeout=120, env=env,
                          check=False)
    assert done.returncode == 2
    assert done.stderr == (f"error: invalid setting recall.fusion (in {home / 'config.toml'} or "
                           "given in code): Input should be 'calibrated', 'weighted' or"
                           " 'rrf'\n")
    assert not (tmp_path / "x.db").exists()


def test_per_agent_entries_without_the_per_agent_layout_are_refused() -> None:
    with pytest.raises(ConfigError, match=r'agents.x is set but has no effect because'
                       r' storage.layout is "single"'):
        Settings(agents={"x": {"memory": {"enabled": False}}})
    assert Settings(agents={"x": {}}, storage={"layout": "per-agent"}).agents["x"].memory.enabled
