"""The LLM providers (llm/openai.py, llm/anthropic.py, llm/transport.py, llm/factory.py) over
real HTTP against the scripted servers: the exact wire payloads, tool-call round trips in both
formats, usage, retries and their limits, timeouts, malformed answers, keys and configuration."""

from __future__ import annotations

import socket
import ssl
import time
from pathlib import Path
from typing import Any

import pytest

from clawmemory import ConfigError, LLMError, load_settings
from clawmemory.config import LLMSettings
from clawmemory.llm import LLM, Completion, Message, ToolCall, Usage, make_llm
from clawmemory.llm.anthropic import AnthropicLLM
from clawmemory.llm.openai import OpenAILLM
from clawmemory.tls import tls_context
from llm_servers import (
    MODEL,
    ScriptedLLMServer,
    http_error,
    raw,
    slow,
    text,
    tool_call,
    tool_calls,
)

TOOLS = [{"name": "memory_store", "description": "Store a memory.",
          "parameters": {"type": "object", "properties": {"content": {"type": "string"}},
                         "required": ["content"]}}]
ASK = [Message("system", "You are terse."), Message("user", "Say hi.")]


# --- answers and the exact requests --------------------------------------------------------------
def test_openai_text_answer_and_the_exact_request(openai_server: ScriptedLLMServer) -> None:
    openai_server.script([text("hi", usage=(12, 3))])
    answer = openai_server.llm().chat(ASK, temperature=0.2, max_tokens=50)
    assert answer == Completion("hi", (), Usage(12, 3), MODEL, "stop")
    (request,) = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {"model": MODEL, "temperature": 0.2, "max_tokens": 50, "messages": [
        {"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hi."}]}
    assert "authorization" not in request.headers  # loopback, no key named: none sent


def test_anthropic_text_answer_and_the_exact_request(anthropic_server: ScriptedLLMServer) -> None:
    anthropic_server.script([text("hi", usage=(12, 3))])
    answer = anthropic_server.llm().chat([*ASK, Message("system", "Be kind.")],
                                            temperature=0.0)
    assert answer == Completion("hi", (), Usage(12, 3), MODEL, "end_turn")
    (request,) = anthropic_server.requests
    assert request.path == "/v1/messages"
    assert request.body == {
        "model": MODEL, "max_tokens": 1024, "temperature": 0.0,
        "system": "You are terse.\n\nBe kind.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hi."}]}]}
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "x-api-key" not in request.headers


def test_max_tokens_setting_caps_every_call_without_its_own(llm_server: ScriptedLLMServer) -> None:
    llm_server.script([text("a"), text("b")])
    llm = llm_server.llm(max_tokens=77)
    llm.chat(ASK)
    llm.chat(ASK, max_tokens=5)
    assert [b["max_tokens"] for b in llm_server.bodies] == [77, 5]


def _round_trip(llm: LLM) -> tuple[Completion, Completion]:
    """user -> model calls a tool -> tool result -> model answers."""
    first = llm.chat([Message("user", "remember: tea at 5")], tools=TOOLS)
    (call,) = first.tool_calls
    convo = [Message("user", "remember: tea at 5"), first.as_message(),
             Message("tool", "stored #7", tool_call_id=call.id, name=call.name)]
    return first, llm.chat(convo, tools=TOOLS)


def test_openai_tool_call_round_trip(openai_server: ScriptedLLMServer) -> None:
    openai_server.script([tool_call("memory_store", {"content": "tea at 5"}, id="call_1"),
                          text("Done.")])
    first, second = _round_trip(openai_server.llm())
    assert first.tool_calls == (ToolCall("call_1", "memory_store", {"content": "tea at 5"}),)
    assert (first.text, first.stop_reason, second.text) == ("", "tool_calls", "Done.")
    tools_sent = [{"type": "function", "function": TOOLS[0]}]
    assert openai_server.bodies[0]["tools"] == openai_server.bodies[1]["tools"] == tools_sent
    assert openai_server.bodies[1]["messages"] == [
        {"role": "user", "content": "remember: tea at 5"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "memory_store", "arguments": '{"content": "tea at 5"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "stored #7"}]


def test_anthropic_tool_call_round_trip(anthropic_server: ScriptedLLMServer) -> None:
    anthropic_server.script([tool_call("memory_store", {"content": "tea at 5"}, id="toolu_1",
                                       text="Storing."), text("Done.")])
    first, second = _round_trip(anthropic_server.llm())
    assert first.tool_calls == (ToolCall("toolu_1", "memory_store", {"content": "tea at 5"}),)
    assert (first.text, first.stop_reason, second.text) == ("Storing.", "tool_use", "Done.")
    assert anthropic_server.bodies[1]["tools"] == [{
        "name": "memory_store", "description": "Store a memory.",
        "input_schema": TOOLS[0]["parameters"]}]
    assert anthropic_server.bodies[1]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "remember: tea at 5"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Storing."},
            {"type": "tool_use", "id": "toolu_1", "name": "memory_store",
             "input": {"content": "tea at 5"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "stored #7"}]}]


def test_anthropic_merges_parallel_tool_results_into_one_user_turn(
    anthropic_server: ScriptedLLMServer,
) -> None:
    anthropic_server.script([tool_calls(("a", {"x": 1}, "t1"), ("b", {}, "t2")), text("ok")])
    llm = anthropic_server.llm()
    first = llm.chat([Message("user", "go")])
    assert [c.name for c in first.tool_calls] == ["a", "b"]
    llm.chat([Message("user", "go"), first.as_message(),
              Message("tool", "A", tool_call_id="t1"), Message("tool", "B", tool_call_id="t2"),
              Message("user", "and?")])
    assert anthropic_server.bodies[1]["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
        {"type": "text", "text": "and?"}]}


def test_broken_tool_arguments_are_an_error_naming_the_tool(
    openai_server: ScriptedLLMServer,
) -> None:
    openai_server.script([tool_call("memory_store", '{"content": "tea'),
                          tool_call("memory_store", 'Sure: {"content": "tea"} ok')])
    llm = openai_server.llm()
    with pytest.raises(LLMError, match="argument string of tool memory_store holds no JSON object"):
        llm.chat(ASK, tools=TOOLS)
    # lenient like every JSON answer: prose around a complete object is tolerated
    assert llm.chat(ASK, tools=TOOLS).tool_calls[0].arguments == {"content": "tea"}


# --- retries -------------------------------------------------------------------------------------
def test_5xx_is_retried_with_backoff_until_it_succeeds(llm_server: ScriptedLLMServer) -> None:
    llm_server.script([http_error(500), http_error(503), text("finally")])
    answer = llm_server.llm(max_retries=2).chat(ASK)
    assert answer.text == "finally" and len(llm_server.requests) == 3
    assert llm_server.bodies[0] == llm_server.bodies[2]  # the same request, repeated


def test_retries_are_bounded_and_the_error_says_why(llm_server: ScriptedLLMServer) -> None:
    llm_server.script([http_error(502, "upstream down")] * 5)
    with pytest.raises(LLMError) as err:
        llm_server.llm(max_retries=1).chat(ASK)
    assert len(llm_server.requests) == 2
    message = str(err.value)
    assert f"{llm_server.kind} LLM at http://127.0.0.1:{llm_server.port}/v1/" in message
    assert message.endswith("answered HTTP 502 after 2 attempts: upstream down")
    assert "\n" not in message


def test_429_honours_retry_after(llm_server: ScriptedLLMServer) -> None:
    llm_server.script([http_error(429, "slow down", headers={"retry-after-ms": "400"}),
                       http_error(429, "slow down", retry_after="0"), text("ok")])
    started = time.monotonic()
    assert llm_server.llm(max_retries=3, backoff_s=0.0).chat(ASK).text == "ok"
    assert time.monotonic() - started >= 0.4  # backoff is 0: only the header made it wait
    assert len(llm_server.requests) == 3


def test_a_retry_after_beyond_the_limit_fails_at_once(llm_server: ScriptedLLMServer) -> None:
    llm_server.script([http_error(429, "quota", retry_after="3600")])
    with pytest.raises(LLMError, match="HTTP 429 and asks to retry after 3600 s: quota"):
        llm_server.llm(max_retries=5).chat(ASK)
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize(("status", "message"), [(400, "bad request: unknown field"),
                                                 (401, "invalid x-api-key"),
                                                 (404, "model not found")])
def test_4xx_is_never_retried(llm_server: ScriptedLLMServer, status: int, message: str) -> None:
    llm_server.script([http_error(status, message), text("never reached")])
    with pytest.raises(LLMError) as err:
        llm_server.llm(max_retries=3).chat(ASK)
    assert str(err.value).endswith(f"answered HTTP {status}: {message}")
    assert len(llm_server.requests) == 1


def test_a_timeout_is_an_llm_error_and_not_retried(llm_server: ScriptedLLMServer) -> None:
    llm_server.script([slow(3.0)], then=text("fast"))
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"timed out after 0.3 s \(ReadTimeout\)"):
        llm_server.llm(timeout_s=0.3, max_retries=3).chat(ASK)
    assert time.monotonic() - started < 2.5
    assert len(llm_server.requests) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_unreachable_server_is_retried_then_reported(provider: str) -> None:
    port = _closed_port()
    llm = make_llm(LLMSettings(provider=provider, base_url=f"http://127.0.0.1:{port}/v1",
                               model="m", max_retries=2, backoff_s=0.001))
    assert llm is not None
    with pytest.raises(LLMError, match=rf"127.0.0.1:{port}/v1/.* is unreachable after 3 attempts"):
        llm.chat(ASK)


# --- malformed answers ---------------------------------------------------------------------------
@pytest.mark.parametrize(("body", "expected"), [
    ("{not json", "answered HTTP 200 with malformed JSON: '{not json'"),
    ("[1, 2]", "answered with"),
    ('{"object": "list"}', "answered with"),
    ('{"error": {"message": "backend exploded"}}', "answered with an error: backend exploded"),
])
def test_a_malformed_body_is_an_error_never_an_empty_answer(
    llm_server: ScriptedLLMServer, body: str, expected: str,
) -> None:
    llm_server.script([raw(body)])
    with pytest.raises(LLMError, match=expected.replace("[", r"\[").replace("{", r"\{")):
        llm_server.llm().chat(ASK)
    assert len(llm_server.requests) == 1


def test_openai_content_parts_and_missing_usage(openai_server: ScriptedLLMServer) -> None:
    openai_server.script([raw('{"choices": [{"message": {"content": [{"type": "text", '
                              '"text": "a"}, {"type": "text", "text": "b"}]}}]}')])
    assert openai_server.llm().chat(ASK) == Completion("ab", (), Usage(0, 0), MODEL, "")


def test_a_wrong_base_url_names_the_status(openai_server: ScriptedLLMServer) -> None:
    llm = make_llm(openai_server.settings(base_url=openai_server.url.removesuffix("/v1")))
    assert llm is not None
    with pytest.raises(LLMError, match="HTTP 404: no route /chat/completions"):
        llm.chat(ASK)


# --- keys ----------------------------------------------------------------------------------------
def test_the_key_comes_from_the_named_variable_and_never_shows(
    llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("MY_LLM_KEY", secret)
    llm_server.script([text("ok"), http_error(401, f"key {secret} revoked")])
    llm = llm_server.llm(api_key_env="MY_LLM_KEY", max_retries=0)
    llm.chat(ASK)
    headers = llm_server.requests[0].headers
    if llm_server.kind == "openai":
        assert headers["authorization"] == f"Bearer {secret}"
    else:
        assert headers["x-api-key"] == secret and "authorization" not in headers
    with pytest.raises(LLMError) as err:
        llm.chat(ASK)
    assert secret not in str(err.value) and "key *** revoked" in str(err.value)
    assert secret not in repr(llm)


def test_a_default_key_is_not_sent_to_another_server(
    llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-for-openai-only")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-for-anthropic-only")
    llm_server.script([text("ok")])
    llm_server.llm().chat(ASK)
    headers = llm_server.requests[0].headers
    assert "authorization" not in headers and "x-api-key" not in headers


def test_loopback_needs_no_key_even_when_a_variable_is_named(
    openai_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("UNSET_KEY_VAR", raising=False)
    openai_server.script([text("ok")])
    assert openai_server.llm(api_key_env="UNSET_KEY_VAR").chat(ASK).text == "ok"
    localhost = openai_server.settings(base_url=openai_server.url.replace("127.0.0.1",
                                                                          "localhost"))
    assert make_llm(localhost) is not None


# --- configuration -------------------------------------------------------------------------------
def test_no_provider_means_no_llm() -> None:
    assert make_llm(LLMSettings()) is None
    assert make_llm(load_settings().llm) is None


def test_official_apis_need_their_key_and_say_which(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="set the environment variable OPENAI_API_KEY"):
        make_llm(LLMSettings(provider="openai"))
    with pytest.raises(ConfigError, match="set the environment variable ANTHROPIC_API_KEY"):
        make_llm(LLMSettings(provider="anthropic"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    llm = make_llm(LLMSettings(provider="openai"))  # nothing contacted: only built
    assert isinstance(llm, OpenAILLM) and llm.model == "gpt-4o-mini"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    built = make_llm(LLMSettings(provider="anthropic"))
    assert isinstance(built, AnthropicLLM) and built.model == "claude-3-5-haiku-latest"


def test_misconfigurations_are_config_errors_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("REMOTE_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"model is not set.*CLAWMEM_LLM__MODEL"):
        make_llm(LLMSettings(provider="openai", base_url="http://localhost:11434/v1"))
    with pytest.raises(ConfigError, match="not an http"):
        make_llm(LLMSettings(provider="openai", base_url="localhost:11434", model="m"))
    with pytest.raises(ConfigError, match="set the environment variable REMOTE_KEY"):
        make_llm(LLMSettings(provider="openai", base_url="https://llm.example.com/v1",
                             model="m", api_key_env="REMOTE_KEY"))
    # a remote server with no key named gets none (it answers 401 if it wanted one)
    assert make_llm(LLMSettings(provider="openai", base_url="https://llm.example.com/v1",
                                model="m")) is not None


def test_llm_settings_from_environment_and_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[llm]\nprovider = "anthropic"\nmodel = "from-file"\ntimeout_s = 9\n'
                      "response_cache = true\n", encoding="utf-8")
    monkeypatch.setenv("CLAWMEM_CONFIG", str(config))
    from_file = load_settings().llm
    assert (from_file.provider, from_file.model, from_file.timeout_s,
            from_file.response_cache) == ("anthropic", "from-file", 9.0, True)
    monkeypatch.setenv("CLAWMEM_LLM__PROVIDER", "OpenAI")
    monkeypatch.setenv("CLAWMEM_LLM__BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("CLAWMEM_LLM__MODEL", "qwen2.5")
    monkeypatch.setenv("CLAWMEM_LLM__API_KEY_ENV", "VLLM_KEY")
    llm = load_settings().llm
    assert (llm.provider, llm.base_url, llm.model, llm.api_key_env, llm.timeout_s) == (
        "openai", "http://127.0.0.1:8080/v1", "qwen2.5", "VLLM_KEY", 9.0)
    monkeypatch.setenv("CLAWMEM_LLM__PROVIDER", "gemini")
    with pytest.raises(ConfigError, match=r"invalid setting llm\.provider"):
        load_settings()
    monkeypatch.setenv("CLAWMEM_LLM__PROVIDER", "openai")
    monkeypatch.setenv("CLAWMEM_LLM__API_KEY_ENV", "sk-the-key-itself")
    with pytest.raises(ConfigError, match=r"invalid setting llm\.api_key_env"):
        load_settings()


# --- cost ----------------------------------------------------------------------------------------
def test_clients_share_one_tls_context_and_load_the_ca_bundle_once(
    openai_server: ScriptedLLMServer, anthropic_server: ScriptedLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each new httpx client loaded the CA bundle into a context of its own (~40 ms of CPU): a
    program with a few providers or stores paid it for each."""
    loads: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    tls_context.cache_clear()
    for server in (openai_server, anthropic_server, openai_server):
        server.script([text("hi")])
        assert server.llm().chat(ASK).text == "hi"
    assert len(loads) == 1
