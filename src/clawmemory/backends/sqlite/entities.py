"""The entity index on the SQLite backend's ``entities`` and ``memory_entities`` tables (001).

Writes run inside ``store.write()`` (BEGIN IMMEDIATE), so create-or-get cannot race another
process into a duplicate. Reads go through ``store._query``. Names are found through indexes
only: the entity's own name in ``entities(namespace, norm_name)``, its aliases in
``entity_aliases(namespace, key)`` (migration 008; triggers keep it equal to the JSON column,
keys are ``lower()`` = ``base.alias_key``). A recall's lookup therefore costs the same in a
namespace of 1k or 100k memories. ``SQLiteStore.delete`` already drops a forgotten memory's links
and orphaned entities (and the triggers their aliases).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from clawmemory.entities.base import (
    COMMON_MIN,
    COMMON_SHARE,
    MAX_SEARCH_NAMES,
    EntityHit,
    EntityProfile,
    EntityType,
    Mention,
    match_keys,
    normalize_name,
    rank_entity_hits,
    surface_form,
)
from clawmemory.entities.linking import (
    Stored,
    Wanted,
    best_named,
    group_mentions,
    merge_alias,
    new_entity_id,
    pick,
    refreshed,
    upgraded_type,
)

if TYPE_CHECKING:
    from clawmemory.backends.sqlite.store import SQLiteStore


__all__ = ["SQLiteEntityIndex"]

ENTITY_COLS = "e.id, e.canonical_name, e.norm_name, e.type, e.aliases, e.mention_count, e.summary"
CHUNK = 400  # bound on bound parameters per statement


def _stored(row: Sequence[Any]) -> Stored:
    id_, name, norm, etype, aliases, count, summary = row[:7]
    try:
        kind = EntityType(etype)
    except ValueError:  # written by an importer with its own labels
        kind = EntityType.OTHER
    return Stored(id_, name, norm, kind, tuple(json.loads(aliases or "[]")), int(count), summary)


def _match_sql(names: Sequence[str]) -> tuple[str, list[str]]:
    """A query (columns ENTITY_COLS, one namespace parameter first) for the entities named or
    aliased by any of ``names``: two index lookups, never a scan of the namespace."""
    norms = list(dict.fromkeys(n for n in (normalize_name(x) for x in names) if n))
    keys = list(dict.fromkeys(k for x in names for k in match_keys(x)))
    if not norms:
        return "", []
    return (
        f"SELECT {ENTITY_COLS} FROM entities e WHERE e.namespace = ?1 AND e.norm_name IN"
        f" ({', '.join('?' * len(norms))}) UNION SELECT {ENTITY_COLS} FROM entity_aliases a"
        " JOIN entities e ON e.id = a.entity_id WHERE a.namespace = ?1 AND a.key IN"
        f" ({', '.join('?' * len(keys))})",
        [*norms, *keys],
    )


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), CHUNK):
        yield items[i: i + CHUNK]


class SQLiteEntityIndex:
    """Entities of a ``SQLiteStore`` file. ``clock`` stamps created_at / updated_at."""

    def __init__(self, store: SQLiteStore, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self._clock = clock
        self._sizes: dict[str, tuple[int, int]] = {}  # namespace -> (memories, MAX(seq) then)

    # --- writes --------------------------------------------------------------------------------
    def link_many(
        self, namespace: str, items: Sequence[tuple[str, Sequence[Mention]]], *,
        replace: bool = False,
    ) -> None:
        with self.store.write():  # one transaction; each link_mentions joins it
            for memory_id, mentions in items:
                self.link_mentions(namespace, memory_id, mentions, replace=replace)

    def link_mentions(
        self, namespace: str, memory_id: str, mentions: Sequence[Mention], *,
        replace: bool = False,
    ) -> list[str]:
        wanted = group_mentions(mentions)
        with self.store.write():
            c = self.store.conn
            if not c.execute("SELECT 1 FROM memories WHERE namespace = ? AND id = ?",
                             (namespace, memory_id)).fetchall():
                return []  # forgotten meanwhile: linking would keep its names alive
            ids = list(dict.fromkeys(self._resolve(namespace, memory_id, w) for w in wanted))
            if replace:
                stale = [r[0] for r in c.execute(
                    "SELECT entity_id FROM memory_entities WHERE namespace = ? AND memory_id = ?",
                    (namespace, memory_id)) if r[0] not in ids]
                self._drop_links(namespace, memory_id, stale)
            return ids

    def _candidates(self, namespace: str, names: Sequence[str]) -> list[Stored]:
        sql, args = _match_sql(names)
        if not sql:
            return []
        return [_stored(r) for r in self.store.conn.execute(sql, (namespace, *args))]

    def _resolve(self, namespace: str, memory_id: str, w: Wanted) -> str:
        c, now = self.store.conn, self._clock()
        found = pick(self._candidates(namespace, [w.display]), w)
        if found is None:
            found = Stored(new_entity_id(), w.display, w.norm, w.type, (), 0)
            c.execute(
                "INSERT INTO entities (id, namespace, canonical_name, norm_name, type, aliases,"
                " mention_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?, '[]', 0, ?, ?)",
                (found.id, namespace, found.canonical_name, found.norm, found.type.value, now, now))
        better = upgraded_type(found, w)
        if better is not None and c.execute(
            "SELECT 1 FROM entities WHERE namespace = ? AND norm_name = ? AND type = ?",
            (namespace, found.norm, better.value)).fetchall():
            better = None  # another entity holds that name and type already
        new = refreshed(found, w, better)
        if new != found:
            c.execute(
                "UPDATE entities SET canonical_name = ?, type = ?, aliases = ?, updated_at = ?"
                " WHERE id = ?", (new.canonical_name, new.type.value,
                                  json.dumps(list(new.aliases), ensure_ascii=False), now, new.id))
        c.execute("INSERT OR IGNORE INTO memory_entities VALUES (?, ?, ?)",
                  (namespace, memory_id, found.id))
        if c.changes():
            c.execute("UPDATE entities SET mention_count = mention_count + 1, updated_at = ?"
                      " WHERE id = ?", (now, found.id))
        return found.id

    def _drop_links(self, namespace: str, memory_id: str, entity_ids: Sequence[str]) -> int:
        if not entity_ids:
            return 0
        c, marks = self.store.conn, ", ".join("?" * len(entity_ids))
        c.execute(f"DELETE FROM memory_entities WHERE namespace = ? AND memory_id = ?"
                  f" AND entity_id IN ({marks})", (namespace, memory_id, *entity_ids))
        removed = int(c.changes())
        # An entity nobody mentions any more is text of the forgotten memory: drop it.
        c.execute(f"DELETE FROM entities WHERE id IN ({marks}) AND NOT EXISTS (SELECT 1 FROM"
                  " memory_entities me WHERE me.entity_id = entities.id)", entity_ids)
        c.execute(f"UPDATE entities SET mention_count = max(mention_count - 1, 1),"
                  f" updated_at = ? WHERE id IN ({marks})", (self._clock(), *entity_ids))
        return removed

    def unlink_memory(self, namespace: str, memory_id: str) -> int:
        with self.store.write():
            linked = [r[0] for r in self.store.conn.execute(
                "SELECT entity_id FROM memory_entities WHERE namespace = ? AND memory_id = ?",
                (namespace, memory_id))]
            return self._drop_links(namespace, memory_id, linked)

    def add_alias(self, namespace: str, entity_id: str, alias: str) -> bool:
        with self.store.write():
            c = self.store.conn
            rows = c.execute(f"SELECT {ENTITY_COLS} FROM entities e WHERE e.namespace = ?"
                             " AND e.id = ?", (namespace, entity_id)).fetchall()
            aliases = merge_alias(_stored(rows[0]), [surface_form(alias)]) if rows else None
            if aliases is None:
                return False
            c.execute("UPDATE entities SET aliases = ?, updated_at = ? WHERE id = ?",
                      (json.dumps(list(aliases), ensure_ascii=False), self._clock(), entity_id))
            return True

    def drop_namespace(self, namespace: str) -> None:
        with self.store.write():
            self.store.conn.execute("DELETE FROM memory_entities WHERE namespace = ?", (namespace,))
            self.store.conn.execute("DELETE FROM entities WHERE namespace = ?", (namespace,))

    # --- reads ---------------------------------------------------------------------------------
    def search(self, namespace: str, names: Sequence[str], limit: int) -> list[EntityHit]:
        """Memories linked to entities of these names, the most specific matches first."""
        sql, args = _match_sql(list(names)[:MAX_SEARCH_NAMES])
        if not sql or limit <= 0:
            return []
        # Specific entities decide: each matched entity weighs 1/mention_count, and one that
        # appears in more than COMMON_SHARE of the namespace's memories (a speaker's own name
        # in a dialogue) does not count at all: it says nothing about which memory is meant.
        common = max(COMMON_MIN, COMMON_SHARE * self._namespace_size(namespace))
        matched = [e for e in (_stored(r) for r in self.store.query(sql, (namespace, *args)))
                   if e.mention_count <= common]
        # Each entity's `limit` most recent memories, read backwards along the index on
        # (entity_id, rowid): the cost is bounded by `limit`, not by the entity's mentions.
        return rank_entity_hits([(e.canonical_name, e.mention_count, [
            (m, int(r)) for m, r in self.store.query(
                "SELECT memory_id, rowid FROM memory_entities WHERE entity_id = ?"
                " ORDER BY rowid DESC LIMIT ?", (e.id, limit))]) for e in matched], limit)

    def _namespace_size(self, namespace: str) -> int:
        """Memories in the namespace, recounted when the table has grown 5% since the last
        count: COUNT(*) walks the namespace (milliseconds at 100k), MAX(seq) is one lookup."""
        top = int(self.store.query("SELECT COALESCE(MAX(seq), 0) FROM memories")[0][0])
        known = self._sizes.get(namespace)
        if known is None or abs(top - known[1]) > 0.05 * known[1]:
            n = int(self.store.query("SELECT COUNT(*) FROM memories WHERE namespace = ?",
                                      (namespace,))[0][0])
            known = self._sizes[namespace] = (n, top)
        return known[0]

    def entities_of(
        self, namespace: str, memory_ids: Sequence[str]
    ) -> dict[str, list[EntityProfile]]:
        out: dict[str, list[EntityProfile]] = {m: [] for m in memory_ids}
        for part in _chunks(list(dict.fromkeys(memory_ids))):
            rows = self.store.query(
                f"SELECT me.memory_id, {ENTITY_COLS} FROM memory_entities me JOIN entities e"
                " ON e.id = me.entity_id WHERE me.namespace = ? AND me.memory_id IN"
                f" ({', '.join('?' * len(part))}) ORDER BY me.rowid", (namespace, *part))
            for row in rows:
                out[row[0]].append(_stored(row[1:]).profile())
        return out

    def profile(self, namespace: str, name: str) -> EntityProfile | None:
        sql, args = _match_sql([name])
        rows = self.store.query(sql, (namespace, *args)) if sql else []
        found = best_named([_stored(r) for r in rows], name)
        return found.profile() if found else None

    def memories_of(self, namespace: str, entity_id: str, limit: int) -> list[str]:
        rows = self.store.query(
            "SELECT memory_id FROM memory_entities WHERE namespace = ? AND entity_id = ?"
            " ORDER BY rowid DESC LIMIT ?", (namespace, entity_id, max(limit, 0)))
        return [r[0] for r in rows]

    def entity_count(self, namespace: str) -> int:
        rows = self.store.query("SELECT COUNT(*) FROM entities WHERE namespace = ?", (namespace,))
        return int(rows[0][0])

    def entities(self, namespace: str, limit: int) -> list[EntityProfile]:
        rows = self.store.query(
            f"SELECT {ENTITY_COLS} FROM entities e WHERE e.namespace = ?"
            " ORDER BY e.mention_count DESC, e.norm_name, e.id LIMIT ?",
            (namespace, max(limit, 0)))
        return [_stored(r).profile() for r in rows]
