"""The history store (001) on every backend, and the conversation pipeline around it: restore
across session-id rotation, MaxHistoryLen trimming, write-behind persistence whose failures are
logged and never raised, message checks, and forgetting."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clawmemory import InvalidInputError, Memory, Settings
from clawmemory.backends.base import Store
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.history import (
    History,
    HistoryStore,
    InMemoryHistoryStore,
    NullHistoryStore,
    WriteBehind,
    history_store,
    persistence_key,
)
from clawmemory.llm.base import Message, ToolCall
from conftest import Backend, Clock, backend_params

KEY = "telegram:42:"


def user(text: str) -> Message:
    return Message("user", text)


def assistant(text: str) -> Message:
    return Message("assistant", text)


@pytest.fixture
def hstore(mem: Memory) -> HistoryStore:
    """The history store of the backend under test, as ``History`` would use it."""
    return history_store(mem)


@pytest.fixture
def history(mem: Memory) -> Iterator[History]:
    with History(mem) as h:
        yield h


# --- the store contract --------------------------------------------------------------------------
def test_messages_come_back_whole_and_in_order(hstore: HistoryStore) -> None:
    call = ToolCall("call-1", "memory_recall", {"query": "dark mode", "limit": 3})
    sent = [
        Message("system", "You are helpful."),
        Message("user", "Which theme do I like?", metadata={"channel": "telegram", "n": 1}),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", '{"hits": []}', tool_call_id="call-1", name="memory_recall"),
        Message("assistant", "Dark mode, Ünïcödé and all 🌙"),
    ]
    assert [hstore.append(KEY, m) for m in sent] == [0, 1, 2, 3, 4]
    assert hstore.all(KEY) == sent
    assert hstore.len(KEY) == 5
    assert (hstore.len(KEY, role="user"), hstore.len(KEY, role="tool")) == (1, 1)
    assert hstore.len("unknown:key:", role="user") == 0
    assert hstore.all(KEY)[2].tool_calls[0].arguments == {"query": "dark mode", "limit": 3}


def test_recent_returns_the_last_n_oldest_first(hstore: HistoryStore) -> None:
    for i in range(7):
        hstore.append(KEY, user(f"m{i}"))
    assert [m.content for m in hstore.recent(KEY, 3)] == ["m4", "m5", "m6"]
    assert [m.content for m in hstore.recent(KEY, 50)] == [f"m{i}" for i in range(7)]
    assert hstore.recent(KEY, 0) == []
    assert hstore.recent("unknown:key:", 5) == [] and hstore.len("unknown:key:") == 0


def test_a_summary_replaces_the_previous_one(hstore: HistoryStore) -> None:
    assert hstore.summary(KEY) == "" and hstore.covered(KEY) == 0
    hstore.set_summary(KEY, "first", covers=3)
    hstore.set_summary(KEY, "second", covers=8)
    assert hstore.summary(KEY) == "second" and hstore.covered(KEY) == 8
    assert hstore.len(KEY) == 0  # a summary is not a message


def test_purge_removes_one_key_entirely(hstore: HistoryStore) -> None:
    other = "telegram:43:"
    for key in (KEY, other):
        hstore.append(key, user(f"hello from {key}"))
        hstore.set_summary(key, f"summary of {key}", covers=1)
    assert hstore.keys() == [KEY, other]
    hstore.purge(KEY)
    assert (hstore.all(KEY), hstore.summary(KEY), hstore.len(KEY)) == ([], "", 0)
    assert hstore.all(other) == [user(f"hello from {other}")]
    assert hstore.summary(other) == f"summary of {other}"
    assert hstore.keys() == [other]
    assert hstore.append(KEY, user("again")) == 0  # positions start over


def test_namespaces_do_not_share_history(mem: Memory) -> None:
    history_store(mem).append(KEY, user("secret of the default tenant"))
    other = history_store(mem.with_namespace("bob"))
    assert other.all(KEY) == [] and other.keys() == []
    assert history_store(mem).all(KEY) == [user("secret of the default tenant")]


def test_forget_namespace_removes_the_history(mem: Memory) -> None:
    bob = mem.with_namespace("bob")
    for m in (mem, bob):
        history_store(m).append(KEY, user(f"I am {m.namespace}"))
        history_store(m).set_summary(KEY, "summary", covers=1)
    mem.forget_namespace()
    assert history_store(mem).keys() == [] and history_store(mem).summary(KEY) == ""
    assert history_store(bob).all(KEY) == [user("I am bob")]


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_forgotten_history_leaves_no_row(mem: Memory, store: Store) -> None:
    assert isinstance(store, SQLiteStore)
    history_store(mem).append(KEY, user("to be forgotten"))
    history_store(mem).set_summary(KEY, "gone too")
    mem.forget_namespace()
    for table in ("messages", "summaries"):
        assert store.query(f"SELECT COUNT(*) FROM {table}")[0][0] == 0, table


def test_threads_appending_to_one_key_keep_every_message_in_order(hstore: HistoryStore) -> None:
    threads, each = 6, 40

    def speak(t: int) -> None:
        for i in range(each):
            hstore.append(KEY, user(f"t{t}-{i}"))

    workers = [threading.Thread(target=speak, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stored = [m.content for m in hstore.all(KEY)]
    assert len(stored) == threads * each == hstore.len(KEY)
    for t in range(threads):
        assert [c for c in stored if c.startswith(f"t{t}-")] == [f"t{t}-{i}" for i in range(each)]


# --- conversations: restore, trimming, write-behind ----------------------------------------------
@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_a_new_session_restores_the_key_after_a_restart(
    open_store: Callable[[], Store], settings: Settings, clock: Clock
) -> None:
    key = persistence_key("telegram", "42", "main")
    with History(Memory(open_store(), settings, clock=clock)) as history:
        conv = history.conversation(key, session_id="uuid-1", system="You are helpful.")
        conv.extend([user("My cat is called Miso."), assistant("Nice name!")])
    # A new process, a new session id for the same chat: the persistence key is the same.
    with History(Memory(open_store(), settings, clock=clock)) as history:
        conv = history.conversation(key, session_id="uuid-2")
        assert conv.session_id == "uuid-2"
        assert conv.messages == (user("My cat is called Miso."), assistant("Nice name!"))
        assert conv.system is None  # the system prompt is the agent's to set, never stored
        assert conv.user_messages == 1  # counted from the store: synthesis every N (000)
        conv.append(user("And a dog, Rex."))
        assert conv.user_messages == 2


def test_restore_is_limited_to_max_history_len(mem: Memory) -> None:
    cfg = mem.settings.history.model_copy(update={"max_history_len": 4})
    with History(mem, settings=cfg) as history:
        for i in range(9):
            history.store.append(KEY, user(f"m{i}"))
        conv = history.conversation(KEY)
        assert [m.content for m in conv.messages] == ["m5", "m6", "m7", "m8"]


def test_the_window_is_trimmed_after_each_append_and_the_store_keeps_all(mem: Memory) -> None:
    cfg = mem.settings.history.model_copy(update={"max_history_len": 3})
    with History(mem, settings=cfg) as history:
        conv = history.conversation(KEY)
        for i in range(5):
            conv.append(user(f"m{i}"))
            assert len(conv.messages) == min(i + 1, 3)
        assert [m.content for m in conv.messages] == ["m2", "m3", "m4"]
        assert history.flush(10)
        assert [m.content for m in history.store.all(KEY)] == [f"m{i}" for i in range(5)]


def test_trimming_never_leaves_a_tool_result_without_its_call(mem: Memory) -> None:
    cfg = mem.settings.history.model_copy(update={"max_history_len": 3})
    with History(mem, settings=cfg) as history:
        conv = history.conversation(KEY)
        calls = (ToolCall("c1", "memory_recall", {}), ToolCall("c2", "memory_recall", {}))
        conv.extend([user("look it up"), Message("assistant", "", tool_calls=calls),
                     Message("tool", "r1", tool_call_id="c1"),
                     Message("tool", "r2", tool_call_id="c2")])
        assert [m.role for m in conv.messages] == ["assistant", "tool", "tool"]
        conv.append(assistant("Found nothing."))
        # The last 3 would start with r1, whose call was cut: r1 and r2 go too.
        assert conv.messages == (assistant("Found nothing."),)
        assert history.flush(10) and history.store.len(KEY) == 5


def test_threads_appending_to_a_conversation_persist_in_window_order(mem: Memory) -> None:
    with History(mem) as history:
        conv = history.conversation(KEY)

        def speak(t: int) -> None:
            for i in range(25):
                conv.append(user(f"t{t}-{i}"))

        workers = [threading.Thread(target=speak, args=(t,)) for t in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert history.flush(30)
        assert history.store.all(KEY) == list(conv.messages)
        assert len(conv.messages) == 100


def test_assemble_puts_system_prompt_and_summary_first(history: History) -> None:
    history.store.set_summary(KEY, "[Conversation summary]\nThey talked about cats.", covers=0)
    conv = history.conversation(KEY, system="You are helpful.")
    conv.append(user("And dogs?"))
    sent = conv.assemble()
    assert [(m.role, m.content) for m in sent] == [
        ("system", "You are helpful."),
        ("system", "[Conversation summary]\nThey talked about cats."),
        ("user", "And dogs?"),
    ]


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_a_failed_write_is_logged_not_raised(
    mem: Memory, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    assert isinstance(store, SQLiteStore)
    with History(mem) as history:
        conv = history.conversation(KEY)
        conv.append(user("persisted"))
        assert history.flush(10)
        store.conn.execute("PRAGMA query_only = ON")  # the database now refuses every write
        with caplog.at_level(logging.WARNING, logger="clawmemory.history"):
            kept = conv.append(user("not persisted"))
            assert history.flush(10)
        assert kept == user("not persisted")
        assert conv.messages == (user("persisted"), user("not persisted"))  # the pipeline goes on
        assert history.writer.failures == 1
        assert "append telegram:42: (user) not persisted" in caplog.text
        assert "readonly" in caplog.text
        store.conn.execute("PRAGMA query_only = OFF")
        conv.append(user("persisted again"))
        assert history.flush(10)
        assert [m.content for m in history.store.all(KEY)] == ["persisted", "persisted again"]


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_writes_to_a_closed_database_are_logged_not_raised(
    mem: Memory, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    history = History(mem)
    conv = history.conversation(KEY)
    store.close()
    with caplog.at_level(logging.WARNING, logger="clawmemory.history"):
        conv.append(user("one"))
        conv.append(assistant("two"))
        assert history.close(10)
    assert history.writer.failures == 2
    assert caplog.text.count("not persisted") == 2
    assert "closed" in caplog.text.lower()


def test_a_full_write_queue_drops_and_logs_without_blocking(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writer = WriteBehind(max_pending=1)
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []
    writer.submit("slow", lambda: (started.set(), release.wait(10)))
    assert started.wait(10)  # the writer holds the first write; the queue is empty again
    assert writer.submit("queued", lambda: ran.append("queued"))
    with caplog.at_level(logging.ERROR, logger="clawmemory.history"):
        assert not writer.submit("overflow", lambda: ran.append("overflow"))
    assert writer.dropped == 1 and "overflow not persisted" in caplog.text
    release.set()
    assert writer.flush(10) and ran == ["queued"]
    assert writer.close(10)
    assert not writer.submit("late", lambda: ran.append("late")) and writer.dropped == 2


# --- what a message may be -----------------------------------------------------------------------
@pytest.mark.parametrize(("message", "error"), [
    (Message("robot", "hi"), "role must be one of"),  # type: ignore[arg-type]
    (Message("user", "nul \x00 byte"), "NUL"),
    (Message("user", "lone \ud800 surrogate"), "not valid Unicode"),
    (Message("user", "   "), "empty"),
    (Message("user", "x" * 100_001), "limit is 100,000"),
    (Message("tool", "result"), "tool_call_id"),
    (Message("user", "hi", tool_calls=(ToolCall("c", "t", {}),)), "only assistant"),
    (Message("assistant", "", tool_calls=(ToolCall("", "t", {}),)), "id and a name"),
    (Message("user", "hi", metadata={"bad": object()}), "JSON"),
])
def test_bad_messages_are_refused_before_anything_is_kept(
    history: History, message: Message, error: str
) -> None:
    conv = history.conversation(KEY)
    with pytest.raises(InvalidInputError, match=error):
        conv.append(message)
    assert conv.messages == ()
    assert history.flush(10) and history.store.len(KEY) == 0


def test_empty_content_is_accepted_where_chat_apis_allow_it(history: History) -> None:
    conv = history.conversation(KEY)
    conv.append(Message("assistant", "", tool_calls=(ToolCall("c1", "memory_store", {}),)))
    conv.append(Message("tool", "", tool_call_id="c1"))
    assert history.flush(10) and history.store.len(KEY) == 2


def test_a_system_prompt_must_be_a_system_message(history: History) -> None:
    with pytest.raises(InvalidInputError, match="system message"):
        history.conversation(KEY, system=user("not a system prompt"))


def test_the_persistence_key_is_channel_chat_thread() -> None:
    assert persistence_key("telegram", "42") == "telegram:42:"
    assert persistence_key("slack", "C01", "1700000000.1") == "slack:C01:1700000000.1"
    # A ':' inside a part cannot make two chats share a key.
    assert persistence_key("matrix", "!a:b", "c") != persistence_key("matrix", "!a", "b:c")
    assert persistence_key("matrix", "!a:b") == "matrix:!a%3Ab:"
    with pytest.raises(InvalidInputError, match="chat_id"):
        persistence_key("telegram", " ")


# --- backends without a messages table -----------------------------------------------------------
@pytest.mark.parametrize("backend", backend_params("memory", "json"), indirect=True)
def test_backends_without_a_messages_table_keep_history_in_this_process(
    mem: Memory, backend: Backend
) -> None:
    hs = history_store(mem)
    assert isinstance(hs, InMemoryHistoryStore)
    assert history_store(Memory(mem.store_backend, mem.settings)) is hs  # one per store
    hs.append(KEY, user("kept in RAM"))
    assert history_store(mem).all(KEY) == [user("kept in RAM")]


def test_the_none_backend_keeps_no_history(tmp_path: Path) -> None:
    cfg = Settings(embedder={"provider": "none"})
    mem = Memory.open(tmp_path / "x", backend="none", settings=cfg)
    with History(mem) as history:
        assert isinstance(history.store, NullHistoryStore)
        conv = history.conversation(KEY)
        conv.append(user("hello"))
        assert conv.messages == (user("hello"),)  # the session still works in RAM
        assert history.flush(10) and history.store.len(KEY) == 0
        assert history.conversation(KEY).messages == ()
