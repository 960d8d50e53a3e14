"""Precision and recall of the fast name heuristic (``entities/names.py``) on benchmark text.

Two corpora, two kinds of labels:

* ``peers``: the synthetic sentences and questions of ``../shared/bench/peers/peers.py``
  (``make_corpus``). Every name in them comes from that file's vocabularies (people, pets,
  cities, bands, companies, cars, books), so the labels are exact: a mention is right when it
  covers a vocabulary word, and every vocabulary word should be found.
* ``locomo``: the dialogue turns and questions of LoCoMo. Labels come from the corpus itself: a
  word is a *name word* when the corpus capitalises it in mid-sentence more often than it
  writes it in lower case ("Caroline", "Boston"; not "Nature", "Buy", nor "Gonna", which is
  only ever capitalised where a sentence starts). A mention without a name word is a false
  positive; every capitalised occurrence of a name word should be found (recall).

    .venv/bin/python bench/names_precision.py            # both corpora
    .venv/bin/python bench/names_precision.py --show 40  # also the most frequent mistakes

False positives are counted by kind: question words and other sentence-initial words,
weekdays and months, and the rest.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from clawmemory.entities.names import ALWAYS_SKIP, NamesProvider, _at_sentence_start
from locomo import DEFAULT_DATA
from recall_quality import PEERS, load_peers

WORD = re.compile(r"[^\W\d_][\w'’-]*")
QUESTION_WORDS = frozenset(re.findall(
    r"\w+", "what when where which who whom whose why how is are was were do does did can could"
             " would should will has have had according based answer"))


@dataclass
class Score:
    mentions: int = 0
    wrong: Counter[str] = field(default_factory=Counter)  # kind -> false positives
    examples: Counter[str] = field(default_factory=Counter)
    names: int = 0  # name words that should be found
    found: int = 0  # ... and were

    @property
    def precision(self) -> float:
        return 1 - sum(self.wrong.values()) / self.mentions if self.mentions else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.names if self.names else 1.0


def kind_of(text: str, start: int, words: Sequence[str]) -> str:
    low = [w.casefold() for w in words]
    if all(w in ALWAYS_SKIP for w in low):
        return "weekday/month"
    if _at_sentence_start(text, start):
        return "question word" if low[0] in QUESTION_WORDS else "sentence-initial"
    return "other"


def score(texts: Iterable[str], is_name: Callable[[str, str, int], bool], out: Score) -> None:
    """``is_name(word, text, position)``: the label of one capitalised word."""
    ner = NamesProvider()
    for text in texts:
        covered: set[int] = set()
        for m in ner.extract(text):
            out.mentions += 1
            words = [(w.group(), m.start + w.start()) for w in WORD.finditer(m.text)]
            hits = [is_name(w, text, pos) for w, pos in words]
            covered.update(pos for (w, pos), h in zip(words, hits, strict=True) if h)
            if not any(hits):
                out.wrong[kind_of(text, m.start, [w for w, _ in words])] += 1
                out.examples[m.text] += 1
        for w in WORD.finditer(text):
            if w.group()[0].isupper() and is_name(w.group(), text, w.start()):
                out.names += 1
                out.found += w.start() in covered



def peers_labels(peers: object) -> set[str]:
    v = peers._V  # type: ignore[attr-defined]
    vocab = {*peers._FIRST, *peers._LAST,  # type: ignore[attr-defined]
             *peers._FIRST_X, *peers._LAST_X}  # type: ignore[attr-defined]
    for k in ("pname", "city", "band", "company", "car", "book", "skill"):
        vocab |= {part for x in v[k] for part in x.replace("-", " ").split()}
    return {w for w in vocab if w[0].isupper()}


def locomo_texts(path: Path) -> tuple[list[str], list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns = [t["text"] for c in data for k, s in c["conversation"].items()
             if re.fullmatch(r"session_\d+", k) for t in s]
    return turns, [qa["question"] for c in data for qa in c["qa"]]


def proper_words(texts: Sequence[str]) -> set[str]:
    """Words capitalised in mid-sentence more often than they are written in lower case. A word
    only ever capitalised at the start of a sentence ("Aww", "Gonna") is not one of them."""
    lower: Counter[str] = Counter()
    capital: Counter[str] = Counter()
    for text in texts:
        for w in WORD.finditer(text):
            word = re.sub(r"['’]s$", "", w.group())
            if word[0].islower():
                lower[word.casefold()] += 1
            elif not _at_sentence_start(text, w.start()):
                capital[word.casefold()] += 1
    return {w for w, n in capital.items() if n > lower[w] and len(w) > 1
            and not re.match(r"i['’]", w)} - set(ALWAYS_SKIP)  # "I'm" is not a name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--peers", default=str(PEERS))
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--show", type=int, default=0, help="print the N most frequent mistakes")
    args = p.parse_args(argv)
    results: dict[str, Score] = {}
    peers = load_peers(Path(args.peers))
    vocab = peers_labels(peers)
    texts, qs, _ = peers.make_corpus(20000, 2000, 42)
    for name, corpus in (("peers sentences", texts), ("peers questions", qs)):
        results[name] = s = Score()
        score(corpus, lambda w, t, i: w.strip("'’s") in vocab or w in vocab, s)
    turns, questions = locomo_texts(Path(args.data))
    proper = proper_words(turns + questions)

    def locomo_name(word: str, text: str, pos: int) -> bool:
        return re.sub(r"['’]s$", "", word).casefold() in proper

    for name, corpus in (("locomo turns", turns), ("locomo questions", questions)):
        results[name] = s = Score()
        score(corpus, locomo_name, s)
    t = Table(title="Fast name heuristic: precision and recall")
    for col in ["corpus", "mentions", "precision", "recall", "false: question word",
                "sentence-initial", "weekday/month", "other"]:
        t.add_column(col, justify="left" if col == "corpus" else "right")
    for name, s in results.items():
        t.add_row(name, str(s.mentions), f"{s.precision:.3f}", f"{s.recall:.3f}",
                  *(str(s.wrong[k]) for k in ("question word", "sentence-initial",
                                              "weekday/month", "other")))
    console = Console(width=160)
    console.print(t)
    if args.show:
        for name, s in results.items():
            console.print(f"{name}: {s.examples.most_common(args.show)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
