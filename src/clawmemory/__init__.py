"""clawmemory: local-first long-term memory for LLM agents.

    from clawmemory import Memory

    with Memory.open() as mem:                      # ~/.clawmemory/memory.db
        mem.store("User prefers dark mode", kind="preference", tags=["ui"])
        for hit in mem.recall("dark theme"):
            print(hit.score, hit.memory.content, hit.explain)

    Memory.open("http://127.0.0.1:8765", api_key=...)  # the same, on a clawmem server

Nothing is loaded or opened at import time, not even our own modules: each exported name is
imported on first use (PEP 562). Every ``import clawmemory.<module>`` runs this file first, so
an eager import here made every process pay for the whole library (pydantic-settings, the
façade, the client: ~0.45 s), ``clawmem --version`` included.
"""

import importlib
import typing

if typing.TYPE_CHECKING:  # what the names below are, for type checkers and import-linter
    from clawmemory.api import AsyncMemoryAPI, ListQuery, MemoryAPI, RecallQuery, TimeRange
    from clawmemory.client.aio import AsyncMemory
    from clawmemory.config import Settings, load_settings
    from clawmemory.errors import (
        AccessDeniedError,
        AuthenticationError,
        ClawMemoryError,
        ConfigError,
        EmbeddingError,
        ImportFormatError,
        InvalidInputError,
        LLMError,
        LLMNotConfiguredError,
        LLMUnavailableError,
        NotFoundError,
        SchemaError,
        StorageError,
    )
    from clawmemory.memory import ImportReport, Memory
    from clawmemory.model import (
        KINDS,
        Explanation,
        Filter,
        Forgotten,
        Hit,
        Kind,
        KindPolicy,
        MemoryRecord,
    )

__version__ = "0.1.0"

# Each exported name and the module it comes from (the same as the imports above).
_HOMES: dict[str, str] = {
    **dict.fromkeys(("AsyncMemoryAPI", "ListQuery", "MemoryAPI", "RecallQuery", "TimeRange"),
                    "clawmemory.api"),
    "AsyncMemory": "clawmemory.client.aio",
    **dict.fromkeys(("Settings", "load_settings"), "clawmemory.config"),
    **dict.fromkeys((
        "AccessDeniedError", "AuthenticationError", "ClawMemoryError", "ConfigError",
        "EmbeddingError", "ImportFormatError", "InvalidInputError", "LLMError",
        "LLMNotConfiguredError", "LLMUnavailableError", "NotFoundError", "SchemaError",
        "StorageError"), "clawmemory.errors"),
    **dict.fromkeys(("ImportReport", "Memory"), "clawmemory.memory"),
    **dict.fromkeys(("KINDS", "Explanation", "Filter", "Forgotten", "Hit", "Kind", "KindPolicy",
                     "MemoryRecord"), "clawmemory.model"),
}

__all__ = [
    "KINDS",
    "AccessDeniedError",
    "AsyncMemory",
    "AsyncMemoryAPI",
    "AuthenticationError",
    "ClawMemoryError",
    "ConfigError",
    "EmbeddingError",
    "Explanation",
    "Filter",
    "Forgotten",
    "Hit",
    "ImportFormatError",
    "ImportReport",
    "InvalidInputError",
    "Kind",
    "KindPolicy",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMUnavailableError",
    "ListQuery",
    "Memory",
    "MemoryAPI",
    "MemoryRecord",
    "NotFoundError",
    "RecallQuery",
    "SchemaError",
    "Settings",
    "StorageError",
    "TimeRange",
    "__version__",
    "load_settings",
]

if not typing.TYPE_CHECKING:  # hidden from mypy, so a misspelt name stays an error there

    def __getattr__(name: str) -> typing.Any:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module 'clawmemory' has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # once: later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
