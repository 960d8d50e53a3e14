"""Entities (004): NER providers on realistic text, span-overlap merging, and one entity-index
contract run against the SQLite index (a real file, memories written through SQLiteStore) and
the in-memory index. The only scripted part is the LLM: a scripted OpenAI-compatible server
over real HTTP (tests/llm_servers.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clawmemory.backends.memory.entities import MemoryEntityIndex
from clawmemory.backends.registry import backend_of
from clawmemory.entities import (
    EntityIndex,
    EntityType,
    Mention,
    NERPipeline,
    NERProvider,
    Strategy,
    accurate_extra,
    build_pipeline,
    candidate_names,
    canonical_name,
    make_provider,
    normalize_name,
    resolve_overlaps,
)
from clawmemory.entities.llm import LLMProvider, parse_entities
from clawmemory.entities.names import NamesProvider
from clawmemory.entities.regex import RegexProvider
from clawmemory.errors import ConfigError, LLMError
from clawmemory.llm.prompts import NER_USER
from clawmemory.model import MemoryRecord
from llm_servers import ScriptedLLMServer, slow
from llm_servers import text as answer

START = 1_700_000_000.0
T = EntityType


def found(mentions: list[Mention]) -> list[tuple[str, str]]:
    return [(m.text, m.type.value) for m in mentions]


def spans_exact(text: str, mentions: list[Mention]) -> bool:
    return all(text[m.start: m.end] == m.text for m in mentions)


def mention(text: str, etype: EntityType = T.OTHER, start: int = 0, conf: float = 0.6,
            provider: str = "test") -> Mention:
    return Mention(text, etype, start, start + len(text), conf, provider)


# --- regex provider ------------------------------------------------------------------------------
def test_regex_finds_handles_tags_emails_urls() -> None:
    text = ("Ping @mel_42 and mail jo.doe+x@example.co.uk, see https://example.com/a_(b)). "
            "We love #LGBTQ and #pride-2024 but not #1, issue#4 or @5pm. www.foo.org/x?")
    got = RegexProvider().extract(text)
    assert found(got) == [
        ("@mel_42", "mention"), ("jo.doe+x@example.co.uk", "email"),
        ("https://example.com/a_(b)", "url"), ("#LGBTQ", "hashtag"),
        ("#pride-2024", "hashtag"), ("www.foo.org/x", "url"),
    ]
    assert spans_exact(text, got)
    assert all(m.provider == "regex" and m.confidence >= 0.9 for m in got)


def test_regex_dates_in_common_forms_only() -> None:
    text = ("We met on 2024-01-15, again on 15 January 2024, then January 15, 2024 and Jan 15th. "
            "In March 2023 too; on May 5 we left; paid 15/01/2024. Those 3 may help. "
            "2024-13-01 is no date, nor is Marco.")
    dates = [m.text for m in RegexProvider().extract(text) if m.type is T.DATE]
    assert dates == ["2024-01-15", "15 January 2024", "January 15, 2024", "Jan 15th",
                     "March 2023", "May 5", "15/01/2024"]


# --- names provider ------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("Hey Mel! I went to the LGBTQ support group yesterday with Caroline.",
     [("Mel", "person"), ("LGBTQ", "other"), ("Caroline", "other")]),
    ("Caroline: Hey Mel! Good to see you! How have you been?",
     [("Caroline", "person"), ("Mel", "person")]),
    ("Melanie: Thanks, Caroline! I'm swamped with the kids & work. What's up with you?",
     [("Melanie", "person"), ("Caroline", "person")]),
    ("Last Friday I went to a pottery class in Boston. New York is big. The Beatles rock.",
     [("Boston", "other"), ("New York", "other"), ("Beatles", "other")]),
    ("Yesterday Caroline and Mel met Dr. Smith at Acme Corp on Baker Street.",
     [("Caroline", "other"), ("Mel", "other"), ("Smith", "person"),
      ("Acme Corp", "organization"), ("Baker Street", "location")]),
    ("I read Becoming Nicole and The Lord of the Rings. Bank of America and Procter & Gamble.",
     [("Becoming Nicole", "other"), ("Lord of the Rings", "other"),
      ("Bank of America", "organization"), ("Procter & Gamble", "other")]),
    ("Caroline's mom said hi. I'm glad. Let's go. Don't worry. It's Mel's birthday.",
     [("Caroline", "person"), ("Mel", "person")]),
    ("Wow, Caroline! That's awesome 😊 Thanks Mel",
     [("Caroline", "person"), ("Mel", "person")]),
])
def test_names_in_dialogue(text: str, expected: list[tuple[str, str]]) -> None:
    got = NamesProvider().extract(text)
    assert found(got) == expected
    assert spans_exact(text, got)


def test_names_identifiers_are_projects() -> None:
    text = ("We moved from MySQL to PostgreSQL, use `sqlite-vec` with GPT-4 and llama3 "
            "via node.js; OpenAI ships the iPhone app.")
    assert found(NamesProvider().extract(text)) == [
        ("MySQL", "project"), ("PostgreSQL", "project"), ("sqlite-vec", "project"),
        ("GPT-4", "project"), ("llama3", "project"), ("node.js", "project"),
        ("OpenAI", "project"), ("iPhone", "project"),
    ]


def test_names_skip_common_words_and_shouting() -> None:
    provider = NamesProvider()
    # Sentence-initial common words, words seen lower-case elsewhere, weekdays, "I", compounds.
    assert provider.extract("Painting is fun. I love painting. Self-care matters on Monday.") \
        == []
    assert provider.extract("THIS IS SO GREAT I LOVE IT") == []
    # Question words, interjections and a sentence's first gerund are not names (measured on
    # LoCoMo: bench/names_precision.py).
    for text in ("According to Mel, what happened?", "Aww, that's sweet!", "Gonna be fun.",
                 "Having a dog is great. Exploring the coast too.", "Mmm, pizza.",
                 "Based on the notes, who won?"):
        assert found(provider.extract(text)) == [("Mel", "other")] * text.startswith("Acc"), text
    assert found(provider.extract("Woohoo! Caroline won. Having Caroline here helps.")) == [
        ("Caroline", "other"), ("Caroline", "other")]
    assert found(provider.extract("Good Morning Caroline!")) == [("Caroline", "person")]
    # A sentence's first word nothing vouches for is kept, with less confidence.
    lone = provider.extract("Joanna moved here.")
    assert found(lone) == [("Joanna", "other")] and lone[0].confidence < 0.5
    assert provider.extract("") == []


def test_names_are_less_confident_than_regex() -> None:
    text = "Thanks @Mel, see Caroline at caroline@example.com"
    names = NamesProvider().extract(text)
    assert names and max(m.confidence for m in names) < min(
        m.confidence for m in RegexProvider().extract(text))


# --- spaCy ---------------------------------------------------------------------------------------
def test_spacy_missing_is_a_config_error_with_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from clawmemory.entities import spacy_provider

    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy -> ImportError
    spacy_provider._load.cache_clear()
    with pytest.raises(ConfigError) as err:
        make_provider("spacy")
    assert ("pip install 'clawmemory[spacy]' && python -m spacy download en_core_web_sm"
            in str(err.value))
    with pytest.raises(ConfigError, match="en_core_web_lg"):
        spacy_provider.SpacyProvider("en_core_web_lg")
    assert spacy_provider.spacy_available() is False


def test_spacy_pipeline_from_disk_gives_typed_mentions(tmp_path: Path) -> None:
    """The `spacy` extra's library, for real: a saved pipeline (an entity ruler, since the
    trained English models are not on the package index) loaded by path like a model name."""
    spacy = pytest.importorskip("spacy")  # the `spacy` extra; scripts/setup.sh installs it
    from clawmemory.entities.spacy_provider import CONFIDENCE, SpacyProvider

    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([
        {"label": "PERSON", "pattern": "Caroline"},
        {"label": "ORG", "pattern": "Acme Corp"},
        {"label": "MONEY", "pattern": "5 dollars"},  # not an entity worth linking: dropped
    ])
    nlp.to_disk(tmp_path / "pipeline")
    text = "Caroline joined Acme Corp for 5 dollars"
    found = SpacyProvider(str(tmp_path / "pipeline")).extract(text)
    assert [(m.text, m.type, m.start, m.end, m.confidence, m.provider) for m in found] == [
        ("Caroline", EntityType.PERSON, 0, 8, CONFIDENCE, "spacy"),
        ("Acme Corp", EntityType.ORGANIZATION, 16, 25, CONFIDENCE, "spacy"),
    ]


def test_accurate_without_spacy_or_llm_equals_fast(
    monkeypatch: pytest.MonkeyPatch, openai_server: ScriptedLLMServer
) -> None:
    from clawmemory.entities import spacy_provider

    monkeypatch.setattr(spacy_provider, "spacy_available", lambda model="": False)
    accurate = build_pipeline(Strategy.ACCURATE)
    assert accurate.names == build_pipeline("fast").names == ("regex", "names")
    assert not accurate_extra(accurate)
    with_llm = build_pipeline("accurate", llm=openai_server.llm())
    assert with_llm.names == ("regex", "names", "llm") and accurate_extra(with_llm)


def test_unknown_strategy_or_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="strategy"):
        build_pipeline("thorough")
    with pytest.raises(ConfigError, match="provider"):
        make_provider("bert")
    with pytest.raises(ConfigError, match="needs an LLM"):
        make_provider("llm")


# --- LLM -----------------------------------------------------------------------------------------
def test_llm_provider_locates_entities_and_drops_invented_ones(
    openai_server: ScriptedLLMServer,
) -> None:
    text = "Caroline told Melanie about the adoption agency in Portland."
    openai_server.script([answer(
        'Sure! Here they are:\n```json\n[{"text": "Caroline", "type": "PERSON"},'
        ' {"text": "melanie", "type": "person"}, {"text": "Portland", "type": "GPE"},'
        ' {"text": "Oregon", "type": "location"}, {"name": "adoption agency"},'
        ' 42, {"type": "org"}]\n```')])
    got = LLMProvider(openai_server.llm()).extract(text)
    assert found(got) == [("Caroline", "person"), ("Melanie", "person"),
                          ("adoption agency", "other"), ("Portland", "location")]
    assert spans_exact(text, got) and all(m.provider == "llm" for m in got)
    (body,) = openai_server.bodies
    system, user = body["messages"]
    assert system["role"] == "system" and "JSON array" in system["content"]
    assert "person, project, organization, location" in system["content"]
    assert user == {"role": "user", "content": NER_USER.format(text=text)}
    assert body["temperature"] == 0.0


def test_llm_answer_parsing_is_lenient_but_not_blind() -> None:
    assert parse_entities('{"entities": [{"text": "Mel", "type": "per"}]}') == [("Mel", T.PERSON)]
    assert parse_entities('["Acme", {"text": " Bob ", "label": "software"}]') == [
        ("Acme", T.OTHER), ("Bob", T.PROJECT)]
    with pytest.raises(LLMError):
        parse_entities("I could not find any entities, sorry.")


def test_an_answer_without_json_gets_one_correction(openai_server: ScriptedLLMServer) -> None:
    openai_server.script([answer("Caroline is a person."), answer('[{"text": "Caroline"}]')])
    got = LLMProvider(openai_server.llm()).extract("Caroline went home")
    assert found(got) == [("Caroline", "other")] and len(openai_server.requests) == 2


def test_llm_failure_raises_llm_error_and_the_pipeline_degrades(
    openai_server: ScriptedLLMServer,
) -> None:
    openai_server.script([slow(2.0)])
    broken = LLMProvider(openai_server.llm(timeout_s=0.2))
    with pytest.raises(LLMError, match="timed out"):
        broken.extract("Caroline went home")
    openai_server.script([answer("no json here")], then=slow(2.0))
    pipe = NERPipeline([RegexProvider(), NamesProvider(), broken])
    assert found(pipe.extract("Thanks, Caroline! Mail me at mel@example.com")) == [
        ("Caroline", "person"), ("mel@example.com", "email")]
    with pytest.raises(LLMError, match="timed out"):
        pipe.extract("Caroline went home", strict=True)


# --- merging and names ---------------------------------------------------------------------------
def test_overlaps_keep_longest_then_most_confident() -> None:
    a = mention("New York", T.OTHER, 0, 0.6)
    b = mention("York", T.LOCATION, 4, 0.8)
    c = mention("Caroline", T.OTHER, 20, 0.6)
    d = mention("Caroline", T.PERSON, 20, 0.8)
    e = mention("Mel", T.OTHER, 40, 0.6)
    f = mention("Mel", T.PERSON, 40, 0.6)
    assert resolve_overlaps([b, a, c, d, e, f]) == [a, d, f]


def test_pipeline_merges_providers_by_span() -> None:
    text = "Thanks @Mel! Ask Caroline at caroline@example.com about https://x.org/Caroline"
    got = build_pipeline("fast").extract(text)
    assert found(got) == [("@Mel", "mention"), ("Caroline", "other"),
                          ("caroline@example.com", "email"), ("https://x.org/Caroline", "url")]


def test_canonical_and_normalised_names() -> None:
    assert canonical_name("@mel") == "mel"
    assert canonical_name("#LGBTQ") == "LGBTQ"
    assert canonical_name("Caroline's") == "Caroline"
    assert canonical_name("  New   York. ") == "New York"
    assert canonical_name("https://example.com/a.") == "https://example.com/a"
    assert canonical_name("Jo@Example.com") == "Jo@Example.com"
    assert normalize_name("@MEL") == normalize_name("Mel") == "mel"
    assert normalize_name("Ｃａｒｏｌｉｎｅ") == "caroline"  # NFKC: full-width letters


def test_candidate_names_cover_lower_case_queries() -> None:
    names = candidate_names("what did caroline say about New York and @mel?")
    assert {"caroline", "new york", "mel"} <= set(names)
    assert "what" not in names and "and" not in names


# --- the entity index contract -------------------------------------------------------------------
@dataclass
class Subject:
    index: EntityIndex
    put: Callable[[str, str], None]  # (namespace, memory id): a memory that exists
    forget: Callable[[str, str], None]


def _record(ns: str, mid: str) -> MemoryRecord:
    return MemoryRecord(id=mid, content=f"memory {mid}", namespace=ns, created_at=START,
                        updated_at=START)


@pytest.fixture(params=["sqlite", "memory"])
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    if request.param == "sqlite":
        from clawmemory.backends.sqlite.store import SQLiteStore

        store: object = SQLiteStore(tmp_path / "memory.db")
    else:
        from clawmemory.backends.memory.store import MemoryStore

        store = MemoryStore()
    index = backend_of(store).entities
    assert index is not None

    def put(ns: str, mid: str) -> None:
        store.put(_record(ns, mid))  # type: ignore[attr-defined]

    def forget(ns: str, mid: str) -> None:
        store.delete(ns, [mid])  # type: ignore[attr-defined]
        index.unlink_memory(ns, mid)

    yield Subject(index, put, forget)
    store.close()  # type: ignore[attr-defined]


def link(s: Subject, mid: str, *names: str | tuple[str, EntityType], ns: str = "a") -> list[str]:
    s.put(ns, mid)
    ms = [mention(n) if isinstance(n, str) else mention(n[0], n[1]) for n in names]
    return s.index.link_mentions(ns, mid, ms)


def test_create_or_get_counts_memories_once(subject: Subject) -> None:
    idx = subject.index
    first = link(subject, "m1", "Caroline", "LGBTQ", "Caroline")
    assert len(first) == 2 and all(i.startswith("ent_") and len(i) == 16 for i in first)
    again = link(subject, "m2", "caroline", "Boston")
    assert again[0] == first[0]
    # Idempotent: the same memory linked again changes nothing.
    assert idx.link_mentions("a", "m2", [mention("CAROLINE")]) == [first[0]]
    profile = idx.profile("a", "Caroline")
    assert profile is not None and profile.mention_count == 2 and profile.id == first[0]
    assert idx.entity_count("a") == 3
    assert [p.canonical_name for p in idx.entities("a", 10)] == ["Caroline", "Boston", "LGBTQ"]


def test_handles_merge_as_aliases_and_types_improve(subject: Subject) -> None:
    idx = subject.index
    (eid,) = link(subject, "m1", ("@caroline", T.MENTION))
    p = idx.profile("a", "caroline")
    assert p is not None and (p.canonical_name, p.type, p.aliases) == (
        "caroline", T.MENTION, ("@caroline",))
    assert link(subject, "m2", ("Caroline", T.PERSON)) == [eid]
    p = idx.profile("a", "CAROLINE")
    assert p is not None and (p.canonical_name, p.type, p.aliases, p.mention_count) == (
        "Caroline", T.PERSON, ("@caroline",), 2)
    # A strong type is not overwritten by a weak or another strong one.
    assert link(subject, "m3", ("#caroline", T.HASHTAG), ("Caroline", T.LOCATION)) == [eid]
    p = idx.profile("a", "#Caroline")
    assert p is not None and p.type is T.PERSON and p.aliases == ("@caroline", "#caroline")


def test_alias_match_links_to_the_aliased_entity(subject: Subject) -> None:
    idx = subject.index
    (mel,) = link(subject, "m1", ("Melanie", T.PERSON))
    assert idx.add_alias("a", mel, "Mel") is True
    assert idx.add_alias("a", mel, "mel") is False  # already known, case-insensitively
    assert idx.add_alias("a", "ent_000000000000", "x") is False
    assert link(subject, "m2", "Mel") == [mel]
    p = idx.profile("a", "mel")
    assert p is not None and p.canonical_name == "Melanie" and p.mention_count == 2
    assert p.aliases == ("Mel",)
    assert [h.memory_id for h in idx.search("a", ["MEL"], 10)] == ["m2", "m1"]
    assert idx.entity_count("a") == 1
    # An entity named exactly so wins over one that only has the name as an alias.
    (own,) = link(subject, "m3", "Mel", ns="b")
    (melanie,) = link(subject, "m4", "Melanie", ns="b")
    assert idx.add_alias("b", melanie, "Mel") is True
    assert link(subject, "m5", "MEL", ns="b") == [own]
    p = idx.profile("b", "mel")
    assert p is not None and (p.id, p.mention_count) == (own, 2)


def test_indexes_satisfy_the_protocol(subject: Subject) -> None:
    assert isinstance(subject.index, EntityIndex)
    assert isinstance(RegexProvider(), NERProvider) and isinstance(NamesProvider(), NERProvider)


def test_search_ranks_by_specific_matches_then_recency(subject: Subject) -> None:
    idx = subject.index
    link(subject, "m1", "Caroline", "Boston")
    link(subject, "m2", "Caroline")
    link(subject, "m3", "Boston")
    link(subject, "m4", "Melanie")
    hits = idx.search("a", ["caroline", "boston", "nobody"], 10)
    # Each matched entity weighs 1/mention_count (both are in two memories here).
    assert [(h.memory_id, h.entity_name, h.score) for h in hits] == [
        ("m1", "Boston, Caroline", 1.0), ("m3", "Boston", 0.5), ("m2", "Caroline", 0.5)]
    assert [h.memory_id for h in idx.search("a", ["@Caroline", "Caroline's"], 1)] == ["m2"]
    assert idx.search("a", [], 10) == [] and idx.search("a", ["the"], 10) == []
    memory_id, name, score = hits[0]  # plain tuples for the fusion code
    assert (memory_id, name, score) == ("m1", "Boston, Caroline", 1.0)


def test_entities_of_and_memories_of(subject: Subject) -> None:
    idx = subject.index
    link(subject, "m1", "Caroline", "LGBTQ")
    link(subject, "m2", "Caroline")
    got = idx.entities_of("a", ["m1", "m2", "nope"])
    assert {k: [p.canonical_name for p in v] for k, v in got.items()} == {
        "m1": ["Caroline", "LGBTQ"], "m2": ["Caroline"], "nope": []}
    caroline = idx.profile("a", "caroline")
    assert caroline is not None
    assert idx.memories_of("a", caroline.id, 10) == ["m2", "m1"]
    assert idx.memories_of("a", caroline.id, 1) == ["m2"]
    assert idx.profile("a", "Nobody") is None


def test_unlink_memory_drops_orphans_only(subject: Subject) -> None:
    idx = subject.index
    link(subject, "m1", "Caroline", "LGBTQ")
    link(subject, "m2", "Caroline")
    assert idx.unlink_memory("a", "m1") == 2
    assert idx.profile("a", "LGBTQ") is None
    caroline = idx.profile("a", "Caroline")
    assert caroline is not None and caroline.mention_count == 1
    assert idx.entity_count("a") == 1 and idx.search("a", ["lgbtq"], 10) == []
    assert idx.unlink_memory("a", "m1") == 0
    subject.forget("a", "m2")  # through the store, as the engine's forget does
    assert idx.entity_count("a") == 0 and idx.memories_of("a", caroline.id, 10) == []


def test_replace_drops_names_the_memory_no_longer_mentions(subject: Subject) -> None:
    idx = subject.index
    link(subject, "m1", "Caroline", "Boston")
    link(subject, "m2", "Boston")
    ids = idx.link_mentions("a", "m1", [mention("Portland")], replace=True)
    assert [p.canonical_name for p in idx.entities_of("a", ["m1"])["m1"]] == ["Portland"]
    assert idx.profile("a", "Caroline") is None  # orphaned, so gone
    boston = idx.profile("a", "Boston")
    assert boston is not None and boston.mention_count == 1
    assert idx.link_mentions("a", "m1", [mention("Portland")], replace=True) == ids


def test_namespaces_are_isolated(subject: Subject) -> None:
    idx = subject.index
    (in_a,) = link(subject, "m1", "Caroline", ns="a")
    (in_b,) = link(subject, "m1", "Caroline", ns="b")
    assert in_a != in_b
    assert [h.memory_id for h in idx.search("b", ["caroline"], 10)] == ["m1"]
    assert idx.memories_of("b", in_a, 10) == []
    idx.unlink_memory("b", "m1")
    assert idx.entity_count("b") == 0 and idx.entity_count("a") == 1
    idx.drop_namespace("a")
    assert idx.entity_count("a") == 0 and idx.search("a", ["caroline"], 10) == []


def test_links_need_an_existing_memory(subject: Subject) -> None:
    assert subject.index.link_mentions("a", "ghost", [mention("Caroline")]) == []
    assert subject.index.entity_count("a") == 0


def test_dialogue_end_to_end(subject: Subject) -> None:
    """Fast NER on the write path, entity search as recall's candidate list."""
    idx, ner = subject.index, build_pipeline("fast")
    turns = {
        "t1": "Hey Mel! I went to the LGBTQ support group yesterday with Caroline.",
        "t2": "Melanie: That's great, Caroline! The kids and I went camping near Portland.",
        "t3": "Caroline: I'm researching adoption agencies. Ping me at @caroline.",
    }
    for mid, text in turns.items():
        subject.put("a", mid)
        idx.link_mentions("a", mid, ner.extract(text))
    hits = idx.search("a", candidate_names("what did caroline say about the lgbtq group?"), 5)
    assert [h.memory_id for h in hits] == ["t1", "t3", "t2"]
    assert hits[0].entity_name == "Caroline, LGBTQ"
    caroline = idx.profile("a", "@caroline")
    assert caroline is not None and caroline.mention_count == 3
    assert caroline.type is T.PERSON and "@caroline" in caroline.aliases


# --- backend specifics ---------------------------------------------------------------------------
def test_sqlite_rows_persist_and_store_delete_cleans_up(tmp_path: Path) -> None:
    from clawmemory.backends.sqlite.entities import SQLiteEntityIndex
    from clawmemory.backends.sqlite.store import SQLiteStore

    store = SQLiteStore(tmp_path / "memory.db")
    index = SQLiteEntityIndex(store, clock=lambda: START)
    store.put(_record("a", "m1"))
    (eid,) = index.link_mentions("a", "m1", [mention("@caroline", T.MENTION)])
    rows = store.query("SELECT namespace, canonical_name, norm_name, type, aliases,"
                        " mention_count, created_at FROM entities WHERE id = ?", (eid,))
    assert rows == [("a", "caroline", "caroline", "mention", '["@caroline"]', 1, START)]
    store.close()

    reopened = SQLiteStore(tmp_path / "memory.db")
    again = SQLiteEntityIndex(reopened)
    assert [h.memory_id for h in again.search("a", ["Caroline"], 5)] == ["m1"]
    reopened.delete("a", ["m1"])  # the store's own cascade; the index agrees
    assert again.entity_count("a") == 0 and again.entities_of("a", ["m1"]) == {"m1": []}
    reopened.close()


def test_memory_index_round_trips_through_json() -> None:
    index = MemoryEntityIndex()
    index.link_mentions("a", "m1", [mention("Caroline", T.PERSON), mention("@mel", T.MENTION)])
    index.link_mentions("a", "m2", [mention("Mel")])
    data = json.loads(json.dumps(index.to_dict()))
    copy = MemoryEntityIndex.from_dict(data)
    for idx in (index, copy):
        assert [h.memory_id for h in idx.search("a", ["mel"], 5)] == ["m2", "m1"]
        mel = idx.profile("a", "Mel")
        assert mel is not None and (mel.canonical_name, mel.mention_count) == ("Mel", 2)
    copy.link_mentions("a", "m3", [mention("Caroline")])
    assert copy.memories_of("a", copy.profile("a", "caroline").id, 5)[0] == "m3"  # type: ignore[union-attr]


def test_no_index_for_the_none_backend() -> None:
    from clawmemory.backends.none.store import NoneStore

    assert backend_of(NoneStore()).entities is None


def test_search_ignores_entities_that_are_everywhere(subject: Subject) -> None:
    """A speaker's own name is in most turns of a dialogue: it cannot pick one out."""
    for i in range(10):
        link(subject, f"t{i}", "Caroline")
    link(subject, "t10", "Caroline", "Sweden")
    hits = subject.index.search("a", ["caroline", "sweden"], 10)
    assert [(h.memory_id, h.entity_name) for h in hits] == [("t10", "Sweden")]


def test_each_entity_gives_its_most_recent_memories_up_to_the_limit(subject: Subject) -> None:
    """An entity contributes its ``limit`` newest memories: the lookup costs what the limit
    says, however many memories mention the entity."""
    for i in range(150):  # a namespace where six mentions are not "everywhere"
        link(subject, f"other{i}", f"Person{i}")
    for i in range(1, 6):
        link(subject, f"m{i}", "Boston")
    link(subject, "m6", "Boston", "Fenway")
    hits = subject.index.search("a", ["boston", "fenway"], 3)
    assert [(h.memory_id, h.entity_name) for h in hits] == [
        ("m6", "Boston, Fenway"), ("m5", "Boston"), ("m4", "Boston")]


def test_sqlite_lookups_use_indexes_only(tmp_path: Path) -> None:
    """Finding entities by name or alias, and their memories, never scans a namespace."""
    from clawmemory.backends.sqlite.entities import _match_sql
    from clawmemory.backends.sqlite.store import SQLiteStore

    store = SQLiteStore(tmp_path / "memory.db")
    sql, args = _match_sql(["Caroline", "new york", "mel"])
    plans = [" ".join(str(r[-1]) for r in store.conn.execute(f"EXPLAIN QUERY PLAN {q}", a))
             for q, a in ((sql, ["a", *args]), (
                 "SELECT memory_id, rowid FROM memory_entities WHERE entity_id = ?"
                 " ORDER BY rowid DESC LIMIT ?", ["e", 3]))]
    store.close()
    for plan in plans:
        assert "SCAN" not in plan.replace("SCAN CONSTANT", ""), plan
        assert "USING" in plan


def test_aliases_of_an_older_database_are_indexed_on_upgrade(tmp_path: Path) -> None:
    """Migration 008 fills the alias table from the JSON aliases already stored, and triggers
    keep it in step with every later write (including the store's own forget)."""
    from clawmemory.backends.sqlite.entities import SQLiteEntityIndex
    from clawmemory.backends.sqlite.store import SQLiteStore

    store = SQLiteStore(tmp_path / "memory.db")
    store.put(_record("a", "m1"))
    index = SQLiteEntityIndex(store)
    (eid,) = index.link_mentions("a", "m1", [mention("@mel", T.MENTION)])
    assert index.add_alias("a", eid, "Melanie")
    with store.write():  # as if migration 008 had never run: no alias table yet
        for trigger in ("insert", "update", "delete"):
            store.conn.execute(f"DROP TRIGGER entity_aliases_{trigger}")
        store.conn.execute("DROP TABLE entity_aliases")
        store.conn.execute("DELETE FROM schema_version WHERE version = 8")
    store.close()

    upgraded = SQLiteStore(tmp_path / "memory.db")
    assert upgraded.query("SELECT 1 FROM schema_version WHERE version = 8") == [(1,)]
    index = SQLiteEntityIndex(upgraded)
    assert [h.memory_id for h in index.search("a", ["melanie"], 5)] == ["m1"]
    assert [h.memory_id for h in index.search("a", ["@MEL"], 5)] == ["m1"]
    upgraded.delete("a", ["m1"])
    assert upgraded.query("SELECT count(*) FROM entity_aliases")[0][0] == 0
    upgraded.close()
