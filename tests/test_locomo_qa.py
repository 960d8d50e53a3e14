"""``bench/locomo.py --llm`` end to end on a tiny LoCoMo-shaped conversation made here, against
a scripted OpenAI-compatible server: questions of categories 1-4 are answered from recalled
memories and judged; J is the share judged CORRECT, overall and per category; adversarial
questions are left out; failed calls are counted, not hidden. With ``--decompose`` each
question is first split into search queries. Without an endpoint: one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from llm_servers import ScriptedLLMServer, http_error, prompt_text, text

BENCH = Path(__file__).resolve().parent.parent / "bench" / "locomo.py"

TINY = [{
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Ada", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ada", "dia_id": "D1:1", "text": "I moved to Lisbon last week!"},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Wow, how is the weather there?"},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ada", "dia_id": "D2:1", "text": "I adopted a cat called Miso."},
            {"speaker": "Bo", "dia_id": "D2:2", "text": "Miso is a lovely name."},
        ],
    },
    "qa": [
        {"question": "Where did Ada move to?", "answer": "Lisbon", "evidence": ["D1:1"],
         "category": 4},
        {"question": "When did Ada move?", "answer": "The week before 8 May 2023",
         "evidence": ["D1:1"], "category": 2},
        {"question": "What is Bo's cat called?", "adversarial_answer": "Miso",
         "evidence": ["D2:1"], "category": 5},
        {"question": "What pet did Ada adopt after moving?", "answer": "A cat, Miso",
         "evidence": ["D1:1", "D2:1"], "category": 1},
    ],
}]


def bench(tmp_path: Path, *args: str, server: ScriptedLLMServer | None
          ) -> subprocess.CompletedProcess[str]:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    env |= {"CLAWMEM_HOME": str(tmp_path / "home"), "CLAWMEM_CONFIG": str(tmp_path / "no.toml"),
            "CLAWMEM_EMBEDDER__PROVIDER": "none"}
    if server is not None:
        env |= server.env()
    return subprocess.run(
        [sys.executable, str(BENCH), "--llm", "--data", str(data), "--db", str(tmp_path),
         "--qa-mode", "keyword", "--top-k", "3", "--json", str(tmp_path / "out.json"), *args],
        capture_output=True, text=True, env=env, timeout=300, check=False)


def results(tmp_path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((tmp_path / "out.json").read_text())
    return loaded


def test_answers_are_judged_and_j_is_reported_per_category(
    openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    openai_server.script([
        text("Lisbon"), text('The answer names the same city.\n{"label": "CORRECT"}'),
        text("In June 2023"), text('```json\n{"label": "WRONG"}\n```'),
        http_error(500), http_error(500), http_error(500),  # the third answer fails
    ])
    done = bench(tmp_path, server=openai_server)

    assert done.returncode == 0, done.stderr
    out = results(tmp_path)
    assert (out["J"], out["questions"], out["judged"]) == (1 / 3, 3, 3)
    assert out["by_cat"] == {"multi-hop": 0.0, "temporal": 0.0, "single-hop": 1.0}
    assert (out["answer_failures"], out["judge_failures"]) == (1, 0)
    assert "answer failed" in done.stdout and "J" in done.stdout
    answer, judged = (prompt_text(r.body) for r in openai_server.requests[:2])
    assert "Question: Where did Ada move to?" in answer
    assert "(08 May 2023) Ada: I moved to Lisbon last week!" in answer
    assert "Gold answer: Lisbon\nGenerated answer: Lisbon" in judged
    assert all("Bo's cat" not in prompt_text(r.body) for r in openai_server.requests)


def test_decomposition_recalls_each_sub_query(
    openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    openai_server.script([
        text('["Where did Ada move?", "What pet did Ada adopt?"]'),
        text("A cat called Miso"), text('{"label": "CORRECT"}'),
    ])
    done = bench(tmp_path, "--decompose", "--questions", "1", "--top-k", "4",
                 server=openai_server)

    assert done.returncode == 0, done.stderr
    out = results(tmp_path)
    assert (out["J"], out["decompose"], out["judged"]) == (1.0, True, 1)
    split = prompt_text(openai_server.requests[0].body)
    assert "Split the question into the simpler search queries" in split
    assert "Question: Where did Ada move to?" in split
    answer = prompt_text(openai_server.requests[1].body)
    assert "I moved to Lisbon" in answer and "I adopted a cat called Miso" in answer


def test_without_an_endpoint_it_says_so(tmp_path: Path) -> None:
    done = bench(tmp_path, server=None)
    assert done.returncode == 2
    assert done.stderr.startswith("error: --llm needs an LLM endpoint")
    assert "Traceback" not in done.stderr
