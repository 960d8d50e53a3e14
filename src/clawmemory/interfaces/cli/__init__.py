"""``clawmem``, the command line (``clawmemory.interfaces.cli:main`` is the console script).

``app`` holds the typer app and its ``main``; ``common`` what every command shares (global
options, error boundary, output); the other modules are the commands, each with a
``register(app)`` hook. ``python -m clawmemory.interfaces.cli`` runs ``clawmem`` too.

``main`` here is the console script: a plain ``clawmem hooks run EVENT`` line, which a coding
agent runs before every prompt, is answered by ``hookrun`` without importing typer (~50 ms,
and ~0.1 s more for its pydantic coercion); every other line goes to ``app.main``. The app's
names are exported lazily (PEP 562), so importing this package loads neither.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported by name on first use; named here for the layers
    from clawmemory.interfaces.cli import hookrun  # noqa: F401
    from clawmemory.interfaces.cli.app import (
        EXIT_FAILED,
        EXIT_INTERNAL,
        EXIT_NOT_FOUND,
        EXIT_OK,
        EXIT_USAGE,
        register_extensions,
    )

# Not ``app``: the submodule ``app`` would shadow it once imported; the typer app is
# ``clawmemory.interfaces.cli.app.app``.
__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE", "main",
           "register_extensions"]

_FROM_APP = frozenset(__all__) - {"main"}


def main(argv: Sequence[str] | None = None) -> int:
    """The ``clawmem`` console script. Returns the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if "hooks" in args and "run" in args:
        answered = importlib.import_module(f"{__name__}.hookrun").fast_run(args)
        if answered is not None:
            return int(answered)
    return int(importlib.import_module(f"{__name__}.app").main(args))


def __getattr__(name: str) -> Any:
    if name in _FROM_APP:
        return getattr(importlib.import_module(f"{__name__}.app"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
