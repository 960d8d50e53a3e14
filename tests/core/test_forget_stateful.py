"""One version chain per memory, whatever the path: random sequences of store, keyed upsert,
correct, confirm, update, archive (the nightly idle purge), restore and forget, on every
backend. After each ``forget``, no text ever stored under the forgotten memory is recallable
(live, invalidated or archived), listable or archived; on SQLite it is in no byte of the
database, its write-ahead log, its shared-memory file or the Markdown mirror. Every other
memory is still there.

Each text carries one made-up word (consonants only, so no stemmer changes it), which is what
recall looks for and what the bytes are searched for."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
    run_state_machine_as_test,
)

from clawmemory import Memory, NotFoundError, Settings
from clawmemory.config import StorageSettings
from clawmemory.core.lifecycle import knowledge_decay
from conftest import DAY, Backend, Clock, backend_params

KEYS = ("pin", "wifi", "door")
LETTERS = "bcdfghjklmnpqrtvwxz"


def _word(n: int) -> str:
    """A made-up word, unique per ``n``: the part of each text the checks look for."""
    letters = []
    for _ in range(4):
        n, r = divmod(n, len(LETTERS))
        letters.append(LETTERS[r])
    return "zvq" + "".join(letters)


class Group:
    """One memory as the user sees it: the id to name it by now, its key, every text ever
    stored under it, and whether maintenance archived it."""

    def __init__(self, ref: str, key: str | None, text: str) -> None:
        self.ref, self.key, self.words, self.archived = ref, key, {text}, False


class ForgetMachine(RuleBasedStateMachine):
    groups = Bundle("groups")

    def __init__(self, open_mem: Any) -> None:
        super().__init__()
        self.mem, self.files = open_mem()
        self.clock: Clock = self.mem.clock
        self.counter = itertools.count()
        self.live: dict[int, Group] = {}
        self.forgotten: set[str] = set()

    def _text(self) -> str:
        return _word(next(self.counter))

    def _by_key(self, key: str) -> Group | None:
        return next((g for g in self.live.values() if g.key == key), None)

    @rule(target=groups, key=st.sampled_from((None, *KEYS)))
    def store(self, key: str | None) -> Any:
        word = self._text()
        rid = self.mem.store(f"the secret is {word}", key=key)
        holder = self._by_key(key) if key else None
        if holder is not None:  # a keyed upsert: the next version of the key's memory
            assert rid == holder.ref
            holder.words.add(word)
            holder.archived = False
            return holder
        group = Group(rid, key, word)
        self.live[id(group)] = group
        return group

    @rule(group=groups)
    def correct(self, group: Group) -> None:
        if id(group) not in self.live or group.archived:
            return
        word = self._text()
        group.ref = self.mem.correct(group.ref, f"no, the secret is {word}").id
        group.words.add(word)

    @rule(group=groups)
    def confirm(self, group: Group) -> None:
        if id(group) in self.live and not group.archived:
            assert self.mem.confirm(group.ref).decay_rate == 0

    @rule(group=groups)
    def update(self, group: Group) -> None:
        if id(group) not in self.live or group.archived:
            return
        word = self._text()
        self.mem.update(group.ref, content=f"the secret became {word}")
        group.words.add(word)

    @rule()
    def archive_idle(self) -> None:
        """The nightly idle purge after a month: every unprotected fact goes to the archive."""
        self.clock.advance(31 * DAY)
        cfg = self.mem.settings.model_copy(update={"lifecycle": self.mem.settings.lifecycle
                                                   .model_copy(update={
                                                       "knowledge_survival_chance": 0.0})})
        knowledge_decay(Memory(self.mem.store_backend, cfg, namespace=self.mem.namespace,
                               clock=self.clock))
        archived = {e.record.id for e in self.mem.archived(limit=10_000)}
        for g in self.live.values():
            g.archived = g.ref in archived

    @rule(group=groups)
    def restore(self, group: Group) -> None:
        if id(group) in self.live and group.archived:
            self.mem.restore(group.ref)
            group.archived = False

    @rule(group=consumes(groups))
    def forget(self, group: Group) -> None:
        if id(group) not in self.live:
            return
        done = self.mem.forget(group.ref)
        assert done.id == group.ref
        del self.live[id(group)]
        self.forgotten |= group.words
        self._nothing_left(group.words)

    def _nothing_left(self, words: set[str]) -> None:
        mem = self.mem
        for word in words:
            for archive in (False, True):
                hits = mem.recall(word, mode="keyword", include_invalid=True, archive=archive)
                assert not [h for h in hits if word in h.memory.content], (word, archive)
        listed = [r.content for r in mem.list(include_invalid=True, limit=10_000)]
        listed += [e.record.content for e in mem.archived(limit=10_000)]
        assert not [t for t in listed for w in words if w in t]
        data = b"".join(p.read_bytes() for p in self.files() if p.is_file()).lower()
        left = [w for w in words if w.encode() in data]
        assert not left, f"forgotten text still in the files: {left}"

    @invariant()
    def the_rest_is_kept(self) -> None:
        for g in self.live.values():
            if g.archived:
                assert any(e.record.id == g.ref for e in self.mem.archived(limit=10_000))
            else:
                content = self.mem.get(g.ref).content
                assert any(w in content for w in g.words)

    def teardown(self) -> None:
        self.mem.close()


@pytest.mark.parametrize("backend", backend_params(), indirect=True)
def test_forget_reaches_every_version_on_every_path(
    backend: Backend, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    runs = itertools.count()

    def open_mem() -> tuple[Memory, Any]:
        where = tmp_path / f"run{next(runs)}"
        where.mkdir()
        mirror = where / "mirror"
        cfg = Settings(storage=StorageSettings(mirror_dir=mirror))
        mem = Memory(backend.open(request, where), cfg, clock=Clock())

        def files() -> list[Path]:
            if backend.name != "sqlite":  # the bytes check is SQLite's promise (one file)
                return list(mirror.rglob("*"))
            return [*where.glob("memory.db*"), *mirror.rglob("*")]

        return mem, files

    # A factory, not the class: each example gets a fresh store (hypothesis calls it).
    run_state_machine_as_test(lambda: ForgetMachine(open_mem), settings=settings(  # type: ignore[arg-type]
        max_examples=12, stateful_step_count=14, deadline=None,
        suppress_health_check=list(HealthCheck)))


def test_a_keyed_upsert_after_a_correction_keeps_the_chain(tmp_path: Path) -> None:
    """The reported case, through the CLI's path (the Python API): add, correct, keyed add,
    forget; the first text is gone from recall and from every byte."""
    db = tmp_path / "a.db"
    with Memory.open(db, embedder=None) as mem:
        first = mem.store("My PIN is zvqkkkk", key="pin")
        mem.confirm("pin")
        mem.correct("pin", "My PIN is zvqmmmm")
        mem.store("My PIN is zvqnnnn", key="pin")
        now = mem.get("pin")
        assert now.decay_rate == 0, "the keyed upsert dropped the confirm"
        assert next(r.id for r in mem.history("pin")) == first
        done = mem.forget("pin")
        assert done.versions == (first,)
        with pytest.raises(NotFoundError):
            mem.get(first)
        assert mem.recall("PIN", include_invalid=True, mode="keyword") == []
    data = b"".join(p.read_bytes() for p in tmp_path.glob("a.db*")).lower()
    assert b"zvqkkkk" not in data and b"zvqmmmm" not in data and b"zvqnnnn" not in data


def test_the_reported_cli_sequence_forgets_every_version(tmp_path: Path) -> None:
    """Issue 22's report, word for word on the command line: add, correct, keyed add, forget,
    then recall with invalidated memories; nothing is left, in recall or in the file."""
    import subprocess
    import sys

    clawmem = Path(sys.executable).parent / "clawmem"
    db = str(tmp_path / "pin.db")

    def run(*args: str) -> str:
        done = subprocess.run([str(clawmem), "--db", db, *args], capture_output=True,
                              text=True, timeout=60, check=True)
        return done.stdout

    run("add", "My PIN is zvqbbbb", "--key", "pin")
    run("correct", "pin", "My PIN is zvqcccc")
    run("add", "My PIN is zvqdddd", "--key", "pin")
    assert "with 1 other version(s)" in run("forget", "pin")
    assert "zvq" not in run("recall", "PIN", "--include-invalid")
    data = b"".join(p.read_bytes() for p in tmp_path.glob("pin.db*")).lower()
    assert b"zvq" not in data
