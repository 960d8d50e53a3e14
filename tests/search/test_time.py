"""Time in recall (ADR 0017), on every backend, through the public API: ``since``/``until`` on
when the thing happened, ``created_since``/``created_until`` on creation, ``as_of`` (what was
valid then, corrections included), time expressions in queries as a ranking factor that hides
nothing, and event times read from stored text.

The clock is the suite's (``START`` = 2023-11-14T22:13:20Z, a Tuesday); times are UTC.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clawmemory import Filter, InvalidInputError, Memory, MemoryRecord, Settings
from clawmemory.backends.base import Store
from clawmemory.search.temporal import query_periods
from conftest import DAY, START, Clock


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _contents(records: object) -> list[str]:
    return [getattr(r, "memory", r).content for r in records]  # type: ignore[attr-defined]


@pytest.fixture
def diary(mem: Memory, clock: Clock) -> Memory:
    """Four memories: three with event times, one (stored now) without."""
    mem.store("dentist appointment went fine", event_time=_at("2023-03-10T09:00:00"))
    mem.store("team offsite in the mountains", event_time=_at("2023-10-17T12:00:00"))
    mem.store("bought a new bike helmet", event_time=_at("2023-11-13T18:00:00"))
    clock.advance(60)
    mem.store("helmet fits well, note to self")  # no event time: created_at = START + 60
    return mem


# --- since / until: when the thing happened --------------------------------------------------
def test_since_and_until_select_by_event_time_or_creation(diary: Memory) -> None:
    oldest = {"order": "oldest"}
    assert _contents(diary.list(since="2023-10-01", until="2023-11-12", **oldest)) == [
        "team offsite in the mountains"]
    # A date as "until" includes its day; the memory without an event time counts by creation.
    assert _contents(diary.list(since="2023-11-13", until="2023-11-14", **oldest)) == [
        "bought a new bike helmet", "helmet fits well, note to self"]
    assert diary.count(since="2023-11-14") == 1
    assert diary.count(until=_at("2023-03-10T09:00:00")) == 0  # until is exclusive
    assert diary.count(until=_at("2023-03-10T09:00:01")) == 1


def test_relative_expressions_are_read_against_the_clock(diary: Memory) -> None:
    # Now is 2023-11-14 22:14 UTC: "yesterday" is the 13th, from its start.
    assert _contents(diary.list(since="yesterday", until="yesterday")) == [
        "bought a new bike helmet"]
    assert diary.count(since="5 weeks ago") == 3  # 2023-10-10 22:14 onwards
    assert _contents(diary.list(since="last March", until="last March")) == [
        "dentist appointment went fine"]
    hits = diary.recall("helmet", mode="keyword", since="2 days ago")
    assert sorted(_contents(hits)) == ["bought a new bike helmet",
                                       "helmet fits well, note to self"]
    assert _contents(diary.recall("helmet", mode="keyword", until="yesterday")) == [
        "bought a new bike helmet"]


def test_created_since_and_until_select_by_creation(diary: Memory, clock: Clock) -> None:
    # Everything was created at START except the last memory (START + 60).
    assert diary.count(created_since=START + 1) == 1
    assert diary.count(created_until=START + 1) == 3
    assert _contents(diary.recall("helmet", mode="keyword", created_since=START + 1)) == [
        "helmet fits well, note to self"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"since": "the day the music died"}, "since: cannot read 'the day the music died'"),
        ({"until": "2023-13-45"}, "until: cannot read '2023-13-45'"),
        ({"since": "2023-11-14", "until": "2023-11-01"}, "since must be earlier than until"),
        ({"created_since": "today", "created_until": "yesterday"},
         "created_since must be earlier than created_until"),
        ({"as_of": True}, "as_of must be a time"),
    ],
)
def test_unreadable_times_are_refused(diary: Memory, arguments: dict[str, object],
                                      message: str) -> None:
    for call in (lambda: diary.list(**arguments), lambda: diary.count(**arguments),
                 lambda: diary.recall("helmet", **arguments)):
        with pytest.raises(InvalidInputError, match=message):
            call()


# --- as_of: what was valid then ---------------------------------------------------------------
def test_as_of_returns_what_was_valid_then(mem: Memory, clock: Clock) -> None:
    first = mem.store("The office is in Berlin", key="office")
    clock.advance(DAY)  # START + 1 day
    fixed = mem.correct("office", "The office is in Hamburg").id
    clock.advance(DAY)  # START + 2 days
    later = mem.store("The office has a rooftop garden")
    clock.advance(DAY)

    half_day, day_and_half = START + DAY / 2, START + 1.5 * DAY
    assert [r.id for r in mem.list(as_of=half_day)] == [first]  # before the correction
    assert [h.memory.id for h in mem.recall("office", mode="keyword", as_of=half_day)] == [
        first]
    assert {r.id for r in mem.list(as_of=day_and_half)} == {fixed}  # corrected, not yet added
    assert {r.id for r in mem.list(as_of=START + 3 * DAY)} == {fixed, later}
    assert mem.count(as_of=half_day) == 1
    assert mem.count(as_of=START - 1) == 0  # nothing existed yet
    # Without as_of only the current version is live; include_invalid adds the old one back.
    assert {r.id for r in mem.list()} == {fixed, later}
    assert {r.id for r in mem.list(as_of=day_and_half, include_invalid=True)} == {first, fixed}
    assert mem.get(first).valid_until == START + DAY


def test_as_of_accepts_dates_as_the_end_of_that_day(mem: Memory, clock: Clock) -> None:
    mem.store("draft plan", key="plan")  # 2023-11-14 22:13
    clock.advance(DAY)
    mem.correct("plan", "final plan")  # 2023-11-15 22:13
    assert _contents(mem.list(as_of="2023-11-14")) == ["draft plan"]
    assert _contents(mem.list(as_of="2023-11-15")) == ["final plan"]
    assert _contents(mem.list(as_of="yesterday")) == ["draft plan"]


# --- time expressions in the query: a ranking factor --------------------------------------------
def test_a_period_named_in_the_query_ranks_its_memories_first(diary: Memory) -> None:
    plain = diary.recall("helmet", mode="keyword")
    # (the two score alike for "helmet"; which comes first differs by backend's BM25)
    assert sorted(_contents(plain)) == ["bought a new bike helmet",
                                        "helmet fits well, note to self"]
    assert all("time" not in h.explain.factors for h in plain)
    hits = diary.recall("helmet yesterday", mode="keyword")
    assert _contents(hits) == ["bought a new bike helmet", "helmet fits well, note to self"]
    assert hits[0].explain.factors["time"] == 1.5
    before = {h.memory.content: h.score for h in plain}
    assert hits[0].score > before["bought a new bike helmet"] * 1.4
    # 22 h after the named day's end: less by 22/24 of the period's length.
    off = (START + 60 - _at("2023-11-14T00:00:00")) / DAY
    assert hits[1].explain.factors["time"] == pytest.approx(1 + 0.5 * (1 - off))
    assert "time:yesterday" in hits[0].explain.matched_terms
    assert not any(t.startswith("time:") for t in hits[1].explain.matched_terms)
    assert _contents(diary.recall("helmet today", mode="keyword")) == [
        "helmet fits well, note to self", "bought a new bike helmet"]


def test_a_period_named_in_the_query_is_read_against_as_of(mem: Memory, clock: Clock) -> None:
    mem.store("went to the dentist, two fillings")  # 2023-11-14 22:13
    clock.advance(3 * DAY)  # now 2023-11-17
    mem.store("the dentist's bill arrived")
    # Asked on the 15th, "yesterday" is the 14th: the visit, and the bill did not exist yet.
    hits = mem.recall("dentist yesterday", mode="keyword", as_of=START + DAY + 3600)
    assert _contents(hits) == ["went to the dentist, two fillings"]
    assert hits[0].explain.factors["time"] == 1.5
    assert "time:yesterday" in hits[0].explain.matched_terms
    # Asked now, yesterday is the 16th: neither memory lies in it.
    assert all(h.explain.factors["time"] < 1.5 for h in mem.recall("dentist yesterday",
                                                                   mode="keyword"))


def test_a_named_month_boosts_and_hides_nothing(diary: Memory) -> None:
    hits = diary.recall("dentist offsite helmet in March", mode="keyword", limit=10)
    assert len(hits) == 4  # every match is still returned
    assert hits[0].memory.content == "dentist appointment went fine"
    assert hits[0].explain.factors["time"] == 1.5
    assert [h.explain.factors["time"] for h in hits[1:]] == [1.0, 1.0, 1.0]


def test_queries_without_time_words_rank_exactly_as_without_the_time_factor(
    store: Store, clock: Clock,
) -> None:
    """The false-positive check: with the time features on (default) or off, a query that
    names no time and does not ask for one gets the same hits, scores and explanations. Every
    query here holds words a date parser reads as dates ("may", "march", "sat", "second",
    "30 years", "5th", "June")."""
    texts = ["May and June went hiking", "The march was on Sat", "Python 3.12 is out",
             "She is 30 years old", "Fifth avenue, 5th floor", "A second opinion"]
    queries = ["Who may come hiking?", "March on", "Sat in a chair", "what is 3.12",
               "how old is she, 30 years?", "what do you do on 5th avenue",
               "a second opinion", "hiking with June", "hiking whenever it is sunny"]
    on = Memory(store, Settings(embedder={"provider": "none"}), clock=clock)
    for text in texts:
        on.store(text, event_time=START - 200 * DAY)
    off = Memory(store, Settings(embedder={"provider": "none"},
                                 time={"query_boost": 0, "query_candidates": False,
                                       "answer_boost": 0}), clock=clock)
    for query in queries:
        with_time = [h.to_dict() for h in on.recall(query, mode="keyword", touch=False)]
        without = [h.to_dict() for h in off.recall(query, mode="keyword", touch=False)]
        assert with_time == without, query
        assert with_time, query
        assert all("time" not in h["explain"]["factors"] for h in with_time), query


def test_a_query_without_time_words_never_loads_the_date_parser(tmp_path: object) -> None:
    code = (
        "import sys; from clawmemory import Memory, Settings\n"
        "m = Memory.open(sys.argv[1], settings=Settings(db=sys.argv[1],"
        " embedder={'provider': 'none'}))\n"
        "m.store('User prefers dark mode'); m.recall('dark mode settings')\n"
        "m.recall('dark mode for my 2 cats, order 20000')\n"  # numbers alone name no time
        "m.recall('dark mode in the past two weeks')\n"  # a span that ends now: read here
        "print('dateparser' in sys.modules)\n"
        "m.recall('dark mode since yesterday'); print('dateparser' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, f"{tmp_path}/d.db"], check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["False", "True"]


@pytest.mark.parametrize("query", [
    "what did I buy in 2023", "the call on 15/07/23 at 10", "notes from 2023-11-13",
    "what changed this 1 week", "what happened 3 weeks ago", "plans for next 2 months",
])
def test_a_number_with_a_year_separators_or_a_marker_still_names_a_period(query: str) -> None:
    """The parser is skipped for numbers alone; beside a year, a date's separators, "this",
    "ago" or "next" it still reads them."""
    assert query_periods(query, START, UTC, ("en",)), query


@pytest.mark.parametrize("query", ["my 2 cats", "order 20000 arrived", "room 101 key",
                                   "in 3 weeks"])
def test_a_number_alone_names_no_period(query: str) -> None:
    assert query_periods(query, START, UTC, ("en",)) == ()


def _days(query: str) -> list[tuple[str, str, str]]:
    """(text, first day, day after the last) of each period ``query`` names, asked at START
    (Tuesday 2023-11-14, 22:13 UTC)."""
    def day(t: float) -> str:
        return datetime.fromtimestamp(t, UTC).date().isoformat()
    return [(p.text, day(p.start), day(p.end)) for p in query_periods(query, START, UTC, ("en",))]


@pytest.mark.parametrize(("query", "expected"), [
    ("Which concerts did I attend in the past two months?",
     ("the past two months", "2023-09-14", "2023-11-15")),
    ("what did I fix over the last 10 days", ("the last 10 days", "2023-11-04", "2023-11-15")),
    ("my runs this past week", ("this past week", "2023-11-07", "2023-11-15")),
    ("plants I bought in the last month", ("the last month", "2023-10-14", "2023-11-15")),
    ("during the past few days", ("the past few days", "2023-11-11", "2023-11-15")),
    ("in the last couple of weeks", ("the last couple of weeks", "2023-10-31", "2023-11-15")),
    ("what did I cook this week", ("this week", "2023-11-13", "2023-11-15")),
    ("the books I read earlier this month", ("earlier this month", "2023-11-01", "2023-11-15")),
    ("trips this year", ("this year", "2023-01-01", "2023-11-15")),
    ("the film I saw a few weeks ago", ("a few weeks ago", "2023-10-17", "2023-11-01")),
    ("a couple of months ago", ("a couple of months ago", "2023-08-14", "2023-10-15")),
    ("what did I do over the weekend", ("over the weekend", "2023-11-11", "2023-11-13")),
    ("who came by last weekend", ("last weekend", "2023-11-11", "2023-11-13")),
])
def test_a_span_the_parser_misreads_is_read_as_one(query: str, expected: tuple[str, str, str]
                                                  ) -> None:
    """The parser read "the past two months" as the one month two months back (September),
    "the last 10 days" as the tenth day back, and "the past week", "this week", "a few weeks
    ago" and the weekend as nothing (asked on a Tuesday)."""
    assert _days(query) == [expected]


def test_a_plain_last_month_is_still_the_calendar_month_before() -> None:
    assert _days("what did I buy last month") == [("last month", "2023-10-01", "2023-11-01")]
    assert _days("two months ago") == [("two months ago", "2023-09-01", "2023-10-01")]
    assert _days("the last time I went") == []
    assert _days("what is this about") == []
    assert _days("what did I spend the previous month") == [
        ("the previous month", "2023-10-01", "2023-11-01")]
    assert _days("previous week") == [("previous week", "2023-11-06", "2023-11-13")]


def test_memories_of_the_past_two_months_get_the_whole_time_factor(
        tmp_path: object, embedder: object) -> None:
    with Memory.open(f"{tmp_path}/p.db", embedder=embedder, clock=Clock()) as mem:
        mem.store("Saw the Arctic Monkeys live at the arena", event_time=START - 20 * DAY)
        mem.store("Went to a jazz concert at the Blue Note", event_time=START - 45 * DAY)
        hits = mem.recall("Which concerts did I attend in the past two months?", touch=False)
        assert [h.explain.factors["time"] for h in hits] == [1.5, 1.5]
        assert all("time:the past two months" in h.explain.matched_terms for h in hits)


def test_in_vector_mode_a_named_period_does_not_outrank_meaning(tmp_path: object,
                                                                 embedder: object) -> None:
    """On (cos + 1) / 2 a memory off the topic but inside the period (× 1.5) came first;
    ``recall.vector_sharpness`` (ADR 0031) ranks the concert, outside it, above."""
    path = f"{tmp_path}/v.db"
    with Memory.open(path, embedder=embedder, clock=Clock()) as mem:
        mem.store("Saw the Arctic Monkeys live at the arena with my sister",
                  event_time=START - 100 * DAY)
        mem.store("Renewed my library card at the front desk", event_time=START - 30 * DAY)
        mem.store("Fixed the leaking kitchen tap", event_time=START - 200 * DAY)
        asked = "Which concerts did I go to last month?"
        hits = mem.recall(asked, mode="vector", touch=False)
        assert [h.explain.factors["time"] for h in hits[:2]] == [1.0, 1.5]
        assert "Arctic Monkeys" in hits[0].memory.content
        assert hits[0].explain.fused == pytest.approx(
            ((hits[0].explain.lists["vector"]["cosine"] + 1) / 2) ** 4, rel=1e-5)
    flat = Settings(db=path, recall={"vector_sharpness": 1})
    with Memory.open(path, settings=flat, embedder=embedder, clock=Clock()) as mem:
        assert "library card" in mem.recall(asked, mode="vector", touch=False)[0].memory.content


# --- event times from stored text ---------------------------------------------------------------
def test_a_stored_turn_saying_yesterday_gets_that_day(mem: Memory) -> None:
    session = _at("2023-05-08T13:56:00")
    said = mem.store("Caroline: I went to a support group yesterday", event_time=session)
    assert mem.get(said).event_time == _at("2023-05-07T00:00:00")
    dated = mem.store("The lease was signed on 15 July 2023.")
    assert mem.get(dated).event_time == _at("2023-07-15T00:00:00")
    friday = mem.store("Last Friday the boiler broke")  # clock: Tuesday 2023-11-14
    assert mem.get(friday).event_time == _at("2023-11-10T00:00:00")
    # Not one unambiguous day: kept as given (or none).
    for text in ("We met last week", "See you on Friday", "in March I travel",
                 "Yesterday I called, on 3 May I wrote", "today is great"):
        assert mem.get(mem.store(text, event_time=session)).event_time == session, text
    assert mem.get(mem.store("today is great")).event_time is None


def test_event_times_from_text_can_be_turned_off(store: Store, clock: Clock) -> None:
    mem = Memory(store, Settings(embedder={"provider": "none"}, time={"from_text": False}),
                 clock=clock)
    assert mem.get(mem.store("I went hiking yesterday")).event_time is None


def test_an_observed_turn_is_read_against_the_clock(mem: Memory) -> None:
    said = mem.observe("user", "I fixed the bike three days ago", "s1")
    assert mem.get(said).event_time == _at("2023-11-11T00:00:00")


def test_the_time_zone_decides_what_yesterday_is(store: Store, clock: Clock) -> None:
    # 22:13 UTC on the 14th is already the 15th in Tokyo: "yesterday" there is the 14th.
    tokyo = Memory(store, Settings(embedder={"provider": "none"},
                                   time={"time_zone": "Asia/Tokyo"}), clock=clock)
    said = tokyo.store("I went hiking yesterday")
    assert tokyo.get(said).event_time == datetime(2023, 11, 14, tzinfo=UTC).timestamp() - 9 * 3600


# --- hybrid: the period's memories as candidates (real embedder) ------------------------------
@pytest.fixture(scope="module")
def embedder() -> object:
    from clawmemory.embed import make_embedder

    e = make_embedder("local")
    assert e is not None
    return e


def test_event_order_ranks_hybrid_recalls_but_not_vector_ones(tmp_path: object,
                                                              embedder: object) -> None:
    """On cosine alone the order factor re-sorted the list by date (ADR 0030): vector mode
    ranks by meaning, hybrid and keyword apply event order."""
    path = f"{tmp_path}/o.db"
    with Memory.open(path, embedder=embedder, clock=Clock()) as mem:
        mem.store("Bought a 50mm lens for the camera", event_time=START - 60 * DAY)
        mem.store("Bought a wide 16mm lens for the camera", event_time=START - 2 * DAY)
        mem.store("Walked the dog along the river", event_time=START - DAY)
        asked = "Which camera lens did I buy most recently?"
        hybrid = mem.recall(asked, mode="hybrid", touch=False)
        assert hybrid[0].explain.factors["order"] == 1.5
        vector = mem.recall(asked, mode="vector", touch=False)
        assert vector and all("order" not in h.explain.factors for h in vector)
        assert "dog" not in vector[0].memory.content  # the newest, but not about lenses


def test_hybrid_finds_what_happened_in_the_named_period(tmp_path: object, embedder: object
                                                        ) -> None:
    """"What did I do yesterday?" shares no word with what was done: the period's memories
    come in as the ``time`` list and rank first. (In a store this small every memory is a
    vector candidate anyway; without the list the factor alone ranks them.)"""
    now = Clock()
    done = {"Went to the dentist for a checkup": START - DAY,
            "Repaired the garden fence": START - DAY,
            "Booked flights to Lisbon": START - 10 * DAY,
            "Read a novel about whales": START - 40 * DAY}
    path = f"{tmp_path}/h.db"
    with Memory.open(path, embedder=embedder, clock=now) as mem:
        mem.store_many({"content": c, "event_time": t} for c, t in done.items())
        hits = mem.recall("What did I do yesterday?", mode="hybrid", touch=False)
        assert set(_contents(hits[:2])) == {"Went to the dentist for a checkup",
                                            "Repaired the garden fence"}
        for h in hits[:2]:
            assert "time" in h.explain.lists and h.explain.factors["time"] == 1.5
            assert "time:yesterday" in h.explain.matched_terms
    cfg = Settings(db=path, time={"query_candidates": False})
    with Memory.open(path, settings=cfg, embedder=embedder, clock=now) as mem:
        hits = mem.recall("What did I do yesterday?", mode="hybrid", touch=False)
        assert hits and all("time" not in h.explain.lists for h in hits)
        assert hits[0].explain.factors["time"] == 1.5


def test_a_date_without_a_year_is_no_event_time(mem: Memory) -> None:
    """"Her birthday is on May 15" names a day of every year, not the day of an event."""
    assert mem.get(mem.store("Farid's birthday is on May 15.")).event_time is None
    assert mem.get(mem.store("We played 3-4 times")).event_time is None
    assert mem.get(mem.store("Released 2023-07-15, finally")).event_time == _at("2023-07-15")


def test_a_question_asking_when_prefers_memories_that_state_a_time(mem: Memory) -> None:
    plain = mem.store("Mel loves hiking")
    dated = mem.store("Mel went hiking last Friday, the views were great and the trail long")
    assert [h.memory.id for h in mem.recall("Mel hiking", mode="keyword")] == [plain, dated]
    hits = mem.recall("When did Mel go hiking?", mode="keyword")
    assert [h.memory.id for h in hits] == [dated, plain]
    assert [h.explain.factors["states_time"] for h in hits] == [2.0, 1.0]
    # Only a question asking for a time gets the factor.
    assert all("states_time" not in h.explain.factors
               for h in mem.recall("Where did Mel go hiking?", mode="keyword"))


# --- every backend agrees with Filter.matches --------------------------------------------------
TIMES = st.one_of(st.none(), st.integers(0, 20).map(lambda d: START + d * DAY / 2))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(0, 20), TIMES, TIMES), min_size=1, max_size=8),
       since=TIMES, until=TIMES, as_of=TIMES, include_invalid=st.booleans())
def test_time_filters_agree_with_the_reference_on_every_backend(
    store: Store, rows: list[tuple[int, float | None, float | None]], since: float | None,
    until: float | None, as_of: float | None, include_invalid: bool,
) -> None:
    """``Filter.matches`` is the definition (model.py); each backend's list and count give
    exactly its answer for any mix of event times, creation times and invalidations."""
    ns = uuid.uuid4().hex
    records = [MemoryRecord(id=f"r{i}", namespace=ns, content="x",
                            created_at=START + created * DAY / 2, updated_at=START,
                            event_time=event, valid_until=invalid)
               for i, (created, event, invalid) in enumerate(rows)]
    store.put_many(records, skip_existing_keys=False)
    flt = Filter(since=since, until=until, as_of=as_of, include_invalid=include_invalid)
    want = {r.id for r in records if flt.matches(r)}
    assert {r.id for r in store.list(ns, flt, limit=100)} == want
    assert store.count(ns, flt) == len(want)


def test_a_question_about_the_latest_or_first_occasion_ranks_by_event_order(
    mem: Memory, clock: Clock
) -> None:
    first = mem.store("Bought a 50mm lens for the camera", event_time=START - 60 * DAY)
    latest = mem.store("Bought a wide 16mm lens for the camera", event_time=START - 2 * DAY)
    hits = mem.recall("Which camera lens did I buy most recently?", mode="keyword")
    assert [h.memory.id for h in hits] == [latest, first]
    assert [h.explain.factors["order"] for h in hits] == [1.5, 1.0]
    hits = mem.recall("What was the earliest camera lens I bought?", mode="keyword")
    assert [h.memory.id for h in hits] == [first, latest]
    # "initially" is about a belief as often as an occasion: no factor.
    assert all("order" not in h.explain.factors
               for h in mem.recall("What lens did I initially want?", mode="keyword"))
    # "Which came first, X or Y?" needs both, in any order: no order factor.
    assert all("order" not in h.explain.factors
               for h in mem.recall("Which came first, the 50mm or the 16mm lens?",
                                   mode="keyword"))
