"""One rooted error tree. Every error clawmemory raises on purpose derives from ``ClawMemoryError``.

Driver errors (apsw, psycopg, httpx, ...) are translated where they happen (``raise X from exc``),
so callers catch one family and interfaces (CLI, MCP, REST) render one clear line.

    ClawMemoryError
    ├── ConfigError             bad settings, unknown backend, missing optional dependency
    ├── InvalidInputError       content empty/oversized/NUL, unknown kind, bad filter, bad id
    ├── NotFoundError           no memory with that id or key
    ├── StorageError            the backend failed (I/O, corruption, locked beyond the timeout)
    │   └── SchemaError         the database was written by a newer clawmemory, or migration failed
    ├── ImportFormatError       an import file is unreadable or malformed (names file and line)
    ├── EmbeddingError          the embedder failed or returned vectors of the wrong shape
    ├── AuthenticationError     a server wants an API key and none, or no valid one, was given
    ├── AccessDeniedError       the API key may not do this (its role or its namespaces)
    └── LLMError                the LLM provider failed
        ├── LLMNotConfiguredError   a step needs an LLM and none is configured
        └── LLMUnavailableError     the provider cannot be reached, or did not answer in time
"""

from __future__ import annotations

__all__ = [
    "AccessDeniedError",
    "AuthenticationError",
    "ClawMemoryError",
    "ConfigError",
    "EmbeddingError",
    "ImportFormatError",
    "InvalidInputError",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMUnavailableError",
    "NotFoundError",
    "SchemaError",
    "StorageError",
]


class ClawMemoryError(Exception):
    """Root of every error clawmemory raises deliberately."""


class ConfigError(ClawMemoryError):
    """Settings are invalid, or an optional dependency the settings ask for is missing."""


class InvalidInputError(ClawMemoryError, ValueError):
    """The caller passed something the engine refuses to store or query."""


class NotFoundError(ClawMemoryError, LookupError):
    """No memory matches the given id or key in this namespace."""


class StorageError(ClawMemoryError):
    """The storage backend failed."""


class SchemaError(StorageError):
    """The database schema is newer than this version understands, or a migration failed."""


class ImportFormatError(ClawMemoryError):
    """An import source is unreadable or malformed. The message names the file and, if known,
    the line; nothing from that source has been imported."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.reason = message  # the message without the place: what an import summary groups by
        self.path = path
        self.line = line


class EmbeddingError(ClawMemoryError):
    """The embedder failed or produced vectors of an unexpected dimension."""


class AuthenticationError(ClawMemoryError):
    """The server needs an API key (``Authorization: Bearer KEY``) and got none, an unknown one
    or a revoked one."""


class AccessDeniedError(ClawMemoryError):
    """The API key is valid but may not do this: its role is too low, or the namespace is not
    one of its namespaces. Worded the same whether or not that namespace holds anything."""


class LLMError(ClawMemoryError):
    """The LLM provider failed or answered with something unusable."""


class LLMNotConfiguredError(LLMError):
    """A step needs an LLM and none is configured; the step is skipped."""


class LLMUnavailableError(LLMError):
    """The provider could not be reached (connection refused, unknown host, connect timeout)
    or did not answer within its timeout, after the retries. The next call would most likely
    wait as long and fail the same way, so a caller with more calls to make stops instead."""
