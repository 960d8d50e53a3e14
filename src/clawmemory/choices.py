"""The choices ``clawmem`` parses before any settings load (``--backend``): here, not in
``config``, so building the command line imports no pydantic-settings (~0.3 s) and
``clawmem --version`` pays for none of it. ``config`` re-exports them."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Backend"]


class Backend(StrEnum):
    SQLITE = "sqlite"
    MEMORY = "memory"
    JSON = "json"
    POSTGRES = "postgres"
    NONE = "none"
