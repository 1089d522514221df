"""A fuzz campaign: build programs into cases, run them on the interpreter and devices, and
sum up per-device agreement with the expected words (the CPU model's, or a GPU's).

Program i of a campaign with seed S has seed S + i; ``shard = (K, N)`` keeps the programs
with i % N == K - 1, so N machines with the same seed, count and knobs split one campaign.
The campaign directory holds the batches' ``.cu`` and ``.sass``, one case per accepted
program and ``campaign.json`` (what was asked and what became of each program).
"""
from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tabulate import tabulate

from warpboard.harness.run import devices
from warpboard.harness.run.engine import run_in_worker
from warpboard.harness.run.results import CaseResult, Status
from warpboard.harness.run.worker import Worker
from . import knobs as knobs_mod
from .build import Built, build_batch
from .generate import generate

INTERP = "interp"


@dataclass
class Plan:
    """What a campaign builds."""
    seed: int = 1
    count: int = 200
    shard: tuple[int, int] = (1, 1)
    knobs_path: str | None = None
    out: Path | None = None

    def seeds(self) -> list[int]:
        k, n = self.shard
        return [self.seed + i for i in range(self.count) if i % n == k - 1]

    def directory(self) -> Path:
        if self.out is not None:
            return Path(self.out)
        k, n = self.shard
        return Path("build/fuzz") / (f"seed{self.seed}-n{self.count}" + (f"-shard{k}of{n}" if n > 1 else ""))


def build(plan: Plan, jobs: int = 0, progress=lambda text: None) -> list[Built]:
    """Generate, model and compile every program of the plan; write campaign.json."""
    knobs = knobs_mod.load(plan.knobs_path)
    out = plan.directory()
    out.mkdir(parents=True, exist_ok=True)
    seeds = plan.seeds()
    built: list[Built] = []
    for start in range(0, len(seeds), knobs.batch):
        programs = [generate(s, knobs) for s in seeds[start:start + knobs.batch]]
        batch = f"batch{start // knobs.batch:04d}"
        built += build_batch(programs, out, batch, jobs)
        progress(f"{batch}: {len(built)}/{len(seeds)} programs built")
    doc = {"seed": plan.seed, "count": plan.count, "shard": list(plan.shard),
           "knobs": str(plan.knobs_path or knobs_mod.DEFAULT_FILE),
           "programs": {b.program.name: {"seed": b.program.seed, "status": b.status, "message": b.message}
                        for b in built}}
    (out / "campaign.json").write_text(json.dumps(doc, indent=1))
    return built


# ---------------------------------------------------------------- running the cases

@dataclass
class Column:
    """A device to run on: the interpreter (index None) or a Vulkan configuration."""
    id: str
    index: int | None = None
    env: dict = field(default_factory=dict)


def run(cases, columns: list[Column], options, jobs: int = 0,
        progress=lambda result: None, stop_after_s: float | None = None) -> list[CaseResult]:
    """Every case on every column. Each column's cases are dealt out to ``jobs`` workers (each
    its own process with its own device), so one device column uses every core it is given:
    a driver compiles a shader on the CPU, whatever the device. The shares of all columns are
    interleaved, so the columns advance together. Past ``stop_after_s`` seconds no worker
    starts another cell: a run with a wall-clock limit still ends with a summary of what ran."""
    jobs = jobs or os.cpu_count() or 1
    deadline = None if stop_after_s is None else time.monotonic() + stop_after_s
    tasks = [(col, cases[i::jobs]) for i in range(jobs) for col in columns if cases[i::jobs]]

    def one(task) -> list[CaseResult]:
        col, chunk = task
        out = []
        with Worker(col.env, col.id) as worker:
            for case in chunk:
                if deadline is not None and time.monotonic() > deadline:
                    break
                result = run_in_worker(worker, case, col.id, col.index, options)
                out.append(result)
                progress(result)
        return out
    with ThreadPoolExecutor(max(1, min(jobs, len(tasks)))) as pool:
        return [r for chunk in pool.map(one, tasks) for r in chunk]


def columns_for(patterns: list[str] | None, interp: bool) -> list[Column]:
    """The interpreter and the Vulkan configurations matching ``patterns`` (none: no device)."""
    cols = [Column(INTERP)] if interp else []
    if patterns:
        cols += [Column(c.id, c.index, dict(c.env)) for c in devices.select(devices.discover(), patterns)]
    return cols


# ---------------------------------------------------------------- the summary

def summarise(built: list[Built], results: list[CaseResult], plan: Plan) -> dict:
    """The campaign's JSON report: model verdicts and, per device, counts and failing cases."""
    seeds = {b.program.name: b.program.seed for b in built}
    doc = {"seed": plan.seed, "count": plan.count, "shard": list(plan.shard),
           "directory": str(plan.directory()), "programs": len(built),
           "cases": sum(b.status == "case" for b in built),
           "rejected_by_model": [{"case": b.program.name, "seed": b.program.seed, "message": b.message}
                                 for b in built if b.status == "rejected"],
           "build_errors": [{"case": b.program.name, "seed": b.program.seed, "message": b.message}
                            for b in built if b.status == "build-error"],
           "devices": {}}
    by_device: dict[str, list[CaseResult]] = {}
    for r in results:
        by_device.setdefault(r.device, []).append(r)
    for device, rs in by_device.items():
        counts = Counter(r.status.value for r in rs)
        failures = {}
        for r in sorted(rs, key=lambda r: seeds.get(r.case, 0)):
            if r.status is not Status.PASS:
                entry = {"case": r.case, "seed": seeds.get(r.case),
                         "message": r.message.splitlines()[0] if r.message else ""}
                if r.status is Status.LIVELOCK:
                    entry["waiting_at"] = waiting_at(plan.directory() / f"{r.case}.sm_86.sass", r.message)
                failures.setdefault(r.status.value, []).append(entry)
        doc["devices"][device] = {"total": len(rs), "not_run": doc["cases"] - len(rs),
                                  "cells": {r.case: r.status.value for r in rs},
                                  "counts": dict(sorted(counts.items())),
                                  "agreement": round(100.0 * counts.get("PASS", 0) / len(rs), 2) if rs else 0.0,
                                  "failures": failures}
    return doc


def waiting_at(listing: Path, message: str) -> list[str]:
    """The instructions at the pcs a LIVELOCK message names (``0x07d0 BSYNC B0``)."""
    match = re.search(r"at pcs ((?:0x[0-9a-f]+(?:, )?)+)", message)
    if not match or not listing.is_file():
        return []
    text = {}
    for line in listing.read_text().splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m:
            text[int(m.group(1), 16)] = m.group(2)
    pcs = [int(pc, 16) for pc in match.group(1).split(", ")]
    return [f"0x{pc:04x} {text.get(pc, '?')}" for pc in pcs]


TABLE_STATUSES = ("PASS", "FAIL", "LIVELOCK", "UNSUPPORTED", "ERROR", "FAULT", "TIMEOUT", "DEVICE_LOST", "CRASH")


def table(doc: dict, markdown: bool = False) -> str:
    """Per-device agreement as a text table (``markdown``: a GitHub table, for a CI comment or a
    page), then the cells not run and the failing cases by status."""
    rows = []
    for device, d in doc["devices"].items():
        c = d["counts"]
        other = d["total"] - sum(c.get(s, 0) for s in TABLE_STATUSES)
        rows.append([device, d["total"], *[c.get(s, 0) for s in TABLE_STATUSES], other, f"{d['agreement']:.1f} %"])
    head = ["device", "cases", *[s if s != "FAIL" else "wrong words" for s in TABLE_STATUSES], "other", "agreement"]
    where = (f"merged from {len(doc['merged_from'])} summaries" if "merged_from" in doc
             else f"shard {doc['shard'][0]}/{doc['shard'][1]}")
    item, code = ("- ", "`") if markdown else ("", "")
    lines = [f"{doc['programs']} of {doc['count']} programs (seed {doc['seed']}, {where}): "
             f"{doc['cases']} cases, {len(doc['rejected_by_model'])} rejected by the CPU model, "
             f"{len(doc['build_errors'])} build errors" + ("\n" if markdown else ""),
             tabulate(rows, headers=head, tablefmt="github" if markdown else "simple") if rows else "(not run)"]
    if markdown:
        lines.append("")
    for device, d in doc["devices"].items():
        if d.get("not_run"):
            lines.append(f"{item}{device}: {d['not_run']} of {doc['cases']} cases not run")
    for b in doc["rejected_by_model"] + doc["build_errors"]:
        lines.append(f"{item}not a case: {b['case']}: {code}{b['message'][:200]}{code}")
    for device, d in doc["devices"].items():
        for status, items in d["failures"].items():
            lines.append(f"{item}{device} {status} ({len(items)}):")
            for f in items:
                lines.append(f"  {item}{f['case']}: {code}{f['message'][:160]}{code}")
                if f.get("waiting_at"):
                    lines.append(f"      waiting at: {code}" + "; ".join(f["waiting_at"]) + code)
    return "\n".join(lines)
