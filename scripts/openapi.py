"""Write the OpenAPI document of the REST API (``/v1``) that the TypeScript client's types are
generated from: ``clients/typescript/openapi.json``.

    .venv/bin/python scripts/openapi.py            # rewrite the committed document
    .venv/bin/python scripts/openapi.py --check    # exit 1 when it is out of date

The document is built the way ``clawmem serve`` builds it (``build_app`` over a throwaway store
with no embedder: the routes and models do not depend on the store) and written with sorted
keys, two-space indentation and a final newline, so the same code always gives the same bytes.

``info.version`` is written as ``API_VERSION`` ("v1"), not the package version the served
``/openapi.json`` carries: the document describes the ``/v1`` contract, which a release that
changes no route leaves as it is, and the version in it would otherwise make the check
(tests/clients/test_typescript.py) fail on every release bump with nothing to regenerate in
the client. Everything else is exactly what the server serves (the test compares the two).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "clients" / "typescript" / "openapi.json"
API_VERSION = "v1"
REGENERATE = ("run `.venv/bin/python scripts/openapi.py`, then `npm run generate` in"
              " clients/typescript")


def normalised(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (as served) with ``info.version`` set to the API's version (module docstring)."""
    return {**doc, "info": {**doc["info"], "version": API_VERSION}}


def render(doc: dict[str, Any]) -> str:
    """The committed form of a document: sorted keys, so dict order never shows in a diff."""
    return json.dumps(normalised(doc), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def build_document() -> dict[str, Any]:
    """The OpenAPI document of the REST API, as the current code serves it."""
    # Imported here: the script's --help must not pay for FastAPI and the engine.
    from clawmemory import Memory, Settings
    from clawmemory.interfaces.rest import Service, build_app

    settings = Settings(embedder={"provider": "none"})
    with tempfile.TemporaryDirectory(prefix="clawmem-openapi-") as where, \
            Memory.open(Path(where) / "openapi.db", settings=settings) as mem:
        gate = build_app(Service(mem, None, mem.settings.server, True),
                         host="127.0.0.1", port=8765)
        doc: dict[str, Any] = gate.app.openapi()  # type: ignore[attr-defined]
        return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed document instead of writing it")
    parser.add_argument("--output", type=Path, default=DOCUMENT)
    args = parser.parse_args(argv)
    text = render(build_document())
    if args.check:
        current = args.output.read_text("utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date: {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
