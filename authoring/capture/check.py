"""Launches that read or write outside their allocations, which no case can hold.

The chip does not fault on a load or store past the end of an allocation: a program that reads
past one reads whatever memory lies there, one that writes past one changes the next
allocation. A case holds only the allocations the launch's parameters point into, so such a
launch's expected words could never be matched (every column FAULTs). Two checks find them:

- :func:`guard_reason`: the interposer watches the first bytes of the allocation after each one
  the launch was given, when the launch was not given that one too (its "guards"), and notes
  the first byte the launch changed there: a store past the end, seen on the chip, whatever
  the launch's size;
- :func:`replay_reason`: the case, once written, replayed on the CPU reference interpreter,
  where a load or store outside every buffer is a FAULT naming the thread, pc and address;
  :class:`Replays` runs the replays in a worker process, each within a time limit: by default
  (``check="cheap"``) those of launches of at most :data:`CHEAP_THREADS` threads, with
  ``check="full"`` (``warpboard capture --check``) every case.

A replay that ends otherwise (the chip's words or not, a time limit) leaves the case as it is.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from warpboard.harness.case import model
from warpboard.harness.run.engine import run_case
from warpboard.harness.run.results import Status
from warpboard.harness.run.worker import Worker
from .log import Launch

OUTSIDE = "outside its allocations"    # the kind of reason of a launch that reads or writes past them

CHECK_MODES = ("off", "cheap", "full")  # write_cases(check=...): which cases are replayed on the interpreter
CHEAP_THREADS = 65536     # "cheap" (the default): launches of at most this many threads...
CHEAP_SECONDS = 5.0       # ... each replay within this many seconds (past it: the case stays, unchecked)...
CHEAP_TOTAL_SECONDS = 120.0   # ... and no more replays once a capture's have taken this long
FULL_SECONDS = 600.0      # "full" (--check): every case, each within this many seconds


def guard_reason(launch: Launch) -> str | None:
    """A store past the end of an allocation the launch was given, as the interposer's guards
    saw it: bytes of the next allocation, one the launch was not given, that it changed."""
    for g in launch.guards:
        if g.changed >= 0 and g.region < len(launch.regions):
            r = launch.regions[g.region]
            at = g.base + g.changed
            past = at - r.base - r.size
            return (f"writes {OUTSIDE}: the chip changed the byte at 0x{at:x}, {past} byte{'s' * (past != 1)} past "
                    f"the end of region {g.region} ({r.size} bytes at 0x{r.base:x}), in an allocation the "
                    f"launch was not given")
    return None


# the interpreter's words for an access outside every buffer (translator/interp/thread.py)
FAULT_OUTSIDE = re.compile(r"\b(?:global|generic) (load|store|atomic) of \d+ bytes at 0x[0-9a-f]+ outside every buffer")


def replay_reason(path: str | Path, root: str | Path) -> str | None:
    """Why the case at ``path`` (under ``root``) is not a faithful one, from one run on the
    interpreter: it loads ("reads ...") or stores ("writes ...") outside every buffer, i.e.
    outside the allocations its launch's parameters pointed into, the reason quoting the
    fault. None when the replay stays inside them, whether or not it gave the chip's words."""
    result = run_case(model.load_case(Path(path), Path(root)), "interp")
    if result.status is not Status.FAULT or not result.message:
        return None
    first = result.message.splitlines()[0].replace(f"{root}/", "")
    m = FAULT_OUTSIDE.search(first)
    if not m:
        return None
    return f"{'reads' if m.group(1) == 'load' else 'writes'} {OUTSIDE}: {first}"


def _ready() -> bool:
    """A replay worker's first call: it has imported what a replay needs."""
    return True


class Replays:
    """The cases of one capture replayed on the interpreter (:func:`replay_reason`) as they are
    written, in a worker process so that each keeps to its time limit. ``mode`` (``check``):
    "full" (or True) every case, "cheap" those of launches of at most :data:`CHEAP_THREADS`
    threads within :data:`CHEAP_SECONDS` each and :data:`CHEAP_TOTAL_SECONDS` in all, "off" (or
    False) none. A replay that runs past its limit, or whose worker fails, says nothing: the
    case stays, unchecked."""

    def __init__(self, mode: str | bool):
        mode = {True: "full", False: "off"}.get(mode, mode)
        if mode not in CHECK_MODES:
            raise ValueError(f"check must be one of {', '.join(CHECK_MODES)}, not {mode!r}")
        self.mode = mode
        self.spent = 0.0
        self.worker: Worker | None = None

    def __enter__(self) -> "Replays":
        return self

    def __exit__(self, *exc) -> None:
        if self.worker is not None:
            self.worker.close()

    def wanted(self, launch: Launch) -> bool:
        if self.mode == "cheap":
            threads = 1
            for n in (*launch.grid, *launch.block):
                threads *= n
            return threads <= CHEAP_THREADS and self.spent < CHEAP_TOTAL_SECONDS
        return self.mode == "full"

    def check(self, outcome, launch: Launch, root: Path):
        """``outcome`` (a :class:`authoring.capture.cases.Outcome`) once its case, written under
        ``root``, is replayed where wanted: ``checked`` when the replay ran to its end, the
        reason instead of the case (whose file is removed) when it loaded or stored outside."""
        if not outcome.case or not self.wanted(launch):
            return outcome
        if self.worker is None:
            self.worker = Worker(name="capture-check")
        if self.worker.pid is None and not self.worker.call(f"{__name__}:_ready", timeout_s=120).ok:
            return outcome
        path = root / f"{outcome.case}.toml"
        start = time.perf_counter()
        reply = self.worker.call(f"{__name__}:replay_reason", str(path), str(root),
                                 timeout_s=CHEAP_SECONDS if self.mode == "cheap" else FULL_SECONDS)
        self.spent += time.perf_counter() - start
        outcome.checked = reply.ok
        if reply.ok and reply.value:
            path.unlink()
            outcome.case, outcome.reason = None, reply.value
        return outcome
