"""The one engine behind ``warpboard run`` and the pytest plugin.

A case on a device becomes exactly one :class:`CaseResult`: translation errors, faults,
livelocks, hangs and worker crashes are statuses, never exceptions that stop the run. Each
device configuration runs in its own worker process (see :mod:`harness.run.worker`).
"""
from __future__ import annotations

import contextlib
import datetime
import os
import platform
import signal
import socket
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version

from warpboard.translator import TranslatorError, UnsupportedInstruction, workgroup_bytes

from . import translators
from .expectations import Expectations, driver_version
from ..case.model import BrokenCase, Case, CaseError
from . import compare, findings, printf
from .dispatch import prepare, run_interpreter, run_vulkan
from .results import RESULTS_VERSION, CaseResult, Outcome, Run, Status, decide
from . import devices
from .worker import Worker, cached_device, forget_device

INTERP = "interp"
INTERP_DEVICE = {"id": INTERP, "name": "CPU reference interpreter", "driver_name": "warpboard",
                 "driver_info": "translator.interp", "api_version": "", "subgroup_size": 32}
WORKER_OUTCOME = {"timeout": Outcome.TIMEOUT, "crash": Outcome.CRASH}   # a worker reply's kind
# harness.vk's errors that end a cell with an outcome of its own (by name: the parent never imports Vulkan)
VULKAN_OUTCOME = {"VkTimeout": Outcome.TIMEOUT, "VkDeviceLost": Outcome.DEVICE_LOST}
# outcomes after which the worker's device cannot be trusted: the next cell gets a new worker process
FRESH_WORKER_AFTER = (Outcome.TIMEOUT.value, Outcome.DEVICE_LOST.value)


COST_FACTOR = 4                     # a case's watchdog: this many times its recorded cost ...


@dataclass
class Options:
    timeout_s: float = 60.0         # ... but never less than this
    kill_after_s: float = 10.0      # a worker still busy this long past its cell's watchdog is killed: TIMEOUT
    budget: int | None = None       # step budget override
    mode: str | None = None         # force "free" or "turns"
    retries: int = 1                # a failing cell runs again this often; failed, then passed: FLAKY
    costs: dict[str, dict[str, float]] = field(default_factory=dict)   # case -> device -> seconds (ci/costs.json)
    target: str = "warpboard.harness.run.engine:worker_run"   # what the worker calls (tests inject failures here)
    translators: tuple[dict, ...] = ({"name": translators.DEFAULT},)   # harness.run.translators.parse's specs

    def timeout_for(self, case_id: str, device_id: str = "") -> float:
        """The watchdog of one cell: COST_FACTOR times the case's recorded cost on that device
        (on a device without a record, its slowest recorded one), at least timeout_s."""
        recorded = self.costs.get(case_id) or {}
        cost = recorded.get(device_id, max(recorded.values(), default=0.0))
        return max(self.timeout_s, COST_FACTOR * cost)

    def for_worker(self, case_id: str = "", device_id: str = "") -> dict:
        return {"timeout_s": self.timeout_for(case_id, device_id), "budget": self.budget, "mode": self.mode}


@dataclass
class Lists:
    """The cell lists of a run (harness.run.expectations): fails, flakes and skips."""
    expectations: Expectations | None = None
    flakes: Expectations | None = None
    skips: Expectations | None = None
    drivers: dict[str, tuple[str, str]] = field(default_factory=dict)   # device -> (driver name, version)

    def key(self, case: str, device: str, translator: str | None) -> tuple:
        """What a rule is matched on: (case, device, translator, driver, driver version)."""
        return (case, device, translator or translators.DEFAULT, *self.drivers.get(device, ("", "")))

    def expected(self, case: str, device: str, translator: str | None = None) -> Status | None:
        return self.expectations.expected(*self.key(case, device, translator)) if self.expectations else None

    def rule(self, which: str, case: str, device: str, translator: str | None):
        rules = getattr(self, which)
        return rules.rule_for(*self.key(case, device, translator)) if rules else None


def run_case(case: Case, device_id: str, device=None, options: Options | None = None,
             translator: dict | None = None) -> CaseResult:
    """Run one case on one device (an open Vulkan device, or None for the interpreter) with
    one translator (a spec of harness.run.translators.parse; None: the default)."""
    options = options or Options()
    start = time.perf_counter()
    name = None if device is None else (translator or {}).get("name", translators.DEFAULT)
    result = CaseResult(case.id, device_id, Status.ERROR, outcome=Outcome.ERROR.value, translator=name)
    beyond = device_limit(case, device.info) if device is not None else None
    try:
        if beyond:
            raise _BeyondDevice(beyond)
        prep = prepare(case, options.budget)
        if device is None:
            raw = run_interpreter(prep)
        else:
            shader = translators.load(translator).translate(prep, device.info, options.mode)
            beyond = shader_limit(shader.spirv, device.info)
            if beyond:
                raise _BeyondDevice(beyond)
            raw = run_vulkan(device, prep, shader, timeout_s=options.timeout_s)
        _record(case, raw, result)
        if device is not None:
            _retime(device, prep, shader, options, result)
    except (UnsupportedInstruction, _BeyondDevice) as exc:
        result.outcome, result.message = Outcome.UNSUPPORTED.value, str(exc)
    except (TranslatorError, CaseError) as exc:
        result.outcome, result.message = Outcome.ERROR.value, str(exc)
    except Exception as exc:  # noqa: BLE001 - every failure is a cell, with its traceback
        result.outcome = VULKAN_OUTCOME.get(type(exc).__name__, Outcome.ERROR).value
        result.message = f"{type(exc).__name__}: {exc}"
        if result.outcome == Outcome.DEVICE_LOST.value:
            result.message += "; this cell only: the next cell runs on a new device"
        result.traceback = traceback.format_exc()
    result.status = decide(result.run)
    result.time_s = time.perf_counter() - start
    return result


class _BeyondDevice(Exception):
    """The case's launch is more than the device can hold (an UNSUPPORTED cell)."""


def device_limit(case: Case, info) -> str | None:
    """What of the case's launch the device cannot hold (block size, block count, buffer size),
    or None: such a cell is UNSUPPORTED on that device. Shared memory is checked on the
    translated module (:func:`shader_limit`): only a kernel that uses it declares it."""
    block, most = case.block, tuple(info.max_workgroup_size)
    if case.threads_per_block > info.max_workgroup_invocations or any(b > m for b, m in zip(block, most)):
        return (f"block {list(block)} exceeds the device's limits ({info.max_workgroup_invocations} "
                f"invocations, {list(most)} per dimension)")
    if any(g > m for g, m in zip(case.grid, info.max_workgroup_count)):
        return f"grid {list(case.grid)} exceeds the device's {list(info.max_workgroup_count)}"
    largest = max(case.buffers, key=lambda b: b.words)
    if largest.words * 4 > info.max_storage_buffer_range:
        return (f"buffer {largest.name!r} of {largest.words * 4} bytes exceeds the device's "
                f"storage buffer range ({info.max_storage_buffer_range})")
    return None


def shader_limit(spirv: bytes, info) -> str | None:
    """What of a translated module the device cannot hold (its workgroup memory), or None.
    Such a module is invalid, and a driver may accept it and lose the device at the dispatch
    (NVIDIA's does): the cell is UNSUPPORTED instead."""
    need = workgroup_bytes(spirv)
    if need > info.max_shared_memory:
        return (f"the shader's workgroup variables take {need} bytes (the kernel's shared memory and "
                f"the translator's own); the device has {info.max_shared_memory}")
    return None


RETIME_S = 0.5
"""A passing cell whose launch took less than this is launched again for its time: lavapipe
compiles a shader at its first dispatch, inside the device's timestamps, and a short launch's
time is then mostly the compile. A longer launch keeps its own time (the compile is a small
part of it, and a second launch would double the cell)."""


def _retime(device, prep, shader, options, result: CaseResult) -> None:
    """The cell's time from a second launch, where :data:`RETIME_S` says; the first's where the
    second fails (its words were judged on the first)."""
    if result.outcome != Outcome.OK.value or result.run_s is None or result.run_s >= RETIME_S:
        return
    try:
        again = run_vulkan(device, prep, shader, timeout_s=options.timeout_s)
    except Exception:  # noqa: BLE001 - the cell keeps its first launch's time
        return
    clock = "device" if "gpu_s" in again.timings else "host"
    if clock == result.run_clock and again.outcome is Outcome.OK:
        result.run_s = again.timings["gpu_s" if clock == "device" else "run_s"]


def _record(case: Case, raw, result: CaseResult) -> None:
    """Copy what a launch reported into its cell, comparing the buffers when it ran to the end."""
    result.mode = raw.mode
    result.turns = raw.counters.get("turns")
    result.steps = raw.counters.get("steps")
    result.outcome = raw.outcome.value
    if "gpu_s" in raw.timings or "run_s" in raw.timings:
        clock = "device" if "gpu_s" in raw.timings else "host"
        result.run_s, result.run_clock = raw.timings["gpu_s" if clock == "device" else "run_s"], clock
    lines = printf.printed(raw.printf, raw.memory().string) if raw.printf is not None else None
    if lines is not None:
        result.printf = lines.to_json()
    if raw.outcome is not Outcome.OK:
        result.message = raw.detail
        return
    if case.provenance.get("expected") == "pending":      # nothing to compare: not a PASS
        result.outcome = Outcome.UNCHECKED.value
        result.message = "no expected words yet (provenance pending): run warpboard record-truth"
        return
    found = compare.compare(case, raw.buffers)
    result.mismatches, result.mismatch_count = found.listed, found.total
    result.message = found.summary()
    if case.printf_expected is not None:
        diff = printf.compare_lines(case.printf_expected, lines or printf.Printed())
        extra = [[thread, line] for thread, line in diff.extra]
        result.printf = {**(result.printf or {}), "missing": diff.missing, "extra": extra}
        if diff.count:
            result.mismatch_count += diff.count
            result.message = "; ".join(m for m in (result.message, diff.describe()) if m)
    elif lines is not None and lines.dropped:
        result.message = "; ".join(m for m in (result.message, f"printf: {lines.dropped} calls found "
                                                f"the printf buffer full") if m)


# ------------------------------------------------------------------ in the worker process
def worker_run(case: Case, device_index: int | None, device_id: str,
               options: dict, translator: dict | None = None) -> dict:
    """Worker target: run the case (loaded once, by the parent, and sent whole) on this
    process's device with the translator, and return the cell."""
    device = None
    if device_index is not None:
        device = cached_device(device_index)
    result = run_case(case, device_id, device, Options(**options), translator)
    if device is not None:
        result.subgroup_size = device.info.subgroup_size
        if device.unusable:
            forget_device(device_index)     # a caller that keeps this process gets a new device next
    return result.to_json()


# ------------------------------------------------------------------ the matrix
@dataclass
class _Stop:
    """Ctrl-C for a running matrix: the flag the columns check and the workers to kill."""
    event: threading.Event = field(default_factory=threading.Event)
    workers: list = field(default_factory=list)

    def stop(self) -> None:
        self.event.set()
        for worker in list(self.workers):
            worker.interrupt()


@contextlib.contextmanager
def _sigint_stops(stop: _Stop):
    """Ctrl-C stops the matrix instead of raising KeyboardInterrupt in the main thread: raised
    there, it can land inside ``concurrent.futures.wait`` between taking a future's lock and
    releasing it, and a column that finishes later then blocks on that lock for ever (the
    once-in-a-while hang of tests/e2e/test_hostile.py's Ctrl-C test). Elsewhere than the
    main thread (no signal handler there), KeyboardInterrupt is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: stop.stop())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_matrix(cases: list[Case], configs: list, interp: bool = True, options: Options | None = None,
               root: str | None = None, lists: Lists | None = None, repeat: int = 1,
               progress=None, broken: list[BrokenCase] = (), jobs: int = 0) -> dict:
    """Every case on every device configuration (and the interpreter); a results document.

    Each column's cases are dealt out to ``jobs`` workers (default: one per CPU), each its own
    process with its own device, and the shares of all columns interleave: a driver compiles
    on the CPU, so one worker per device would leave a many-core machine idle.

    A case file that did not load (``broken``) is an ERROR row on every column. A failing cell
    runs again (``options.retries``); ``lists`` says which cells are expected to fail, are
    known flakes, or are skipped, and the document lists the expectations that no longer
    fail. Ctrl-C (KeyboardInterrupt) stops the workers; the document then holds the cells that
    finished and says ``"partial": true``.
    """
    options, lists = options or Options(), lists or Lists()
    lists = replace(lists, drivers={c.id: (c.info.driver_name, driver_version(c.info.driver_info or c.info.driver_version))
                                    for c in configs})
    columns = [(c.id, c.index, c.env, c.info.subgroup_size, spec) for spec in options.translators for c in configs]
    if interp:
        columns.append((INTERP, None, {}, 32, None))
    jobs = jobs or os.cpu_count() or 1
    stop, per_device = _Stop(), [[] for _ in columns]
    failed_loads = [_broken_result(b, col) for b in broken for col in columns]
    for result in failed_loads if progress else ():
        progress(result)
    shares = [(col, out, cases[i::jobs]) for i in range(jobs) for col, out in zip(columns, per_device)
              if cases[i::jobs]]
    pool = ThreadPoolExecutor(max(1, min(len(shares), jobs)))
    futures = [pool.submit(_run_column, share, col, options, repeat, lists, progress, out, stop)
               for col, out, share in shares]
    with _sigint_stops(stop):
        while wait(futures, timeout=0.5).not_done and not stop.event.is_set():
            pass
        wait(futures)               # stopped: each column returns once its worker is killed
    pool.shutdown()
    for future in futures:
        future.result()             # a bug in a column is a bug, not a cell
    order = {case.id: k for k, case in enumerate(cases)}
    results = [r for column in per_device for r in sorted(column, key=lambda r: order[r.case])]
    results += failed_loads
    devices = [_device_json(c) for c in configs] + ([dict(INTERP_DEVICE)] if interp else [])
    doc = document(cases, devices, results, broken, partial=stop.event.is_set(),
                   translators=[spec["name"] for spec in options.translators])
    doc["run"] = {"root": root, "mode": options.mode, "budget": options.budget, "timeout_s": options.timeout_s,
                  "retries": options.retries, "repeat": repeat}
    if lists.expectations and not stop.event.is_set():
        doc["stale_expectations"] = lists.expectations.stale(
            {lists.key(r.case, r.device, r.translator): r.status for r in results})
    return doc


def _run_column(cases, column, options: Options, repeat: int, lists: Lists,
                progress, out: list, stop: _Stop) -> None:
    """One share of a device's cells, appended to ``out`` as they finish, until done or stopped."""
    device_id, index, env, subgroup, translator = column
    with Worker(env, device_id) as worker:
        stop.workers.append(worker)
        for case in cases:
            result = _skipped(lists, case, column) or _run_cell(worker, case, column, options, repeat,
                                                                 lists, stop)
            if result is None:
                return              # the cell in progress was killed: it did not finish
            if result.subgroup_size is None:
                result.subgroup_size = subgroup
            out.append(result)
            if progress:
                progress(result)


def _run_cell(worker, case: Case, column, options: Options, repeat: int, lists: Lists,
              stop: _Stop) -> CaseResult | None:
    """One cell: its repeats, a retry while it fails, then the flakes list; None if stopped.

    A cell that fails and then passes on a retry is FLAKY (deqp-runner's "Flake"): listed at
    the end of the run, not a failure. One that fails again keeps its first failure."""
    device_id, index, translator = column[0], column[1], column[4]
    name = translator and translator["name"]
    expected, runs = lists.expected(case.id, device_id, name), []
    for _ in range(max(1, repeat)):
        runs.append(run_in_worker(worker, case, device_id, index, options, translator))
        if stop.event.is_set():
            return None
    result = _fold_repeats(runs, expected)
    for _ in range(options.retries):
        if not result.status.is_failure or result.status is Status.XPASS:
            break
        again = run_in_worker(worker, case, device_id, index, options, translator)
        if stop.event.is_set():
            return None
        if not decide(again.run, expected).is_failure:
            result.status = Status.FLAKY
            result.message = (f"failed, then passed on retry ({_statuses(runs, expected)} -> "
                              f"{decide(again.run, expected).value}): {result.message}")
            break
    flake = lists.rule("flakes", case.id, device_id, name)
    if flake is not None and result.status.is_failure:
        result.status = Status.FLAKY
        result.message = f"a known flake ({flake.where}: {flake.reason or 'listed'}): {result.message}"
    return result


def _name(column) -> str | None:
    return column[4]["name"] if column[4] else None


def _skipped(lists: Lists, case: Case, column) -> CaseResult | None:
    rule = lists.rule("skips", case.id, column[0], _name(column))
    if rule is None:
        return None
    return CaseResult(case.id, column[0], Status.UNSUPPORTED, outcome=Outcome.UNSUPPORTED.value,
                      message=f"skipped: {rule.where}: {rule.reason or 'listed'}", translator=_name(column))


def _broken_result(broken: BrokenCase, column) -> CaseResult:
    return CaseResult(broken.id, column[0], Status.ERROR, message=broken.message,
                      outcome=Outcome.ERROR.value, translator=_name(column))


def run_in_worker(worker, case: Case, device_id: str, index: int | None, options: Options,
                  translator: dict | None = None) -> CaseResult:
    """One cell through a worker: a hang or a crash of the worker becomes TIMEOUT or CRASH."""
    translator = translator if index is not None else None     # the interpreter needs none
    name = translator["name"] if translator else None
    reply = worker.call(options.target, case, index, device_id, options.for_worker(case.id, device_id),
                        timeout_s=options.timeout_for(case.id, device_id) + options.kill_after_s,
                        **({"translator": translator} if translator else {}))
    if reply.ok:
        result = CaseResult.from_json(reply.value)
        if result.outcome in FRESH_WORKER_AFTER:
            worker.close()          # the device is lost or may still be busy: the next cell starts afresh
        return result
    outcome = WORKER_OUTCOME.get(reply.kind, Outcome.ERROR)
    result = CaseResult(case.id, device_id, decide(Run(outcome)), message=reply.describe(),
                        traceback=(reply.traceback or "") + reply.stderr_tail, time_s=reply.elapsed_s,
                        outcome=outcome.value, translator=name)
    worker.close()
    return result


def _fold_repeats(runs: list[CaseResult], expected=None) -> CaseResult:
    """One cell from a case's repeated runs on a device and its expectation (see :func:`decide`);
    it keeps the first run's detail."""
    first = replace(runs[0])
    first.status = decide([r.run for r in runs], expected)
    if first.status is Status.FLAKY:
        first.message = f"differs between {len(runs)} runs: {_statuses(runs, expected)}. {first.message}"
    return first


def _statuses(runs: list[CaseResult], expected=None) -> str:
    return ", ".join(sorted({decide(r.run, expected).value for r in runs}))


def _device_json(config) -> dict:
    info = config.info
    return {"id": config.id, "name": info.name, "driver_name": info.driver_name, "driver_info": info.driver_info,
            "driver_version": info.driver_version, "api_version": info.api_version,
            "subgroup_size": info.subgroup_size, "env": dict(config.env),
            "device_uuid": getattr(info, "device_uuid", ""), "driver_uuid": getattr(info, "driver_uuid", ""),
            "probe": devices.probe_facts(info)}


def document(cases: list[Case], devices: list[dict], results: list[CaseResult],
             broken: list[BrokenCase] = (), partial: bool = False, translators: list[str] = ()) -> dict:
    """The results JSON (version 2: each device cell names its translator); ``partial`` when
    the run was stopped before the end."""
    try:
        ours = version("warpboard")
    except PackageNotFoundError:
        ours = "unknown"
    doc = {
        "version": RESULTS_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "warpboard": ours, "host": socket.gethostname(), "platform": platform.platform(),
        "devices": devices,
        "translators": list(translators) or sorted({r.translator for r in results if r.translator}),
        "cases": [{"id": c.id, "path": str(c.path), "tags": list(c.tags), "summary": c.summary,
                   "provenance": dict(c.provenance), "threads": c.total_threads, "warp_size": 32}
                  for c in cases]
        + [{"id": b.id, "path": str(b.path), "tags": [], "summary": "", "provenance": {},
            "threads": 0, "warp_size": 32} for b in broken],
        "results": [r.to_json() for r in results],
    }
    doc["findings"] = findings.attribute(doc["results"])
    if partial:
        doc["partial"] = True
        doc["notes"] = [f"the run was interrupted: {len(results)} cells finished"]
    return doc
