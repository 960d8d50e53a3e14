"""The create-or-get rules both entity indexes share, as pure functions over plain values, so the
SQLite and in-memory indexes cannot drift apart."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from clawmemory.entities.base import (
    EntityProfile,
    EntityType,
    Mention,
    alias_key,
    canonical_name,
    match_keys,
    normalize_name,
    surface_form,
)

__all__ = [
    "MAX_ALIASES",
    "Stored",
    "Wanted",
    "best_named",
    "group_mentions",
    "merge_alias",
    "new_entity_id",
    "pick",
    "refreshed",
    "upgraded_type",
]

MAX_ALIASES = 32
# A name first seen only as a handle, a hashtag or untyped takes the type a better provider
# gives it later ("Caroline": other -> person).
WEAK_TYPES = frozenset({EntityType.OTHER, EntityType.MENTION, EntityType.HASHTAG})
STRONG_TYPES = frozenset({
    EntityType.PERSON, EntityType.PROJECT, EntityType.ORGANIZATION, EntityType.LOCATION,
})


@dataclass(frozen=True, slots=True)
class Wanted:
    """One distinct name of a memory's mentions, ready to resolve."""

    display: str
    norm: str
    type: EntityType
    keys: tuple[str, ...]  # alias match keys (base.match_keys)
    surfaces: tuple[str, ...]  # distinct written forms ("Caroline", "@caroline")


@dataclass(frozen=True, slots=True)
class Stored:
    """An existing entity as the indexes read it."""

    id: str
    canonical_name: str
    norm: str
    type: EntityType
    aliases: tuple[str, ...]
    mention_count: int
    summary: str | None = None

    def profile(self) -> EntityProfile:
        return EntityProfile(self.id, self.canonical_name, self.type, self.aliases,
                             self.mention_count, self.summary)

    def alias_matches(self, keys: Iterable[str]) -> bool:
        wanted = set(keys)
        return any(alias_key(a) in wanted for a in self.aliases)


def group_mentions(mentions: Sequence[Mention]) -> list[Wanted]:
    """One ``Wanted`` per normalised name, in first-mention order. The type is the most
    confident strong type, else the most confident type; the display form is the first seen."""
    groups: dict[str, list[Mention]] = {}
    for m in mentions:
        norm = m.norm
        if norm:
            groups.setdefault(norm, []).append(m)
    out = []
    for norm, ms in groups.items():
        best = max(ms, key=lambda m: (m.type in STRONG_TYPES, m.confidence))
        display = canonical_name(ms[0].text)
        surfaces = tuple(dict.fromkeys(surface_form(m.text) for m in ms))
        out.append(Wanted(display, norm, best.type, match_keys(display), surfaces))
    return out


def pick(candidates: Sequence[Stored], w: Wanted) -> Stored | None:
    """The entity a name resolves to: same name and type, then same name of any type, then an
    alias (same type first); most mentioned, then oldest id, breaks ties."""
    def rank(s: Stored) -> tuple[int, int, str]:
        if s.norm == w.norm:
            tier = 0 if s.type is w.type else 1
        elif s.alias_matches(w.keys):
            tier = 2 if s.type is w.type else 3
        else:
            tier = 9
        return tier, -s.mention_count, s.id

    ranked = sorted(candidates, key=rank)
    return ranked[0] if ranked and rank(ranked[0])[0] < 9 else None


def best_named(candidates: Sequence[Stored], name: str) -> Stored | None:
    """The entity ``name`` refers to: by its own name first, then by alias; most mentioned wins."""
    norm, keys = normalize_name(name), match_keys(name)
    named = [s for s in candidates if s.norm == norm or s.alias_matches(keys)]
    named.sort(key=lambda s: (s.norm != norm, -s.mention_count, s.id))
    return named[0] if named else None


def merge_alias(s: Stored, forms: Iterable[str]) -> tuple[str, ...] | None:
    """The alias list with the new ``forms`` added, or None when nothing is new. A form is known
    when it equals the name or an alias case-insensitively; the list is capped."""
    known = {s.canonical_name.casefold(), *(a.casefold() for a in s.aliases)}
    aliases = list(s.aliases)
    for form in forms:
        if form and form.casefold() not in known and len(aliases) < MAX_ALIASES:
            known.add(form.casefold())
            aliases.append(form)
    return tuple(aliases) if len(aliases) > len(s.aliases) else None


def upgraded_type(s: Stored, w: Wanted) -> EntityType | None:
    """The better type a weakly typed entity should take, if the mention has one."""
    if s.type in WEAK_TYPES and w.type in STRONG_TYPES and w.type is not s.type:
        return w.type
    return None


def refreshed(s: Stored, w: Wanted, new_type: EntityType | None) -> Stored:
    """``s`` after a mention of it: the better type (when the caller found it free), a
    capitalised display name over an all-lower-case one ("@caroline" then "Caroline"), and the
    mention's written forms merged into the aliases."""
    if new_type is not None:
        s = replace(s, type=new_type)
    if s.canonical_name.islower() and not w.display.islower() and w.norm == s.norm:
        s = replace(s, canonical_name=w.display)
    aliases = merge_alias(s, w.surfaces)
    return replace(s, aliases=aliases) if aliases is not None else s


def new_entity_id() -> str:
    return "ent_" + secrets.token_hex(6)
