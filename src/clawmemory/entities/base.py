"""The entity boundaries: ``NERProvider`` (text -> mentions) and ``EntityIndex`` (mentions ->
stored entities linked to memories), plus the frozen values that cross them.

Name handling lives here because both sides must agree on it exactly:

- ``canonical_name`` is the display form of a mention: ``@mel`` -> ``mel``, ``#LGBTQ`` ->
  ``LGBTQ``, ``Caroline's`` -> ``Caroline``, NFKC, whitespace collapsed, case kept.
- ``normalize_name`` is the matching key: the canonical name casefolded.
- ``alias_key`` is how a *stored alias* is matched. SQLite's ``lower()`` folds ASCII only and a
  JSON alias list cannot be indexed, so aliases are matched on their ASCII-lowered canonical
  form; ``match_keys`` gives the keys a queried name may take. Both index implementations use
  these same functions, so they answer identically. The entity's own name (``norm_name``) uses
  the full casefold.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple, Protocol, runtime_checkable

# An entity mentioned by more than this share of a namespace's memories (and by more than
# COMMON_MIN of them) is too common to pick memories out: entity search ignores it.
COMMON_SHARE = 0.05
COMMON_MIN = 5

__all__ = [
    "MAX_SEARCH_NAMES",
    "Entity",
    "EntityHit",
    "EntityIndex",
    "EntityProfile",
    "EntityType",
    "Mention",
    "NERProvider",
    "alias_key",
    "canonical_name",
    "match_keys",
    "normalize_name",
    "rank_entity_hits",
    "resolve_overlaps",
    "surface_form",
    "with_source_entities",
]


# Names one entity search looks up at most (recall passes a query's words and n-grams).
MAX_SEARCH_NAMES = 128


class EntityType(StrEnum):
    """The closed set of entity types (004 plus the regex provider's own kinds)."""

    PERSON = "person"
    PROJECT = "project"
    ORGANIZATION = "organization"
    LOCATION = "location"
    EMAIL = "email"
    URL = "url"
    MENTION = "mention"
    HASHTAG = "hashtag"
    DATE = "date"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Mention:
    """One entity mention found in a text: ``text == source[start:end]``."""

    text: str
    type: EntityType
    start: int
    end: int
    confidence: float  # 0..1; regex ~0.9+, heuristics ~0.5-0.7, spaCy ~0.8
    provider: str

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def canonical(self) -> str:
        return canonical_name(self.text)

    @property
    def norm(self) -> str:
        return normalize_name(self.text)


# The brief calls a mention an "Entity"; the stored entity is an ``EntityProfile``.
Entity = Mention


@dataclass(frozen=True, slots=True)
class EntityProfile:
    """A stored entity of one namespace."""

    id: str
    canonical_name: str
    type: EntityType
    aliases: tuple[str, ...]
    mention_count: int
    summary: str | None = None


class EntityHit(NamedTuple):
    """An entity candidate for recall fusion: a memory linked to entities the query named.

    ``entity_name`` lists the matched entities' canonical names (", "-joined, sorted) so a hit
    can explain itself; ``score`` is the sum of 1/mention_count over the matched entities (a
    rare name says more about which memory is meant than a frequent one)."""

    memory_id: str
    entity_name: str
    score: float


@runtime_checkable
class NERProvider(Protocol):
    """Finds entity mentions in a text. Must not raise on ordinary text."""

    name: str

    def extract(self, text: str) -> list[Mention]: ...


@runtime_checkable
class EntityIndex(Protocol):
    """Stored entities and their links to memories, scoped by namespace.

    An entity is found for a mention by normalised name + type, then by normalised name of any
    type, then by alias (any type); otherwise it is created. Linking the same memory to the same
    entity twice changes nothing, so re-running extraction is safe. ``mention_count`` counts the
    memories that mention the entity."""

    def link_many(
        self, namespace: str, items: Sequence[tuple[str, Sequence[Mention]]], *,
        replace: bool = False,
    ) -> None:
        """``link_mentions`` for many memories at once, in one transaction where the backend
        has them (bulk writes)."""
        ...

    def link_mentions(
        self, namespace: str, memory_id: str, mentions: Sequence[Mention], *,
        replace: bool = False,
    ) -> list[str]:
        """Create-or-get an entity per mention and link it to the memory; returns the entity ids
        in first-mention order. ``replace=True`` also drops the memory's links to entities not
        in ``mentions`` (use after the memory's content changed). A memory that does not exist
        (where the index can tell) links nothing and returns []."""
        ...

    def search(self, namespace: str, names: Sequence[str], limit: int) -> list[EntityHit]:
        """Memories linked to entities whose name or alias equals any of ``names`` (normalised),
        ranked by ``rank_entity_hits``: entities mentioned by more than ``COMMON_SHARE`` of the
        namespace's memories (and more than ``COMMON_MIN``) are ignored, and each matched entity
        contributes its ``limit`` most recently linked memories. The cost depends on the names
        and ``limit``, not on the size of the namespace."""
        ...

    def entities_of(
        self, namespace: str, memory_ids: Sequence[str]
    ) -> dict[str, list[EntityProfile]]:
        """The entities linked to each memory (every id is a key, possibly with [])."""
        ...

    def profile(self, namespace: str, name: str) -> EntityProfile | None:
        """The entity named ``name`` (canonical name first, then alias; most mentioned wins)."""
        ...

    def memories_of(self, namespace: str, entity_id: str, limit: int) -> list[str]:
        """Ids of the memories linked to the entity, most recently linked first."""
        ...

    def unlink_memory(self, namespace: str, memory_id: str) -> int:
        """Drop the memory's links; entities no memory mentions any more are deleted (their
        names are text from the forgotten memory). Returns the number of links removed."""
        ...

    def add_alias(self, namespace: str, entity_id: str, alias: str) -> bool:
        """Record another name of the entity ("Mel" for "Melanie"), so later mentions and
        searches under that name resolve to it. False when unknown entity or known name."""
        ...

    def entity_count(self, namespace: str) -> int: ...

    def entities(self, namespace: str, limit: int) -> list[EntityProfile]:
        """The namespace's entities, most mentioned first."""
        ...

    def drop_namespace(self, namespace: str) -> None:
        """Forget every entity and link of the namespace."""
        ...


def rank_entity_hits(
    matched: Sequence[tuple[str, int, Sequence[tuple[str, int]]]], limit: int
) -> list[EntityHit]:
    """The entity list of a recall from the matched entities, each given as (canonical name,
    mention count, its most recent links as (memory id, link sequence)). A memory scores
    Σ 1/mention_count over the entities it is linked to; ties go to the most recent link. Both
    index backends rank with this function, so they answer identically."""
    names: dict[str, set[str]] = {}
    weight: dict[str, float] = {}
    recent: dict[str, int] = {}
    for name, count, links in matched:
        for memory_id, seq in links:
            names.setdefault(memory_id, set()).add(name)
            weight[memory_id] = weight.get(memory_id, 0.0) + 1.0 / max(count, 1)
            recent[memory_id] = max(recent.get(memory_id, 0), seq)
    order = sorted(names, key=lambda m: (-weight[m], -recent[m]))[: max(limit, 0)]
    return [EntityHit(m, ", ".join(sorted(names[m])), weight[m]) for m in order]


def resolve_overlaps(mentions: Sequence[Mention]) -> list[Mention]:
    """Where spans overlap keep the longest, then the most confident, then a specific type over
    ``other``; the result is ordered by position. Providers' results are merged with this."""
    ranked = sorted(
        mentions,
        key=lambda m: (-m.length, -m.confidence, m.type is EntityType.OTHER, m.start),
    )
    # Kept spans never overlap, so sorted by start they are sorted by end too: a new span
    # only has to be checked against its two neighbours.
    starts: list[int] = []
    kept: list[Mention] = []
    for m in ranked:
        if m.length <= 0:
            continue
        i = bisect.bisect_right(starts, m.start)
        if (i > 0 and kept[i - 1].end > m.start) or (i < len(kept) and kept[i].start < m.end):
            continue
        starts.insert(i, m.start)
        kept.insert(i, m)
    return kept


# --- names ---------------------------------------------------------------------------------------
_EDGE_PUNCT = "\"'“”‘’`«»()[]{}<>.,;:!?*_~|"
_POSSESSIVE = re.compile(r"(?<=\w)['’]s$", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def surface_form(text: str) -> str:
    """A mention as written, tidied: NFKC, whitespace collapsed, edge punctuation and a
    possessive 's removed; a leading @ or # is kept (``@mel`` is remembered as an alias)."""
    name = _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()
    if "://" in name or ("@" in name[1:] and " " not in name):
        return name.rstrip(".,;:!?)]}>'\"")  # URLs and e-mail addresses keep their inside
    return _POSSESSIVE.sub("", name.strip(_EDGE_PUNCT + " ")).strip(_EDGE_PUNCT + " ")


def canonical_name(text: str) -> str:
    """Display form: the surface form without a leading @/#; case kept."""
    name = surface_form(text)
    if "://" in name or ("@" in name[1:] and " " not in name):
        return name
    return _POSSESSIVE.sub("", name.lstrip("@#").strip(_EDGE_PUNCT + " "))


def normalize_name(text: str) -> str:
    """Matching key of a name: canonical form, casefolded."""
    return canonical_name(text).casefold()


def alias_key(alias: str) -> str:
    """Matching key of a stored alias: ASCII-lowered (what SQLite's ``lower()`` computes)."""
    return alias.translate(_ASCII_LOWER)


def match_keys(name: str) -> tuple[str, ...]:
    """Keys under which a queried name matches a stored alias (see module docstring)."""
    canonical = canonical_name(name)
    return tuple(dict.fromkeys(k for k in (canonical.casefold(), alias_key(canonical)) if k))


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def with_source_entities(text: str, found: Sequence[Mention],
                         named: Sequence[tuple[str, str]]) -> list[Mention]:
    """``found`` (the extractor's mentions of ``text``) plus the entities an import source
    linked the text to, ``(name, type)`` each, typed as the source typed them: the source
    knew "Bob" is a person where the extractor may only see a capitalised word (``other``).
    A type this engine does not have is ``other``. A name the text does not spell out (the
    source resolved "he" to it) is still linked: its mention spans nothing (0, 0)."""
    extra = []
    folded = text.casefold() if len(text.casefold()) == len(text) else None
    for name, kind in named:
        try:
            etype = EntityType(kind.strip().lower())
        except ValueError:
            etype = EntityType.OTHER
        start = folded.find(name.casefold()) if folded is not None else -1
        if start >= 0:
            end = start + len(name)
            extra.append(Mention(text[start:end], etype, start, end, 1.0, "import"))
        else:
            extra.append(Mention(name, etype, 0, 0, 1.0, "import"))
    return [*found, *extra]
