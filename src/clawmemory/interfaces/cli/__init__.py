"""``clawmem``, the command line (``clawmemory.interfaces.cli:main`` is the console script).

``app`` holds the typer app and ``main``; ``common`` what every command shares (global options,
error boundary, output); the other modules are the commands, each with a ``register(app)``
hook. ``python -m clawmemory.interfaces.cli`` runs ``clawmem`` too.
"""

from clawmemory.interfaces.cli.app import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    app,
    main,
    register_extensions,
)

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE", "app",
           "main", "register_extensions"]
