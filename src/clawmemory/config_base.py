"""What every settings section shares (``Section``) and the time zone check, below both
``config`` and ``config_recall`` (split out of ``config`` for length; import them from there).
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict

__all__ = ["Section", "zone"]


def zone(name: str) -> tzinfo:
    """The time zone named by ``name``: "UTC", "local", or an IANA name."""
    if name.upper() == "UTC":
        return UTC
    if name.lower() == "local":
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r} (use 'UTC', 'local' or an IANA name such"
                         " as 'Europe/Berlin')") from exc


class Section(BaseModel):
    """Base of every settings section: an unknown key is an error (a typo must not be ignored
    silently), and no float setting may be NaN or infinite."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    def _inert(self, name: str, because: str, fix: str) -> None:
        """Refuse ``name`` when it differs from its default but ``because`` makes it unused."""
        if getattr(self, name) != type(self).model_fields[name].get_default(
                call_default_factory=True):
            raise ValueError(f"{name} is set but has no effect because {because}; {fix}")
