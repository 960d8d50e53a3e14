"""Settings: a TOML config file plus ``CLAWMEM_*`` environment variables, read at entry points only.

Precedence (highest first): explicit arguments, environment (``CLAWMEM_DB``,
``CLAWMEM_RECALL__RRF_K``; nested sections use ``__``), the chosen profile's own variables and
files (000's ``MEMORY_*``, 002's ``DEVCLAW_*``; ``profiles.py``), the config file
(``CLAWMEM_CONFIG`` or ``~/.clawmemory/config.toml``), the profile's defaults, then the
defaults below. Every number the specifications give is a named default here or in a profile,
documented once (docs/configuration.md).

Settings take effect or fail loudly: every value is range-checked, an unknown key (a typo in
the file or a ``CLAWMEM_SECTION__KEY`` variable) and a setting that the other settings make
inert are refused when the settings are built, with a ``ConfigError`` that says how to fix it.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from clawmemory import profiles
from clawmemory.choices import Backend
from clawmemory.config_base import Section, zone
from clawmemory.config_recall import RecallSettings, TimeSettings
from clawmemory.errors import ConfigError
from clawmemory.validation import MAX_WEIGHT

__all__ = [
    "RESPONSE_CACHE_FILE",
    "AgentSettings",
    "Backend",
    "CognitionSettings",
    "ConsolidationSettings",
    "EmbedderSettings",
    "EntitySettings",
    "HistorySettings",
    "LLMProviderName",
    "LLMSettings",
    "MaintenanceSettings",
    "PostgresSettings",
    "RecallSettings",
    "Section",
    "ServerSettings",
    "Settings",
    "StorageSettings",
    "TimeSettings",
    "check_backend",
    "default_home",
    "load_settings",
    "zone",
]


def default_home() -> Path:
    """Where clawmemory keeps its files when no path is given: $CLAWMEM_HOME or ~/.clawmemory."""
    return Path(os.environ.get("CLAWMEM_HOME") or Path.home() / ".clawmemory")


class StorageSettings(Section):
    busy_timeout_ms: int = Field(default=5000, ge=0, le=2**31 - 1)  # 001
    # refuse larger content: a memory is a discrete unit (003)
    max_content_chars: int = Field(default=100_000, ge=1)
    max_key_chars: int = Field(default=512, ge=1)
    # A memory's metadata as JSON text, and how deeply it may nest (deeper JSON would exhaust
    # the stack of every JSON codec on the way).
    max_metadata_chars: int = Field(default=100_000, ge=2)
    max_metadata_depth: int = Field(default=20, ge=1, le=100)
    # A folder of Markdown notes per namespace, written through on every change and read back
    # by `clawmem sync` (002; ADR 0023).
    mirror_dir: Path | None = None
    # With mirror_dir set, `clawmem serve` and `clawmem mcp` look for edited notes this often
    # (seconds); 0: never (only `clawmem sync` reads them).
    mirror_poll_s: float = Field(default=0.5, ge=0, le=3600)
    # The notes of the `namespace` setting's namespace directly in mirror_dir (002's layout,
    # data/memory/fact/...); other namespaces' in mirror_dir/.namespaces/NAME.
    mirror_flat: bool = False
    sequence_links: bool = True  # link each episode to the previous turn of its session
    # Keyword-index each dialogue turn with the tails of the 2 turns before it in its session
    # (every backend; ADR 0036), weighted recall.weight_context.
    keyword_context: bool = True
    # single: one database (db); per-agent: one per agent (agents.NAME.data_dir/memory.db, 001)
    layout: Literal["single", "per-agent"] = "single"
    # SQLite: at most this many rows are ranked per keyword recall once more match (ADR 0006).
    keyword_candidates: int = Field(default=5_000, ge=100)


class PostgresSettings(Section):
    """The PostgreSQL backend (docs/postgres.md): its connection pool, timeouts and the vector
    index. The address itself is ``db`` (``postgresql://...``)."""

    pool_min_size: int = Field(default=1, ge=0, le=1000)  # connections kept open per process
    pool_max_size: int = Field(default=10, ge=1, le=1000)  # at most this many per process
    connect_timeout_s: float = Field(default=10.0, gt=0, le=600)  # to open the pool
    pool_timeout_s: float = Field(default=30.0, gt=0, le=3600)  # waiting for a free connection
    statement_timeout_ms: int = Field(default=0, ge=0, le=2**31 - 1)  # 0 = the server's
    hnsw_m: int = Field(default=16, ge=2, le=100)  # pgvector HNSW graph degree (at creation)
    hnsw_ef_construction: int = Field(default=64, ge=4, le=1000)  # HNSW build quality
    hnsw_ef_search: int = Field(default=100, ge=1, le=1000)  # HNSW search breadth
    # A namespace with fewer vectors is searched exactly (no index), as SQLite searches all.
    exact_search_rows: int = Field(default=5_000, ge=0)
    # At most this many rows are ranked per keyword recall: ranking reads each (ADR 0015).
    keyword_candidates: int = Field(default=5_000, ge=100)

    @model_validator(mode="after")
    def _pool_bounds(self) -> PostgresSettings:
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("pool_min_size must not exceed pool_max_size")
        return self


class EmbedderSettings(Section):
    provider: str = "local"  # local | openai | ollama | none
    model: str | None = None  # None = provider default (local: packaged all-MiniLM-L6-v2)
    base_url: str | None = None
    api_key: str | None = None  # openai; falls back to OPENAI_API_KEY
    # request reduced dimensions (OpenAI Matryoshka models)
    dimensions: int | None = Field(default=None, ge=1)
    batch_size: int = Field(default=64, ge=1)
    query_cache_size: int = Field(default=1024, ge=0)  # LRU of query embeddings
    context_turns: int = Field(default=1, ge=0, le=100)  # earlier turns an episode is read after
    # of those turns, at most the last this many characters (cut at a word); 0 = all of them
    context_chars: int = Field(default=0, ge=0, le=100_000)
    # local provider (ADR 0013): "auto" = ONNX Runtime, torch only for models without a graph
    runtime: Literal["auto", "onnx", "torch"] = "auto"
    threads: int | None = Field(default=None, ge=1)  # None = half the usable CPUs (ONNX)
    # batches of one large embedding call run at once (ONNX; ingest, import, reindex)
    bulk_threads: int | None = Field(default=None, ge=1)  # None = the usable CPUs
    quantized: bool = False  # the int8 variant of the default model (its own vector space)
    cache_dir: Path | None = None  # ONNX model folders; None = ~/.cache/clawmemory/models
    allow_download: bool = False  # may fetch the ONNX model from the Hugging Face hub
    worker_batch: int = Field(default=32, ge=1)  # background embedding: records per batch
    warm_at_open: bool = True  # Memory.open loads the local model and vectors in the background


class EntitySettings(Section):
    enabled: bool = True
    strategy: Literal["fast", "accurate"] = "fast"  # NER on the write path (004: fast = regex)


class LifecycleSettings(Section):
    # What a lifecycle job does with a memory it takes out of the live set (hygiene purge, idle
    # purge): "archive" keeps it searchable and restorable (003's archive); "delete" is 000's
    # hard delete, an explicit choice.
    purge: Literal["archive", "delete"] = "archive"
    reinforce_weight: int = Field(default=3, ge=0, le=MAX_WEIGHT)  # 003
    demote_weight: int = Field(default=1, ge=0, le=MAX_WEIGHT)  # 003
    hygiene_max_age_s: int = Field(default=604_800, ge=0)  # 000: 7 days
    knowledge_max_idle_days: int = Field(default=30, ge=0)  # 000
    knowledge_survival_chance: float = Field(default=0.05, ge=0, le=1)  # 000
    decay_threshold: float = Field(default=0.05, ge=0, le=1)  # 004
    max_size_bytes: int = Field(default=100 * 1024 * 1024, ge=0)  # 003 maxSize 100MB
    prune_percent: float = Field(default=1.0, ge=0, le=100)  # 003


class MaintenanceSettings(Section):
    """Scheduled maintenance (003, 004): one crontab expression per job (minute hour day month
    weekday; "" leaves the job unscheduled), in ``timezone`` (None = this machine's)."""

    enabled: bool = True  # False: `clawmem daemon` schedules nothing
    repair: str = "15 * * * *"  # vector queue + missing derived rows (ADR 0013), hourly
    enrich: str = "0 2 * * *"  # 004 entity enrichment, nightly 02:00
    consolidate: str = "0 3 * * *"  # 004 session consolidation, nightly 03:00
    decay: str = "0 4 * * *"  # 004 decay + 000 hygiene + 003 pruning (pruneSchedule), 04:00
    reflect: str = "0 3 * * 0"  # 004 weekly reflection, Sunday 03:00
    timezone: str | None = None
    # 004: re-extract memories with at most this many entities
    enrich_max_entities: int = Field(default=2, ge=0)
    enrich_batch: int = Field(default=50, ge=1)  # 004: memories per enrichment run


class ConsolidationSettings(Section):
    """The 004 consolidator's tools (``tools/consolidator.py``) and the consolidation step
    (``cognition/consolidation.py``)."""

    episodes_page_size: int = Field(default=30, ge=1)  # get_episodes_for_consolidation chunk
    dedup_jaccard: float = Field(default=0.75, ge=0, le=1)  # save_facts_batch: duplicate from
    dedup_candidates: int = Field(default=10, ge=1)  # stored facts compared with each new one
    conflict_confidence: float = Field(default=0.3, ge=0, le=1)  # resolve_conflict: old fact's
    conflict_candidates: int = Field(default=3, ge=0, le=100)  # stored facts shown per new fact
    # The nightly job leaves a session alone while it is this recent (000's idle eviction
    # time): consolidating a conversation that is still going on would cut it in half.
    min_idle_s: float = Field(default=3600.0, ge=0)
    max_sessions: int = Field(default=50, ge=1)  # sessions per nightly run (bounded work)


class CognitionSettings(Section):
    """The LLM steps that turn conversations into memories (``clawmemory.cognition``)."""

    synthesis: bool = True  # 000 synthesis on
    synthesis_interval: int = Field(default=5, ge=1)  # 000: every N user messages
    synthesis_messages: int = Field(default=10, ge=1, le=200)  # 000: the last 10 messages
    synthesis_temperature: float = Field(default=0.3, ge=0, le=2)  # 000: low temperature
    synthesis_context: int = Field(default=10, ge=0, le=100)  # existing entries shown to link
    extraction: bool = False  # 001 per-exchange fact extractor (off: NopExtractor)
    reflection_min_days: float = Field(default=6.0, ge=0)  # 004: at most once per 6 days
    reflection_window_days: float = Field(default=7.0, gt=0)  # 004: the past 7 days
    reflection_min_facts: int = Field(default=3, ge=0)  # 004: at least 3 new facts
    reflection_max_memories: int = Field(default=200, ge=1, le=10_000)  # 004: limit=200
    max_input_chars: int = Field(default=24_000, ge=1000)  # text of memories in one prompt


class AgentSettings(Section):
    """The reference agent (``clawmemory.agent``, ``clawmem chat``)."""

    system_prompt: str | None = None  # None = prompts.AGENT_SYSTEM
    tools_dialect: str = "ptrclaw"  # 000's memory tools
    # The memory put in front of each message: "ptrclaw" (000's [Memory context] block with
    # linked neighbours), "sclaw" (001's "## Relevant Memory", 10 facts within 2000 tokens),
    # "devclaw" (002's "## Relevant Memories" layer within its token budget), "sandbox" (004:
    # facts of earlier sessions) or "none" (003: the model recalls through its tools only).
    context_style: Literal["ptrclaw", "sclaw", "devclaw", "sandbox", "none"] = "ptrclaw"
    max_tool_rounds: int = Field(default=8, ge=0, le=100)  # tool-call rounds per message
    temperature: float | None = Field(default=None, ge=0, le=2)  # None = the provider's
    enrich_limit: int = Field(default=5, ge=0, le=100)  # 000 recall_limit
    enrich_depth: int = Field(default=1, ge=0, le=3)  # 000 enrich_depth
    observe: bool = True  # store each message as a memory (004 hot path)
    # what each message is stored as: a 004 episode (consolidated into facts) or a 000
    # auto_save conversation entry (hygiene archives it after lifecycle.hygiene_max_age_s)
    observe_kind: Literal["episode", "conversation"] = "episode"
    agent_name: str = Field(default="assistant", min_length=1)  # source_role of its episodes
    summary_on_end: bool = True  # 003: a summary memory when a session ends or is evicted
    # 002: before a compaction discards messages, the model gets a turn with the memory tools
    # to save what is durable in them (then 000's forced synthesis runs)
    memory_flush: bool = True
    consolidate_on_switch: bool = True  # 004: consolidate a session when another starts


class AgentMemoryEntry(Section):
    """001 ``agents.NAME.memory``: whether the agent has memory at all."""

    enabled: bool = True  # false: no database is opened (or created) for the agent


class AgentEntry(Section):
    """001 ``agents.NAME``: one agent's memory under ``storage.layout = "per-agent"``."""

    memory: AgentMemoryEntry = Field(default_factory=AgentMemoryEntry)
    data_dir: Path | None = None  # None = default_home()/agents/NAME; its memory.db

    @model_validator(mode="before")
    @classmethod
    def _empty_data_dir(cls, values: Any) -> Any:
        """001: an empty ``data_dir`` turns the agent's memory off, as ``enabled = false``."""
        if isinstance(values, dict) and isinstance(values.get("data_dir"), str) \
                and not values["data_dir"].strip():
            memory = values.get("memory")
            memory = dict(memory) if isinstance(memory, dict) else {}
            return {**values, "data_dir": None, "memory": {**memory, "enabled": False}}
        return values


class LLMProviderName(StrEnum):
    NONE = "none"
    OPENAI = "openai"  # any OpenAI-compatible chat-completions server
    ANTHROPIC = "anthropic"


class LLMSettings(Section):
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

    def resolved_cache_path(self) -> Path:
        """Where the response cache lives: ``cache_path``, else the default under the home."""
        return Path(self.cache_path).expanduser() if self.cache_path else (
            default_home() / RESPONSE_CACHE_FILE)


RESPONSE_CACHE_FILE = "response_cache.json"  # 000: ~/.ptrclaw/response_cache.json


# Claude Code hooks (docs/hooks.md): what UserPromptSubmit and SessionStart may add to the
# agent's context on every prompt. ~1000 tokens is eight short memories, well under 1% of a
# coding agent's window, and leaves room for the agent's own instructions.
HOOKS_BUDGET_TOKENS = 1000
HOOKS_RECALL_LIMIT = 8


class ContextSettings(Section):
    """Context injection (``context.py``); the token estimate itself (words × 1.3) is the
    pluggable ``estimator`` argument, not a setting."""

    devclaw_budget_tokens: int = Field(default=2000, ge=1)  # 002 token_budget.memory
    devclaw_max_results: int = Field(default=20, ge=1)  # 002 HybridSearch(input, 20)
    layer_cache_ttl_s: float = Field(default=30.0, ge=0)  # 002 memory-layer cache
    soul_traits: int = Field(default=5, ge=0)  # 000: personality:* entries in the soul block
    sandbox_facts: int = Field(default=5, ge=1)  # 004 get_context: hybrid_search(prompt, limit=5)
    # `clawmem hooks install` writes these into the hook commands (`--budget`, `--limit`)
    hooks_budget_tokens: int = Field(default=HOOKS_BUDGET_TOKENS, ge=1)
    hooks_recall_limit: int = Field(default=HOOKS_RECALL_LIMIT, ge=1)


class HistorySettings(Section):
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


class ServerSettings(Section):
    """``clawmem serve`` (MCP over HTTP). It listens on loopback only and checks every request's
    Host and Origin headers (DNS-rebinding protection); these add the names a reverse proxy
    in front of it forwards."""

    # Host header values also accepted: "name", "name:port" or "name:*" (any port)
    allowed_hosts: list[str] = Field(default_factory=list)
    # Origin header values also accepted: "https://name", "https://name:port", "...:*"
    allowed_origins: list[str] = Field(default_factory=list)
    # Larger request bodies are refused (413) before they are read in full. A memory of
    # storage.max_content_chars escaped as \uXXXX is 600 kB of JSON, so 1 MiB holds any.
    max_request_bytes: int = Field(default=1024 * 1024, ge=1024, le=64 * 1024 * 1024)

    @field_validator("allowed_hosts", "allowed_origins")
    @classmethod
    def _plain_names(cls, values: list[str]) -> list[str]:
        for value in values:
            if not value.strip() or any(c.isspace() for c in value) or "/" in value.split("://")[-1]:
                raise ValueError(f"{value!r} is not a host name (or origin) such as "
                                 "'memory.example.com', 'memory.example.com:*' or "
                                 "'https://memory.example.com'")
        return values


# A server's address belongs to the remote client, not to a storage setting.
_SERVER_HINT = " (a clawmemory server's http(s):// address goes to --url or Memory.open)"


class Settings(BaseSettings):
    """All settings. Construct with keyword arguments to override anything in code; invalid or
    unknown values raise ``ConfigError``."""

    model_config = SettingsConfigDict(
        env_prefix="CLAWMEM_",
        env_nested_delimiter="__",
        # Unknown keys in the config file are errors. (Unknown top-level CLAWMEM_* variables
        # are never read: CLAWMEM_CONFIG and CLAWMEM_DEBUG are not settings.)
        extra="forbid",
        validate_default=True,
        allow_inf_nan=False,
    )

    # A specification's defaults under everything else (profiles.py; docs/configuration.md)
    profile: str = profiles.DEFAULT_PROFILE
    # Where the database lives when db is not given ($CLAWMEM_HOME); None = ~/.clawmemory
    home: Path | None = None
    # storage file, or a postgresql:// address; None = {home}/memory.db (or .json)
    db: Path | str | None = None
    namespace: str = Field(default="default", min_length=1, max_length=256)
    backend: str = Backend.SQLITE.value  # sqlite | memory | json | postgres | none
    log_level: str = "WARNING"
    storage: StorageSettings = Field(default_factory=StorageSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    time: TimeSettings = Field(default_factory=TimeSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    entities: EntitySettings = Field(default_factory=EntitySettings)
    maintenance: MaintenanceSettings = Field(default_factory=MaintenanceSettings)
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    cognition: CognitionSettings = Field(default_factory=CognitionSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    agents: dict[str, AgentEntry] = Field(default_factory=dict)  # 001 per-agent memory
    server: ServerSettings = Field(default_factory=ServerSettings)
    postgres: PostgresSettings = Field(default_factory=PostgresSettings)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, type(self))) from exc

    @field_validator("db")
    @classmethod
    def _address(cls, value: Path | str | None) -> Path | str | None:
        """A file path stays a Path; an address (``scheme://...``) stays text, since a Path
        would fold its ``//``. Only postgresql:// addresses are usable: any other scheme is
        refused here instead of becoming a file named after it."""
        if not isinstance(value, str):
            return value
        if URL_SCHEME.match(value):
            if not value.lower().startswith(("postgresql://", "postgres://")):
                raise ValueError(f"{value.split('://')[0]}:// addresses are not supported; give"
                                 " a file path or a postgresql:// address" + _SERVER_HINT)
            return value
        return Path(value)

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        name = str(value).strip().lower()
        if name not in profiles.PROFILES:
            raise ValueError(f"unknown profile {value!r}; use one of: "
                             f"{', '.join(profiles.profile_names())}")
        return name

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        """A misspelt backend is refused wherever it comes from (file, environment, API): a
        silent fallback to ``none`` would lose every memory written meanwhile."""
        return check_backend(value)

    @model_validator(mode="after")
    def _agents_need_their_layout(self) -> Settings:
        """Per-agent entries (001) only act under the per-agent layout: refused otherwise, like
        any other setting the others make inert."""
        if self.agents and self.storage.layout != "per-agent":
            raise ValueError(f"agents.{next(iter(self.agents))} is set but has no effect because"
                             ' storage.layout is "single"; set storage.layout = "per-agent"'
                             ' (or profile = "sclaw") to use it, or remove it')
        return self

    @model_validator(mode="after")
    def _backend_matches_address(self) -> Settings:
        is_url = isinstance(self.db, str) and bool(URL_SCHEME.match(self.db))
        if is_url and self.backend == Backend.SQLITE.value:
            self.backend = Backend.POSTGRES.value  # the default backend follows the address
        elif is_url and self.backend != Backend.POSTGRES.value:
            raise ValueError(f"backend {self.backend!r} cannot use a postgresql:// address;"
                             " give a file path, or backend = \"postgres\"")
        elif self.backend == Backend.POSTGRES.value and not is_url:
            raise ValueError("backend \"postgres\" needs a postgresql:// address in db"
                             " (--db / CLAWMEM_DB)")
        return self

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if str(value).upper() not in logging.getLevelNamesMapping():
            raise ValueError(f"unknown level {value!r}; use DEBUG, INFO, WARNING or ERROR")
        return value

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
        return (init_settings, SectionEnvironment(settings_cls),
                profiles.SpecEnvironment(settings_cls, toml), toml,
                profiles.ProfileDefaults(settings_cls))

    def home_dir(self) -> Path:
        """Where the database lives when ``db`` is not given: ``home``, else $CLAWMEM_HOME or
        ~/.clawmemory."""
        return Path(self.home).expanduser() if self.home is not None else default_home()

    def resolved_db(self) -> Path:
        if isinstance(self.db, str) and URL_SCHEME.match(self.db):
            raise ConfigError(f"{self.db_label()} is a database address, not a file")
        if self.db is not None:
            return Path(self.db).expanduser()
        suffix = ".json" if self.backend == Backend.JSON.value else ".db"
        return self.home_dir() / f"memory{suffix}"


    def db_label(self) -> str:
        """The store for messages: the file path, or the address without its password."""
        if isinstance(self.db, str) and URL_SCHEME.match(self.db):
            return re.sub(r"^(\w+://[^:/@]*):[^@]*@", r"\1:***@", self.db)
        return str(self.resolved_db())


URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class SectionEnvironment(EnvSettingsSource):
    """``CLAWMEM_*`` variables, where a section is only ever given key by key
    (``CLAWMEM_AGENT__TOOLS_DIALECT``): a bare ``CLAWMEM_<SECTION>`` variable is another
    thing's (``CLAWMEM_AGENT`` is the CLI's ``--agent``), never the section as JSON."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        value, key, complex_ = super().get_field_value(field, field_name)
        if isinstance(field.annotation, type) and issubclass(field.annotation, Section):
            return None, key, complex_  # its keys still come from CLAWMEM_<SECTION>__<KEY>
        return value, key, complex_


def check_backend(name: object) -> str:
    """The backend's name in lower case; ValueError naming the valid ones for any other."""
    chosen = str(name).strip().lower()
    if chosen not in {b.value for b in Backend}:
        raise ValueError(f"unknown backend {name!r}; use one of: "
                         f"{', '.join(b.value for b in Backend)}")
    return chosen


def config_path() -> Path:
    return Path(os.environ.get("CLAWMEM_CONFIG") or default_home() / "config.toml")


def load_settings(**overrides: Any) -> Settings:
    """Build settings from file + environment + overrides, translating errors to ConfigError."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except (OSError, ValueError) as exc:  # unreadable or malformed TOML
        raise ConfigError(f"cannot read config file {config_path()}: {exc}") from exc


def _describe(exc: ValidationError, model: type[BaseModel]) -> str:
    """One line naming the first bad setting, where it may come from, and what to do."""
    first = exc.errors()[0]
    loc = [str(p) for p in first.get("loc", ())]
    where = ".".join(loc)
    origin = _origin(loc)
    if first.get("type") == "extra_forbidden":
        known = list(_section(model, loc[:-1]).model_fields)
        close = difflib.get_close_matches(loc[-1], known, n=1)
        if close:
            return (f"unknown setting {where}{origin}: did you mean "
                    f"{'.'.join([*loc[:-1], close[0]])}? Fix or remove it "
                    "(docs/configuration.md lists every setting)")
        return (f"unknown setting {where}{origin}: remove it (known here: {', '.join(known)}; "
                "docs/configuration.md)")
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    what = f"setting {where}" if where else "settings"
    return f"invalid {what}{origin}: {message}"


def _section(model: type[BaseModel], path: list[str]) -> type[BaseModel]:
    for name in path:
        annotation = model.model_fields[name].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            break
        model = annotation
    return model


def _origin(loc: list[str]) -> str:
    """Where a value came from, as far as can be told: an environment variable, the file."""
    if loc and (var := "CLAWMEM_" + "__".join(loc[:2]).upper()) in os.environ:
        return f" (from {var})"
    path = config_path()
    return f" (in {path} or given in code)" if path.is_file() else ""
