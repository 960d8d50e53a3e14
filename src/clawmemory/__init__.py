"""clawmemory: local-first long-term memory for LLM agents.

    from clawmemory import Memory

    with Memory.open() as mem:                      # ~/.clawmemory/memory.db
        mem.store("User prefers dark mode", kind="preference", tags=["ui"])
        for hit in mem.recall("dark theme"):
            print(hit.score, hit.memory.content, hit.explain)

    Memory.open("http://127.0.0.1:8765", api_key=...)  # the same, on a clawmem server

Nothing is loaded or opened at import time.
"""

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
