"""Per-device lists of cells, as Mesa CI and deqp-runner keep them, beside each other:

- **expectations** (fails), ``ci/expectations.txt``: a listed cell that ends with the status
  named is XFAIL, one that passes is XPASS; a rule whose every cell passed in a run is *stale*
  and is listed at the end of the run;
- **flakes**, ``ci/flakes.txt``: a listed cell that fails is FLAKY (reported, not a failure);
- **skips**, ``ci/skips.txt``: a listed cell is not run (UNSUPPORTED, naming the rule).

A plain text file each; each line ``DEVICE-PATTERN CASE-PATTERN [STATUS] [KEY=PATTERN...]  # reason``
(fnmatch patterns; STATUS only in the expectations, the failing status expected, FAIL by
default: LIVELOCK, FAULT, TIMEOUT, ...). The keys narrow a rule to cells of a translator
(``translator=subgroup-native``), a driver (``driver=llvmpipe``, the driver's name) and its
version (``version=22.3.*``, the first dotted number of the driver's description); a rule
without them holds for every translator, driver and version.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

from warpboard.translator import DEFAULT_STRATEGY

from .results import Status


KEYS = ("translator", "driver", "version")


def driver_version(text: str) -> str:
    """The first dotted number of a driver's description ("Mesa 25.0.7-2~bpo12+1" -> "25.0.7")."""
    found = re.search(r"\d+(?:\.\d+)+", text or "")
    return found.group(0) if found else ""


@dataclass(frozen=True)
class Rule:
    """One line of a list: which cells, how they are expected to end, and why."""
    device: str
    case: str
    status: Status
    reason: str
    where: str              # file:line
    translator: str = "*"
    driver: str = "*"
    version: str = "*"

    def matches(self, case: str, device: str, translator: str = DEFAULT_STRATEGY, driver: str = "", version: str = "") -> bool:
        return all(fnmatch.fnmatchcase(value, pattern) for value, pattern in
                   ((device, self.device), (case, self.case), (translator, self.translator),
                    (driver, self.driver), (version, self.version)))

    @property
    def text(self) -> str:
        keys = "".join(f" {k}={getattr(self, k)}" for k in KEYS if getattr(self, k) != "*")
        return f"{self.device} {self.case}" + (f" {self.status.value}" if self.status is not Status.FAIL else "") + keys


class Expectations:
    """The cells of one list, by rule; the first rule that matches a cell is its rule."""

    def __init__(self, rules: list[Rule]):
        self.rules = rules

    def rule_for(self, case: str, device: str, translator: str = DEFAULT_STRATEGY, driver: str = "",
                 version: str = "") -> Rule | None:
        return next((r for r in self.rules if r.matches(case, device, translator, driver, version)), None)

    def expected(self, case: str, device: str, translator: str = DEFAULT_STRATEGY, driver: str = "",
                 version: str = "") -> Status | None:
        """The failing status listed for a cell, or None when it should pass."""
        rule = self.rule_for(case, device, translator, driver, version)
        return rule.status if rule else None

    def __contains__(self, cell: tuple[str, str]) -> bool:
        return self.rule_for(*cell) is not None

    def __bool__(self) -> bool:
        return bool(self.rules)

    def stale(self, statuses: dict[tuple, Status]) -> list[dict]:
        """The rules whose every cell of a run passed (``statuses``: (case, device[, translator,
        driver, version]) -> status)."""
        out = []
        for rule in self.rules:
            mine = sorted(cell for cell in statuses if self.rule_for(*cell) is rule)
            if mine and all(statuses[c] is Status.XPASS for c in mine):
                out.append({"where": rule.where, "rule": rule.text,
                            "cells": [_cell_text(c) for c in mine]})
        return out


def _cell_text(cell: tuple) -> str:
    case, device, *rest = cell
    translator = rest[0] if rest else DEFAULT_STRATEGY
    return f"{case} on {device}" + ("" if translator == DEFAULT_STRATEGY else f" ({translator})")


def parse_expectations(text: str, source: str = "<expectations>", statuses: bool = True) -> Expectations:
    """A list's rules; ``statuses``: whether a third field (the expected status) is allowed."""
    rules = []
    for n, line in enumerate(text.splitlines(), 1):
        body, _, reason = line.partition("#")
        fields = body.split()
        if not fields:
            continue
        keys = {}
        while fields and "=" in fields[-1]:
            key, _, pattern = fields.pop().partition("=")
            if key not in KEYS or not pattern:
                raise ValueError(f"{source}:{n}: unknown key {key!r} (keys: {', '.join(KEYS)})")
            keys[key] = pattern
        shape = ("DEVICE-PATTERN CASE-PATTERN [STATUS]" if statuses else "DEVICE-PATTERN CASE-PATTERN") + " [KEY=PATTERN...]"
        if len(fields) not in ((2, 3) if statuses else (2,)):
            raise ValueError(f"{source}:{n}: expected '{shape}', got {line.strip()!r}")
        try:
            status = Status(fields[2]) if len(fields) == 3 else Status.FAIL
        except ValueError:
            raise ValueError(f"{source}:{n}: unknown status {fields[2]!r}") from None
        rules.append(Rule(fields[0], fields[1], status, reason.strip(), f"{source}:{n}", **keys))
    return Expectations(rules)


def load_expectations(path: str | Path, statuses: bool = True) -> Expectations:
    return parse_expectations(Path(path).read_text(), str(path), statuses)
