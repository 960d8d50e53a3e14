"""NER strategies (004): which providers run, and how their mentions are merged.

- ``fast``: regex + names. Offline, microseconds per memory; runs on every write.
- ``accurate``: regex + names + spaCy (when installed) + LLM (when configured); for nightly
  enrichment of memories with few entities.

Mentions from all providers are merged by span overlap (longest, then most confident wins). On
the write path a failing optional provider (the LLM timing out, say) is logged and skipped:
extraction degrades, it never breaks a write. Nightly enrichment asks for ``strict=True``: there
a failure must fail the run, not mark a memory as enriched without the LLM's entities.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from clawmemory.entities.base import (
    Mention,
    NERProvider,
    canonical_name,
    normalize_name,
    resolve_overlaps,
)
from clawmemory.entities.names import FUNCTION, NamesProvider
from clawmemory.entities.regex import RegexProvider
from clawmemory.entities.spacy_provider import DEFAULT_SPACY_MODEL, SpacyProvider, spacy_available
from clawmemory.errors import ClawMemoryError, ConfigError

if TYPE_CHECKING:
    from clawmemory.llm.base import LLM

__all__ = [
    "NERPipeline",
    "ProviderName",
    "Strategy",
    "accurate_extra",
    "build_pipeline",
    "candidate_names",
    "canonical_name",
    "make_provider",
    "normalize_name",
    "resolve_overlaps",
]

log = logging.getLogger(__name__)


class Strategy(StrEnum):
    FAST = "fast"
    ACCURATE = "accurate"


class ProviderName(StrEnum):
    REGEX = "regex"
    NAMES = "names"
    SPACY = "spacy"
    LLM = "llm"


def make_provider(
    name: ProviderName | str, *, llm: LLM | None = None, spacy_model: str | None = None
) -> NERProvider:
    """One provider by name. ``llm`` needs an ``LLM``; ``spacy`` raises ``ConfigError`` when
    spaCy or its model is missing."""
    try:
        kind = ProviderName(name)
    except ValueError:
        allowed = ", ".join(p.value for p in ProviderName)
        raise ConfigError(f"unknown NER provider {name!r} (expected one of: {allowed})") from None
    if kind is ProviderName.REGEX:
        return RegexProvider()
    if kind is ProviderName.NAMES:
        return NamesProvider()
    if kind is ProviderName.SPACY:
        return SpacyProvider(spacy_model or DEFAULT_SPACY_MODEL)
    if llm is None:
        raise ConfigError("the llm NER provider needs an LLM: configure one first "
                          "([llm] provider, docs/llm.md)")
    # Imported here: the LLM providers bring httpx and the embedder's HTTP client (numpy),
    # which the fast pipeline (and `import clawmemory`) must not load.
    from clawmemory.entities.llm import LLMProvider

    return LLMProvider(llm)


class NERPipeline:
    """Runs providers in order and merges their mentions."""

    def __init__(self, providers: Sequence[NERProvider]) -> None:
        self.providers = tuple(providers)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.providers)

    def extract(self, text: str, *, strict: bool = False) -> list[Mention]:
        """Every provider's mentions, merged. A provider failing is logged and skipped, or
        (``strict``) raised."""
        found: list[Mention] = []
        for provider in self.providers:
            try:
                found.extend(provider.extract(text))
            except ClawMemoryError as exc:
                if strict:
                    raise
                log.warning("NER provider %s failed, skipped: %s", provider.name, exc)
        return resolve_overlaps(found)


def build_pipeline(
    strategy: Strategy | str = Strategy.FAST,
    *,
    llm: LLM | None = None,
    spacy_model: str | None = None,
) -> NERPipeline:
    """The providers of a strategy. ``accurate`` adds spaCy where it is installed and the LLM
    where ``llm`` is given; with neither it equals ``fast`` (see ``accurate_extra``)."""
    try:
        chosen = Strategy(strategy)
    except ValueError:
        raise ConfigError(
            f"unknown NER strategy {strategy!r} (expected fast or accurate)") from None
    providers = [make_provider(ProviderName.REGEX), make_provider(ProviderName.NAMES)]
    if chosen is Strategy.ACCURATE:
        if spacy_available(spacy_model or DEFAULT_SPACY_MODEL):
            providers.append(make_provider(ProviderName.SPACY, spacy_model=spacy_model))
        if llm is not None:
            providers.append(make_provider(ProviderName.LLM, llm=llm))
    return NERPipeline(providers)


def accurate_extra(pipeline: NERPipeline) -> bool:
    """Whether a pipeline has more than the fast providers (004 ``accurate_ner_available``):
    enrichment is pointless without."""
    return any(n in (ProviderName.SPACY, ProviderName.LLM) for n in pipeline.names)


# --- query side ----------------------------------------------------------------------------------
_QUERY_WORD = re.compile(r"[@#]?[^\W_](?:[\w+&]|[-.'’](?=[^\W_]))*")
MAX_NGRAM = 3
MAX_CANDIDATES = 64


def candidate_names(query: str, pipeline: NERPipeline | None = None) -> list[str]:
    """Normalised names to look up for a recall query: the mentions a (fast) pipeline finds in
    it, then every 1-3 word sequence of it, since queries are often lower case ("what did
    caroline say") and entity names are matched exactly. Single function words are left out."""
    pipe = pipeline or build_pipeline(Strategy.FAST)
    out = [m.norm for m in pipe.extract(query)]
    words = [normalize_name(w) for w in _QUERY_WORD.findall(query)]
    words = [w for w in words if w]
    for n in range(1, MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            gram = words[i: i + n]
            if n == 1 and gram[0] in FUNCTION:
                continue
            out.append(" ".join(gram))
    return list(dict.fromkeys(n for n in out if n))[:MAX_CANDIDATES]
