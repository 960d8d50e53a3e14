"""spaCy NER (004 ``spacy``), optional: spaCy and a model are imported when the provider is
constructed, never at import time, and a missing one is a ``ConfigError`` that says how to
install it."""

from __future__ import annotations

import importlib.util
from functools import cache
from typing import Any

from clawmemory.entities.base import EntityType, Mention
from clawmemory.errors import ConfigError

__all__ = ["DEFAULT_SPACY_MODEL", "SpacyProvider", "spacy_available", "spacy_missing"]

DEFAULT_SPACY_MODEL = "en_core_web_sm"

# spaCy's OntoNotes labels; numbers, money, times and quantities are not entities worth linking.
LABELS: dict[str, EntityType] = {
    "PERSON": EntityType.PERSON,
    "PER": EntityType.PERSON,
    "ORG": EntityType.ORGANIZATION,
    "GPE": EntityType.LOCATION,
    "LOC": EntityType.LOCATION,
    "FAC": EntityType.LOCATION,
    "PRODUCT": EntityType.PROJECT,
    "DATE": EntityType.DATE,
    "NORP": EntityType.OTHER,
    "EVENT": EntityType.OTHER,
    "WORK_OF_ART": EntityType.OTHER,
    "LAW": EntityType.OTHER,
    "LANGUAGE": EntityType.OTHER,
    "MISC": EntityType.OTHER,
}
CONFIDENCE = 0.8


def _install_hint(model: str) -> str:
    return f"pip install 'clawmemory[spacy]' && python -m spacy download {model}"


def spacy_available(model: str = DEFAULT_SPACY_MODEL) -> bool:
    """Whether spaCy and the model package are installed (nothing is imported)."""
    return spacy_missing(model) is None


def spacy_missing(model: str = DEFAULT_SPACY_MODEL) -> tuple[str, str] | None:
    """What spaCy NER lacks here and the command that installs it, or None when spaCy and the
    model are both installed (nothing is imported). spaCy without its model is the usual case
    after ``pip install spacy``: "spaCy is not installed" would send the user to install what
    they have."""
    if not _installed("spacy"):
        return "spaCy is not installed", _install_hint(model)
    if not _installed(model):
        return (f"spaCy is installed but its model {model} is not",
                f"python -m spacy download {model}")
    return None


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


@cache
def _load(model: str) -> Any:
    """One loaded pipeline per model per process: loading takes seconds."""
    try:
        import spacy
    except ImportError as exc:
        raise ConfigError(
            f"the spaCy NER provider needs spaCy and an English model: {_install_hint(model)}"
        ) from exc
    try:
        # Only the entity recogniser is needed; the parser and lemmatiser cost time.
        return spacy.load(model, disable=["parser", "lemmatizer", "textcat"])
    except OSError as exc:
        raise ConfigError(
            f"the spaCy model {model!r} is not installed: python -m spacy download {model}"
        ) from exc


class SpacyProvider:
    """Entities from a spaCy pipeline. ``nlp`` accepts an already loaded pipeline."""

    name = "spacy"

    def __init__(self, model: str = DEFAULT_SPACY_MODEL, *, nlp: Any = None) -> None:
        self.model = model
        self._nlp = nlp if nlp is not None else _load(model)

    def extract(self, text: str) -> list[Mention]:
        out = []
        for ent in self._nlp(text).ents:
            etype = LABELS.get(str(ent.label_))
            value = str(ent.text)
            if etype is None or not value.strip():
                continue
            start = int(ent.start_char)
            out.append(Mention(value, etype, start, start + len(value), CONFIDENCE, self.name))
        return out
