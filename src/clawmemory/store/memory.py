"""In-memory backend: everything in Python dicts, with a real BM25 index.

A feature, not a test double: use it for ephemeral agents and for tests of the layers above
storage. It follows the same contract as the SQLite backend (same filters, same upsert and
delete semantics); only the raw relevance numbers differ from FTS5's. Thread-safe.
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from clawmemory.model import Filter, MemoryRecord
from clawmemory.store.base import Link, StoreStats, TextHit

__all__ = ["MemoryStore", "stem", "tokenize"]

_WORD = re.compile(r"\w+")
_DIACRITICS = re.compile("[\u0300-\u036f]")  # the Combining Diacritical Marks block
_FIELDS = ("key", "content", "tags", "source")
K1, B = 1.2, 0.75


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def tokenize(text: str) -> list[str]:
    """Lower-cased, stemmed word tokens (close to FTS5's porter unicode61 tokenizer)."""
    return [stem(w) for w in _WORD.findall(_fold(text.lower()).replace("_", " "))]


def _fold(text: str) -> str:
    """Drop Latin/Greek/Cyrillic diacritics, as FTS5's ``remove_diacritics 2`` does, so
    "café", "cafe" and a decomposed "cafe\u0301" are one word on every backend."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _DIACRITICS.sub("", unicodedata.normalize("NFD", text)))


def _field_text(r: MemoryRecord) -> dict[str, str]:
    return {"key": r.key or "", "content": r.content, "tags": " ".join(r.tags),
            "source": r.source or ""}


@dataclass
class _Namespace:
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    by_key: dict[str, str] = field(default_factory=dict)
    seq: dict[str, int] = field(default_factory=dict)
    tf: dict[str, dict[str, Counter[str]]] = field(default_factory=dict)
    postings: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    field_len: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    links: dict[tuple[str, str], Link] = field(default_factory=dict)


class MemoryStore:
    """Records live in this process only; nothing is written to disk."""

    backend = "memory"

    def __init__(self, weights: tuple[float, float, float, float] = (2.0, 1.0, 1.5, 0.5)) -> None:
        self._ns: defaultdict[str, _Namespace] = defaultdict(_Namespace)
        self._lock = threading.RLock()
        self._weights = dict(zip(_FIELDS, weights, strict=True))
        self._counter = 0

    def close(self) -> None:
        pass

    # --- index maintenance ---------------------------------------------------------------------
    def _index(self, ns: _Namespace, r: MemoryRecord) -> None:
        tf = {f: Counter(tokenize(text)) for f, text in _field_text(r).items()}
        ns.tf[r.id] = tf
        for f, counts in tf.items():
            ns.field_len[f] += sum(counts.values())
            for term in counts:
                ns.postings[term].add(r.id)

    def _unindex(self, ns: _Namespace, rid: str) -> None:
        for f, counts in ns.tf.pop(rid, {}).items():
            ns.field_len[f] -= sum(counts.values())
            for term in counts:
                ns.postings[term].discard(rid)

    def _write(self, r: MemoryRecord) -> None:
        ns = self._ns[r.namespace]
        old = ns.records.get(r.id)
        if old is not None:
            self._unindex(ns, r.id)
            if old.key and ns.by_key.get(old.key) == r.id:
                del ns.by_key[old.key]
        else:
            self._counter += 1
            ns.seq[r.id] = self._counter
        ns.records[r.id] = r
        if r.key:
            ns.by_key[r.key] = r.id
        self._index(ns, r)

    # --- records -------------------------------------------------------------------------------
    def _upsert(self, record: MemoryRecord, skip_existing: bool) -> tuple[MemoryRecord, bool]:
        ns = self._ns[record.namespace]
        existing_id = ns.by_key.get(record.key) if record.key else None
        if existing_id is None:
            if record.id in ns.records:
                from clawmemory.errors import StorageError

                raise StorageError(f"a memory with id {record.id} already exists")
            self._write(record)
            return record, True
        existing = ns.records[existing_id]
        if skip_existing:
            return existing, False
        merged = record.evolve(id=existing.id, created_at=existing.created_at,
                               score=existing.score, access_count=existing.access_count,
                               confidence=existing.confidence)
        self._write(merged)
        return merged, False

    def put(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        with self._lock:
            return self._upsert(record, skip_existing=False)

    def put_many(
        self,
        records: Sequence[MemoryRecord],
        *,
        skip_existing_keys: bool,
        links: Sequence[tuple[str, str, float, str]] = (),
    ) -> list[tuple[MemoryRecord, bool]]:
        if not records:
            return []  # links need a namespace, and a batch without records has none
        with self._lock:
            snapshot = {name: _copy(ns) for name, ns in self._ns.items()}
            try:
                results = [self._upsert(r, skip_existing_keys) for r in records]
                stored = {r.id: res.id for r, (res, _) in zip(records, results, strict=True)}
                for a, b, strength, origin in links:
                    self._link(records[0].namespace, stored.get(a, a), stored.get(b, b),
                               strength, origin, replace_max=True)
            except BaseException:
                self._ns = defaultdict(_Namespace, snapshot)  # all or nothing
                raise
            return results

    def get(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None:
                return None
            rid = id_or_key if id_or_key in ns.records else ns.by_key.get(id_or_key)
            return ns.records.get(rid) if rid else None

    def get_many(self, namespace: str, ids: Sequence[str]) -> list[MemoryRecord]:
        with self._lock:
            ns = self._ns.get(namespace)
            return [ns.records[i] for i in ids if i in ns.records] if ns else []

    def replace(self, record: MemoryRecord) -> None:
        with self._lock:
            if record.id in self._ns[record.namespace].records:
                self._write(record)

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None:
                return 0
            removed = 0
            for rid in ids:
                r = ns.records.pop(rid, None)
                if r is None:
                    continue
                removed += 1
                self._unindex(ns, rid)
                ns.seq.pop(rid, None)
                if r.key and ns.by_key.get(r.key) == rid:
                    del ns.by_key[r.key]
                for pair in [p for p in ns.links if rid in p]:
                    del ns.links[pair]
            return removed

    def delete_namespace(self, namespace: str) -> int:
        with self._lock:
            ns = self._ns.pop(namespace, None)
            return len(ns.records) if ns else 0

    def _select(self, namespace: str, flt: Filter) -> list[MemoryRecord]:
        ns = self._ns.get(namespace)
        return [r for r in ns.records.values() if flt.matches(r)] if ns else []

    def list(
        self, namespace: str, flt: Filter, *, limit: int, offset: int = 0, order: str = "newest"
    ) -> list[MemoryRecord]:
        with self._lock:
            rows = self._select(namespace, flt)
            seq = self._ns[namespace].seq if rows else {}
            keys = {
                "newest": lambda r: (-r.created_at, -seq[r.id]),
                "oldest": lambda r: (r.created_at, seq[r.id]),
                "score": lambda r: (-r.score, -r.created_at),
                "accessed": lambda r: -(r.last_accessed or r.created_at),
            }
            rows.sort(key=keys[order])  # type: ignore[arg-type]
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
    ) -> list[TextHit]:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None or not ns.records:
                return []
            # A term goes through the same tokenizer as the text (FTS5 does the same with a
            # quoted term), so folding and splitting agree on both sides.
            stems = list(dict.fromkeys(s for t in terms for s in tokenize(t)))
            n = len(ns.records)
            avg = {f: max(ns.field_len[f] / n, 1e-9) for f in _FIELDS}
            scores: defaultdict[str, float] = defaultdict(float)
            for term in stems:
                docs = ns.postings.get(term, set())
                if not docs:
                    continue
                idf = max(math.log((n - len(docs) + 0.5) / (len(docs) + 0.5)), 1e-6)
                for rid in docs:
                    scores[rid] += idf * self._term_weight(ns.tf[rid], term, avg)
            hits = [TextHit(ns.records[rid], s) for rid, s in scores.items()
                    if flt.matches(ns.records[rid])]
            hits.sort(key=lambda h: (-h.relevance, -ns.seq[h.record.id]))
            return hits[:limit]

    def _term_weight(self, tf: dict[str, Counter[str]], term: str, avg: dict[str, float]) -> float:
        total = 0.0
        for f in _FIELDS:
            freq = tf[f].get(term, 0)
            if freq:
                length = sum(tf[f].values())
                total += self._weights[f] * freq * (K1 + 1) / (
                    freq + K1 * (1 - B + B * length / avg[f]))
        return total

    def matched_terms(
        self, namespace: str, ids: Sequence[str], terms: Sequence[str]
    ) -> dict[str, list[str]]:
        with self._lock:
            ns = self._ns.get(namespace)
            out: dict[str, list[str]] = {}
            for rid in ids:
                tf = ns.tf.get(rid, {}) if ns else {}
                out[rid] = [t for t in terms if _matches(tokenize(t), tf)]
            return out

    def like_search(
        self, namespace: str, tokens: Sequence[str], flt: Filter, *, limit: int
    ) -> list[TextHit]:
        with self._lock:
            low = [t.lower() for t in tokens if t][:16]
            hits = []
            for r in self._select(namespace, flt):
                text, key = r.content.lower(), (r.key or "").lower()
                found = sum(1 for t in low if t in text or t in key)
                if found:
                    hits.append(TextHit(r, float(found)))
            hits.sort(key=lambda h: (-h.relevance, -h.record.created_at))
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

    def link(self, namespace: str, a: str, b: str, *, strength: float, origin: str) -> bool:
        with self._lock:
            return self._link(namespace, a, b, strength, origin)

    def unlink(self, namespace: str, a: str, b: str) -> bool:
        with self._lock:
            ns = self._ns.get(namespace)
            return bool(ns and ns.links.pop((min(a, b), max(a, b)), None))

    def links(self, namespace: str, ids: Sequence[str]) -> dict[str, list[Link]]:
        with self._lock:
            out: dict[str, list[Link]] = {i: [] for i in ids}
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
    def namespaces(self) -> list[str]:
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


def _matches(tokens: list[str], tf: dict[str, Counter[str]]) -> bool:
    return bool(tokens) and all(any(tok in c for c in tf.values()) for tok in tokens)


def _copy(ns: _Namespace) -> _Namespace:
    postings: defaultdict[str, set[str]] = defaultdict(set, {t: set(s) for t, s in ns.postings.items()})
    return _Namespace(dict(ns.records), dict(ns.by_key), dict(ns.seq), dict(ns.tf), postings,
                      defaultdict(int, ns.field_len), dict(ns.links))
