"""Markdown notes a user can edit (ADR 0023): ``storage.mirror_dir`` holds a folder of notes per
namespace that the engine writes through to and ``clawmem sync`` (``Memory.sync_notes``, the
watcher of ``clawmem serve``) reads back.

Every test works on a real SQLite file and a real folder, edits notes the way an editor does
(the whole file written again, or saved through a temporary file and a rename) and checks
through the public surface: the CLI (``main([...])``, in-process), ``recall``, ``history``,
``links``, the files' bytes."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_forget_for_real import file_bytes
from test_serving import served

from clawmemory import Memory, NotFoundError, Settings
from clawmemory.interfaces.cli.app import main
from clawmemory.portability.markdown import STATE_FILE
from clawmemory.portability.notes import NotesWatcher, wikilinks

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def where(tmp_path: Path) -> Path:
    return tmp_path


def settings_for(where: Path, **storage: Any) -> Settings:
    return Settings(db=where / "m.db", embedder={"provider": "none"},
                    storage={"mirror_dir": where / "notes", **storage})


@pytest.fixture
def open_mem(where: Path) -> Iterator[Callable[[], Memory]]:
    opened: list[Memory] = []

    def _open() -> Memory:
        mem = Memory.open(settings=settings_for(where))
        opened.append(mem)
        return mem

    yield _open
    for mem in opened:
        mem.close()


@pytest.fixture
def cli(where: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Cli:
    """``clawmem ARGS`` in-process on the test's database and notes folder."""
    monkeypatch.setenv("CLAWMEM_DB", str(where / "m.db"))
    monkeypatch.setenv("CLAWMEM_STORAGE__MIRROR_DIR", str(where / "notes"))
    monkeypatch.setenv("CLAWMEM_EMBEDDER__PROVIDER", "none")
    monkeypatch.setenv("CLAWMEM_CONFIG", str(where / "absent.toml"))

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def folder(where: Path, namespace: str = "default") -> Path:
    return where / "notes" / namespace


def notes(where: Path) -> list[str]:
    return sorted(p.relative_to(folder(where)).as_posix()
                  for p in folder(where).rglob("*.md"))


def note_of(where: Path, memory_id: str) -> Path:
    [found] = [p for p in folder(where).rglob("*.md") if f"id: {memory_id}\n" in p.read_text()]
    return found


def id_in(path: Path) -> str:
    found = re.search(r"^id: (\S+)$", path.read_text(), re.M)
    assert found is not None
    return found.group(1)


def edit(path: Path, old: str, new: str, *, atomic: bool = False) -> None:
    """Change a note's text as an editor does: the whole file written again, or (``atomic``)
    written to a temporary file renamed over it (vim, VS Code, Obsidian)."""
    text = path.read_text(encoding="utf-8")
    assert old in text
    text = text.replace(old, new)
    if atomic:
        tmp = path.with_name(f".{path.name}.swp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    else:
        path.write_text(text, encoding="utf-8")


def synced(cli: Cli) -> dict[str, Any]:
    code, out, err = cli("--json", "sync")
    assert code == 0, err
    assert "Traceback" not in err
    report: dict[str, Any] = json.loads(out)
    return report


# --- layout --------------------------------------------------------------------------------------
def test_notes_have_readable_stable_names_and_the_id_in_the_front_matter(
        open_mem: Callable[[], Memory], where: Path) -> None:
    mem = open_mem()
    a = mem.store("User prefers dark mode", kind="preference", tags=["ui"], key="theme")
    b = mem.store("Deploy failed: migration timed out", kind="event",
                  metadata={"ticket": "OPS-7"}, session_id="s1", source="conversation")
    c = mem.store("Deploy failed, migration timed out.", kind="event")
    day = time.strftime("%Y-%m-%d", time.gmtime(mem.get(a).created_at))
    assert notes(where) == [f"event/{day}-deploy-failed-migration-timed-out-2.md",
                            f"event/{day}-deploy-failed-migration-timed-out.md",
                            f"preference/{day}-theme.md"]
    text = note_of(where, b).read_text()
    for line in (f"id: {b}", "category: event", "keywords: []", "source: conversation",
                 "session_id: s1", 'metadata: {"ticket": "OPS-7"}'):
        assert line + "\n" in text
    assert re.search(r"^hash: [0-9a-f]{16}$", text, re.M)
    assert "key: theme\n" in note_of(where, a).read_text()
    # the text and the kind change, the name does not
    path = note_of(where, c)
    mem.update(c, content="Deploy succeeded on retry", kind="fact")
    new = mem.correct(c, "Deploy succeeded on the second retry")
    assert note_of(where, new.id) == path and path.parent.name == "event"
    assert "category: fact" in path.read_text() and len(notes(where)) == 3
    state = json.loads((folder(where) / STATE_FILE).read_text())
    assert set(state["notes"]) == {a, b, new.id}
    assert "Deploy" not in (folder(where) / STATE_FILE).read_text().replace("deploy", "")


# --- edits ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("atomic", [False, True], ids=["rewritten", "renamed-over"])
def test_an_edited_note_becomes_a_new_version(open_mem: Callable[[], Memory], where: Path,
                                               cli: Cli, atomic: bool) -> None:
    mem = open_mem()
    rid = mem.store("The deploy window is Tuesday 10:00", kind="event", key="deploy-window")
    mem.close()
    path = note_of(where, rid)

    edit(path, "Tuesday 10:00", "Wednesday 14:00", atomic=atomic)
    report = synced(cli)

    assert report["counts"]["updated"] == 1 and report["counts"]["skipped"] == 0
    [change] = report["updated"]
    assert change["path"] == path.relative_to(folder(where)).as_posix()
    mem = open_mem()
    [hit] = mem.recall("Wednesday", mode="keyword")
    assert hit.memory.id == change["id"] != rid
    assert hit.memory.key == "deploy-window"
    assert [r.content for r in mem.history("deploy-window")] == [
        "The deploy window is Tuesday 10:00", "The deploy window is Wednesday 14:00"]
    assert mem.recall("Tuesday", mode="keyword") == []
    assert note_of(where, hit.memory.id) == path  # same file, the new version's id in it
    assert synced(cli)["counts"] == dict.fromkeys(report["counts"], 0)  # nothing left to do


def test_a_front_matter_edit_changes_the_memory_in_place(
        open_mem: Callable[[], Memory], where: Path, cli: Cli) -> None:
    mem = open_mem()
    rid = mem.store("Alice leads the payments team", tags=["people"])
    mem.close()
    edit(note_of(where, rid), "keywords: [people]", "keywords: [people, payments]\nkey: alice")
    report = synced(cli)
    assert [c["id"] for c in report["updated"]] == [rid]
    mem = open_mem()
    record = mem.get("alice")
    assert (record.id, record.tags) == (rid, ("people", "payments"))
    assert len(mem.history(rid)) == 1


def test_a_new_note_becomes_a_memory_and_gets_its_id(
        open_mem: Callable[[], Memory], where: Path, cli: Cli) -> None:
    mem = open_mem()
    mem.store("Something already stored")
    mem.close()
    plain = folder(where) / "ideas.md"
    plain.write_text("Buy more coffee beans for the office\n", encoding="utf-8")
    dressed = folder(where) / "preference" / "editor.md"
    dressed.parent.mkdir(exist_ok=True)
    dressed.write_text("---\ncategory: preference\nkeywords: [tools]\nkey: editor\n---\n\n"
                       "I write in Helix\n", encoding="utf-8")

    report = synced(cli)

    assert sorted(c["path"] for c in report["created"]) == ["ideas.md", "preference/editor.md"]
    mem = open_mem()
    ids = {c["path"]: c["id"] for c in report["created"]}
    coffee = mem.get(ids["ideas.md"])
    assert (coffee.content, coffee.kind, coffee.source) == (
        "Buy more coffee beans for the office", "fact", "notes")
    assert f"id: {coffee.id}\n" in plain.read_text()  # written into the user's file
    editor = mem.get("editor")
    assert (editor.id, editor.kind, editor.tags) == (ids["preference/editor.md"], "preference",
                                                     ("tools",))
    assert f"id: {editor.id}\n" in dressed.read_text()
    assert mem.count() == 3
    mem.close()
    assert synced(cli)["counts"]["created"] == 0  # no duplicate on the next sync
    assert open_mem().count() == 3


def test_a_renamed_or_moved_note_is_followed(open_mem: Callable[[], Memory], where: Path,
                                             cli: Cli) -> None:
    mem = open_mem()
    rid = mem.store("The VPN needs the hardware token")
    mem.close()
    old = note_of(where, rid)
    new = folder(where) / "work" / "vpn.md"
    new.parent.mkdir()
    old.rename(new)

    report = synced(cli)

    assert report["renamed"] == [{"path": "work/vpn.md", "id": rid,
                                  "detail": old.relative_to(folder(where)).as_posix()}]
    assert report["counts"]["created"] == report["counts"]["forgotten"] == 0
    mem = open_mem()
    assert mem.count() == 1 and mem.get(rid).content == "The VPN needs the hardware token"
    mem.update(rid, content="The VPN needs the hardware token and a PIN")
    assert "and a PIN" in new.read_text() and not old.exists()  # written where the user put it
    mem.close()
    assert synced(cli)["counts"] == dict.fromkeys(report["counts"], 0)


def test_a_copied_note_becomes_a_memory_of_its_own(open_mem: Callable[[], Memory], where: Path,
                                                   cli: Cli) -> None:
    mem = open_mem()
    rid = mem.store("Standup is at 9:30")
    mem.close()
    original = note_of(where, rid)
    copy = original.with_name("standup-copy.md")
    copy.write_text(original.read_text().replace("9:30", "9:45"), encoding="utf-8")
    report = synced(cli)
    [created] = report["created"]
    assert created["path"].endswith("standup-copy.md") and created["id"] != rid
    mem = open_mem()
    assert mem.get(rid).content == "Standup is at 9:30"
    assert mem.get(created["id"]).content == "Standup is at 9:45"
    assert f"id: {created['id']}\n" in copy.read_text()


# --- deletes -------------------------------------------------------------------------------------
def test_a_deleted_note_forgets_its_memory_for_real(open_mem: Callable[[], Memory], where: Path,
                                                    cli: Cli) -> None:
    mem = open_mem()
    rid = mem.store("the Zorblax launch code is 0091")
    new = mem.correct(rid, "the Zorblax launch code is 0092")
    keep = mem.store("the weather station is on the roof")
    path = note_of(where, new.id)
    path.unlink()
    mem.reinforce(new.id)  # a write before the sync does not bring the note back
    assert not path.exists()
    mem.close()

    report = synced(cli)

    assert [(c["id"], c["path"]) for c in report["forgotten"]] == [
        (new.id, path.relative_to(folder(where)).as_posix())]
    mem = open_mem()
    for ref in (rid, new.id):
        with pytest.raises(NotFoundError):
            mem.history(ref)
    assert mem.get(keep).content == "the weather station is on the roof"
    mem.close()
    assert b"zorblax" not in file_bytes(where / "m.db")
    assert not any(b"orblax" in p.read_bytes() for p in folder(where).rglob("*") if p.is_file())


def test_forget_removes_the_note_wherever_it_was_moved(
        open_mem: Callable[[], Memory], where: Path) -> None:
    mem = open_mem()
    rid = mem.store("the Quibbleworth passphrase is tangerine")
    note = note_of(where, rid)
    moved = folder(where) / "elsewhere.md"
    note.rename(moved)  # not synced yet: the state still names the old path
    mem.forget(rid)
    assert not moved.exists() and not note.exists()
    assert not any(b"uibbleworth" in p.read_bytes() for p in folder(where).rglob("*")
                   if p.is_file())


# --- links ---------------------------------------------------------------------------------------
def test_wikilinks_become_links_and_go_when_removed(
        open_mem: Callable[[], Memory], where: Path, cli: Cli) -> None:
    assert wikilinks("see [[Stripe key|the key]] and [[ops#runbook]], [[Stripe key]]") == [
        "Stripe key", "ops"]
    mem = open_mem()
    stripe = mem.store("The Stripe API key is in the vault", key="stripe-key")
    runbook = mem.store("Runbook: restart the payments worker first", kind="core")
    mem.close()
    runbook_note = note_of(where, runbook)
    runbook_name = runbook_note.stem  # the file name without .md, as Obsidian links it
    note = folder(where) / "payments.md"
    note.write_text(f"Payments: see [[stripe-key]] and [[{runbook_name}]] and [[nowhere]].\n",
                    encoding="utf-8")

    report = synced(cli)

    [created] = report["created"]
    pid = created["id"]
    assert sorted(c["detail"] for c in report["linked"]) == sorted([stripe, runbook])
    assert [c["detail"] for c in report["skipped"]] == [
        "wikilink [[nowhere]]: no note has this name and no memory this key"]
    mem = open_mem()
    links = {lk.other_id: lk.origin for lk in mem.links(pid)}
    assert links == {stripe: "wikilink", runbook: "wikilink"}
    assert {lk.other_id for lk in mem.links(stripe)} == {pid}  # both ways
    mem.close()

    edit(note, f" and [[{runbook_name}]]", "")  # the link to the runbook goes from the text
    report = synced(cli)
    pid = id_in(note)  # the edit made a new version: it took the links over, one went
    assert [{c["id"], c["detail"]} for c in report["unlinked"]] == [{pid, runbook}]
    mem = open_mem()
    assert {lk.other_id for lk in mem.links(pid)} == {stripe}
    mem.close()
    # an edit of the linked note keeps its links (the new version takes them over)
    edit(note_of(where, stripe), "in the vault", "in the team vault")
    assert synced(cli)["counts"]["unlinked"] == 0
    mem = open_mem()
    assert {lk.other_id for lk in mem.links(pid)} == {mem.get("stripe-key").id} != {stripe}


# --- conflicts and broken notes ------------------------------------------------------------------
def test_a_conflict_keeps_both_versions_and_says_so(
        open_mem: Callable[[], Memory], where: Path, cli: Cli) -> None:
    mem = open_mem()
    rid = mem.store("The office wifi password is on the fridge", key="wifi")
    path = note_of(where, rid)
    edit(path, "on the fridge", "on the whiteboard")  # the user edits the note ...
    by_store = mem.correct("wifi", "The office wifi password is in the vault")  # ... and an agent
    assert "on the whiteboard" in path.read_text()  # the write-through kept the user's edit
    mem.close()

    report = synced(cli)

    [conflict] = report["conflicts"]
    assert by_store.id in conflict["detail"] and report["counts"]["updated"] == 0
    mem = open_mem()
    assert [r.content for r in mem.history("wifi")] == [
        "The office wifi password is on the fridge",
        "The office wifi password is in the vault",
        "The office wifi password is on the whiteboard"]
    assert mem.get("wifi").id == conflict["id"]
    text = path.read_text()
    assert f"id: {conflict['id']}\n" in text and "on the whiteboard" in text
    assert re.search(rf"^conflict: .*{by_store.id}.*kept in the history", text, re.M)
    code, out, _ = cli("sync")  # a note the store has not changed since: no conflict again
    assert code == 0 and "nothing to do" in out


def test_a_malformed_note_is_reported_and_left_untouched(
        open_mem: Callable[[], Memory], where: Path, cli: Cli) -> None:
    mem = open_mem()
    rid = mem.store("The backup runs at 02:00")
    mem.close()
    tracked = note_of(where, rid)
    broken = tracked.read_text().replace("category: fact", "category: fact\ncategory: event")
    tracked.write_text(broken, encoding="utf-8")
    stray = folder(where) / "stray.md"
    stray.write_text("---\nkeywords: [a\nno closing\n", encoding="utf-8")
    stray_bytes = stray.read_bytes()

    code, out, err = cli("sync")

    assert code == 0 and "Traceback" not in out + err
    assert f"skipped: {tracked.relative_to(folder(where)).as_posix()}: line 4: front matter:" \
           " 'category' is given twice" in out
    assert "skipped: stray.md: line 1: front matter is not closed" in out
    assert tracked.read_text() == broken and stray.read_bytes() == stray_bytes
    mem = open_mem()
    assert mem.get(rid).content == "The backup runs at 02:00"  # not forgotten, not changed
    mem.close()
    tracked.write_text(broken.replace("category: event\n", "").replace("02:00", "03:00"),
                       encoding="utf-8")
    report = synced(cli)
    assert report["counts"]["updated"] == 1
    assert open_mem().get(report["updated"][0]["id"]).content == "The backup runs at 03:00"


def test_notes_written_before_the_folder_existed_are_written_by_sync(
        where: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAWMEM_STORAGE__MIRROR_DIR")
    with Memory.open(where / "m.db", embedder=None) as mem:  # no mirror_dir yet
        rid = mem.store("Stored before the notes folder was set")
    assert not (where / "notes").exists()
    monkeypatch.setenv("CLAWMEM_STORAGE__MIRROR_DIR", str(where / "notes"))
    report = synced(cli)
    assert [c["id"] for c in report["written"]] == [rid]
    assert "Stored before the notes folder" in note_of(where, rid).read_text()


def test_sync_errors_are_one_line(where: Path, cli: Cli,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAWMEM_STORAGE__MIRROR_DIR")
    code, out, err = cli("sync")
    assert code != 0 and out == ""
    assert err.startswith("error: no notes folder: set storage.mirror_dir") and \
        err.count("\n") == 1
    code, _, err = cli("--url", "http://127.0.0.1:9", "sync")
    assert code != 0 and "cannot run through a server" in err and "Traceback" not in err


# --- the watcher ---------------------------------------------------------------------------------
def _wait_for(check: Callable[[], bool], seconds: float) -> float:
    """Seconds until ``check()`` held; fails after ``seconds``."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > seconds:
            pytest.fail(f"not within {seconds} s")
        time.sleep(0.05)
    return time.monotonic() - started


def test_the_watcher_thread_picks_up_an_edit_and_stops(open_mem: Callable[[], Memory],
                                                       where: Path) -> None:
    mem = open_mem()
    rid = mem.store("The coffee machine is on floor 2", key="coffee")
    other = mem.with_namespace("team")
    other.store("The team room is 4.12", key="room")
    watcher = NotesWatcher(mem, interval=0.2)
    with watcher.running():
        _wait_for(lambda: watcher.syncs >= 2, 10)  # the first, full pass over both folders
        # The note may be in the middle of a rewrite by that pass (seen once under load).
        _wait_for(lambda: any(f"id: {rid}\n" in p.read_text()
                              for p in folder(where).rglob("*.md")), 5)
        edit(note_of(where, rid), "floor 2", "floor 3")
        (folder(where, "team") / "new.md").write_text("Team lunch is on Fridays\n")
        _wait_for(lambda: mem.get("coffee").content.endswith("floor 3"), 2.0)
        _wait_for(lambda: other.count() == 2, 2.0)
        thread = watcher._thread
    assert thread is not None and not thread.is_alive()


def test_clawmem_serve_picks_up_an_edit_within_two_seconds(where: Path) -> None:
    with Memory.open(settings=settings_for(where)) as mem:
        rid = mem.store("The release train leaves on Thursday", key="release")
    path = note_of(where, rid)
    env = {"CLAWMEM_STORAGE__MIRROR_DIR": str(where / "notes")}
    with served(where, "127.0.0.1", env=env, db=str(where / "m.db")) as [url]:
        base = url.removesuffix("/mcp")

        def content() -> str:
            response = httpx.get(f"{base}/v1/memories/release", timeout=10)
            response.raise_for_status()
            return str(response.json()["content"])

        assert content() == "The release train leaves on Thursday"
        time.sleep(1.0)  # past the watcher's first, full pass
        edit(path, "Thursday", "Friday")
        _wait_for(lambda: content() == "The release train leaves on Friday", 2.0)


def test_a_memory_invalidated_in_the_store_loses_its_note_unless_edited(
        open_mem: Callable[[], Memory], where: Path, cli: Cli) -> None:
    mem = open_mem()
    quiet = mem.store("The old printer is on floor 1")
    edited = mem.store("The old fax is on floor 1")
    for rid in (quiet, edited):  # what maintenance does to a contradicted memory
        mem.store_backend.replace(mem.get(rid).evolve(valid_until=mem.clock()))
    edited_note, quiet_note = note_of(where, edited), note_of(where, quiet)
    edit(edited_note, "floor 1", "floor 2")
    mem.close()

    report = synced(cli)

    assert [(c["id"], c["detail"].split(":")[0]) for c in report["written"]] == [
        (quiet, "invalidated in the store")]
    assert not quiet_note.exists()
    [skip] = report["skipped"]
    assert skip["id"] == edited and "was invalidated" in skip["detail"]
    assert "floor 2" in edited_note.read_text()  # left as the user wrote it
    assert [r.content for r in open_mem().history(quiet)] == ["The old printer is on floor 1"]


def test_archiving_keeps_a_note_the_user_edited_since_the_last_sync(where: Path,
                                                                     cli: Cli) -> None:
    """The idle purge archives memories (000's knowledge decay): an unedited note goes with its
    memory, one holding edits no sync has read stays, and the next sync says how to bring
    its memory back, so an edit is never lost to maintenance."""
    now = [1_700_000_000.0]
    settings = settings_for(where).model_copy(update={"lifecycle": Settings().lifecycle.model_copy(
        update={"knowledge_survival_chance": 0.0})})
    with Memory.open(settings=settings, clock=lambda: now[0]) as mem:
        quiet = mem.store("The old printer is on floor 1")
        edited = mem.store("The old fax is on floor 1")
        quiet_note, edited_note = note_of(where, quiet), note_of(where, edited)
        edit(edited_note, "floor 1", "floor 2")
        now[0] += 40 * 86_400  # idle past knowledge_max_idle_days (30)
        (run,) = mem.maintain("decay")
        assert mem.count() == 0, run
    assert not quiet_note.exists()
    assert "floor 2" in edited_note.read_text()
    report = synced(cli)
    [skip] = report["skipped"]
    assert skip["id"] == edited and f"clawmem restore {edited}" in skip["detail"]
