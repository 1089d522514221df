"""Read a results document (version 2, or 1) and shape it for the reports.

A **column** of the board is a translator on a device: its id is the device's for the
default translator (``turns``, all a version-1 document has) and for the interpreter,
``TRANSLATOR:DEVICE`` for any other, so old baselines and expectation lists keep their names.

The engine writes one JSON document per run (see ``harness.run.results``); everything the
reports show is derived here, in one place, so the terminal, markdown and HTML views
agree on what a cell holds, what counts as passing and what changed since a baseline.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import jsonschema
import pandas as pd

from warpboard.harness.run.results import READABLE_VERSIONS, Status

INTERP = "interp"    # the interpreter's device id (harness.run.engine.INTERP)

MISSING = "—"   # a cell with no result: the device did not run that case

DEFAULT_TRANSLATOR = "turns"
REFERENCE = "reference"      # the group of the interpreter's column

FRAME_COLUMNS = [
    "case", "column", "translator", "device", "status", "message", "mismatch_count", "listed_mismatches",
    "turns", "steps", "mode", "time_s", "subgroup_size", "traceback",
]


class ResultsError(ValueError):
    """A results document that cannot be read: wrong version, not JSON, missing keys."""


# --------------------------------------------------------------------------- loading

def load(path: str | Path) -> dict[str, Any]:
    """Read a results JSON file and check that this code understands its version."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read results file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{path}: not UTF-8 (byte offset {exc.start})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise ResultsError(f"{path}: not valid JSON: {type(exc).__name__}: {exc}") from None
    return check(doc, source=str(path))


def check(doc: Any, source: str = "results") -> dict[str, Any]:
    """Validate the shape of a results document in memory; return it unchanged."""
    if not isinstance(doc, dict):
        raise ResultsError(f"{source}: expected a JSON object at the top level")
    version = doc.get("version")
    if version not in READABLE_VERSIONS:
        raise ResultsError(
            f"{source}: results version {version!r} is not supported "
            f"(this warpboard reads versions {', '.join(map(str, READABLE_VERSIONS))}); "
            "re-run `warpboard run` with this version or use a matching warpboard")
    problem = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(doc))
    if problem is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem.absolute_path).lstrip(".")
        raise ResultsError(f"{source}: {where or 'the document'}: {_short(problem.message)}")
    return doc


SCHEMA = json.loads((Path(__file__).with_name("results.schema.json")).read_text())
"""The results document's JSON Schema (reports/results.schema.json), published beside the code."""
_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _short(text: str, limit: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[:limit - 1] + "…"


# --------------------------------------------------------------------------- statuses

def is_failure(status: str) -> bool:
    """Whether a status string turns CI red; unknown strings count as failures,
    a missing cell (MISSING) does not."""
    try:
        return Status(status).is_failure
    except ValueError:
        return status != MISSING


def is_passing(status: str) -> bool:
    """A cell that exists and is green (PASS, XFAIL, UNSUPPORTED)."""
    return status != MISSING and not is_failure(status)


# --------------------------------------------------------------------------- ordering

def _unique(ids: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each id, in order."""
    return list(dict.fromkeys(ids))


def device_ids(results: dict[str, Any]) -> list[str]:
    """Device ids in the order the run lists them, then any only seen in results."""
    listed = [d["id"] for d in results.get("devices", [])]
    return _unique(listed + [r["device"] for r in results.get("results", [])])


def translator_of(cell: dict[str, Any]) -> str | None:
    """A cell's translator: None for the interpreter's, the default where a document names none."""
    if cell["device"] == INTERP:
        return None
    return cell.get("translator") or DEFAULT_TRANSLATOR


def column_id(translator: str | None, device: str) -> str:
    return device if translator in (None, DEFAULT_TRANSLATOR) else f"{translator}:{device}"


def column_of(cell: dict[str, Any]) -> str:
    """The id of the column a cell sits in (see the module's docstring)."""
    return column_id(translator_of(cell), cell["device"])


def translator_ids(results: dict[str, Any]) -> list[str]:
    """The translators in the run's order, then any only seen in results."""
    seen = [translator_of(r) for r in results.get("results", [])]
    return _unique(list(results.get("translators") or []) + [t for t in seen if t])


def column_ids(results: dict[str, Any]) -> list[str]:
    """The board's columns: each translator on each device (in the run's orders), the
    interpreter last, then any column only seen in results."""
    devices = [d for d in device_ids(results) if d != INTERP]
    out = [column_id(t, d) for t in translator_ids(results) for d in devices]
    present = {column_of(r) for r in results.get("results", [])}
    out = [c for c in out if c in present or not results.get("results")]
    if INTERP in device_ids(results):
        out.append(INTERP)
    return _unique(out + [column_of(r) for r in results.get("results", [])])


def column_groups(results: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The columns grouped by translator, in board order: (translator or REFERENCE,
    [(column id, device id)...]), for grouped headers."""
    by_column = {column_of(r): (translator_of(r), r["device"]) for r in results.get("results", [])}
    groups: dict[str, list[tuple[str, str]]] = {}
    for col in column_ids(results):
        translator, device = by_column.get(col, (None if col == INTERP else DEFAULT_TRANSLATOR, col))
        groups.setdefault(translator or REFERENCE, []).append((col, device))
    return list(groups.items())


def case_ids(results: dict[str, Any]) -> list[str]:
    """Case ids in the order the run lists them, then any only seen in results."""
    listed = [c["id"] for c in results.get("cases", [])]
    return _unique(listed + [r["case"] for r in results.get("results", [])])


def devices_by_id(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The device records keyed by id (devices only seen in results get a stub)."""
    known = {d["id"]: d for d in results.get("devices", [])}
    return {i: known.get(i, {"id": i}) for i in device_ids(results)}


def cases_by_id(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The case records keyed by id (cases only seen in results get a stub)."""
    known = {c["id"]: c for c in results.get("cases", [])}
    return {i: known.get(i, {"id": i}) for i in case_ids(results)}


def cells(results: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The result dicts keyed by (case, column); a later duplicate replaces an earlier."""
    return {(r["case"], column_of(r)): r for r in results.get("results", [])}


# --------------------------------------------------------------------------- frames

def frame(results: dict[str, Any]) -> pd.DataFrame:
    """One row per case x device result, with the scalar fields of each result."""
    rows = []
    for r in cells(results).values():
        row = {col: r.get(col) for col in FRAME_COLUMNS}
        row["column"], row["translator"] = column_of(r), translator_of(r)
        row["message"] = r.get("message") or ""
        row["mismatch_count"] = int(r.get("mismatch_count") or 0)
        row["listed_mismatches"] = len(r.get("mismatches") or [])
        rows.append(row)
    return pd.DataFrame(rows, columns=FRAME_COLUMNS)


def scoreboard(results: dict[str, Any]) -> pd.DataFrame:
    """Cases x columns (translator on device) matrix of status strings; cells without a
    result hold MISSING."""
    df = frame(results)
    cases, columns = case_ids(results), column_ids(results)
    if df.empty:
        board = pd.DataFrame(MISSING, index=cases, columns=columns)
    else:
        board = (df.pivot(index="case", columns="column", values="status")
                   .reindex(index=cases, columns=columns)
                   .fillna(MISSING))
    board.index.name = "case"
    board.columns.name = "column"
    return board


# --------------------------------------------------------------------------- summaries

@dataclass
class DeviceSummary:
    """How one column (a translator on a device) did: passes out of the cases it ran, and
    the other statuses."""
    device: str
    passed: int
    total: int
    not_run: int
    counts: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        """A one-line plain-text summary, e.g. ``2/3 pass (FAIL 1)``."""
        others = ", ".join(f"{s} {n}" for s, n in self.counts.items() if s != Status.PASS.value)
        text = f"{self.passed}/{self.total} pass"
        if others:
            text += f" ({others})"
        if self.not_run:
            text += f", {self.not_run} not run"
        return text


def summaries(results: dict[str, Any]) -> list[DeviceSummary]:
    """Per-device pass counts, in device order."""
    board = scoreboard(results)
    out = []
    for dev in board.columns:
        col = board[dev]
        ran = col[col != MISSING]
        counts = {s: int(n) for s, n in ran.value_counts().sort_index().items()}
        out.append(DeviceSummary(device=dev, passed=counts.get(Status.PASS.value, 0),
                                 total=len(ran), not_run=int((col == MISSING).sum()),
                                 counts=counts))
    return out


def failing_cells(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Results worth a closer look, in scoreboard order: red cells and non-PASS cells
    that carry a message, mismatches or a traceback (e.g. XFAIL, UNSUPPORTED)."""
    by_key = cells(results)
    out = []
    for case in case_ids(results):
        for col in column_ids(results):
            r = by_key.get((case, col))
            if r is None or r["status"] == Status.PASS.value:
                continue
            if is_failure(r["status"]) or r.get("message") or r.get("mismatches") \
                    or r.get("traceback"):
                out.append(r)
    return out


# --------------------------------------------------------------------------- baseline

@dataclass
class Change:
    """One cell whose status moved between a baseline run and this one."""
    case: str
    device: str
    before: str
    after: str


@dataclass
class Comparison:
    """What changed against a baseline: red now but green before, the reverse, new cases.

    "Passing" means green in CI terms (PASS, XFAIL, UNSUPPORTED). A cell of a case both
    runs have that had a result and now has none (its device is gone, or the run stopped
    early) is a regression to MISSING; cases gone from the library are listed apart.
    """
    regressions: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    new_cases: list[str] = field(default_factory=list)
    removed_cases: list[str] = field(default_factory=list)
    removed_devices: list[str] = field(default_factory=list)

    def change_for(self, case: str, device: str) -> Change | None:
        """The regression or fix recorded for a cell, if any."""
        for ch in self.regressions + self.fixes:
            if ch.case == case and ch.device == device:
                return ch
        return None


def compare(baseline: dict[str, Any], current: dict[str, Any]) -> Comparison:
    """Regressions, fixes and new cases of ``current`` relative to ``baseline``."""
    old, new = scoreboard(baseline), scoreboard(current)
    cmp = Comparison(
        new_cases=[c for c in new.index if c not in old.index],
        removed_cases=[c for c in old.index if c not in new.index],
        removed_devices=[d for d in old.columns if d not in new.columns])
    for case in new.index:
        if case not in old.index:
            continue
        for dev in old.columns:
            before = old.at[case, dev]
            after = new.at[case, dev] if dev in new.columns else MISSING
            if (is_passing(before) and is_failure(after)) or (before != MISSING and after == MISSING):
                cmp.regressions.append(Change(case, dev, before, after))
            elif is_failure(before) and is_passing(after):
                cmp.fixes.append(Change(case, dev, before, after))
    return cmp


# --------------------------------------------------------------------------- legend

LEGEND_HEADERS = ["device", "name", "driver", "Vulkan", "subgroup", "real", "lanes", "full 32", "Int64",
                  "max. reconv.", "finding"]


def device_legend_rows(results: dict[str, Any]) -> list[list[str]]:
    """Rows of LEGEND_HEADERS for every device: what it is, its reported subgroup size and
    what the subgroup probe found (real size, lane order, full subgroups of 32, Int64, maximal
    reconvergence, a finding where the probe contradicts the driver)."""
    rows = []
    for dev in devices_by_id(results).values():
        driver = " ".join(x for x in (dev.get("driver_name"), dev.get("driver_info") or dev.get("driver_version")) if x)
        p = dev.get("probe") or {}
        rows.append([dev["id"], dev.get("name") or "", driver, dev.get("api_version") or "",
                     str(dev.get("subgroup_size") or ""),
                     *(str(p.get(k, "")) for k in ("real_subgroup", "lanes", "full32", "int64", "max_reconvergence",
                                                    "finding"))])
    return rows
