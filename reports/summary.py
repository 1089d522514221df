"""The board at a glance: translators x devices, then case families x columns, as counts.

A visitor comes to compare translators on drivers: which is right where, and by how much. The
overview answers it on one screen, before any list of cells:

- :func:`overview`: one row per translator (the interpreter as ``reference``), one column per
  device, each cell a :class:`Tally` of the translator's cells on that device;
- :func:`families`: one row per case family (a case id's first folder, the library's layout),
  one column per board column, each cell a :class:`Tally` of the family's cases there.

- :func:`speed`: per translator and device, the geometric mean of its launch times over the
  reference translator's (``turns``) on the same device, over the cases both pass.

A tally sorts statuses into what a reader weighs differently: ``passed`` (PASS), ``expected``
(XFAIL: failing as the expectations file says), ``flaky`` (FLAKY), ``wrong`` (every status that
turns CI red: FAIL, FAULT, LIVELOCK, TIMEOUT, CRASH, DEVICE_LOST, ERROR, XPASS), ``skipped``
(UNSUPPORTED, PENDING: not run by that translator or device) and ``missing`` (no cell).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from . import collect
from warpboard.harness.run.results import Status

REFERENCE = "reference"
EXPECTED = {Status.XFAIL.value}
SKIPPED = {Status.UNSUPPORTED.value, Status.PENDING.value}


@dataclass
class Tally:
    """How a group of cells ended, in the reader's classes (see the module docstring)."""
    passed: int = 0
    expected: int = 0
    flaky: int = 0
    wrong: int = 0
    skipped: int = 0
    missing: int = 0
    statuses: dict[str, int] = field(default_factory=dict)

    def add(self, status: str) -> None:
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if status == collect.MISSING:
            self.missing += 1
        elif status == Status.PASS.value:
            self.passed += 1
        elif status in EXPECTED:
            self.expected += 1
        elif status == Status.FLAKY.value:
            self.flaky += 1
        elif status in SKIPPED:
            self.skipped += 1
        elif collect.is_failure(status):
            self.wrong += 1
        else:
            self.expected += 1

    @property
    def ran(self) -> int:
        """Cells that ran to a verdict (not skipped, not missing)."""
        return self.passed + self.expected + self.flaky + self.wrong

    @property
    def total_seen(self) -> int:
        """Cells of any kind, missing ones aside."""
        return self.ran + self.skipped

    def text(self) -> str:
        """``passed/ran`` and what else there is, e.g. ``228/231 (2 wrong, 1 xfail; 4 not run)``."""
        extra = [f"{n} {what}" for what, n in (("wrong", self.wrong), ("expected", self.expected),
                                               ("flaky", self.flaky)) if n]
        out = f"{self.passed}/{self.ran}" + (f" ({', '.join(extra)})" if extra else "")
        idle = self.skipped + self.missing
        return out + (f"; {idle} not run" if idle else "")

    def share(self) -> float:
        """The passing share of the cells that ran (0 where none did)."""
        return self.passed / self.ran if self.ran else 0.0


def overview(results: dict[str, Any]) -> tuple[list[str], list[str], dict[tuple[str, str], Tally]]:
    """(translators with ``reference`` last, devices, {(translator, device): Tally})."""
    board = collect.scoreboard(results)
    groups = collect.column_groups(results)
    translators = [t for t, _ in groups]
    devices = collect._unique(d for _, cols in groups for _, d in cols)
    tallies: dict[tuple[str, str], Tally] = {}
    for translator, cols in groups:
        for col, device in cols:
            tally = tallies.setdefault((translator, device), Tally())
            for status in board[col]:
                tally.add(status)
    translators = [t for t in translators if t != collect.REFERENCE] + \
        [t for t in translators if t == collect.REFERENCE]
    return translators, devices, tallies


def family_of(case_id: str) -> str:
    """A case's family: the first folder of its id (``vote/vote_uni`` -> ``vote``)."""
    return case_id.split("/", 1)[0] if "/" in case_id else "(top)"


def families(results: dict[str, Any]) -> tuple[list[str], list[str], dict[tuple[str, str], Tally]]:
    """(families in case order, board columns, {(family, column): Tally})."""
    board = collect.scoreboard(results)
    names = collect._unique(family_of(c) for c in board.index)
    tallies: dict[tuple[str, str], Tally] = {}
    for col in board.columns:
        for case, status in board[col].items():
            tallies.setdefault((family_of(case), col), Tally()).add(status)
    return names, list(board.columns), tallies


@dataclass
class Speed:
    """A translator's launch times on a device against the reference translator's there: the
    geometric mean of the ratios over the cases both passed, how many, and the clock."""
    ratio: float
    cases: int
    clock: str           # "device" (the driver's timestamps), "host", or "mixed"

    def text(self) -> str:
        return f"×{self.ratio:.2f} over {self.cases}" + ("" if self.clock == "device" else f" ({self.clock} clock)")


def speed(results: dict[str, Any], reference: str = "turns") -> tuple[list[str], list[str], dict[tuple[str, str], Speed]]:
    """(translators, devices, {(translator, device): Speed}) against ``reference`` on the same
    device: each case where both cells PASS with a launch time counts once."""
    times: dict[tuple[str, str], dict[str, tuple[float, str]]] = {}
    for r in results.get("results", []):
        translator = collect.translator_of(r)
        if translator is None or r.get("status") != Status.PASS.value or not r.get("run_s"):
            continue
        times.setdefault((translator, r["device"]), {})[r["case"]] = (r["run_s"], r.get("run_clock") or "host")
    translators = [t for t in collect.translator_ids(results)]
    devices = [d for d in collect.device_ids(results) if d != collect.INTERP]
    out = {}
    for t in translators:
        for d in devices:
            mine, base = times.get((t, d), {}), times.get((reference, d), {})
            both = [c for c in mine if c in base]
            if not both:
                continue
            logs = [math.log(mine[c][0] / base[c][0]) for c in both]
            clocks = {mine[c][1] for c in both} | {base[c][1] for c in both}
            out[(t, d)] = Speed(math.exp(sum(logs) / len(logs)), len(both), clocks.pop() if len(clocks) == 1 else "mixed")
    return translators, devices, out


def over_chip(results: dict[str, Any]) -> dict[tuple[str, str], Speed]:
    """{(translator, device): Speed} of launch time over the chip's own time for the case
    (``provenance.chip_ms``, which ``warpboard capture`` records from CUPTI), on NVIDIA's
    devices only: a CPU's time over a GPU's says nothing of the translation."""
    chip = {c["id"]: c["provenance"]["chip_ms"] / 1e3 for c in results.get("cases", [])
            if isinstance((c.get("provenance") or {}).get("chip_ms"), (int, float))}
    nvidia = {d["id"] for d in results.get("devices", [])
              if "nvidia" in " ".join(str(d.get(k, "")) for k in ("id", "name", "driver_name")).lower()}
    found: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for r in results.get("results", []):
        translator = collect.translator_of(r)
        if translator is None or r.get("status") != Status.PASS.value or not r.get("run_s") \
                or r["case"] not in chip or r["device"] not in nvidia:
            continue
        found.setdefault((translator, r["device"]), []).append(
            (math.log(r["run_s"] / chip[r["case"]]), r.get("run_clock") or "host"))
    return {k: Speed(math.exp(sum(v for v, _ in vs) / len(vs)), len(vs),
                     vs[0][1] if len({c for _, c in vs}) == 1 else "mixed") for k, vs in found.items()}


def speed_table(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of launch time over ``turns`` per translator and device, and over the
    chip's own time where cases carry one (no rows where there is neither)."""
    translators, devices, found = speed(results)
    chip = over_chip(results)

    def cell(t, d):
        parts = ([found[(t, d)].text()] if (t, d) in found and t != "turns" else []) + \
                ([f"chip {chip[(t, d)].text()}"] if (t, d) in chip else [])
        return "; ".join(parts) or "—"
    rows = [[t] + [cell(t, d) for d in devices] for t in translators]
    return (["translator"] + devices, rows) if chip or any(t != "turns" for t, _ in found) else ([], [])


__all__ = ["Tally", "Speed", "speed_table", "overview", "families", "speed", "over_chip", "family_of", "REFERENCE"]
