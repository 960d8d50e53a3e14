"""``clawmem chat`` as a user runs it (a real subprocess) against scripted OpenAI-compatible and
Anthropic servers: one-shot answers, JSON output, the interactive loop with a session switch
that consolidates the old session, hatching across calls, and failures as one line with the
right exit code, never a traceback: no LLM configured (2), HTTP 500, a timeout, a model that
never stops calling tools (3). Also ``clawmem maintain consolidate`` with a model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from clawmemory.llm.prompts import SYNTHESIS_SYSTEM
from llm_servers import ScriptedLLMServer, http_error, prompt_text, slow, text, tool_call

CLAWMEM = Path(sys.executable).parent / "clawmem"


def clawmem(tmp_path: Path, *args: str, server: ScriptedLLMServer | None = None,
            stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    base |= {"CLAWMEM_HOME": str(tmp_path / "home"), "CLAWMEM_CONFIG": str(tmp_path / "no.toml"),
             "CLAWMEM_EMBEDDER__PROVIDER": "none", "CLAWMEM_DB": str(tmp_path / "chat.db"),
             # Retries are counted here, not timed (tests/llm times the backoff): 0.5 s and 1 s
             # of waiting per failed call made up a third of this file's time.
             "CLAWMEM_LLM__BACKOFF_S": "0.01"}
    if server is not None:
        base |= server.env()
    return subprocess.run([str(CLAWMEM), *args], capture_output=True, text=True,
                          env=base | env, input=stdin, timeout=120, check=False)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def test_without_a_model_chat_says_what_to_set_and_exits_2(tmp_path: Path) -> None:
    done = clawmem(tmp_path, "chat", "-m", "hello")
    assert done.returncode == 2
    line = one_error_line(done)
    assert line.startswith("error: clawmem chat needs a language model: set [llm] provider")
    assert "CLAWMEM_LLM__PROVIDER=openai" in line
    assert not (tmp_path / "chat.db").exists()  # nothing was created


def test_one_shot_prints_the_answer_and_a_new_session_consolidates_the_last(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.script([text("Hello Ada!")])
    first = clawmem(tmp_path, "chat", "-m", "I'm Ada and I love sailing", "--session", "s1",
                    server=llm_server)
    assert (first.returncode, first.stdout, first.stderr) == (0, "Hello Ada!\n", "")

    llm_server.script([text("Welcome back."),
                       text('[{"content": "Ada loves sailing", "sources": ["e1"]}]')])
    second = clawmem(tmp_path, "--json", "chat", "-m", "hi again", "-s", "s2",
                     server=llm_server)

    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout)
    assert (out["reply"], out["session"], out["cached"]) == ("Welcome back.", "s2", False)
    (run,) = out["consolidations"]
    assert (run["job"], run["outcome"], run["counts"]["facts"]) == ("consolidate", "ok", 1)
    assert "I'm Ada and I love sailing" in json.dumps(llm_server.requests[2].body)
    facts = clawmem(tmp_path, "--json", "list", "--kind", "fact")
    assert [m["content"] for m in json.loads(facts.stdout)["memories"]] == ["Ada loves sailing"]


def test_provider_failures_are_one_line_and_exit_3(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.script([http_error(500), http_error(500), http_error(500)])
    failed = clawmem(tmp_path, "chat", "-m", "hello", server=llm_server)
    assert failed.returncode == 3 and failed.stdout == ""
    assert "answered HTTP 500 after 3 attempts: scripted failure" in one_error_line(failed)

    llm_server.script([slow(5.0, text("late"))])
    late = clawmem(tmp_path, "chat", "-m", "hello", server=llm_server,
                   CLAWMEM_LLM__TIMEOUT_S="0.5")
    assert late.returncode == 3 and "timed out after 0.5 s" in one_error_line(late)

    llm_server.script([], then=tool_call("memory_recall", {"query": "x"}))
    looping = clawmem(tmp_path, "chat", "-m", "hello", server=llm_server,
                      CLAWMEM_AGENT__MAX_TOOL_ROUNDS="2")
    assert looping.returncode == 3
    assert "still calling tools after 2 rounds" in one_error_line(looping)


def test_the_loop_goes_on_after_an_error_and_a_session_switch_consolidates(
    openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    openai_server.script([
        http_error(500), http_error(500), http_error(500),
        text("Nice, a violinist!"),
        text("The user plays the violin."),  # session summary when s1 ends (003)
        text('[{"content": "The user plays the violin"}]'),  # consolidation of s1 (004)
        text("Hello in the new session."),
    ])
    done = clawmem(tmp_path, "chat", "--session", "s1", server=openai_server,
                   stdin="hello\nI play the violin\n/session s2\nhi\n/bogus\n/exit\nnot sent\n")

    assert done.returncode == 0
    assert done.stdout == "Nice, a violinist!\nHello in the new session.\n"
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2 and "HTTP 500" in errors[0] and "unknown command /bogus" in errors[1]
    assert "Traceback" not in done.stderr
    runs = json.loads(clawmem(tmp_path, "--json", "runs", "--job", "consolidate").stdout)
    (run,) = runs["runs"]
    assert (run["outcome"], run["counts"]["facts"]) == ("ok", 1)
    assert len(openai_server.requests) == 7


def test_hatching_across_one_shot_calls_stores_the_soul(
    anthropic_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    anthropic_server.script([text("Hi! What shall I be called?")])
    asked = clawmem(tmp_path, "chat", "--hatch", "-m", "let's begin", server=anthropic_server)
    assert asked.stdout == "Hi! What shall I be called?\n", asked.stderr
    anthropic_server.script([
        text('Done!<soul>{"identity": "I am Rex", "user": "Ada, a sailor", "philosophy":'
             ' "Be brief"}</soul>'),
        text('{"notes": []}'),  # synthesis of the hatching conversation
    ])
    hatched = clawmem(tmp_path, "--json", "chat", "--hatch", "-m", "Call yourself Rex",
                      server=anthropic_server)
    assert hatched.returncode == 0, hatched.stderr
    out = json.loads(hatched.stdout)
    assert (out["reply"], out["hatching"], len(out["soul"])) == ("Done!", False, 3)
    assert "Hi! What shall I be called?" in json.dumps(anthropic_server.requests[1].body)
    identity = json.loads(clawmem(tmp_path, "--json", "get", "soul:identity").stdout)
    assert (identity["content"], identity["kind"]) == ("I am Rex", "core")


def test_synthesis_counts_each_sessions_user_messages_across_one_shot_calls(
    openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """000: synthesis every N user messages (here 2), counted in the stored history: one-shot
    processes of one session count together, after the Nth and not before; a session
    interleaved with it counts its own."""
    openai_server.script([], then=text('{"notes": []}'))  # every answer, synthesis's too

    def say(session: str, n: int) -> list[str]:
        done = clawmem(tmp_path, "chat", "-m", f"{session} message {n}", "--session", session,
                       server=openai_server, CLAWMEM_AGENT__CONSOLIDATE_ON_SWITCH="false",
                       CLAWMEM_COGNITION__SYNTHESIS_INTERVAL="2")
        assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
        return [prompt_text(b) for b in openai_server.bodies
                if SYNTHESIS_SYSTEM.format() in prompt_text(b)]

    seen = [len(say("s1", 1)), len(say("s2", 1)), len(say("s1", 2)), len(say("s2", 2)),
            len(say("s1", 3))]
    assert seen == [0, 0, 1, 2, 2]  # each session's second message, not before
    s1, s2 = say("s1", 4)[:2]
    assert len(openai_server.bodies) == 6 + 3  # six answers, three syntheses
    assert "s1 message 2" in s1 and "s2 message" not in s1
    assert "s2 message 2" in s2 and "s1 message" not in s2


def test_maintain_consolidate_uses_the_configured_model(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.script([text("Sure.")])
    assert clawmem(tmp_path, "chat", "-m", "My dog is called Rufus", "-s", "s1",
                   server=llm_server).returncode == 0
    llm_server.script([text('[{"content": "The user has a dog called Rufus"}]')])
    done = clawmem(tmp_path, "--json", "maintain", "consolidate", server=llm_server,
                   CLAWMEM_CONSOLIDATION__MIN_IDLE_S="0")
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert (run["outcome"], run["counts"]["facts"], run["counts"]["llm_calls"]) == ("ok", 1, 1)


def test_start_hatches_only_an_agent_without_an_identity(
    openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """000: `/start` on the first interaction begins hatching; once the soul exists it says so
    instead (and `/hatch` would create it again)."""
    openai_server.script([
        text('Hello!<soul>{"identity": "I am Rex", "user": "Ada", "philosophy": "Be brief"}'
             '</soul>'),
        text('{"notes": []}'),  # synthesis of the hatching conversation
    ])
    first = clawmem(tmp_path, "chat", "--session", "s1", server=openai_server,
                    stdin="/start\nCall yourself Rex\n/start\n/exit\n")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Hello!\n"
    assert "hatching: tell the agent who it should be" in first.stderr
    assert "the agent already has an identity (/hatch creates it again)" in first.stderr
    identity = json.loads(clawmem(tmp_path, "--json", "get", "soul:identity").stdout)
    assert identity["content"] == "I am Rex"
    assert len(openai_server.requests) == 2


def _three_earlier_sessions(tmp_path: Path, server: ScriptedLLMServer) -> None:
    """Sessions s1-s3 with a turn each, none consolidated yet (pending)."""
    server.script([], then=text("Noted."))
    for session in ("s1", "s2", "s3"):
        done = clawmem(tmp_path, "chat", "-m", f"note from {session}", "-s", session,
                       server=server, CLAWMEM_AGENT__CONSOLIDATE_ON_SWITCH="false")
        assert done.returncode == 0, done.stderr


def _consolidate_runs(tmp_path: Path) -> list[dict[str, object]]:
    done = clawmem(tmp_path, "--json", "runs", "--job", "consolidate")
    runs: list[dict[str, object]] = json.loads(done.stdout)["runs"]
    return runs


def test_an_unreachable_model_fails_the_turn_once_and_tries_no_consolidation(
    openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    # Issue 22: the turn then retried the consolidation of every earlier session (12-17 s)
    # and printed each failure two or three times.
    _three_earlier_sessions(tmp_path, openai_server)
    down = openai_server.env(CLAWMEM_LLM__BASE_URL="http://127.0.0.1:9/v1")  # nothing listens
    failed = clawmem(tmp_path, "chat", "-m", "hello", "-s", "s4", server=openai_server, **down)
    assert failed.returncode == 3 and failed.stdout == ""
    assert "is unreachable after 3 attempts" in one_error_line(failed)
    assert _consolidate_runs(tmp_path) == []  # none tried: s1-s3 stay pending


def test_a_model_lost_after_the_answer_is_met_once_and_said_in_one_line(
    openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    _three_earlier_sessions(tmp_path, openai_server)
    openai_server.script([text("Hello again."), slow(3.0, text("[]"))])  # s1's times out
    done = clawmem(tmp_path, "chat", "-m", "hello", "-s", "s4", server=openai_server,
                   CLAWMEM_LLM__TIMEOUT_S="0.5")
    assert (done.returncode, done.stdout) == (0, "Hello again.\n")
    (line,) = done.stderr.splitlines()
    assert line.startswith("warning: openai LLM at ") and "timed out after 0.5 s" in line
    assert line.endswith("(recorded: clawmem runs --job consolidate); consolidation of s2, s3"
                         " not tried: the model is unavailable (still pending: a later session"
                         " switch or `clawmem maintain consolidate` takes them)")
    assert len(openai_server.requests) == 3 + 2  # the seeding, the answer, s1's one try
    (run,) = _consolidate_runs(tmp_path)
    assert run["outcome"] == "failed"


def test_in_the_loop_an_unreachable_model_is_one_line_per_turn(
    openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    _three_earlier_sessions(tmp_path, openai_server)
    down = openai_server.env(CLAWMEM_LLM__BASE_URL="http://127.0.0.1:9/v1")
    done = clawmem(tmp_path, "chat", "-s", "s4", server=openai_server,
                   stdin="hello\n/session s5\n/exit\n", **down)
    assert done.returncode == 0 and done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if line != "session s5"]
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith("error: ") and "is unreachable" in lines[0]
    # The switch is a new turn: s4's summary meets the model once; then none of the sessions
    # queued since the first turn (s1-s3 when s4 began, s4 when it ended) is tried.
    assert lines[1].startswith("warning: session s4: summary at session end failed: ")
    assert lines[1].count("is unreachable after 3 attempts") == 1
    assert lines[1].endswith("; consolidation of s1, s2, s3, s4 not tried: the model is"
                             " unavailable (still"
                             " pending: a later session switch or `clawmem maintain"
                             " consolidate` takes them)")
    assert _consolidate_runs(tmp_path) == []
