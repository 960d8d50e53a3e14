"""Ranking factors applied after candidate retrieval (and, later, fusion).

    final = relevance × reinforcement × recency × confidence

* reinforcement (003): ``exp(score × score_weight)``; score 3 -> 1.82x, -1 -> 0.82x (the
  exponent is capped at ±700, so no score overflows it).
* recency, two formulas:
  - "koshi" (003, default): ``1 / (1 + days × recency_per_day)``, days since ``last_accessed``
    (reset by recall and reinforce) or, if never accessed, since ``created_at`` — or since the
    memory arrived in this store (``stored_at``) when that is later, so an import does not
    start out old;
  - "half-life" (000): ``exp(-ln 2 × age_s / half_life_s)``, age since the memory was last
    written (000's upsert refreshes the entry) or arrived, whichever is later;
  - "none".
* confidence (004): the memory's 0..1 confidence, lowered by decay and conflicts.
"""

from __future__ import annotations

import math
from typing import Protocol

from clawmemory.config import RecallSettings

__all__ = ["DAY", "Rankable", "factors"]

DAY = 86_400.0
_MAX_EXPONENT = 700.0  # math.exp overflows just above 709


class Rankable(Protocol):
    """What the factors read: a MemoryRecord or a store's light RankInfo."""

    @property
    def score(self) -> int: ...
    @property
    def created_at(self) -> float: ...
    @property
    def last_accessed(self) -> float | None: ...
    @property
    def confidence(self) -> float: ...
    @property
    def updated_at(self) -> float: ...
    @property
    def stored_at(self) -> float: ...


def reinforcement(record: Rankable, weight: float) -> float:
    # Bounded exponent: an imported or long-reinforced score must rank high, not overflow.
    return math.exp(max(-_MAX_EXPONENT, min(_MAX_EXPONENT, record.score * weight)))


def recency(record: Rankable, now: float, cfg: RecallSettings) -> float:
    if cfg.recency == "half-life":
        if cfg.recency_half_life_s <= 0:
            return 1.0
        age = max(0.0, now - max(record.created_at, record.updated_at, record.stored_at))
        return math.exp(-math.log(2) * age / cfg.recency_half_life_s)
    if cfg.recency == "koshi":
        since = max(record.last_accessed or record.created_at, record.stored_at)
        days = max(0.0, now - since) / DAY
        return 1.0 / (1.0 + days * cfg.recency_per_day)
    return 1.0


def factors(record: Rankable, now: float, cfg: RecallSettings) -> dict[str, float]:
    """The named multipliers for one memory, in the order they are applied."""
    return {
        "reinforcement": reinforcement(record, cfg.score_weight),
        "recency": recency(record, now, cfg),
        "confidence": max(0.0, min(1.0, record.confidence)),
    }
