"""Per-device lists of cells, as Mesa CI and deqp-runner keep them, beside each other:

- **expectations** (fails), ``ci/expectations.txt``: a listed cell that ends with the status
  named is XFAIL, one that passes is XPASS; a rule whose every cell passed in a run is *stale*
  and is listed at the end of the run;
- **flakes**, ``ci/flakes.txt``: a listed cell that fails is FLAKY (reported, not a failure);
- **skips**, ``ci/skips.txt``: a listed cell is not run (UNSUPPORTED, naming the rule).

A plain text file each; each line ``DEVICE-PATTERN CASE-PATTERN [STATUS]  # reason`` (fnmatch
patterns; STATUS only in the expectations, the failing status expected, FAIL by default:
LIVELOCK, FAULT, TIMEOUT, ...).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from ..run.results import Status


@dataclass(frozen=True)
class Rule:
    """One line of a list: which cells, how they are expected to end, and why."""
    device: str
    case: str
    status: Status
    reason: str
    where: str              # file:line

    def matches(self, case: str, device: str) -> bool:
        return fnmatch.fnmatchcase(device, self.device) and fnmatch.fnmatchcase(case, self.case)

    @property
    def text(self) -> str:
        return f"{self.device} {self.case}" + (f" {self.status.value}" if self.status is not Status.FAIL else "")


class Expectations:
    """The cells of one list, by rule; the first rule that matches a cell is its rule."""

    def __init__(self, rules: list[Rule]):
        self.rules = rules

    def rule_for(self, case: str, device: str) -> Rule | None:
        return next((r for r in self.rules if r.matches(case, device)), None)

    def expected(self, case: str, device: str) -> Status | None:
        """The failing status listed for a cell, or None when it should pass."""
        rule = self.rule_for(case, device)
        return rule.status if rule else None

    def __contains__(self, cell: tuple[str, str]) -> bool:
        return self.rule_for(*cell) is not None

    def __bool__(self) -> bool:
        return bool(self.rules)

    def stale(self, statuses: dict[tuple[str, str], Status]) -> list[dict]:
        """The rules whose every cell of a run (``statuses``: (case, device) -> status) passed."""
        out = []
        for rule in self.rules:
            mine = sorted(cell for cell in statuses if self.rule_for(*cell) is rule)
            if mine and all(statuses[c] is Status.XPASS for c in mine):
                out.append({"where": rule.where, "rule": rule.text,
                            "cells": [f"{case} on {device}" for case, device in mine]})
        return out


def parse_expectations(text: str, source: str = "<expectations>", statuses: bool = True) -> Expectations:
    """A list's rules; ``statuses``: whether a third field (the expected status) is allowed."""
    rules = []
    for n, line in enumerate(text.splitlines(), 1):
        body, _, reason = line.partition("#")
        fields = body.split()
        if not fields:
            continue
        shape = "DEVICE-PATTERN CASE-PATTERN [STATUS]" if statuses else "DEVICE-PATTERN CASE-PATTERN"
        if len(fields) not in ((2, 3) if statuses else (2,)):
            raise ValueError(f"{source}:{n}: expected '{shape}', got {line.strip()!r}")
        try:
            status = Status(fields[2]) if len(fields) == 3 else Status.FAIL
        except ValueError:
            raise ValueError(f"{source}:{n}: unknown status {fields[2]!r}") from None
        rules.append(Rule(fields[0], fields[1], status, reason.strip(), f"{source}:{n}"))
    return Expectations(rules)


def load_expectations(path: str | Path, statuses: bool = True) -> Expectations:
    return parse_expectations(Path(path).read_text(), str(path), statuses)
