"""The one engine behind ``warpboard run`` and the pytest plugin.

A case on a device becomes exactly one :class:`CaseResult`: translation errors, faults,
livelocks, hangs and worker crashes are statuses, never exceptions that stop the run. Each
device configuration runs in its own worker process (see :mod:`harness.worker`).
"""
from __future__ import annotations

import datetime
import os
import platform
import socket
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from translator.errors import TranslatorError, UnsupportedInstruction

from . import compare
from .cases import Case, load_case
from .results import RESULTS_VERSION, CaseResult, Outcome, Run, Status, decide

INTERP = "interp"
INTERP_DEVICE = {"id": INTERP, "name": "CPU reference interpreter", "driver_name": "warpboard",
                 "driver_info": "translator.interp", "api_version": "", "subgroup_size": 32}
WORKER_OUTCOME = {"timeout": Outcome.TIMEOUT, "crash": Outcome.CRASH}   # a worker reply's kind


@dataclass
class Options:
    timeout_s: float = 60.0         # watchdog per case (the worker is killed past it)
    budget: int | None = None       # step budget override
    mode: str | None = None         # force "free" or "turns"
    target: str = "harness.engine:worker_run"   # what the worker calls (tests inject failures here)

    def for_worker(self) -> dict:
        return {"timeout_s": self.timeout_s, "budget": self.budget, "mode": self.mode}


def run_case(case: Case, device_id: str, device=None, options: Options | None = None) -> CaseResult:
    """Run one case on one device (an open Vulkan device, or None for the interpreter)."""
    from .dispatch import prepare, run_interpreter, run_vulkan, translate_case, warps_are_subgroups
    options = options or Options()
    start = time.perf_counter()
    result = CaseResult(case.id, device_id, Status.ERROR, outcome=Outcome.ERROR.value)
    try:
        prep = prepare(case, options.budget)
        if device is None:
            raw = run_interpreter(prep)
        else:
            shader, _ = translate_case(prep, options.mode, warp_subgroups=warps_are_subgroups(device.info))
            raw = run_vulkan(device, prep, shader, timeout_s=options.timeout_s)
        _record(case, raw, result)
    except UnsupportedInstruction as exc:
        result.outcome, result.message = Outcome.UNSUPPORTED.value, str(exc)
    except TranslatorError as exc:
        result.outcome, result.message = Outcome.ERROR.value, str(exc)
    except Exception as exc:  # noqa: BLE001 - every failure is a cell, with its traceback
        timed_out = type(exc).__name__ == "VkTimeout"
        result.outcome = (Outcome.TIMEOUT if timed_out else Outcome.ERROR).value
        result.message = f"{type(exc).__name__}: {exc}"
        result.traceback = traceback.format_exc()
    result.status = decide(result.run)
    result.time_s = time.perf_counter() - start
    return result


def _record(case: Case, raw, result: CaseResult) -> None:
    """Copy what a launch reported into its cell, comparing the buffers when it ran to the end."""
    result.mode = raw.mode
    result.turns = raw.counters.get("turns")
    result.steps = raw.counters.get("steps")
    result.outcome = raw.outcome.value
    if raw.outcome is not Outcome.OK:
        result.message = raw.detail
        return
    listed, total = compare.mismatches(case, raw.buffers)
    result.mismatches, result.mismatch_count = listed, total
    result.message = compare.summary(listed, total)


# ------------------------------------------------------------------ in the worker process
def worker_run(case_path: str, root: str | None, device_index: int | None, device_id: str,
               options: dict) -> dict:
    """Worker target: load the case, run it on this process's device, return the cell."""
    case = load_case(case_path, root)
    device = None
    if device_index is not None:
        from .worker import cached_device
        device = cached_device(device_index)
    result = run_case(case, device_id, device, Options(**options))
    if device is not None:
        result.subgroup_size = device.info.subgroup_size
    return result.to_json()


# ------------------------------------------------------------------ the matrix
def run_matrix(cases: list[Case], configs: list, interp: bool = True, options: Options | None = None,
               root: str | None = None, expectations=None, repeat: int = 1,
               progress=None) -> dict:
    """Every case on every device configuration (and the interpreter); a results document."""
    options = options or Options()
    columns = [(c.id, c.index, c.env, c.info.subgroup_size) for c in configs]
    if interp:
        columns.append((INTERP, None, {}, 32))
    jobs = max(1, min(len(columns), os.cpu_count() or 1))
    with ThreadPoolExecutor(jobs) as pool:
        per_device = list(pool.map(lambda col: _run_column(cases, col, options, root, repeat, expectations,
                                                           progress), columns))
    results = [r for column in per_device for r in column]
    devices = [_device_json(c) for c in configs] + ([dict(INTERP_DEVICE)] if interp else [])
    return document(cases, devices, results)


def _run_column(cases, column, options: Options, root, repeat: int, expectations,
                progress) -> list[CaseResult]:
    from .worker import Worker
    device_id, index, env, subgroup = column
    out = []
    with Worker(env, device_id) as worker:
        for case in cases:
            runs = [run_in_worker(worker, case, device_id, index, options, root) for _ in range(max(1, repeat))]
            result = _fold_repeats(runs, expectations.expected(case.id, device_id) if expectations else None)
            if result.subgroup_size is None:
                result.subgroup_size = subgroup
            out.append(result)
            if progress:
                progress(result)
    return out


def run_in_worker(worker, case: Case, device_id: str, index: int | None, options: Options,
                  root: str | None = None) -> CaseResult:
    """One cell through a worker: a hang or a crash of the worker becomes TIMEOUT or CRASH."""
    reply = worker.call(options.target, str(case.path), root, index, device_id,
                        options.for_worker(), timeout_s=options.timeout_s + 10)
    if reply.ok:
        result = CaseResult.from_json(reply.value)
        if result.status is Status.TIMEOUT:
            worker.close()          # the device may still be busy: start afresh
        return result
    outcome = WORKER_OUTCOME.get(reply.kind, Outcome.ERROR)
    result = CaseResult(case.id, device_id, decide(Run(outcome)), message=reply.describe(),
                        traceback=(reply.traceback or "") + reply.stderr_tail, time_s=reply.elapsed_s,
                        outcome=outcome.value)
    worker.close()
    return result


def _fold_repeats(runs: list[CaseResult], expected=None) -> CaseResult:
    """One cell from a case's repeated runs on a device and its expectation (see :func:`decide`)."""
    first, seen = runs[0], sorted({r.status.value for r in runs})
    first.status = decide([r.run for r in runs], expected)
    if first.status is Status.FLAKY:
        first.message = f"differs between {len(runs)} runs: {', '.join(seen)}. {first.message}"
    return first


def _device_json(config) -> dict:
    info = config.info
    return {"id": config.id, "name": info.name, "driver_name": info.driver_name, "driver_info": info.driver_info,
            "driver_version": info.driver_version, "api_version": info.api_version,
            "subgroup_size": info.subgroup_size, "env": dict(config.env)}


def document(cases: list[Case], devices: list[dict], results: list[CaseResult]) -> dict:
    """The results JSON (version 1)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        ours = version("warpboard")
    except PackageNotFoundError:
        ours = "unknown"
    return {
        "version": RESULTS_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "warpboard": ours, "host": socket.gethostname(), "platform": platform.platform(),
        "devices": devices,
        "cases": [{"id": c.id, "path": str(c.path), "tags": list(c.tags), "summary": c.summary,
                   "provenance": dict(c.provenance), "threads": c.total_threads, "warp_size": 32}
                  for c in cases],
        "results": [r.to_json() for r in results],
    }
