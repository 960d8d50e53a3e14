"""Profiles: each specification's defaults as one table, chosen by the ``profile`` setting.

clawmemory's own defaults (profile ``clawmemory``) are measured to rank best and stay the
default. A profile makes an agent written for one of the five specifications get what it was
written for: its fusion formula and weights, recency formula, sanitiser rules, co-recall
strengths, tool dialect, context style and budgets, and its own environment variables and
file layout. A profile sits *under* everything the user sets (docs/configuration.md has the
order); ``clawmem config show`` prints each effective value and where it came from.

This module is data plus small readers of the environment; ``config.py`` turns it into
settings sources. Values are given as dotted setting paths (``recall.fusion``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "Origin",
    "Profile",
    "ProfileDefaults",
    "SpecEnvironment",
    "nest",
    "profile_names",
]

DEFAULT_PROFILE = "clawmemory"

# A value a profile supplies and where it came from, by dotted setting path.
Origin = tuple[Any, str]
Reader = Callable[[Mapping[str, str]], dict[str, Origin]]


@dataclass(frozen=True)
class Profile:
    """One specification's defaults (``defaults``) and the reader of its own environment
    variables and files (``read``), which ranks above the defaults and below clawmemory's own
    ``CLAWMEM_*`` variables and config file."""

    name: str
    spec: str
    summary: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    read: Reader | None = None

    def environment(self, env: Mapping[str, str]) -> dict[str, Origin]:
        """The settings this profile reads from ``env`` and the specification's files."""
        return self.read(env) if self.read is not None else {}


# --- 000 PtrClaw: MEMORY_* / EMBEDDING_* variables and ~/.ptrclaw/config.json -------------------
_TRUE = {"1", "true", "yes", "on"}


def _flag(value: object) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in _TRUE


def _auto_save(value: object) -> dict[str, Any]:
    # 000 auto_save: every user + assistant message as a Conversation entry (7-day hygiene);
    # false: messages live in the history only.
    on = _flag(value)
    return {"agent.observe": on, "agent.observe_kind": "conversation"} if on else {
        "agent.observe": False}


def _half_life(value: object) -> dict[str, Any]:
    seconds = float(str(value))  # a non-number is left to the settings' own check
    if seconds <= 0:
        return {"recall.recency": "none"}  # 000: 0 disables decay
    return {"recall.recency": "half-life", "recall.recency_half_life_s": seconds}


def _embedding_provider(value: object) -> dict[str, Any]:
    name = str(value).strip().lower()
    return {"embedder.provider": name or "none"}  # 000: "" = embeddings disabled


def _same(path: str) -> Callable[[object], dict[str, Any]]:
    return lambda value: {path: value}


# 000's `memory` keys (its configuration reference) → settings. The same names are read as
# MEMORY_<KEY> variables and from the `memory` object of ~/.ptrclaw/config.json.
PTRCLAW_KEYS: dict[str, Callable[[object], dict[str, Any]]] = {
    "backend": _same("backend"),
    "path": _same("db"),
    "auto_save": _auto_save,
    "recall_limit": _same("agent.enrich_limit"),  # 000: entries per message's enrichment
    "hygiene_max_age": _same("lifecycle.hygiene_max_age_s"),
    "response_cache": _same("llm.response_cache"),
    "cache_ttl": _same("llm.cache_ttl_s"),
    "cache_max_entries": _same("llm.cache_max_entries"),
    "enrich_depth": _same("agent.enrich_depth"),
    "synthesis": _same("cognition.synthesis"),
    "synthesis_interval": _same("cognition.synthesis_interval"),
    "recency_half_life": _half_life,
    "knowledge_max_idle_days": _same("lifecycle.knowledge_max_idle_days"),
    "knowledge_survival_chance": _same("lifecycle.knowledge_survival_chance"),
}
PTRCLAW_EMBEDDING_KEYS: dict[str, Callable[[object], dict[str, Any]]] = {
    "provider": _embedding_provider,
    "model": _same("embedder.model"),
    "base_url": _same("embedder.base_url"),
    "api_key": _same("embedder.api_key"),
    "text_weight": _same("recall.text_weight"),
    "vector_weight": _same("recall.vector_weight"),
}


def ptrclaw_home() -> Path:
    return Path.home() / ".ptrclaw"


def _ptrclaw_file() -> dict[str, Any]:
    """The ``memory`` object of 000's ``~/.ptrclaw/config.json`` (empty when absent). A file
    that is not JSON is an error the user must see, not a silently different configuration."""
    path = ptrclaw_home() / "config.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        memory = json.loads(text).get("memory", {})
    except (ValueError, AttributeError) as exc:
        raise ValueError(f"{path} is not a PtrClaw config (a JSON object): {exc}") from exc
    if not isinstance(memory, dict):
        raise ValueError(f"{path}: \"memory\" must be a JSON object")
    return memory


def _apply(out: dict[str, Origin], mapped: dict[str, Any], origin: str) -> None:
    for path, value in mapped.items():
        out[path] = (value, origin)


def read_ptrclaw(env: Mapping[str, str]) -> dict[str, Origin]:
    out: dict[str, Origin] = {}
    memory = _ptrclaw_file()
    where = f"{ptrclaw_home() / 'config.json'} memory."
    for key, mapper in PTRCLAW_KEYS.items():
        if key in memory:
            _apply(out, mapper(memory[key]), where + key)
    found = memory.get("embeddings")
    embeddings: dict[str, Any] = found if isinstance(found, dict) else {}
    for key, mapper in PTRCLAW_EMBEDDING_KEYS.items():
        if key in embeddings:
            _apply(out, mapper(embeddings[key]), f"{where}embeddings.{key}")
    # Variables rank above the file, as in 000.
    for key, mapper in PTRCLAW_KEYS.items():
        var = f"MEMORY_{key.upper()}"
        if var in env:
            _apply(out, mapper(env[var]), var)
    for key in ("provider", "model", "api_key"):  # 000 names these three
        var = f"EMBEDDING_{key.upper()}"
        if var in env:
            _apply(out, PTRCLAW_EMBEDDING_KEYS[key](env[var]), var)
    if "embedder.provider" not in out and env.get("OPENAI_API_KEY"):
        # 000 auto-detection: no provider configured but an OpenAI key present → OpenAI
        # embeddings. Only under this profile: clawmemory itself never picks a remote provider.
        _apply(out, {"embedder.provider": "openai"}, "OPENAI_API_KEY (auto-detected, as 000)")
    return out


# --- 002 DevClaw: DEVCLAW_MEMORY_DIR / DEVCLAW_MEMORY_DB ---------------------------------------
def read_devclaw(env: Mapping[str, str]) -> dict[str, Origin]:
    """002's variables; without them the profile's defaults keep 002's layout (the notes in
    ``data/memory``, the database in ``data/memory.db``, relative to the working directory)."""
    out: dict[str, Origin] = {}
    if env.get("DEVCLAW_MEMORY_DIR"):
        out["storage.mirror_dir"] = (env["DEVCLAW_MEMORY_DIR"], "DEVCLAW_MEMORY_DIR")
    if env.get("DEVCLAW_MEMORY_DB"):
        out["db"] = (env["DEVCLAW_MEMORY_DB"], "DEVCLAW_MEMORY_DB")
    return out


# clawmemory's own refinements of ranking, measured on LoCoMo (docs/benchmark-history.md):
# none of the specifications has them, so every specification's profile turns them off and
# ranks by its own formula alone.
_AS_SPECIFIED: dict[str, Any] = {
    "recall.neighbour_weight": 0.0,  # ADR 0005: adjacent turns' support
    "recall.session_weight": 0.0,  # ADR 0020: the session's best candidates' support
    "recall.speaker_boost": 0.0,  # ADR 0026: the speaker the question names
    "storage.keyword_context": False,  # ADR 0036: turns indexed with the words before them
    "recall.relevance_floor": False,  # ADR 0011
    "recall.centre_min_rows": 0,  # ADR 0007: plain cosine
    "embedder.context_turns": 0,  # ADR 0007: each text embedded alone
    "time.query_boost": 0.0,  # ADR 0017: periods the query names
    "time.answer_boost": 0.0,
    "time.query_candidates": False,
}


PROFILES: dict[str, Profile] = {
    DEFAULT_PROFILE: Profile(
        DEFAULT_PROFILE, "clawmemory",
        "clawmemory's own defaults: calibrated hybrid fusion, the local model, every spec's"
        " tools (measured to rank best; docs/benchmarks.md)"),
    "ptrclaw": Profile(
        "ptrclaw", "000 PtrClaw",
        "weighted text/vector 0.4/0.6, half-life recency off, no embeddings unless configured"
        " (or an OpenAI key), auto_save off, 000's tools; MEMORY_*/EMBEDDING_* variables,"
        " ~/.ptrclaw/config.json and ~/.ptrclaw/memory.db",
        defaults={
            **_AS_SPECIFIED,
            "home": "~/.ptrclaw",
            "llm.cache_path": "~/.ptrclaw/response_cache.json",
            "recall.fusion": "weighted",
            "recall.text_weight": 0.4,
            "recall.vector_weight": 0.6,
            "recall.recency": "none",
            "embedder.provider": "none",
            "agent.tools_dialect": "ptrclaw",
            "agent.context_style": "ptrclaw",
            "agent.observe": False,
        },
        read=read_ptrclaw),
    "sclaw": Profile(
        "sclaw", "001 sclaw",
        "per-agent memory at {home}/agents/{name}/memory.db with agents.<name>.memory.enabled,"
        " keyword (FTS5 BM25) facts, per-exchange fact extraction",
        defaults={
            **_AS_SPECIFIED,
            "storage.layout": "per-agent",
            "recall.recency": "none",
            "recall.mode": "keyword",
            "embedder.provider": "none",
            "cognition.extraction": True,
            "agent.context_style": "sclaw",
        }),
    "devclaw": Profile(
        "devclaw", "002 DevClaw",
        "RRF k=60 over vector + BM25, Markdown notes in data/memory read back by `clawmem sync`,"
        " data/memory.db, the `memory` dispatcher, a 2000-token memory layer of 20 results;"
        " DEVCLAW_MEMORY_DIR / DEVCLAW_MEMORY_DB",
        defaults={
            **_AS_SPECIFIED,
            "db": "data/memory.db",
            "storage.mirror_dir": "data/memory",
            "storage.mirror_flat": True,  # 002: data/memory/fact/2024-01-15-api-key.md
            "recall.fusion": "rrf",
            "recall.rrf_k": 60,
            "recall.list_weights": {"keyword": 1.0, "vector": 1.0, "entity": 0.0},
            "recall.recency": "none",
            "recall.limit": 20,
            "entities.enabled": False,  # 002 has no entity layer: two lists
            "agent.tools_dialect": "devclaw",
            "agent.context_style": "devclaw",
        },
        read=read_devclaw),
    "koshi": Profile(
        "koshi", "003 Koshi",
        "BM25 only, bm25 × exp(score × 0.2) × 1/(1 + days × 0.01), no stop-word list and no"
        " stemming in queries, co-recall links at strength 1.0 growing by 1.0, 003's tools, no"
        " automatic injection",
        defaults={
            **_AS_SPECIFIED,
            "recall.mode": "keyword",
            "recall.recency": "koshi",
            "recall.recency_per_day": 0.01,
            "recall.stopwords": False,
            "recall.stems": False,
            "recall.co_recall": True,
            "recall.co_recall_increment": 1.0,
            "embedder.provider": "none",
            "entities.enabled": False,
            "agent.tools_dialect": "koshi",
            "agent.context_style": "none",
        }),
    "sandbox": Profile(
        "sandbox", "004 sandbox assistant",
        "RRF k=60 over FTS5 + vector + entity lists weighed equally, episodes on the hot path,"
        " 5 facts of earlier sessions injected, 004's tools and schedules",
        defaults={
            **_AS_SPECIFIED,
            "recall.fusion": "rrf",
            "recall.rrf_k": 60,
            "recall.list_weights": {"keyword": 1.0, "vector": 1.0, "entity": 1.0},
            "recall.recency": "none",
            "recall.entity_without_vectors": True,  # 004: FTS5 + entity without embeddings
            "agent.tools_dialect": "sandbox",
            "agent.context_style": "sandbox",
            "agent.observe": True,
        }),
}


def profile_names() -> list[str]:
    return list(PROFILES)


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"recall.limit": 5}`` → ``{"recall": {"limit": 5}}`` (what a settings source returns)."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        *parents, leaf = path.split(".")
        node = out
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = value
    return out


def environ() -> Mapping[str, str]:
    """The process environment (one seam, so a caller may pass another mapping)."""
    return os.environ


# A profile default that yields to a setting the user gave: a half-life alone asks for 000's
# formula whatever the profile's recency is.
YIELDS: dict[str, str] = {"recall.recency_half_life_s": "recall.recency"}


def has(state: Mapping[str, Any], path: str) -> bool:
    node: Any = state
    for name in path.split("."):
        if not isinstance(node, Mapping) or name not in node:
            return False
        node = node[name]
    return True


def chosen(state: Mapping[str, Any], fallback: Mapping[str, Any] | None = None) -> Profile:
    """The profile the higher-ranked settings name (``DEFAULT_PROFILE`` when none does; an
    unknown name is left to the ``profile`` setting's own check, which names the valid ones)."""
    for source in (state, fallback or {}):
        name = source.get("profile")
        if name is not None:
            return PROFILES.get(str(name).strip().lower(), PROFILES[DEFAULT_PROFILE])
    return PROFILES[DEFAULT_PROFILE]


class _Source(PydanticBaseSettingsSource):
    """A source computed from the sources ranked above it: pydantic-settings hands it their
    merged values (``current_state``); ``config.settings_origins`` passes them as ``above``."""

    def __init__(self, settings_cls: type[BaseSettings],
                 above: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings_cls)
        self._above = above

    @property
    def higher(self) -> Mapping[str, Any]:
        return self._above if self._above is not None else self.current_state

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # __call__ answers for every field at once


class SpecEnvironment(_Source):
    """The chosen profile's own environment variables and files (000's ``MEMORY_*``), ranked
    below ``CLAWMEM_*`` variables and above clawmemory's config file. ``origins`` says where
    each value came from (for ``clawmem config show``)."""

    def __init__(self, settings_cls: type[BaseSettings],
                 file_source: PydanticBaseSettingsSource,
                 above: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings_cls, above)
        self._file = file_source
        self.origins: dict[str, str] = {}

    def __call__(self) -> dict[str, Any]:
        found = chosen(self.higher, self._file()).environment(environ())
        self.origins = {path: origin for path, (_, origin) in found.items()}
        return nest({path: value for path, (value, _) in found.items()})


class ProfileDefaults(_Source):
    """The chosen profile's defaults, ranked below everything the user set."""

    def __call__(self) -> dict[str, Any]:
        profile = chosen(self.higher)
        given = {yielder for yielder in YIELDS if has(self.higher, yielder)}
        return nest({path: value for path, value in profile.defaults.items()
                     if not any(YIELDS[g] == path for g in given)})
