"""Where each effective setting came from (``clawmem config show``): the settings sources of
``config.Settings`` evaluated one by one, in their order, each seeing those ranked above it as
pydantic-settings shows them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_settings import InitSettingsSource, TomlConfigSettingsSource

from clawmemory import profiles
from clawmemory.config import (
    Section,
    SectionEnvironment,
    Settings,
    config_path,
    load_settings,
)

__all__ = ["settings_origins"]


def settings_origins(**overrides: Any) -> tuple[Settings, dict[str, str]]:
    """The settings ``load_settings(**overrides)`` builds, and where each value came from, by
    dotted path: "given", a ``CLAWMEM_*`` variable, a profile's variable or file, the config
    file, "profile NAME", or "default" (``clawmem config show``)."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    settings = load_settings(**clean)
    toml = TomlConfigSettingsSource(Settings, toml_file=config_path())
    ranked: list[tuple[str, Any]] = [
        ("given (command line or code)", lambda _: InitSettingsSource(Settings, clean)),
        ("env", lambda _: SectionEnvironment(Settings)),
        ("spec", lambda above: profiles.SpecEnvironment(Settings, toml, above)),
        (f"config file {config_path()}", lambda _: toml),
        (f"profile {settings.profile}", lambda above: profiles.ProfileDefaults(Settings, above)),
    ]
    above: dict[str, Any] = {}
    found: list[tuple[str, Any, dict[str, Any]]] = []
    for label, make in ranked:
        source = make(above)
        values = source()
        found.append((label, source, values))
        above = _merged(values, above)
    origins: dict[str, str] = {}
    for path in _leaves(settings):
        origins[path] = next((_label(label, source, path) for label, source, values in found
                              if profiles.has(values, path)), "default")
    return settings, origins


def _merged(lower: dict[str, Any], higher: dict[str, Any]) -> dict[str, Any]:
    out = dict(lower)
    for key, value in higher.items():
        out[key] = (_merged(out[key], value) if isinstance(value, dict)
                    and isinstance(out.get(key), dict) else value)
    return out


def _leaves(model: BaseModel, prefix: str = "") -> list[str]:
    paths: list[str] = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, Section):
            paths.extend(_leaves(value, f"{prefix}{name}."))
        else:
            paths.append(prefix + name)
    return paths


def _label(label: str, source: Any, path: str) -> str:
    if label == "env":
        return "CLAWMEM_" + "__".join(path.split(".")).upper()
    if isinstance(source, profiles.SpecEnvironment):
        return source.origins.get(path, "the profile's environment")
    return label
