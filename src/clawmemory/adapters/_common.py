"""What the adapters share: the error that says which extra to install."""

from __future__ import annotations

from clawmemory.errors import ConfigError

__all__ = ["missing"]


def missing(framework: str, package: str, extra: str) -> ConfigError:
    """The error an adapter raises when its framework is not installed."""
    return ConfigError(f"the {framework} adapter needs the {package} package:"
                       f" pip install 'clawmemory[{extra}]'")
