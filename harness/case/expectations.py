"""Per-device expected failures, like Mesa CI's fails lists.

A plain text file; each line ``DEVICE-PATTERN CASE-PATTERN [STATUS]  # reason`` (fnmatch
patterns; STATUS is the failing status expected, FAIL by default: LIVELOCK, FAULT,
TIMEOUT, ...). A listed cell that ends with that status is XFAIL, one that passes is XPASS.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

from ..run.results import Status


class Expectations:
    """The cells expected to fail, and how."""

    def __init__(self, rules: list[tuple[str, str, Status, str]]):
        self.rules = rules

    def expected(self, case: str, device: str) -> Status | None:
        """The failing status listed for a cell, or None when it should pass."""
        for d, c, status, _ in self.rules:
            if fnmatch.fnmatchcase(device, d) and fnmatch.fnmatchcase(case, c):
                return status
        return None

    def __contains__(self, cell: tuple[str, str]) -> bool:
        return self.expected(*cell) is not None

    def __bool__(self) -> bool:
        return bool(self.rules)


def parse_expectations(text: str, source: str = "<expectations>") -> Expectations:
    rules = []
    for n, line in enumerate(text.splitlines(), 1):
        body, _, reason = line.partition("#")
        fields = body.split()
        if not fields:
            continue
        if len(fields) not in (2, 3):
            raise ValueError(f"{source}:{n}: expected 'DEVICE-PATTERN CASE-PATTERN [STATUS]', got {line.strip()!r}")
        try:
            status = Status(fields[2]) if len(fields) == 3 else Status.FAIL
        except ValueError:
            raise ValueError(f"{source}:{n}: unknown status {fields[2]!r}") from None
        rules.append((fields[0], fields[1], status, reason.strip()))
    return Expectations(rules)


def load_expectations(path: str | Path) -> Expectations:
    return parse_expectations(Path(path).read_text(), str(path))
