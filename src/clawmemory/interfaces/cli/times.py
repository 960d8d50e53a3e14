"""The time options of ``clawmem recall`` and ``clawmem list`` (ADR 0017).

Each takes ISO 8601 ("2024-01-15", "2024-01-15T09:30:00Z"), epoch seconds, or an expression
read against now in ``time.time_zone`` ("yesterday", "2 weeks ago", "last March"); the engine
reads them (search/temporal.py), so the CLI, the tools and the API agree.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

__all__ = ["AsOfOpt", "CreatedSinceOpt", "CreatedUntilOpt", "SinceOpt", "UntilOpt", "times"]

_WHEN = "ISO date/time, epoch seconds, or e.g. 'yesterday', '2 weeks ago', 'last March'"
SinceOpt = Annotated[str | None, typer.Option(
    "--since", metavar="WHEN", help="Only what happened from then on (event time, else creation"
    f" time). {_WHEN}.")]
UntilOpt = Annotated[str | None, typer.Option(
    "--until", metavar="WHEN", help="Only what happened before then; a date or period counts"
    " whole ('--until 2024-01-31' includes the 31st).")]
CreatedSinceOpt = Annotated[str | None, typer.Option(
    "--created-since", metavar="WHEN", help="Only memories stored from then on.")]
CreatedUntilOpt = Annotated[str | None, typer.Option(
    "--created-until", metavar="WHEN", help="Only memories stored before then.")]
AsOfOpt = Annotated[str | None, typer.Option(
    "--as-of", metavar="WHEN", help="What was valid then: memories created by then and not yet"
    " invalidated, a later-corrected one as the version it had.")]


def times(since: str | None, until: str | None, created_since: str | None,
          created_until: str | None, as_of: str | None) -> dict[str, Any]:
    """The time arguments of ``Memory.recall``/``list``; a number given as text is epoch
    seconds."""
    given = {"since": since, "until": until, "created_since": created_since,
             "created_until": created_until, "as_of": as_of}
    return {name: _number_or_text(value) for name, value in given.items()}


def _number_or_text(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value
