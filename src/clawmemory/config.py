"""Settings: a TOML config file plus ``CLAWMEM_*`` environment variables, read at entry points only.

Precedence (highest first): explicit arguments, environment (``CLAWMEM_DB``,
``CLAWMEM_RECALL__RRF_K``; nested sections use ``__``), the config file (``CLAWMEM_CONFIG`` or
``~/.clawmemory/config.toml``), then the defaults below, which are the specifications' numbers.
Every number the specifications give is a named default here, documented once
(docs/configuration.md).
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from clawmemory.errors import ConfigError

__all__ = [
    "Backend",
    "EmbedderSettings",
    "EntitySettings",
    "HistorySettings",
    "LLMProviderName",
    "LLMSettings",
    "MaintenanceSettings",
    "RecallSettings",
    "Settings",
    "StorageSettings",
    "default_home",
    "load_settings",
]


class Backend(StrEnum):
    SQLITE = "sqlite"
    MEMORY = "memory"
    JSON = "json"
    NONE = "none"


def default_home() -> Path:
    """Where clawmemory keeps its files when no path is given: $CLAWMEM_HOME or ~/.clawmemory."""
    return Path(os.environ.get("CLAWMEM_HOME") or Path.home() / ".clawmemory")


class StorageSettings(BaseModel):
    busy_timeout_ms: int = 5000  # 001
    max_content_chars: int = 100_000  # refuse larger content: a memory is a discrete unit (003)
    max_key_chars: int = 512
    mirror_dir: Path | None = None  # write each memory through to Markdown files here (002)
    sequence_links: bool = True  # link each episode to the previous turn of its session


class EmbedderSettings(BaseModel):
    provider: str = "local"  # local | openai | ollama | none
    model: str | None = None  # None = provider default (local: packaged all-MiniLM-L6-v2)
    base_url: str | None = None
    api_key: str | None = None  # openai; falls back to OPENAI_API_KEY
    dimensions: int | None = None  # request reduced dimensions (OpenAI Matryoshka models)
    batch_size: int = 64
    query_cache_size: int = 1024  # LRU of query embeddings
    context_turns: int = 1  # an episode is embedded after this many earlier turns of its session


class EntitySettings(BaseModel):
    enabled: bool = True
    strategy: str = "fast"  # NER strategy on the write path (004: regex only = fast)


class RecallSettings(BaseModel):
    limit: int = 5  # 000 recall_limit
    mode: str = (
        "auto"  # auto (hybrid when an embedder works, else keyword) | keyword | vector | hybrid
    )
    list_weights: dict[str, float] = Field(
        default_factory=lambda: {"keyword": 1.0, "vector": 1.0, "entity": 0.5}
    )
    link_decay: float = 0.5  # a neighbour reached by depth=1 scores its parent's score × this
    neighbour_weight: float = 0.15  # × fused score of adjacent turns (ADR 0005)
    entity_weight: float = 0.0  # weighted fusion: weight of the entity list (max-normalised)
    co_recall: bool = False  # 003 v2 co-recall links (off: see docs/benchmarks.md)
    co_recall_increment: float = 0.1
    co_recall_boost: float = 0.05
    co_recall_max_boost: float = 0.2
    candidate_pool: int = 50  # candidates per list before re-ranking
    # Vector similarity is cosine around the namespace's mean vector once it holds this many
    # vectors (0 = plain cosine). Measured on LoCoMo: ADR 0007.
    centre_min_rows: int = 50
    rrf_k: int = 60  # 002/004
    # "calibrated" (each list standardised; ADR 0011), "weighted" (000) or "rrf" (002/004)
    fusion: str = "calibrated"
    calibrated_text_weight: float = 0.6  # × z(keyword) (ADR 0011)
    calibrated_vector_weight: float = 0.4  # × z(cosine) (ADR 0011)
    calibrated_entity_weight: float = 0.1  # × entity score / best entity score (ADR 0011)
    calibrated_floor: float = 0.5  # z-scores below −this count as −this (ADR 0011)
    keyword_top_bonus: float = 0.5  # added to the keyword list's best match (ADR 0011)
    # Keyword candidates holding the same query words within this share of the best of them
    # score as that best: their BM25 differences are document length (ADR 0011). 0 = off.
    keyword_tie: float = 0.2
    # The relevance floor (search/floor.py, ADR 0011): a recall whose candidates show no sign
    # of relevance returns nothing. Cosines are the (centred) cosines recall explains.
    relevance_floor: bool = True
    floor_cosine: float = 0.45  # hybrid: a candidate this similar is relevant by itself
    floor_keyword_share: float = 0.34  # hybrid: ... or holding this share of the query's words
    floor_keyword_cosine: float = 0.25  # hybrid: ... or holding a query word at this cosine
    floor_vector_cosine: float = 0.3  # vector mode: the best candidate's cosine at least this
    floor_candidate_cosine: float = 0.15  # found by similarity alone: dropped below this
    floor_plain_cosine: float = 0.25  # the first two, where cosines are plain (small namespace)
    floor_plain_candidate: float = 0.1  # the last two, where cosines are plain
    # Recall's access counts are written by a background thread this long after the first
    # queued one (search/access.py); 0 writes them in the request path.
    touch_delay_s: float = Field(default=1.0, ge=0)
    text_weight: float = 0.4  # weighted mode, as 000 (ADR 0004, ADR 0007)
    vector_weight: float = 0.6  # weighted mode, as 000 (ADR 0004, ADR 0007)
    score_weight: float = 0.2  # 003: exp(score * 0.2)
    recency: str = "koshi"  # "koshi" (003: 1/(1+0.01*days)), "half-life" (000), "none"
    recency_per_day: float = 0.01  # 003
    recency_half_life_s: float = 0.0  # 000; 0 = disabled
    stopwords: bool = True  # drop English function words from keyword queries (see sanitize.py)
    weight_key: float = 2.0  # 000: key matches weigh twice content matches
    weight_content: float = 1.0
    weight_tags: float = 1.5
    weight_source: float = 0.5


class LifecycleSettings(BaseModel):
    reinforce_weight: int = 3  # 003
    demote_weight: int = 1  # 003
    hygiene_max_age_s: int = 604_800  # 000: 7 days
    knowledge_max_idle_days: int = 30  # 000
    knowledge_survival_chance: float = 0.05  # 000
    decay_threshold: float = 0.05  # 004
    max_size_bytes: int = 100 * 1024 * 1024  # 003 maxSize 100MB
    prune_percent: float = 1.0  # 003


class MaintenanceSettings(BaseModel):
    """Scheduled maintenance (003, 004): one crontab expression per job (minute hour day month
    weekday; "" leaves the job unscheduled), in ``timezone`` (None = this machine's)."""

    enabled: bool = True  # False: `clawmem daemon` schedules nothing
    enrich: str = "0 2 * * *"  # 004 entity enrichment, nightly 02:00
    consolidate: str = "0 3 * * *"  # 004 session consolidation, nightly 03:00
    decay: str = "0 4 * * *"  # 004 decay + 000 hygiene + 003 pruning (pruneSchedule), 04:00
    reflect: str = "0 3 * * 0"  # 004 weekly reflection, Sunday 03:00
    timezone: str | None = None
    enrich_max_entities: int = 2  # 004: re-extract memories with at most this many entities
    enrich_batch: int = 50  # 004: memories per enrichment run


class ConsolidationSettings(BaseModel):
    """The 004 consolidator agent's tools (``tools/consolidator.py``)."""

    episodes_page_size: int = Field(default=30, ge=1)  # get_episodes_for_consolidation chunk
    dedup_jaccard: float = Field(default=0.75, ge=0, le=1)  # save_facts_batch: duplicate from
    dedup_candidates: int = Field(default=10, ge=1)  # stored facts compared with each new one
    conflict_confidence: float = Field(default=0.3, ge=0, le=1)  # resolve_conflict: old fact's


class LLMProviderName(StrEnum):
    NONE = "none"
    OPENAI = "openai"  # any OpenAI-compatible chat-completions server
    ANTHROPIC = "anthropic"


class LLMSettings(BaseModel):
    """The language model for the steps that need one (docs/llm.md). ``provider = "none"``
    (the default) skips them and says so; everything else works."""

    provider: LLMProviderName = LLMProviderName.NONE
    base_url: str | None = None  # None = the provider's own API; a local server's URL otherwise
    model: str | None = None  # None = provider default (official APIs only)
    # The NAME of the environment variable holding the key, never the key itself. None: the
    # provider's variable (OPENAI_API_KEY / ANTHROPIC_API_KEY) for its official API, no key for
    # any other server, so a key is never sent to a host the user did not name it for.
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    timeout_s: float = Field(default=60.0, gt=0, le=3600)  # one request, connect included
    max_retries: int = Field(default=2, ge=0, le=10)  # on connection errors, 408, 429, 5xx
    backoff_s: float = Field(default=0.5, ge=0, le=60)  # first retry's wait; doubles, jittered
    max_tokens: int = Field(default=1024, ge=1)  # answer cap when a step sets none (Anthropic)
    response_cache: bool = False  # 000 response_cache
    cache_ttl_s: int = Field(default=3600, ge=0)  # 000 cache_ttl
    cache_max_entries: int = Field(default=100, ge=1)  # 000 cache_max_entries
    cache_path: Path | None = None  # None = default_home()/response_cache.json (000)

    @field_validator("provider", mode="before")
    @classmethod
    def _provider_name(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class ContextSettings(BaseModel):
    """Context injection (``context.py``); the token estimate itself (words × 1.3) is the
    pluggable ``estimator`` argument, not a setting."""

    devclaw_budget_tokens: int = Field(default=2000, ge=1)  # 002 token_budget.memory
    devclaw_max_results: int = Field(default=20, ge=1)  # 002 HybridSearch(input, 20)
    layer_cache_ttl_s: float = Field(default=30.0, ge=0)  # 002 memory-layer cache
    soul_traits: int = Field(default=5, ge=0)  # 000: personality:* entries in the soul block
    sandbox_facts: int = Field(default=5, ge=1)  # 004 get_context: hybrid_search(prompt, limit=5)


class HistorySettings(BaseModel):
    """Conversation history, compaction and sessions (``clawmemory.history``, docs/history.md)."""

    max_history_len: int = Field(default=100, ge=1)  # 001 MaxHistoryLen: the in-RAM window
    max_history_messages: int = Field(default=50, ge=1)  # 000: compact above this many
    token_limit: int = Field(default=128_000, ge=1)  # 000: the model's context window
    compact_threshold: float = Field(default=0.75, gt=0, le=1)  # 000: of token_limit
    min_messages: int = Field(default=12, ge=0)  # 000: never compact this many or fewer
    keep_recent: int = Field(default=10, ge=1)  # 000: the last N kept verbatim
    emergency_retain: int = Field(default=4, ge=1)  # 001 EmergencyRetain (001 gives no number)
    session_idle_s: float = Field(default=3600.0, gt=0)  # 000 evict_idle: one hour
    hygiene_on_compact: bool = True  # 000 compaction step 5: hygiene purge afterwards
    summary_memory: bool = True  # 003: an LLM compaction summary is also stored as a memory
    write_queue_max: int = Field(default=10_000, ge=1)  # write-behind queue bound (001 8b/13b)


class Settings(BaseSettings):
    """All settings. Construct with keyword arguments to override anything in code."""

    model_config = SettingsConfigDict(
        env_prefix="CLAWMEM_",
        env_nested_delimiter="__",
        extra="ignore",
        validate_default=True,
    )

    db: Path | None = None  # storage file; None = default_home()/memory.db (or memory.json)
    namespace: str = "default"
    backend: str = Backend.SQLITE.value  # sqlite | memory | json | none (unknown -> none)
    log_level: str = "WARNING"
    storage: StorageSettings = Field(default_factory=StorageSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    entities: EntitySettings = Field(default_factory=EntitySettings)
    maintenance: MaintenanceSettings = Field(default_factory=MaintenanceSettings)
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_path())
        return (init_settings, env_settings, toml)

    def resolved_db(self) -> Path:
        if self.db is not None:
            return Path(self.db).expanduser()
        suffix = ".json" if self.backend == Backend.JSON.value else ".db"
        return default_home() / f"memory{suffix}"


def config_path() -> Path:
    return Path(os.environ.get("CLAWMEM_CONFIG") or default_home() / "config.toml")


def load_settings(**overrides: Any) -> Settings:
    """Build settings from file + environment + overrides, translating errors to ConfigError."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ConfigError(f"invalid setting {where}: {first.get('msg')}") from exc
    except (OSError, ValueError) as exc:  # unreadable or malformed TOML
        raise ConfigError(f"cannot read config file {config_path()}: {exc}") from exc
