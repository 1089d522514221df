"""Translators the board scores, by name: the built-in strategies, entry points of the group
``warpboard.translators``, and external commands (``NAME=COMMAND``) speaking the protocol of
:mod:`harness.run.translators.external`.

A translator turns a prepared case into a :class:`translator.Shader` for one device, or
raises :class:`translator.UnsupportedInstruction` with the reason (an UNSUPPORTED cell). The
harness dispatches what it returns with the ABI of ``translator/abi.py`` (README, "Score
your own translator").
"""
from __future__ import annotations

from importlib.metadata import entry_points

from warpboard.translator import DEFAULT_STRATEGY, STRATEGIES

from .builtin import Builtin
from .external import External

DEFAULT = DEFAULT_STRATEGY
"""The translator of a cell that names none (results of version 1, plain ``warpboard run``)."""
GROUP = "warpboard.translators"


def builtin() -> tuple[str, ...]:
    """The strategies the translator has registered: every one is a translator of the board."""
    return tuple(STRATEGIES)


class TranslatorSpecError(ValueError):
    """A translator name or spec that names nothing the board can run."""


def parse(spec: str) -> dict:
    """A ``--translator`` argument: ``NAME`` (built-in or entry point) or ``NAME=COMMAND``."""
    name, sep, command = spec.partition("=")
    name = name.strip()
    if not name or any(c in name for c in " :/"):
        raise TranslatorSpecError(f"translator name {name!r}: give a name without spaces, ':' or '/'")
    if sep:
        if not command.strip():
            raise TranslatorSpecError(f"translator {name!r}: empty command after '='")
        return {"name": name, "command": command.strip()}
    if name not in STRATEGIES and name not in _entry_points():
        known = ", ".join(list(builtin()) + sorted(_entry_points()))
        raise TranslatorSpecError(f"unknown translator {name!r}; known: {known} (or NAME=COMMAND)")
    return {"name": name}


def _entry_points() -> dict:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def load(spec: dict | None):
    """The translator object for a spec of :func:`parse` (None: the default)."""
    spec = spec or {"name": DEFAULT}
    name = spec["name"]
    if "command" in spec:
        return External(name, spec["command"])
    if name in STRATEGIES:
        return Builtin(name)
    found = _entry_points().get(name)
    if found is None:
        raise TranslatorSpecError(f"unknown translator {name!r}")
    made = found.load()
    return made(name) if isinstance(made, type) or not hasattr(made, "translate") else made


__all__ = ["DEFAULT", "GROUP", "builtin", "Builtin", "External", "TranslatorSpecError", "parse", "load"]
