"""The shared stemmer (text.py): snowballstemmer's English stemmer, loaded without the 30
other languages the package's own ``__init__`` imports (most of a first recall's cost)."""

from __future__ import annotations

import subprocess
import sys

import snowballstemmer

from clawmemory.text import stem, tokenize

WORDS = (
    "running", "runs", "ran", "generously", "happiness", "caresses", "ponies",
    "relational", "conditional", "rational", "digitizer", "vietnamization", "predication",
    "operator", "feudalism", "decisiveness", "hopefulness", "callousness", "formality",
    "sensitivity", "sensibility", "skies", "dying", "lying", "tying", "news", "innings",
    "outing", "canning", "howe", "proceed", "exceed", "succeed", "andes", "atlas",
    "cosmos", "bias", "generate", "generates", "generated", "generating", "general",
    "generally", "generic",
)


def test_the_stemmer_is_snowballs_english_stemmer() -> None:
    reference = snowballstemmer.stemmer("english")
    assert [stem(w) for w in WORDS] == [reference.stemWord(w) for w in WORDS]
    assert tokenize("Running, ran: the PONIES!") == ["run", "ran", "the", "poni"]


def test_stemming_loads_english_only() -> None:
    """A fresh process: the first stem imports no other language's module."""
    code = ("import sys; from clawmemory.text import stem; stem('running');"
            " print(sorted(m.rsplit('.', 1)[-1] for m in sys.modules if 'stemmer' in m))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["['basestemmer',", "'english_stemmer']"]
