"""In-memory backend: everything in Python dicts, with a real BM25 index.

A feature, not a test double: use it for ephemeral agents and for tests of the layers above
storage. It follows the same contract as the SQLite backend (same filters, same upsert and
delete semantics); only the raw relevance numbers differ from FTS5's. Thread-safe.
"""

from __future__ import annotations

import builtins
import math
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from clawmemory.backends.base import (
    CONTEXT_TURNS,
    SUBSTRING_SCAN_ROWS,
    ArchiveEntry,
    Link,
    RankInfo,
    RunRecord,
    StoreStats,
    TextHit,
    Version,
    connected_versions,
    is_turn,
    turn_context,
    upsert,
)
from clawmemory.errors import StorageError
from clawmemory.model import Filter, MemoryRecord
from clawmemory.text import phrase_count, tokenize

__all__ = ["MemoryStore"]

_FIELDS = ("key", "content", "tags", "source", "context")
K1, B = 1.2, 0.75


def _field_text(r: MemoryRecord, context: str) -> dict[str, str]:
    return {"key": r.key or "", "content": r.content, "tags": " ".join(r.tags),
            "source": r.source or "", "context": context}


@dataclass
class _Namespace:
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    by_key: dict[str, str] = field(default_factory=dict)
    seq: dict[str, int] = field(default_factory=dict)
    tf: dict[str, dict[str, Counter[str]]] = field(default_factory=dict)
    postings: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    field_len: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    links: dict[tuple[str, str], Link] = field(default_factory=dict)
    # provenance index: source id -> ids of the records naming it in source_ids
    derived: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # keyword context (ADR 0036): each session's turns, oldest first, and each turn's context
    turns: defaultdict[str, builtins.list[str]] = field(
        default_factory=lambda: defaultdict(builtins.list))
    context: dict[str, str] = field(default_factory=dict)


class MemoryStore:
    """Records live in this process only; nothing is written to disk."""

    backend = "memory"

    def __init__(self, weights: tuple[float, float, float, float, float] = (
            2.0, 1.0, 1.5, 0.5, 0.3), *, keyword_context: bool = True) -> None:
        self._ns: defaultdict[str, _Namespace] = defaultdict(_Namespace)
        self._lock = threading.RLock()
        self._weights = dict(zip(_FIELDS, weights, strict=True))
        self._context = keyword_context
        self._counter = 0
        self._closed = False
        self._life = _Lifecycle()  # archive and maintenance runs
        # Inside put_many: archived records a keyed write brought back (namespace, record,
        # archived_at), put back in the archive if the batch fails.
        self._revived: builtins.list[tuple[str, MemoryRecord, float | None]] | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True  # nothing to release; background writers stop

    # --- index maintenance ---------------------------------------------------------------------
    def _index(self, ns: _Namespace, r: MemoryRecord) -> None:
        context = ns.context[r.id] = self._context_of(ns, r)
        tf = {f: Counter(tokenize(text)) for f, text in _field_text(r, context).items()}
        ns.tf[r.id] = tf
        for source in r.source_ids:
            ns.derived[source].add(r.id)
        for f, counts in tf.items():
            ns.field_len[f] += sum(counts.values())
            for term in counts:
                ns.postings[term].add(r.id)

    def _unindex(self, ns: _Namespace, rid: str) -> None:
        record = ns.records.get(rid)
        for source in record.source_ids if record is not None else ():
            found = ns.derived.get(source)
            if found is not None:
                found.discard(rid)
                if not found:
                    del ns.derived[source]
        ns.context.pop(rid, None)
        for f, counts in ns.tf.pop(rid, {}).items():
            ns.field_len[f] -= sum(counts.values())
            for term in counts:
                ns.postings[term].discard(rid)

    def _context_of(self, ns: _Namespace, r: MemoryRecord) -> str:
        """A turn's keyword context: the tails of the turns before it in its session."""
        turns = ns.turns.get(r.session_id or "") if self._context and is_turn(r) else None
        if not turns:
            return ""
        # A new turn is the last of its session: no search through a long one.
        at = len(turns) - 1 if turns[-1] == r.id else turns.index(r.id) if r.id in turns else -1
        if at < 0:
            return ""
        before = turns[max(at - CONTEXT_TURNS, 0):at]
        return turn_context([ns.records[t].content for t in reversed(before)])

    def _requote(self, ns: _Namespace, session: str, after: int) -> None:
        """Index again the turns of ``session`` from position ``after`` on that quote a turn
        which went or changed: no forgotten word stays in their context."""
        for rid in ns.turns.get(session, [])[after: after + CONTEXT_TURNS]:
            self._unindex(ns, rid)
            self._index(ns, ns.records[rid])

    def _drop_turn(self, ns: _Namespace, r: MemoryRecord) -> None:
        turns = ns.turns.get(r.session_id or "")
        if turns and r.id in turns:
            at = turns.index(r.id)
            turns.pop(at)
            self._requote(ns, r.session_id or "", at)

    def _write(self, r: MemoryRecord) -> None:
        ns = self._ns[r.namespace]
        old = ns.records.get(r.id)
        if old is not None:
            self._unindex(ns, r.id)
            if old.key and ns.by_key.get(old.key) == r.id:
                del ns.by_key[old.key]
            if (old.session_id, is_turn(old)) != (r.session_id, is_turn(r)):
                self._drop_turn(ns, old)
        else:
            self._counter += 1
            ns.seq[r.id] = self._counter
        if self._context and is_turn(r) and (old is None or r.id not in ns.turns[
                r.session_id or ""]):
            ns.turns[r.session_id or ""].append(r.id)
        ns.records[r.id] = r
        if r.key:
            ns.by_key[r.key] = r.id
        self._index(ns, r)
        if old is not None and old.content != r.content and is_turn(r):
            turns = ns.turns.get(r.session_id or "", [])
            if r.id in turns:
                self._requote(ns, r.session_id or "", turns.index(r.id) + 1)

    # --- records -------------------------------------------------------------------------------
    def key_holder(self, namespace: str, key: str) -> MemoryRecord | None:
        ns = self._ns[namespace]
        found = ns.by_key.get(key)
        return None if found is None else ns.records[found]

    def insert_new(self, record: MemoryRecord) -> None:
        if record.id in self._ns[record.namespace].records:
            raise StorageError(f"a memory with id {record.id} already exists")
        self._write(record)

    def replace_in_place(self, record: MemoryRecord) -> None:
        self._write(record)

    def _upsert(self, record: MemoryRecord, skip_existing: bool) -> tuple[MemoryRecord, bool]:
        return upsert(self, record, skip_existing)

    def put(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        with self._lock:
            return self._upsert(record, skip_existing=False)

    def put_many(
        self,
        records: Sequence[MemoryRecord],
        *,
        skip_existing_keys: bool,
        links: Sequence[tuple[str, str, float, str]] = (),
    ) -> builtins.list[tuple[MemoryRecord, bool]]:
        if not records:
            return []  # links need a namespace, and a batch without records has none
        with self._lock:
            snapshot = {name: _copy(ns) for name, ns in self._ns.items()}
            revived: builtins.list[tuple[str, MemoryRecord, float | None]] = []
            self._revived = revived
            try:
                results = [self._upsert(r, skip_existing_keys) for r in records]
                stored = {r.id: res.id for r, (res, _) in zip(records, results, strict=True)}
                for a, b, strength, origin in links:
                    self._link(records[0].namespace, stored.get(a, a), stored.get(b, b),
                               strength, origin, replace_max=True)
            except BaseException:
                self._ns = defaultdict(_Namespace, snapshot)  # all or nothing
                for namespace, record, at in revived:  # the archive too
                    self._archive_store()._write(record)
                    if at is not None:
                        self._life.archived_at[(namespace, record.id)] = at
                raise
            finally:
                self._revived = None
            return results

    def get(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None:
                return None
            rid = id_or_key if id_or_key in ns.records else ns.by_key.get(id_or_key)
            return ns.records.get(rid) if rid else None

    def get_many(self, namespace: str, ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        with self._lock:
            ns = self._ns.get(namespace)
            return [ns.records[i] for i in ids if i in ns.records] if ns else []

    def replace(self, record: MemoryRecord) -> None:
        with self._lock:
            if record.id in self._ns[record.namespace].records:
                self._write(record)

    def supersede(self, retired: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
        with self._lock:
            self.replace(retired)
            return self._upsert(new, skip_existing=False)[0]

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        with self._lock:
            removed = self._delete_live(namespace, ids)
            arch = self._life.store  # never build an archive just to find nothing in it
            if arch is not None:
                gone = arch._delete_live(namespace, ids)
                for rid in ids:
                    self._life.archived_at.pop((namespace, rid), None)
                removed += gone
            return removed

    def _delete_live(self, namespace: str, ids: Sequence[str]) -> int:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None:
                return 0
            removed = 0
            for rid in ids:
                r = ns.records.get(rid)
                if r is None:
                    continue
                removed += 1
                self._unindex(ns, rid)
                self._drop_turn(ns, r)
                del ns.records[rid]
                ns.seq.pop(rid, None)
                if r.key and ns.by_key.get(r.key) == rid:
                    del ns.by_key[r.key]
                for pair in [p for p in ns.links if rid in p]:
                    del ns.links[pair]
            return removed

    def delete_namespace(self, namespace: str) -> int:
        with self._lock:
            self._life.drop(namespace)
            ns = self._ns.pop(namespace, None)
            return len(ns.records) if ns else 0

    def _select(self, namespace: str, flt: Filter) -> builtins.list[MemoryRecord]:
        ns = self._ns.get(namespace)
        return [r for r in ns.records.values() if flt.matches(r)] if ns else []

    def list(
        self, namespace: str, flt: Filter, *, limit: int, offset: int = 0, order: str = "newest"
    ) -> builtins.list[MemoryRecord]:
        with self._lock:
            rows = self._select(namespace, flt)
            seq = self._ns[namespace].seq if rows else {}
            keys = {
                "newest": lambda r: (-r.created_at, -seq[r.id]),
                "oldest": lambda r: (r.created_at, seq[r.id]),
                "score": lambda r: (-r.score, -r.created_at),
                "accessed": lambda r: -(r.last_accessed or r.created_at),
            }
            rows.sort(key=keys[order])
            return rows[offset: offset + limit]

    def count(self, namespace: str, flt: Filter) -> int:
        with self._lock:
            return len(self._select(namespace, flt))

    def touch(self, namespace: str, ids: Sequence[str], now: float) -> None:
        with self._lock:
            ns = self._ns.get(namespace)
            for rid in ids:
                if ns and rid in ns.records:
                    r = ns.records[rid]
                    ns.records[rid] = r.evolve(last_accessed=now, access_count=r.access_count + 1)

    # --- keyword search ------------------------------------------------------------------------
    def keyword_search(
        self, namespace: str, terms: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None or not ns.records:
                return []
            # A term goes through the same tokenizer as the text (FTS5 does the same with a
            # quoted term), so folding and splitting agree on both sides. A term of several
            # tokens ("3.12") is a phrase: its tokens in a row, scored as one term.
            n = len(ns.records)
            avg = {f: max(ns.field_len[f] / n, 1e-9) for f in _FIELDS}
            scores: defaultdict[str, float] = defaultdict(float)
            for toks in _query_tokens(terms):
                freqs = self._phrase_freqs(ns, toks) if len(toks) > 1 else {
                    rid: {f: ns.tf[rid][f].get(toks[0], 0) for f in _FIELDS}
                    for rid in ns.postings.get(toks[0], ())}
                if not freqs:
                    continue
                idf = max(math.log((n - len(freqs) + 0.5) / (len(freqs) + 0.5)), 1e-6)
                for rid, freq in freqs.items():
                    scores[rid] += idf * self._term_weight(ns.tf[rid], freq, avg)
            # A score of 0: only a field weighted 0 (a turn's context) held the terms.
            hits = [TextHit(_info(ns.records[rid]), s) for rid, s in scores.items()
                    if s > 0 and flt.matches(ns.records[rid])]
            hits.sort(key=lambda h: (-h.relevance, -ns.seq[h.info.id]))
            return hits[:limit]

    def rank_info(self, namespace: str, ids: Sequence[str], flt: Filter) -> dict[str, RankInfo]:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None:
                return {}
            return {i: _info(ns.records[i]) for i in ids
                    if i in ns.records and flt.matches(ns.records[i])}

    def _term_weight(self, tf: dict[str, Counter[str]], freqs: dict[str, int],
                     avg: dict[str, float]) -> float:
        """BM25's term weight summed over the fields (``freqs``: occurrences per field)."""
        total = 0.0
        for f in _FIELDS:
            freq = freqs[f]
            if freq:
                length = sum(tf[f].values())
                total += self._weights[f] * freq * (K1 + 1) / (
                    freq + K1 * (1 - B + B * length / avg[f]))
        return total

    def _phrase_freqs(self, ns: _Namespace, toks: Sequence[str]) -> dict[str, dict[str, int]]:
        """Occurrences of a phrase per field, for the records holding all of its tokens."""
        holders = set.intersection(*(ns.postings.get(t, set()) for t in toks))
        out = {}
        for rid in holders:
            text = _field_text(ns.records[rid], ns.context.get(rid, ""))
            freqs = {f: phrase_count(tokenize(text[f]), toks) for f in _FIELDS}
            if any(freqs.values()):
                out[rid] = freqs
        return out

    def like_search(
        self, namespace: str, tokens: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        with self._lock:
            low = [t.lower() for t in tokens if t][:16]
            hits = []
            seq = self._ns[namespace].seq if namespace in self._ns else {}
            newest = sorted(self._select(namespace, flt),
                            key=lambda r: (-r.created_at, -seq.get(r.id, 0)))
            for r in newest[:SUBSTRING_SCAN_ROWS]:
                text, key = r.content.lower(), (r.key or "").lower()
                found = sum(1 for t in low if t in text or t in key)
                if found:
                    hits.append(TextHit(_info(r), float(found)))
            hits.sort(key=lambda h: (-h.relevance, -h.info.created_at))
            return hits[:limit]

    # --- graph ---------------------------------------------------------------------------------
    def _link(self, namespace: str, a: str, b: str, strength: float, origin: str,
              replace_max: bool = False) -> bool:
        ns = self._ns.get(namespace)
        if ns is None or a == b or a not in ns.records or b not in ns.records:
            return False
        pair = (min(a, b), max(a, b))
        old = ns.links.get(pair)
        if old is None:
            ns.links[pair] = Link("", strength, origin)
        else:
            total = max(old.strength, strength) if replace_max else old.strength + strength
            ns.links[pair] = Link("", total, old.origin)
        return True

    def link(self, namespace: str, a: str, b: str, *, strength: float, origin: str,
             accumulate: bool = True) -> bool:
        with self._lock:
            return self._link(namespace, a, b, strength, origin, replace_max=not accumulate)

    def unlink(self, namespace: str, a: str, b: str) -> bool:
        with self._lock:
            ns = self._ns.get(namespace)
            return bool(ns and ns.links.pop((min(a, b), max(a, b)), None))

    def links(self, namespace: str, ids: Sequence[str]) -> dict[str, builtins.list[Link]]:
        with self._lock:
            out: dict[str, builtins.list[Link]] = {i: [] for i in ids}
            ns = self._ns.get(namespace)
            for (a, b), lk in (ns.links.items() if ns else ()):
                if a in out:
                    out[a].append(Link(b, lk.strength, lk.origin))
                if b in out:
                    out[b].append(Link(a, lk.strength, lk.origin))
            for v in out.values():
                v.sort(key=lambda lk: -lk.strength)
            return out

    # --- housekeeping --------------------------------------------------------------------------
    def namespaces(self) -> builtins.list[str]:
        with self._lock:
            return sorted(n for n, ns in self._ns.items() if ns.records)

    def stats(self, namespace: str) -> StoreStats:
        with self._lock:
            ns = self._ns.get(namespace) or _Namespace()
            valid = [r for r in ns.records.values() if r.valid_until is None]
            times = [r.created_at for r in ns.records.values()]
            return StoreStats(
                backend=self.backend, total=len(valid),
                by_kind=dict(sorted(Counter(r.kind for r in valid).items())),
                invalidated=len(ns.records) - len(valid), links=len(ns.links),
                newest=max(times, default=None), oldest=min(times, default=None),
            )

    # --- lifecycle: soft delete, archive (003), maintenance runs --------------------------------
    def replace_many(self, records: Sequence[MemoryRecord]) -> None:
        with self._lock:
            for r in records:
                self.replace(r)

    def drop_derived(self, namespace: str, ids: Sequence[str]) -> None:
        pass  # vectors and entity links of this backend live in the engine's components

    def _archive_store(self) -> MemoryStore:
        # The archive is a second store of the same kind: the same BM25 index, so archive
        # search ranks as recall does. Built on first use (a store cannot build one in __init__).
        if self._life.store is None:
            w = self._weights  # archived turns are found by their own words only
            self._life.store = MemoryStore(
                (w["key"], w["content"], w["tags"], w["source"], 0.0), keyword_context=False)
        return self._life.store

    def archive(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        with self._lock:
            arch = self._archive_store()
            records = self.get_many(namespace, list(dict.fromkeys(ids)))
            for r in records:
                # _write, not put: archived records may share a key, and none may merge.
                arch.delete(namespace, [r.id])
                arch._write(r)
                self._life.archived_at[(namespace, r.id)] = at
            return self._delete_live(namespace, [r.id for r in records])

    def archive_search(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> builtins.list[MemoryRecord]:
        with self._lock:
            arch = self._archive_store()
            hits = arch.keyword_search(namespace, terms, Filter(include_invalid=True), limit=limit)
            return arch.get_many(namespace, [h.info.id for h in hits])

    def archive_count(self, namespace: str) -> int:
        with self._lock:
            return self._archive_store().count(namespace, Filter(include_invalid=True))

    def restore(self, namespace: str, id_: str) -> MemoryRecord | None:
        with self._lock:
            arch = self._archive_store()
            found = arch.get_many(namespace, [id_])
            if not found:
                return None
            record = found[0]
            if record.key and self.key_holder(namespace, record.key) is not None:
                record = record.evolve(key=None)  # the live memory owns the key now
            arch.delete(namespace, [id_])  # first: a keyed put must not find it archived
            self.insert_new(record)
            at = self._life.archived_at.pop((namespace, id_), None)
            if self._revived is not None:
                self._revived.append((namespace, found[0], at))
            return record

    def find_archived(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        with self._lock:
            arch = self._life.store
            if arch is None:
                return None
            found = arch.get_many(namespace, [id_or_key])
            if found:
                return found[0]
            keyed = [r for r in arch._ns[namespace].records.values() if r.key == id_or_key]
            return max(keyed, key=lambda r: arch._ns[namespace].seq[r.id], default=None)

    def derived(self, namespace: str, source_ids: Sequence[str]) -> builtins.list[Version]:
        with self._lock:
            found: builtins.list[Version] = []
            stores = [(self, False)]
            if self._life.store is not None:
                stores.append((self._life.store, True))
            for store, archived in stores:
                ns = store._ns.get(namespace)
                if ns is None:
                    continue
                ids = sorted({m for s in source_ids for m in ns.derived.get(s, ())})
                found += [(ns.records[i], archived) for i in ids]
            return found

    def chain(self, namespace: str, id_: str) -> builtins.list[Version]:
        with self._lock:
            versions = [(r, False) for r in self._ns[namespace].records.values()]
            if self._life.store is not None:
                versions += [(r, True) for r in self._life.store._ns[namespace].records.values()]
        return connected_versions(versions, id_)

    def archive_list(
        self, namespace: str, *, limit: int, offset: int = 0
    ) -> builtins.list[ArchiveEntry]:
        with self._lock:
            entries = [ArchiveEntry(r, at) for r, at in self.archived(namespace)]
        entries.sort(key=lambda e: (-e.archived_at, -e.record.created_at, e.record.id))
        return entries[offset : offset + limit]

    def archived(self, namespace: str) -> builtins.list[tuple[MemoryRecord, float]]:
        """Every archived record of the namespace with its archive time (for persistence)."""
        with self._lock:
            arch = self._archive_store()
            rows = arch.list(namespace, Filter(include_invalid=True), limit=10**9, order="oldest")
            return [(r, self._life.archived_at.get((namespace, r.id), 0.0)) for r in rows]

    def live_size_bytes(self) -> int | None:
        return None  # nothing on disk to measure: size-based pruning does not apply

    def record_run(
        self,
        namespace: str,
        job: str,
        started_at: float,
        finished_at: float,
        outcome: str,
        counts: dict[str, int],
        message: str,
    ) -> RunRecord:
        with self._lock:
            self._life.run_ids += 1
            run = RunRecord(self._life.run_ids, namespace, job, started_at, finished_at, outcome,
                            dict(counts), message)
            self._life.runs[namespace].append(run)
            return run

    def runs(
        self, namespace: str, limit: int, *, job: str | None = None
    ) -> builtins.list[RunRecord]:
        with self._lock:
            found = [r for r in self._life.runs.get(namespace, []) if job is None or r.job == job]
            found.sort(key=lambda r: (-r.started_at, -r.id))
            return found[:limit]


@dataclass
class _Lifecycle:
    """What a namespace keeps besides live records: archived ones and maintenance runs."""

    store: MemoryStore | None = None
    archived_at: dict[tuple[str, str], float] = field(default_factory=dict)
    runs: defaultdict[str, builtins.list[RunRecord]] = field(
        default_factory=lambda: defaultdict(list))
    run_ids: int = 0

    def namespaces(self) -> builtins.list[str]:
        return sorted({ns for ns, _ in self.archived_at})

    def drop_all(self) -> None:
        self.store, self.run_ids = None, 0
        self.archived_at.clear()
        self.runs.clear()

    def drop(self, namespace: str) -> None:
        if self.store is not None:
            self.store.delete_namespace(namespace)
        for key in [k for k in self.archived_at if k[0] == namespace]:
            del self.archived_at[key]
        self.runs.pop(namespace, None)


def _query_tokens(terms: Sequence[str]) -> builtins.list[tuple[str, ...]]:
    """Each term's tokens; a one-token term once (two terms may share a stem)."""
    out: dict[tuple[str, ...], None] = {}
    for t in terms:
        toks = tuple(tokenize(t))
        if toks:
            out.setdefault(toks, None)
    return list(out)


def _info(r: MemoryRecord) -> RankInfo:
    return RankInfo(r.id, r.score, r.created_at, r.last_accessed, r.confidence, r.updated_at,
                    r.stored_at, r.session_id, r.source_role)


def _copy(ns: _Namespace) -> _Namespace:
    postings: defaultdict[str, set[str]] = defaultdict(
        set, {t: set(s) for t, s in ns.postings.items()})
    derived: defaultdict[str, set[str]] = defaultdict(
        set, {t: set(s) for t, s in ns.derived.items()})
    turns: defaultdict[str, builtins.list[str]] = defaultdict(
        builtins.list, {t: list(ids) for t, ids in ns.turns.items()})
    return _Namespace(dict(ns.records), dict(ns.by_key), dict(ns.seq), dict(ns.tf), postings,
                      defaultdict(int, ns.field_len), dict(ns.links), derived, turns,
                      dict(ns.context))
