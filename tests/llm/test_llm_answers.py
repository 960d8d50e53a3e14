"""What comes back from a model: JSON parsed robustly (llm/parse.py) with one corrective turn,
token metering (llm/usage.py) and the 000 response cache (llm/cache.py), over real HTTP."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from clawmemory import LLMError
from clawmemory.llm import (
    CachedLLM,
    Message,
    MeteredLLM,
    ResponseCache,
    Usage,
    ask_json,
    extract_json,
    make_llm,
)
from clawmemory.llm.cache import CACHE_HIT, cache_key, fnv1a_64
from clawmemory.llm.prompts import JSON_CORRECTION
from conftest import Clock
from llm_servers import ScriptedLLMServer, http_error, text, tool_call

ASK = [Message("system", "Answer in JSON."), Message("user", "List two fruits.")]


# --- extract_json --------------------------------------------------------------------------------
@pytest.mark.parametrize(("answer", "expected"), [
    ('["apple", "pear"]', ["apple", "pear"]),
    ('```json\n["apple", "pear"]\n```', ["apple", "pear"]),
    ('Sure! Here they are:\n```\n{"fruits": ["apple"]}\n```\nAnything else?',
     {"fruits": ["apple"]}),
    ('Here: ["apple", "pear"] - those are common. [citation needed]', ["apple", "pear"]),
    ('I think [maybe] this: {"a": {"b": [1, 2]}} trailing }', {"a": {"b": [1, 2]}}),
    ('```json\n{"unclosed": "fence"}', {"unclosed": "fence"}),
    ('See [1] below.\n```json\n{"n": 1}\n```', {"n": 1}),  # the fenced value wins over prose
])
def test_extract_json_finds_the_value_around_prose_and_fences(answer: str, expected: Any) -> None:
    assert extract_json(answer) == expected


def test_extract_json_by_type_and_its_error() -> None:
    assert extract_json('{"wrapper": true} then ["x"]', expect=list) == ["x"]
    with pytest.raises(LLMError, match=r"^the note list holds no JSON array: 'no json \{here'$"):
        extract_json("no json {here", expect=list, what="the note list")
    with pytest.raises(LLMError, match="object or array"):
        extract_json("NONE")


# --- ask_json ------------------------------------------------------------------------------------
def test_ask_json_corrects_a_malformed_answer_once(llm_server: ScriptedLLMServer) -> None:
    llm_server.script([text("Apples and pears."), text('```json\n["apple", "pear"]\n```')])
    assert ask_json(llm_server.llm(), ASK, expect=list) == ["apple", "pear"]
    assert len(llm_server.requests) == 2
    correction = JSON_CORRECTION.format(
        problem="the model's answer holds no JSON array: 'Apples and pears.'")
    if llm_server.kind == "openai":
        assert llm_server.bodies[1]["messages"][2:] == [
            {"role": "assistant", "content": "Apples and pears."},
            {"role": "user", "content": correction}]
    else:
        assert llm_server.bodies[1]["messages"][1:] == [
            {"role": "assistant", "content": [{"type": "text", "text": "Apples and pears."}]},
            {"role": "user", "content": [{"type": "text", "text": correction}]}]
    assert [b["temperature"] for b in llm_server.bodies] == [0.0, 0.0]


def test_ask_json_raises_after_the_correction_fails(openai_server: ScriptedLLMServer) -> None:
    openai_server.script([text("nope"), text("still nope")])
    with pytest.raises(LLMError, match="the fruit list is not usable JSON after 2 tries: "
                                       "the fruit list holds no JSON"):
        ask_json(openai_server.llm(), ASK, what="the fruit list")
    assert len(openai_server.requests) == 2
    openai_server.script([text("nope")])
    with pytest.raises(LLMError, match="after 1 try"):
        ask_json(openai_server.llm(), ASK, corrections=0)
    assert len(openai_server.requests) == 3


def test_ask_json_shows_the_model_why_check_refused(openai_server: ScriptedLLMServer) -> None:
    def two_fruits(value: Any) -> list[str]:
        if not isinstance(value, list) or len(value) != 2:
            raise ValueError(f"expected 2 fruits, got {value!r}")
        return [str(v) for v in value]

    openai_server.script([text('["apple"]'), text('["apple", "fig"]')])
    assert ask_json(openai_server.llm(), ASK, check=two_fruits) == ["apple", "fig"]
    last = openai_server.bodies[1]["messages"][-1]["content"]
    assert last.startswith("Your previous answer could not be used: expected 2 fruits, got "
                           "['apple']\n")


def test_provider_failures_are_not_corrected(openai_server: ScriptedLLMServer) -> None:
    openai_server.script([http_error(500, "down"), text('["never"]')])
    with pytest.raises(LLMError, match="HTTP 500: down"):
        ask_json(openai_server.llm(max_retries=0), ASK)
    assert len(openai_server.requests) == 1


# --- metering ------------------------------------------------------------------------------------
def test_metered_llm_adds_up_usage_and_failures(llm_server: ScriptedLLMServer) -> None:
    llm_server.script([text("a", usage=(10, 2)), tool_call("t", {}, usage=(30, 4)),
                       http_error(400, "bad")])
    meter = MeteredLLM(llm_server.llm())
    assert meter.counts() == {}
    meter.chat(ASK)
    meter.chat(ASK)
    with pytest.raises(LLMError):
        meter.chat(ASK)
    assert meter.usage == Usage(40, 6) and meter.usage.total_tokens == 46
    assert meter.counts() == {"llm_calls": 2, "prompt_tokens": 40, "completion_tokens": 6,
                              "llm_failures": 1}


# --- the response cache --------------------------------------------------------------------------
def test_fnv1a_64_reference_values_and_separated_fields() -> None:
    assert fnv1a_64(b"") == 0xCBF29CE484222325
    assert fnv1a_64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a_64(b"foobar") == 0x85944171F73967E8
    assert cache_key("m", "ab", "c") != cache_key("m", "a", "bc")
    assert cache_key("m", "s", "u") == fnv1a_64(b"m\x00s\x00u")


def test_cached_llm_answers_a_repeated_call_without_the_model(
    llm_server: ScriptedLLMServer, tmp_path: Path,
) -> None:
    llm_server.script([text("fresh", usage=(9, 1)), text("other"), tool_call("t"),
                       tool_call("t")])
    cached = CachedLLM(llm_server.llm(), ResponseCache(tmp_path / "cache.json"))
    first = cached.chat(ASK)
    again = cached.chat(ASK)
    assert (first.text, first.usage) == ("fresh", Usage(9, 1))
    assert (again.text, again.usage, again.stop_reason) == ("fresh", Usage(), CACHE_HIT)
    assert cached.chat([ASK[0], Message("user", "Another question")]).text == "other"
    assert len(llm_server.requests) == 2
    convo = [*ASK, Message("assistant", "fresh"), Message("user", "more")]
    tool_answer = cached.chat(convo)  # a conversation: not the cache's key, always asked
    assert tool_answer.tool_calls and cached.chat(convo).tool_calls  # tool calls: not cached
    assert len(llm_server.requests) == 4


def test_cache_ttl_then_lru_eviction(tmp_path: Path) -> None:
    clock = Clock()
    cache = ResponseCache(tmp_path / "c.json", ttl_s=100, max_entries=2, clock=clock)
    cache.put("m", "s", "a", "A")
    clock.advance(10)
    cache.put("m", "s", "b", "B")
    clock.advance(10)
    assert cache.get("m", "s", "a") == "A"  # touched: b is now the least recently used
    cache.put("m", "s", "c", "C")
    assert (cache.get("m", "s", "a"), cache.get("m", "s", "b"), cache.get("m", "s", "c")) == (
        "A", None, "C")
    clock.advance(95)  # a is 115 s old, c 95 s
    assert cache.get("m", "s", "a") is None and cache.get("m", "s", "c") == "C"
    cache.put("m", "s", "d", "D")  # the TTL pass drops a before the LRU pass counts
    assert len(cache) == 2 and cache.get("m", "s", "c") == "C"
    assert cache.get("other-model", "s", "c") is None


def test_cache_is_persisted_atomically_and_privately(tmp_path: Path) -> None:
    path = tmp_path / "home" / "response_cache.json"
    cache = ResponseCache(path)
    cache.put("m", "sys", "hello", "héllo back")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["response_cache.json"]  # no temp left
    (row,) = json.loads(path.read_text(encoding="utf-8"))
    assert (row["key"], row["response"]) == (f"{cache_key('m', 'sys', 'hello'):016x}",
                                             "héllo back")
    assert ResponseCache(path).get("m", "sys", "hello") == "héllo back"
    path.write_text("{damaged", encoding="utf-8")
    assert len(ResponseCache(path)) == 0  # a damaged cache starts empty, it is not fatal


def test_make_llm_puts_the_cache_in_front_when_configured(
    openai_server: ScriptedLLMServer, tmp_path: Path,
) -> None:
    openai_server.script([text("once")])
    path = tmp_path / "rc.json"
    settings = openai_server.settings(response_cache=True, cache_path=path, cache_ttl_s=60,
                                      cache_max_entries=5)
    for _ in range(2):  # a fresh LLM each time: the second reads the first's file
        llm = make_llm(settings)
        assert isinstance(llm, CachedLLM) and llm.cache.max_entries == 5
        assert llm.chat(ASK).text == "once"
    assert len(openai_server.requests) == 1 and path.exists()
    assert not isinstance(make_llm(openai_server.settings()), CachedLLM)  # off by default (000)


def test_cache_takes_a_str_path_as_well_as_a_path(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # A str path crashed on the first put (str has no .stat); "~" is the user's home as in
    # every other path setting.
    ResponseCache(str(tmp_path / "c.json")).put("m", "sys", "hello", "hi")
    assert ResponseCache(tmp_path / "c.json").get("m", "sys", "hello") == "hi"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ResponseCache("~/c.json").get("m", "sys", "hello") == "hi"
