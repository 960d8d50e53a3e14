"""What ``clawmem`` needs before it knows the command: the exit codes, the global options and
the one-line error. Kept apart from ``common`` (which imports the settings, the façade and the
model) so that parsing the command line, ``--version`` and ``--help`` load none of it.
``common`` re-exports every name here. Exit codes:

    0   success
    1   not found (no memory with that id or key), or a confirmation was declined
    2   usage or input error: bad option, invalid content, unknown kind, bad --meta,
        unreadable or malformed import file, invalid configuration, a server's 401/403
    3   the operation failed: storage (I/O, locked, newer schema), embedder or LLM error
    70  internal error (a bug): rerun with CLAWMEM_DEBUG=1 to see the traceback
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass
from typing import NoReturn

from clawmemory.choices import Backend

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE",
           "GlobalOptions", "fail", "internal_error", "say_error"]

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_INTERNAL = 70  # sysexits.h EX_SOFTWARE


@dataclass(frozen=True)
class GlobalOptions:
    """The global options (given before or after the command)."""

    db: str | None = None  # a file path or a postgresql:// address
    namespace: str | None = None
    backend: Backend | None = None
    json: bool = False
    url: str | None = None  # a clawmemory server to talk to instead of a local store
    api_key: str | None = None
    profile: str | None = None  # a specification's defaults (profiles.py)
    agent: str | None = None  # agent.agent_name; its own database under storage.layout per-agent


def say_error(message: str) -> None:
    # One line, always: scripts and tests read the first line of stderr.
    sys.stderr.write("error: " + (" ".join(message.splitlines()) or "unknown error") + "\n")
    sys.stderr.flush()


def fail(message: str, code: int) -> NoReturn:
    # typer on use only: `clawmem hooks run` (cli/hookrun.py) uses this module without it
    import typer

    say_error(message)
    raise typer.Exit(code)


def internal_error(exc: BaseException) -> str:
    """The line for an exception nobody anticipated (a bug); the traceback only on request."""
    if os.environ.get("CLAWMEM_DEBUG"):
        traceback.print_exception(exc)
    return (f"internal error: {type(exc).__name__}: {exc}"
            " (rerun with CLAWMEM_DEBUG=1 for the traceback)")
