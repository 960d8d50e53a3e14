"""Entities (004): NER providers, strategies, and the per-namespace entity index.

Pieces:

- providers (``NERProvider``): ``regex`` (mentions, hashtags, e-mails, URLs, dates), ``names``
  (offline capitalised-name / acronym / identifier heuristic), ``spacy`` (optional), ``llm``
  (any ``clawmemory.llm.LLM``; the configured one is ``make_llm(settings.llm)``);
- ``make_pipeline(strategy)``: ``fast`` = regex + names, ``accurate`` = + spaCy if installed +
  LLM if ``llm`` is given; mentions merged by span overlap (longest, then most confident);
- ``EntityIndex`` (the protocol, entities/base.py): each backend's bundle has its own
  (``backend_of(store).entities``: the 001 tables on SQLite, in RAM for memory and JSON).

Wiring into the engine (what to call where):

1. Build once per store: ``index = backend_of(store).entities`` (None for the ``none`` backend or
   an unknown one: entities off) and ``ner = make_pipeline(settings.entities.strategy)``.
2. Write path, after ``store.put``/``put_many`` returned the stored record ``r``:
   ``index.link_mentions(ns, r.id, ner.extract(r.content))``. After ``update``/``correct``
   changed the content of an existing id, pass ``replace=True`` so links to names the memory
   no longer mentions are dropped. Idempotent: re-linking the same memory is harmless.
3. Recall, as the entity candidate list:
   ``index.search(ns, candidate_names(query, ner), limit)`` -> ``EntityHit(memory_id,
   entity_name, score)`` best first (an index lookup: the cost does not grow with the
   namespace); fused with the keyword and vector lists (search/fusion.py), ``entity_name`` in
   the hit's explanation. ``candidate_names`` adds the query's 1-3 word
   sequences to its extracted names, so lower-case queries ("what did caroline say") match.
4. Forget: ``index.unlink_memory(ns, id)`` for each deleted id (SQLiteStore.delete already does
   the same in SQL; calling it again is a no-op). ``forget_namespace``: also
   ``index.drop_namespace(ns)`` (needed for ``MemoryEntityIndex``).
5. ``Memory.entity_info(name)`` (004 ``get_entity_info``): ``p = index.profile(ns, name)``;
   None -> not found; else ``index.memories_of(ns, p.id, limit)`` and ``store.get_many``.
   ``index.entities_of(ns, ids)`` annotates hits; ``index.entities(ns, n)`` and
   ``entity_count(ns)`` feed stats.
6. Nightly enrichment (004, core/jobs.py): ``accurate = make_pipeline("accurate", llm=llm)``;
   skip when ``not accurate_extra(accurate)``; for memories with few entities
   (``len(index.entities_of(...)[id]) <= 2``) call ``link_mentions`` with
   ``accurate.extract(content, strict=True)`` (additive; the fast links stay; a failing LLM
   fails the run instead of marking the memory enriched).
7. JSON backend persistence: ``MemoryEntityIndex.to_dict()`` / ``from_dict(data, exists)``;
   without it the index is rebuilt by re-running step 2 over the records after a reopen.

Nothing heavy happens at import: spaCy loads when a ``SpacyProvider`` is built, regexes compile
on first use.
"""

from __future__ import annotations

from clawmemory.entities.base import (
    Entity,
    EntityHit,
    EntityIndex,
    EntityProfile,
    EntityType,
    Mention,
    NERProvider,
    canonical_name,
    normalize_name,
    resolve_overlaps,
)
from clawmemory.entities.pipeline import (
    NERPipeline,
    ProviderName,
    Strategy,
    accurate_extra,
    build_pipeline,
    candidate_names,
    make_provider,
)

__all__ = [
    "Entity",
    "EntityHit",
    "EntityIndex",
    "EntityProfile",
    "EntityType",
    "Mention",
    "NERPipeline",
    "NERProvider",
    "ProviderName",
    "Strategy",
    "accurate_extra",
    "build_pipeline",
    "candidate_names",
    "canonical_name",
    "make_pipeline",
    "make_provider",
    "normalize_name",
    "resolve_overlaps",
]

make_pipeline = build_pipeline
