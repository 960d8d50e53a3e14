"""Scheduled maintenance (maintenance.py, cli_lifecycle.py): the jobs table, recorded runs,
idempotency, LLM skips and the LLM hook, the APScheduler cron triggers, and the CLI commands
run as real processes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from apscheduler.triggers.cron import CronTrigger

from clawmemory import ConfigError, InvalidInputError, Memory, Settings, StorageError
from clawmemory.backends.base import Store
from clawmemory.config import LLMSettings
from clawmemory.core.jobs import (
    JOBS,
    JobContext,
    Scheduler,
    crontab_trigger,
    no_llm,
    preview_all,
    preview_job,
    run_all,
    run_job,
)
from clawmemory.llm import Message
from conftest import DAY, Clock, backend_params
from llm_servers import ScriptedLLMServer, http_error
from llm_servers import text as reply


def with_maintenance(mem: Memory, **changes: Any) -> Memory:
    cfg = mem.settings.model_copy(
        update={"maintenance": mem.settings.maintenance.model_copy(update=changes)})
    return Memory(mem.store_backend, cfg, namespace=mem.namespace, clock=mem.clock)


def snapshot(mem: Memory) -> list[dict[str, Any]]:
    return [r.to_dict() for r in mem.list(include_invalid=True, limit=10_000, order="oldest")]


def seed(mem: Memory, clock: Clock) -> None:
    for i in range(12):
        mem.store(f"fact {i} about the garden", kind="fact", confidence=0.5 + i / 30)
    mem.store("chat state", kind="conversation")
    mem.store("identity", kind="core")
    clock.advance(20 * DAY)
    for i in range(5):
        mem.store(f"recent preference {i}", kind="preference")
    clock.advance(15 * DAY)


# --- runs are recorded ---------------------------------------------------------------------------
def test_decay_job_runs_and_is_recorded(mem: Memory, clock: Clock) -> None:
    seed(mem, clock)
    run = run_job(mem, "decay", JobContext(rng=random.Random(5)))
    assert run.outcome == "ok" and run.job == "decay" and run.namespace == mem.namespace
    assert run.started_at == run.finished_at == clock.now
    assert run.counts["hygiene_archived"] == 1
    assert run.counts["idle_archived"] + run.counts["idle_survived"] == 12
    assert run.counts["decayed"] == 5  # the preferences; survivors have just been refreshed
    assert "hygiene_archived 1" in run.message
    assert mem.store_backend.runs(mem.namespace, 10) == [run]


def test_decay_job_twice_in_a_row_changes_nothing_the_second_time(
    mem: Memory, clock: Clock
) -> None:
    seed(mem, clock)
    first = run_job(mem, "decay", JobContext(rng=random.Random(1)))
    assert first.counts["idle_archived"] > 0 and first.counts["decayed"] > 0
    before = snapshot(mem)
    second = run_job(mem, "decay", JobContext(rng=random.Random(1)))
    assert snapshot(mem) == before
    assert {k: v for k, v in second.counts.items() if k != "live_bytes"} == {
        "hygiene_archived": 0, "idle_archived": 0, "idle_survived": 0, "decayed": 0,
        "invalidated": 0, "prune_archived": 0}
    assert [r.id for r in mem.store_backend.runs(mem.namespace, 10)] == [second.id, first.id]


@pytest.mark.parametrize("name", ["consolidate", "reflect"])
def test_llm_jobs_are_skipped_without_an_llm(mem: Memory, name: str) -> None:
    run = run_job(mem, name)
    assert (run.outcome, run.message, run.counts) == ("skipped", no_llm(), {})
    assert run.message == ("skipped: no LLM configured (set [llm] provider in the config file "
                           "or CLAWMEM_LLM__PROVIDER; see docs/llm.md)")
    assert mem.store_backend.runs(mem.namespace, 5, job=name) == [run]


def test_run_all_runs_every_job_in_table_order(mem: Memory) -> None:
    runs = run_all(mem)
    assert [r.job for r in runs] == list(JOBS) == [
        "enrich", "consolidate", "decay", "reflect", "repair"]
    assert [r.outcome for r in runs][1:] == ["skipped", "ok", "skipped", "ok"]
    assert [r.job for r in mem.store_backend.runs(mem.namespace, 10)] == list(reversed(list(JOBS)))


def test_enrichment_without_an_llm_says_what_spacy_lacks(mem: Memory) -> None:
    # It said "spaCy is not installed" also where only spaCy's model was missing (issue 22).
    from clawmemory.entities.spacy_provider import spacy_missing

    missing = spacy_missing()
    if missing is None:
        pytest.skip("spaCy and its model are installed here: enrichment can run")
    run = run_job(mem, "enrich")
    assert run.outcome == "skipped"
    assert run.message == (f"skipped: no LLM configured and {missing[0]} (set [llm] provider in"
                           " the config file or CLAWMEM_LLM__PROVIDER; see docs/llm.md; or"
                           f" {missing[1]})")


def test_spacy_missing_tells_spacy_from_its_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from clawmemory.entities.spacy_provider import spacy_available, spacy_missing

    if importlib.util.find_spec("spacy") is None:
        pytest.skip("spaCy is not installed here")
    assert spacy_missing("clawmem_no_such_model") == (
        "spaCy is installed but its model clawmem_no_such_model is not",
        "python -m spacy download clawmem_no_such_model")
    assert not spacy_available("clawmem_no_such_model")
    monkeypatch.setitem(sys.modules, "spacy", None)  # what find_spec sees without spaCy
    assert spacy_missing("en_core_web_sm") == (
        "spaCy is not installed",
        "pip install 'clawmemory[spacy]' && python -m spacy download en_core_web_sm")


def with_llm(mem: Memory, server: ScriptedLLMServer, **llm: Any) -> Memory:
    """``mem`` with ``[llm]`` pointing at the scripted server, as a config file would."""
    cfg = mem.settings.model_copy(update={"llm": server.settings(**llm)})
    return Memory(mem.store_backend, cfg, namespace=mem.namespace, clock=mem.clock)


def test_enrichment_uses_the_configured_llm_once_and_records_tokens(
    mem: Memory, clock: Clock, llm_server: ScriptedLLMServer
) -> None:
    llm_server.script([reply(json.dumps([{"text": "the quiet cartographer", "type": "person"}]),
                             usage=(120, 15))])
    mem = with_llm(mem, llm_server)
    rid = mem.store("we met the quiet cartographer at noon", kind="fact")
    mem.store("identity", kind="core")  # not an enrichment kind
    layer = mem.components.entity_layer()
    assert layer is not None
    assert layer[0].entities_of(mem.namespace, [rid])[rid] == []  # lower case: fast NER misses

    run = run_job(mem, "enrich")  # no context: the runner builds the LLM from the settings

    assert (run.outcome, run.counts) == ("ok", {"enriched": 1, "entity_links": 1, "llm_calls": 1,
                                                "prompt_tokens": 120, "completion_tokens": 15})
    assert run.message == ("enriched 1, entity_links 1, llm_calls 1, prompt_tokens 120, "
                           "completion_tokens 15")
    names = [e.canonical_name.lower() for e in layer[0].entities_of(mem.namespace, [rid])[rid]]
    assert names == ["the quiet cartographer"]
    assert mem.get(rid).metadata["enriched_at"] == clock.now
    assert "we met the quiet cartographer at noon" in json.dumps(llm_server.bodies[0])
    again = run_job(mem, "enrich")
    assert (again.outcome, again.counts) == ("ok", {"enriched": 0, "entity_links": 0})
    assert len(llm_server.requests) == 1
    assert mem.store_backend.runs(mem.namespace, 5, job="enrich")[1].counts == run.counts


def test_enrichment_batch_and_entity_limit_come_from_settings(
    mem: Memory, openai_server: ScriptedLLMServer
) -> None:
    openai_server.script([], then=reply("[]"))
    for i in range(4):
        mem.store(f"note {i}", kind="episode")
    small = with_llm(with_maintenance(mem, enrich_batch=3), openai_server)
    run = run_job(small, "enrich")
    assert (run.counts["enriched"], run.counts["llm_calls"]) == (3, 3)
    run = run_job(small, "enrich")
    assert (run.counts["enriched"], run.counts["llm_calls"]) == (1, 1)


def test_a_failing_llm_fails_enrichment_and_keeps_what_was_done(
    mem: Memory, openai_server: ScriptedLLMServer
) -> None:
    openai_server.script([reply("[]"), http_error(500, "model crashed")])
    first = mem.store("first note", kind="fact")
    second = mem.store("second note", kind="fact")
    run = run_job(with_llm(mem, openai_server, max_retries=0), "enrich")
    assert run.outcome == "failed"
    assert run.message.endswith("answered HTTP 500: model crashed (enriched 1 memories before "
                                "the failure)")
    assert run.counts == {"llm_calls": 1, "prompt_tokens": 11, "completion_tokens": 7,
                          "llm_failures": 1}
    assert "enriched_at" in mem.get(first).metadata
    assert "enriched_at" not in mem.get(second).metadata  # not marked: retried next night


def test_a_misconfigured_llm_fails_the_jobs_that_use_it(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = mem.settings.model_copy(update={"llm": LLMSettings(provider="openai")})
    broken = Memory(mem.store_backend, cfg, namespace=mem.namespace, clock=mem.clock)
    runs = {r.job: r for r in run_all(broken)}
    assert {j: r.outcome for j, r in runs.items()} == {
        "enrich": "failed", "consolidate": "failed", "decay": "ok", "reflect": "failed",
        "repair": "ok"}
    assert "set the environment variable OPENAI_API_KEY" in runs["consolidate"].message



# --- previews and enrichment, pinned (mutation survivors, docs/testing.md) -----------------------
def test_a_decay_preview_as_a_dict(mem: Memory, clock: Clock) -> None:
    # Pins JobPreview.to_dict: every key and value (what `clawmem maintain --dry-run --json`
    # prints).
    chat = mem.store("chat state", kind="conversation")
    clock.advance(8 * DAY)
    preview = preview_job(mem, "decay", JobContext(rng=random.Random(0)))
    size = preview.counts["live_bytes"]
    assert preview.to_dict() == {
        "namespace": mem.namespace, "job": "decay", "outcome": "ok",
        "counts": {"hygiene_archived": 1, "idle_archived": 0, "idle_survived": 0, "decayed": 0,
                   "invalidated": 0, "prune_archived": 0, "live_bytes": size},
        "message": "hygiene_archived 1" + (f", live_bytes {size}" if size else ""),
        "changes": [{"step": "hygiene", "action": "archive", "id": chat, "key": None,
                     "kind": "conversation", "content": "chat state",
                     "reason": "conversation memory unused for 8.0 days (hygiene_max_age_s:"
                               " 7.0 days)"}]}



@pytest.mark.parametrize(("name", "work"), [
    ("consolidate", "extract the facts of finished sessions"),
    ("reflect", "write the week's reflection from its facts and episodes")])
def test_an_llm_job_preview_is_skipped_and_says_why(
    mem: Memory, anthropic_server: ScriptedLLMServer, name: str, work: str
) -> None:
    # Pins the skips of an LLM job's preview: no LLM (with the fix, as a run says), or an LLM
    # (what a run would ask it; a preview never does), from the settings when no context is
    # given: it said "no LLM configured" with one configured (issue 22).
    alone = preview_job(mem, name)
    assert (alone.outcome, alone.counts, alone.message) == ("skipped", {}, no_llm())
    said = (f"skipped: not previewed: a run would ask the configured LLM (scripted-model) to"
            f" {work}; what it changes depends on the answers, so a preview does not call it")
    asked = preview_job(mem, name, JobContext(llm=anthropic_server.llm()))
    assert (asked.outcome, asked.message) == ("skipped", said)
    configured = preview_job(with_llm(mem, anthropic_server), name)
    assert (configured.outcome, configured.message) == ("skipped", said)
    bare = preview_job(mem, name, JobContext(llm=anthropic_server.llm(), steps={}))
    assert bare.message == f"skipped: no {name} step is installed for the configured LLM"
    assert anthropic_server.requests == []


def test_a_preview_with_a_misconfigured_llm_fails_as_a_run_would(mem: Memory) -> None:
    broken = mem.settings.model_copy(update={"llm": LLMSettings(
        provider="openai", base_url="http://127.0.0.1:9/v1")})  # no model named
    view = Memory(mem.store_backend, broken, namespace=mem.namespace, clock=mem.clock)
    previews = {p.job: p for p in preview_all(view)}
    run = run_job(view, "consolidate")
    assert (previews["consolidate"].outcome, previews["consolidate"].message) == (
        run.outcome, run.message) == ("failed", run.message)
    assert "[llm] model is not set" in run.message
    assert previews["decay"].outcome == "ok"  # the other jobs are still previewed


def test_a_repair_preview_counts_the_queued_vectors(mem: Memory) -> None:
    # Pins the repair preview's one count, by name.
    preview = preview_job(mem, "repair")
    assert (preview.outcome, preview.counts, preview.message) == (
        "ok", {"vectors_queued": 0}, "nothing to do")


def test_an_enrich_preview_lists_the_memories_with_at_most_the_entity_limit(
    mem: Memory, openai_server: ScriptedLLMServer
) -> None:
    # Pins what an enrich preview shows (it asks the LLM nothing): the memories of enrichment
    # kinds with at most enrich_max_entities entity links (0 here: equal to the limit counts),
    # oldest first, each with its reason.
    strict = with_llm(with_maintenance(mem, enrich_max_entities=0), openai_server)
    bare = strict.store("we met at noon", kind="fact")
    strict.store("Alice Cooper plays the guitar", kind="fact")  # one entity link: over it
    strict.store("identity", kind="core")  # not an enrichment kind
    turn = strict.store("see you tomorrow", kind="episode")
    ctx = JobContext.from_settings(strict.settings)
    preview = preview_job(strict, "enrich", ctx)
    ctx.close()
    assert (preview.outcome, preview.counts, preview.message) == ("ok", {"enriched": 2},
                                                                  "enriched 2")
    why = "at most 0 entity links and never enriched: entities extracted again"
    assert [(c.step, c.action, c.record.id, c.reason) for c in preview.changes] == [
        ("enrich", "enrich", bare, why), ("enrich", "enrich", turn, why)]
    assert openai_server.requests == []


def test_enrichment_counts_the_entity_links_of_every_memory(
    mem: Memory, openai_server: ScriptedLLMServer
) -> None:
    # Pins entity_links as the sum over the memories enriched in the run.
    openai_server.script([
        reply(json.dumps([{"text": "the quiet cartographer", "type": "person"}])),
        reply(json.dumps([{"text": "the old lighthouse keeper", "type": "person"}]))])
    mem.store("we met the quiet cartographer at noon", kind="fact")
    mem.store("the old lighthouse keeper waved", kind="fact")
    run = run_job(with_llm(mem, openai_server), "enrich")
    assert (run.outcome, run.counts["enriched"], run.counts["entity_links"]) == ("ok", 2, 2)


def test_enrichment_with_entities_off_is_skipped_and_says_why(mem: Memory) -> None:
    # Pins the skip message when the store keeps no entities.
    cfg = {**mem.settings.model_dump(), "entities": {"enabled": False}}
    off = Memory(mem.store_backend, Settings.model_validate(cfg), clock=mem.clock)
    run = run_job(off, "enrich")
    assert (run.outcome, run.message) == ("skipped", "skipped: entities are off for this store")

# --- the LLM hook and failures -------------------------------------------------------------------
def test_an_llm_step_plugs_into_its_job(mem: Memory, anthropic_server: ScriptedLLMServer) -> None:
    anthropic_server.script([reply("HELLO", usage=(5, 1)), reply("AGAIN", usage=(6, 2))])
    seen: list[str] = []

    def consolidate(m: Memory, ctx: JobContext) -> dict[str, int]:
        assert ctx.llm is not None
        for prompt in ("hello", "again"):
            seen.append(ctx.llm.chat([Message("user", prompt)]).text)
        return {"sessions": 2, "facts": 7}

    llm = JobContext(llm=anthropic_server.llm(), steps={"consolidate": consolidate})
    run = run_job(mem, "consolidate", llm)
    assert (run.outcome, run.counts) == ("ok", {"sessions": 2, "facts": 7, "llm_calls": 2,
                                                "prompt_tokens": 11, "completion_tokens": 3})
    assert seen == ["HELLO", "AGAIN"]
    run = run_job(mem, "reflect", llm)  # an LLM but no reflection step installed yet
    assert run.outcome == "skipped" and "no reflect step" in run.message



def test_an_llm_step_works_on_the_memory_of_the_run(
    mem: Memory, anthropic_server: ScriptedLLMServer
) -> None:
    # Pins that the step is given the run's Memory (and namespace), not another one.
    mem.with_namespace("other").store("a fact elsewhere", kind="fact")
    for n in range(2):
        mem.store(f"fact {n}", kind="fact")
    ctx = JobContext(llm=anthropic_server.llm(),
                     steps={"reflect": lambda m, c: {"memories": m.count()}})
    run = run_job(mem, "reflect", ctx)
    assert (run.outcome, run.counts["memories"]) == ("ok", 2)

def test_a_failing_job_is_recorded_and_a_bug_is_raised(
    mem: Memory, openai_server: ScriptedLLMServer
) -> None:
    def broken(m: Memory, ctx: JobContext) -> dict[str, int]:
        raise StorageError("disk on fire")

    def buggy(m: Memory, ctx: JobContext) -> dict[str, int]:
        raise ZeroDivisionError("oops")

    ctx = JobContext(llm=openai_server.llm(), steps={"consolidate": broken, "reflect": buggy})
    run = run_job(mem, "consolidate", ctx)
    assert (run.outcome, run.message) == ("failed", "disk on fire")
    with pytest.raises(ZeroDivisionError):
        run_job(mem, "reflect", ctx)
    (recorded, _) = mem.store_backend.runs(mem.namespace, 5)
    assert (recorded.job, recorded.outcome) == ("reflect", "failed")
    assert "ZeroDivisionError: oops" in recorded.message
    assert openai_server.requests == []


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_a_context_whose_llm_cannot_be_built_keeps_the_callers_fields(mem: Memory) -> None:
    # a local server without a model name: the steps learn why, the caller's seed still holds
    llm = LLMSettings(provider="openai", base_url="http://127.0.0.1:9/v1")
    rng = random.Random(7)
    ctx = JobContext.from_settings(mem.settings.model_copy(update={"llm": llm}), rng=rng)
    assert (ctx.llm, ctx.rng) == (None, rng)
    assert ctx.llm_problem is not None
    assert ctx.llm_problem.startswith("[llm] model is not set: name the model "
                                      "http://127.0.0.1:9/v1 serves")


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_an_unknown_job_names_the_jobs_there_are(mem: Memory) -> None:
    with pytest.raises(InvalidInputError) as refused:
        run_job(mem, "vacuum")
    assert str(refused.value) == ("unknown job 'vacuum' (expected one of: enrich, consolidate, "
                                  "decay, reflect, repair)")


def test_unknown_job_is_refused(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="unknown job 'vacuum'"):
        run_job(mem, "vacuum")
    assert mem.store_backend.runs(mem.namespace, 5) == []


def test_runs_are_per_namespace_and_newest_first(mem: Memory, clock: Clock) -> None:
    other = mem.with_namespace("other")
    a = run_job(mem, "reflect")
    clock.advance(60)
    b = run_job(mem, "decay")
    c = run_job(other, "decay")
    assert mem.store_backend.runs(mem.namespace, 10) == [b, a]
    assert mem.store_backend.runs(mem.namespace, 1) == [b]
    assert mem.store_backend.runs("other", 10, job="decay") == [c]
    other.forget_namespace()
    assert mem.store_backend.runs("other", 10) == []


@pytest.mark.parametrize("backend", backend_params("sqlite", "json"), indirect=True)
def test_runs_survive_reopening_the_store(
    mem: Memory, open_store: Callable[[], Store], settings: Settings, clock: Clock
) -> None:
    runs = run_all(mem)
    mem.store_backend.close()
    again = Memory(open_store(), settings, clock=clock)
    assert again.store_backend.runs(again.namespace, 10) == list(reversed(runs))
    later = run_job(again, "decay")
    assert later.id > max(r.id for r in runs)


# --- scheduling ----------------------------------------------------------------------------------
def utc(mem: Memory, **changes: Any) -> Memory:
    return with_maintenance(mem, timezone="UTC", **changes)


def test_scheduler_registers_the_specified_cron_triggers(mem: Memory) -> None:
    scheduler = Scheduler(utc(mem))
    assert [(j.name, j.cron) for j in scheduler.jobs()] == [
        ("enrich", "0 2 * * *"), ("consolidate", "0 3 * * *"), ("decay", "0 4 * * *"),
        ("reflect", "0 3 * * 0"), ("repair", "15 * * * *")]
    assert all(isinstance(scheduler.trigger(name), CronTrigger) for name in scheduler.crons)
    saturday = datetime(2024, 1, 6, 5, 0, tzinfo=UTC)
    nxt = {n: scheduler.trigger(n).get_next_fire_time(None, saturday) for n in scheduler.crons}
    assert nxt == {
        "enrich": datetime(2024, 1, 7, 2, 0, tzinfo=UTC),
        "consolidate": datetime(2024, 1, 7, 3, 0, tzinfo=UTC),
        "decay": datetime(2024, 1, 7, 4, 0, tzinfo=UTC),
        "reflect": datetime(2024, 1, 7, 3, 0, tzinfo=UTC),  # Sunday
        "repair": datetime(2024, 1, 6, 5, 15, tzinfo=UTC),  # hourly
    }
    monday = datetime(2024, 1, 8, 5, 0, tzinfo=UTC)
    assert scheduler.trigger("reflect").get_next_fire_time(None, monday) == datetime(
        2024, 1, 14, 3, 0, tzinfo=UTC)


def test_scheduler_crons_come_from_settings(mem: Memory) -> None:
    scheduler = Scheduler(utc(mem, decay="30 5 * * 1-5", reflect=""))
    assert scheduler.crons == {"enrich": "0 2 * * *", "consolidate": "0 3 * * *",
                               "decay": "30 5 * * 1-5", "repair": "15 * * * *"}
    friday = datetime(2024, 1, 5, 6, 0, tzinfo=UTC)
    assert scheduler.trigger("decay").get_next_fire_time(None, friday) == datetime(
        2024, 1, 8, 5, 30, tzinfo=UTC)
    with pytest.raises(InvalidInputError):
        scheduler.trigger("reflect")
    assert Scheduler(utc(mem, enabled=False)).jobs() == []


@pytest.mark.parametrize(("weekdays", "fires_on"), [
    ("0", ["sun"]), ("7", ["sun"]), ("1-5", ["mon", "tue", "wed", "thu", "fri"]),
    ("*/2", ["sun", "tue", "thu", "sat"]), ("sat,sun", ["sun", "sat"]),
    ("5-7", ["sun", "fri", "sat"]), ("1/3", ["mon", "thu"]),
])
def test_crontab_weekdays_count_from_sunday(weekdays: str, fires_on: list[str]) -> None:
    # APScheduler 3's own from_crontab counts from Monday: "0" would be a Monday.
    trigger = crontab_trigger(f"0 3 * * {weekdays}", UTC)
    start = datetime(2024, 1, 6, 12, 0, tzinfo=UTC)  # a Saturday
    days, when = [], start
    for _ in range(len(fires_on)):
        when = trigger.get_next_fire_time(None, when + timedelta(seconds=1))
        days.append(when.strftime("%a").lower())
    names = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    assert sorted(days, key=names.index) == fires_on


@pytest.mark.parametrize("bad", ["0 3 * *", "0 3 * * 8", "0 3 * * 5-1", "0 3 * * funday",
                                 "0 3 * * */0"])
def test_bad_crontabs_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        crontab_trigger(bad, UTC)



@pytest.mark.parametrize(("bad", "why"), [
    ("0 3 * *", "expected 5 fields (minute hour day month weekday), got 4"),
    ("0 3 * * 8", "bad weekday '8'"), ("0 3 * * funday", "bad weekday 'funday'"),
    ("0 3 * * 5-1", "bad weekday field '5-1'"), ("0 3 * * */0", "bad weekday field '*/0'"),
    ("0 3 * * */x", "bad weekday field '*/x'"),
])
def test_a_bad_crontab_says_what_is_wrong(bad: str, why: str) -> None:
    # Pins the message of each refusal (the config error names the setting and adds it).
    with pytest.raises(ValueError) as caught:
        crontab_trigger(bad, UTC)
    assert str(caught.value) == why


def test_a_star_in_a_weekday_list_is_every_day() -> None:
    # Pins "*" as one part of a list: every weekday, not only Sunday.
    trigger = crontab_trigger("0 3 * * 1,*", UTC)
    start = datetime(2024, 1, 6, 12, 0, tzinfo=UTC)  # a Saturday
    assert trigger.get_next_fire_time(None, start) == datetime(2024, 1, 7, 3, 0, tzinfo=UTC)
    sunday = datetime(2024, 1, 7, 12, 0, tzinfo=UTC)
    assert trigger.get_next_fire_time(None, sunday) == datetime(2024, 1, 8, 3, 0, tzinfo=UTC)
    monday = datetime(2024, 1, 8, 12, 0, tzinfo=UTC)
    assert trigger.get_next_fire_time(None, monday) == datetime(2024, 1, 9, 3, 0, tzinfo=UTC)


def test_a_crontab_keeps_its_day_of_month_month_and_time_zone() -> None:
    # Pins that every field reaches the trigger: the 15th of June, at 03:00 in Tokyo.
    tokyo = ZoneInfo("Asia/Tokyo")
    trigger = crontab_trigger("0 3 15 6 *", tokyo)
    start = datetime(2024, 1, 6, 12, 0, tzinfo=UTC)
    assert trigger.get_next_fire_time(None, start) == datetime(2024, 6, 15, 3, 0, tzinfo=tokyo)


def test_the_scheduler_fires_in_its_time_zone(mem: Memory) -> None:
    # Pins maintenance.timezone reaching each job's trigger.
    scheduler = Scheduler(with_maintenance(mem, timezone="Asia/Tokyo"))
    start = datetime(2024, 1, 6, 12, 0, tzinfo=UTC)  # 21:00 in Tokyo
    assert scheduler.trigger("decay").get_next_fire_time(None, start) == datetime(
        2024, 1, 7, 4, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
    with pytest.raises(InvalidInputError) as caught:
        Scheduler(utc(mem, reflect="")).trigger("reflect")
    assert str(caught.value) == "job 'reflect' is not scheduled"


def test_a_missing_apscheduler_is_a_config_error_with_the_install_hint(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pins the hint (APScheduler is the [scheduler] extra).
    monkeypatch.setitem(sys.modules, "apscheduler.schedulers.background", None)
    with pytest.raises(ConfigError) as caught:
        Scheduler(mem)
    assert str(caught.value) == (
        "scheduled maintenance needs APScheduler 3: pip install 'clawmemory[scheduler]'")

def test_environment_configures_the_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAWMEM_MAINTENANCE__DECAY", "15 1 * * *")
    monkeypatch.setenv("CLAWMEM_MAINTENANCE__ENABLED", "false")
    cfg = Settings()
    assert (cfg.maintenance.decay, cfg.maintenance.enabled) == ("15 1 * * *", False)


@pytest.mark.parametrize(("field", "value"), [("decay", "61 4 * * *"), ("enrich", "nonsense"),
                                              ("timezone", "Mars/Olympus_Mons")])
def test_a_bad_schedule_is_a_config_error(mem: Memory, field: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"maintenance.{field}"):
        Scheduler(with_maintenance(mem, **{field: value}))


def test_a_firing_runs_the_job_in_every_namespace(mem: Memory, clock: Clock) -> None:
    for ns in ("alice", "bob"):
        mem.with_namespace(ns).store("chat state", kind="conversation")
    clock.advance(8 * DAY)
    runs = Scheduler(utc(mem)).fire("decay")
    assert [(r.namespace, r.counts["hygiene_archived"]) for r in runs] == [("alice", 1),
                                                                         ("bob", 1)]
    only = Scheduler(utc(mem), namespaces=["carol"]).fire("reflect")
    assert [(r.namespace, r.outcome) for r in only] == [("carol", "skipped")]


def test_the_scheduler_uses_the_configured_llm(
    mem: Memory, openai_server: ScriptedLLMServer
) -> None:
    openai_server.script([reply("[]", usage=(40, 2))])
    mem.store("a note for the night", kind="fact")
    scheduler = Scheduler(utc(with_llm(mem, openai_server)), namespaces=[mem.namespace])
    (run,) = scheduler.fire("enrich")
    assert (run.outcome, run.counts["enriched"], run.counts["prompt_tokens"]) == ("ok", 1, 40)
    scheduler.shutdown()



def test_the_scheduler_and_run_all_use_the_context_they_are_given(
    mem: Memory, anthropic_server: ScriptedLLMServer
) -> None:
    # Pins that a given JobContext (its LLM and steps) is used, not one built from the
    # settings (which configure no LLM here), and that a job raising in one namespace does not
    # stop the firing in the next ones.
    def reflect(m: Memory, c: JobContext) -> dict[str, int]:
        if m.namespace == "alice":
            raise RuntimeError("a bug in alice's reflection")
        return {"reflections": 1}

    ctx = JobContext(llm=anthropic_server.llm(), steps={"reflect": reflect})
    scheduler = Scheduler(utc(mem), namespaces=["alice", "bob", "carol"], ctx=ctx)
    runs = scheduler.fire("reflect")
    assert [(r.namespace, r.outcome, r.counts["reflections"]) for r in runs] == [
        ("bob", "ok", 1), ("carol", "ok", 1)]
    by_job = {r.job: r.outcome for r in run_all(mem.with_namespace("bob"), ctx)}
    assert by_job["reflect"] == "ok"
    scheduler.shutdown()
    ctx.close()


def test_run_forever_runs_until_told_to_stop(mem: Memory) -> None:
    # Pins run_forever's loop: it keeps the schedule until the event is set, then shuts down.
    scheduler = Scheduler(utc(mem))
    stop = threading.Event()
    runner = threading.Thread(target=scheduler.run_forever, args=(stop,))
    runner.start()
    runner.join(1.5)
    alive = runner.is_alive()
    stop.set()
    runner.join(5)
    assert (alive, runner.is_alive()) == (True, False)

def test_scheduler_starts_and_stops(mem: Memory) -> None:
    scheduler = Scheduler(utc(mem))
    scheduler.start()
    try:
        assert all(j.next_run is not None for j in scheduler.jobs())
    finally:
        scheduler.shutdown()
    scheduler.shutdown()  # twice is harmless


class _Timed(Scheduler):
    """A scheduler whose jobs take 1 s and record when each ran."""

    def __init__(self, mem: Memory) -> None:
        self.spans: list[tuple[str, float, float]] = []
        super().__init__(mem, namespaces=[mem.namespace])

    def fire(self, name: str) -> list[Any]:
        start = time.monotonic()
        time.sleep(1.0)  # long past the 0.1 s after which decay is due again
        self.spans.append((name, start, time.monotonic()))
        return []


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_firings_run_one_at_a_time_and_a_running_job_is_not_started_again(
    mem: Memory,
) -> None:
    # Jobs share one worker: two jobs due together run one after the other. A job due again
    # while it still runs (a slow run past its next firing) is dropped, not run twice.
    scheduler = _Timed(utc(mem))
    scheduler.start()
    try:
        now = datetime.now(UTC)
        scheduler._scheduler.modify_job("decay", next_run_time=now)
        scheduler._scheduler.modify_job("repair", next_run_time=now)
        time.sleep(0.1)
        scheduler._scheduler.modify_job("decay", next_run_time=datetime.now(UTC))
        deadline = time.monotonic() + 10
        while len(scheduler.spans) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.2)  # room for a third run, if the second firing of decay were kept
    finally:
        scheduler.shutdown()
    assert sorted(name for name, _, _ in scheduler.spans) == ["decay", "repair"]
    (_, _, first_end), (_, second_start, _) = sorted(scheduler.spans, key=lambda s: s[1])
    assert second_start >= first_end


# --- the CLI, as a real process ------------------------------------------------------------------
# cli.py's main() with the maintenance commands registered (register() replaces commands of the
# same names, so this works whether or not cli.py registers them itself).
ENTRY = (
    "import sys\n"
    "from clawmemory.interfaces.cli import main\n"
    "from clawmemory.interfaces.cli.app import app\n"
    "from clawmemory.interfaces.cli.lifecycle import register\n"
    "register(app)\n"
    "sys.exit(main())\n"
)


# No embedding model: loading one costs seconds per process and maintenance never embeds.
QUICK = {"CLAWMEM_EMBEDDER__PROVIDER": "none"}


def clawmem(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **QUICK, **(env or {})}, check=False)


def test_cli_maintain_uses_the_llm_from_the_environment(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    db = str(tmp_path / "cli.db")
    assert clawmem("--db", db, "add", "we met the quiet cartographer", "--kind", "fact"
                   ).returncode == 0
    llm_server.script([reply('[{"text": "quiet cartographer", "type": "person"}]',
                             usage=(90, 9))])
    done = clawmem("--db", db, "--json", "maintain", "enrich", env=llm_server.env())
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert (run["outcome"], run["counts"]) == ("ok", {
        "enriched": 1, "entity_links": 1, "llm_calls": 1, "prompt_tokens": 90,
        "completion_tokens": 9})
    assert llm_server.bodies[0]["model"] == "scripted-model"


def test_cli_dry_run_uses_the_llm_from_the_environment(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    # `maintain --dry-run` said "no LLM configured" with one configured (issue 22): the preview
    # now reads [llm] as a run does, says what a run would ask it, and asks it nothing.
    db = str(tmp_path / "cli.db")
    assert clawmem("--db", db, "add", "we met the quiet cartographer", "--kind", "fact"
                   ).returncode == 0
    done = clawmem("--db", db, "--json", "maintain", "--dry-run", env=llm_server.env())
    assert done.returncode == 0, done.stderr
    previews = {p["job"]: p for p in json.loads(done.stdout)["previews"]}
    assert "no LLM configured" not in done.stdout
    assert (previews["enrich"]["outcome"], previews["enrich"]["counts"]) == (
        "ok", {"enriched": 1})  # the LLM is the accurate NER here
    assert previews["consolidate"]["message"].startswith(
        "skipped: not previewed: a run would ask the configured LLM (scripted-model) to"
        " extract the facts of finished sessions")
    table = clawmem("--db", db, "maintain", "--dry-run", env=llm_server.env())
    assert "no LLM configured" not in table.stdout and "scripted-model" in table.stdout
    assert llm_server.requests == []


def test_the_inspector_preview_uses_the_configured_llm(
    mem: Memory, openai_server: ScriptedLLMServer
) -> None:
    # The inspector's "Preview" button takes the same path as `maintain --dry-run`.
    import httpx

    from rest_server import serving

    configured = with_llm(mem, openai_server)
    configured.store("we met the quiet cartographer", kind="fact")
    with serving(configured) as url:
        page = httpx.post(f"{url}/maintenance", content="job=all&dry_run=1",
                          headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert page.status_code == 200
    assert "no LLM configured" not in page.text
    assert "a run would ask the configured LLM (scripted-model)" in page.text
    assert openai_server.requests == []


def test_cli_a_failing_provider_is_one_line_and_exit_3(
    tmp_path: Path, openai_server: ScriptedLLMServer
) -> None:
    db = str(tmp_path / "cli.db")
    assert clawmem("--db", db, "add", "a note", "--kind", "fact").returncode == 0
    openai_server.script([], then=http_error(503, "overloaded"))
    env = openai_server.env(CLAWMEM_LLM__MAX_RETRIES="1")
    shown = clawmem("--db", db, "maintain", "enrich", env=env)
    assert shown.returncode == 3 and "failed" in shown.stdout
    assert "Traceback" not in shown.stdout + shown.stderr
    done = clawmem("--db", db, "--json", "maintain", "enrich", env=env)
    (run,) = json.loads(done.stdout)["runs"]
    assert (done.returncode, run["outcome"]) == (3, "failed")
    assert run["message"] == (f"openai LLM at {openai_server.url}/chat/completions answered "
                              "HTTP 503 after 2 attempts: overloaded (enriched 0 memories "
                              "before the failure)")
    assert len(openai_server.requests) == 4
    unset = clawmem("--db", db, "--json", "maintain", "reflect",
                    env={"CLAWMEM_LLM__PROVIDER": "anthropic", "ANTHROPIC_API_KEY": ""})
    (run,) = json.loads(unset.stdout)["runs"]
    assert (unset.returncode, run["outcome"]) == (3, "failed")
    assert "set the environment variable ANTHROPIC_API_KEY" in run["message"]


def test_cli_maintain_decay_json(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    assert clawmem("--db", db, "add", "chat state", "--kind", "conversation").returncode == 0
    done = clawmem("--db", db, "--json", "maintain", "decay")
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert (run["job"], run["outcome"], run["counts"]["hygiene_archived"]) == ("decay", "ok", 0)
    listed = clawmem("--db", db, "--json", "runs")
    assert [r["id"] for r in json.loads(listed.stdout)["runs"]] == [run["id"]]


def test_cli_maintain_all_and_the_human_table(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    done = clawmem("--db", db, "maintain")
    assert done.returncode == 0, done.stderr
    for job in JOBS:
        assert job in done.stdout
    assert "skipped: no LLM" in done.stdout
    shown = clawmem("--db", db, "runs", "--job", "decay")
    assert "decay" in shown.stdout and "reflect" not in shown.stdout


def test_cli_maintain_every_namespace(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    for ns in ("alice", "bob"):
        assert clawmem("--db", db, "-n", ns, "add", "note").returncode == 0
    done = clawmem("--db", db, "--json", "maintain", "reflect", "--all-namespaces")
    assert [r["namespace"] for r in json.loads(done.stdout)["runs"]] == ["alice", "bob"]


def test_cli_unknown_job_is_a_usage_error(tmp_path: Path) -> None:
    done = clawmem("--db", str(tmp_path / "cli.db"), "maintain", "vacuum")
    assert done.returncode == 2
    assert done.stderr.startswith("error: unknown job 'vacuum'")


def test_cli_daemon_prints_the_schedule_and_stops_on_sigterm(tmp_path: Path) -> None:
    env = {**os.environ, **QUICK, "CLAWMEM_MAINTENANCE__TIMEZONE": "UTC",
           "CLAWMEM_MAINTENANCE__REFLECT": "0 6 * * 6"}
    proc = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "--db", str(tmp_path / "d.db"), "--json", "daemon"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        lines = []
        while True:  # the schedule is one indented JSON document, then the daemon waits
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "daemon exited"
            lines.append(line)
            if line.rstrip() == "}":
                break
        schedule = json.loads("".join(lines))
        assert {j["job"]: j["cron"] for j in schedule["schedule"]} == {
            "enrich": "0 2 * * *", "consolidate": "0 3 * * *", "decay": "0 4 * * *",
            "reflect": "0 6 * * 6", "repair": "15 * * * *"}
        assert all(j["next_run"].endswith("+00:00") for j in schedule["schedule"])
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
