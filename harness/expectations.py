"""Per-device expected failures, like Mesa CI's fails lists.

A plain text file; each line ``DEVICE-PATTERN CASE-PATTERN [# reason]`` (fnmatch patterns,
``#`` starts a comment). A listed cell that fails is XFAIL, one that passes is XPASS.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path


class Expectations:
    """The set of (case, device) cells expected to fail."""

    def __init__(self, rules: list[tuple[str, str, str]]):
        self.rules = rules

    def __contains__(self, cell: tuple[str, str]) -> bool:
        case, device = cell
        return any(fnmatch.fnmatchcase(device, d) and fnmatch.fnmatchcase(case, c) for d, c, _ in self.rules)

    def __bool__(self) -> bool:
        return bool(self.rules)


def parse_expectations(text: str, source: str = "<expectations>") -> Expectations:
    rules = []
    for n, line in enumerate(text.splitlines(), 1):
        body, _, reason = line.partition("#")
        fields = body.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise ValueError(f"{source}:{n}: expected 'DEVICE-PATTERN CASE-PATTERN', got {line.strip()!r}")
        rules.append((fields[0], fields[1], reason.strip()))
    return Expectations(rules)


def load_expectations(path: str | Path, device_ids: list[str] | None = None) -> Expectations:
    return parse_expectations(Path(path).read_text(), str(path))
