"""The closed set of outcomes a case can have on a device, and the one function that decides them.

A launch ends in an :class:`Outcome` (it ran to the end, faulted, spent its step budget, hung,
...). :func:`decide` turns the outcomes of a cell's runs, and what the expectations file says
of the cell, into its :class:`Status`; nothing else chooses a status. Each status carries its
meaning, its colour in the reports and whether it turns CI red, so the engine, the pytest
plugin and the reports read them from here.
"""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from warpboard.translator import abi

RESULTS_VERSION = 2
READABLE_VERSIONS = (1, 2)    # version 1: no translator; every device cell is the default's


class Status(str, enum.Enum):
    """What a scoreboard cell shows, from green to red (the order of the reports' legend)."""

    def __new__(cls, label: str, is_failure: bool, meaning: str) -> "Status":
        member = str.__new__(cls, label)
        member._value_ = label
        member.is_failure = is_failure    # whether this outcome should turn a CI job red
        member.meaning = meaning          # one phrase for the reports' legend
        return member

    def __str__(self) -> str:
        return self.value

    PASS = "PASS", False, "matches the expected buffers"
    XFAIL = "XFAIL", False, "fails, as the expectations file says"
    UNSUPPORTED = "UNSUPPORTED", False, "instruction or feature missing"
    PENDING = "PENDING", False, "ran to the end; no expected words yet (record-truth)"
    XPASS = "XPASS", True, "passes, though expected to fail"
    FLAKY = "FLAKY", False, "failed, then passed on retry (or differed between repeats)"
    FAIL = "FAIL", True, "buffers differ"
    LIVELOCK = "LIVELOCK", True, "step budget spent"
    FAULT = "FAULT", True, "access outside every buffer"
    TIMEOUT = "TIMEOUT", True, "killed by the watchdog"
    DEVICE_LOST = "DEVICE_LOST", True, "the driver lost the device (VK_ERROR_DEVICE_LOST) in this cell"
    CRASH = "CRASH", True, "worker process died"
    ERROR = "ERROR", True, "anything else"


class Outcome(str, enum.Enum):
    """How one launch of a case ended, before it is judged.

    Each outcome names the status it becomes (``OK`` becomes PASS or FAIL by the buffers) and,
    where the shader reports it, the code the shader writes into the ctrl buffer
    (:mod:`translator.abi`).
    """

    def __new__(cls, name: str, status: Status | None, shader_code: int | None) -> "Outcome":
        member = str.__new__(cls, name)
        member._value_ = name
        member.status = status
        member.shader_code = shader_code
        return member

    def __str__(self) -> str:
        return self.value

    OK = "ok", None, abi.OK                           # ran to the end: compare the buffers
    FAULT = "fault", Status.FAULT, abi.FAULT          # a load or store outside every buffer
    LIVELOCK = "livelock", Status.LIVELOCK, abi.LIVELOCK  # the step budget was spent
    BAD_PC = "bad-pc", Status.ERROR, abi.BAD_PC       # a jump to a pc that starts no block
    NOT_WARPS = "subgroups-not-warps", Status.ERROR, abi.NOT_WARPS  # warp-wide subgroups missing
    UNSUPPORTED = "unsupported", Status.UNSUPPORTED, None  # an opcode or feature is missing
    UNCHECKED = "unchecked", Status.PENDING, None     # ran to the end, but the case has no expected words
    TIMEOUT = "timeout", Status.TIMEOUT, None         # the fence or the watchdog ran out
    DEVICE_LOST = "device-lost", Status.DEVICE_LOST, None  # the driver lost the device: the next cell gets a new one
    CRASH = "crash", Status.CRASH, None               # the worker process died
    ERROR = "error", Status.ERROR, None               # anything else (translator error, exception)

    @classmethod
    def from_shader(cls, code: int) -> "Outcome":
        """The outcome a ctrl-buffer status code stands for (an unknown code is an ERROR)."""
        return next((o for o in cls if o.shader_code == code), cls.ERROR)


@dataclass(frozen=True)
class Run:
    """One launch as :func:`decide` sees it: its outcome and, when it ran to the end, how many
    words differ and which (``(buffer, index, actual)`` of the listed ones: tells repeats apart)."""
    outcome: Outcome
    mismatch_count: int = 0
    differing: tuple = ()


def decide(runs: Run | Iterable[Run], expected: "Status | bool | None" = None) -> Status:
    """The one place a cell's runs and its expectation become its status.

    A run that ends ``OK`` is PASS, or FAIL when any word differs; any other outcome is the
    status it names. Repeats that disagree (status or differing words) are FLAKY. Last, a cell
    the expectations file lists (``expected``: the failing status it names, True for FAIL)
    becomes XFAIL when it ends that way and XPASS when it passes.
    """
    runs = [runs] if isinstance(runs, Run) else list(runs)
    if not runs:
        raise ValueError("decide needs at least one run")
    judged = {(_judge(run), run.differing) for run in runs}
    status = Status.FLAKY if len(judged) > 1 else _judge(runs[0])
    return apply_expectation(status, expected)


def _judge(run: Run) -> Status:
    if run.outcome is Outcome.OK:
        return Status.FAIL if run.mismatch_count else Status.PASS
    return run.outcome.status


@dataclass
class Mismatch:
    """One word that differs: where it is and what it should have been."""
    buffer: str
    index: int
    expected: int
    actual: int
    thread: int | None = None
    warp: int | None = None
    lane: int | None = None

    def describe(self) -> str:
        where = f"{self.buffer}[{self.index}]"
        if self.thread is not None:
            where = f"thread {self.thread} (warp {self.warp} lane {self.lane}) {where}"
        return f"{where}: expected {self.expected:#x}, got {self.actual:#x}"


@dataclass
class CaseResult:
    """The outcome of one case on one device (one scoreboard cell)."""
    case: str
    device: str
    status: Status
    message: str = ""
    mismatches: list[Mismatch] = field(default_factory=list)
    mismatch_count: int = 0
    turns: int | None = None
    steps: int | None = None
    mode: str | None = None
    time_s: float | None = None
    run_s: float | None = None      # the launch's own time: the device's timestamps, or the host's around it
    run_clock: str | None = None    # which: "device" or "host"
    subgroup_size: int | None = None
    traceback: str | None = None
    outcome: str | None = None      # how the run ended (an :class:`Outcome` value)
    printf: dict | None = None      # what the launch printed (harness.run.printf.Printed.to_json), and
                                    # where the case expects lines, "missing" and "extra" ones
    translator: str | None = None   # which translator made the shader (None: the interpreter ran it)
    finding: str | None = None      # whose failure: "driver" or "translator" (harness.run.findings)

    @property
    def run(self) -> Run:
        """This cell as one run for :func:`decide` (repeats are folded from these)."""
        differing = tuple((m.buffer, m.index, m.actual) for m in self.mismatches)
        if self.printf:
            differing += tuple(("printf", line) for line in self.printf.get("missing", []))
            differing += tuple(("printf", t, line) for t, line in self.printf.get("extra", []))
        return Run(Outcome(self.outcome), self.mismatch_count, differing)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "CaseResult":
        d = dict(d)
        d["status"] = Status(d["status"])
        d["mismatches"] = [Mismatch(**m) for m in d.get("mismatches", [])]
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in known})


def apply_expectation(status: Status, expected: "Status | bool | None") -> Status:
    """Turn a cell listed in a device's expectations file into XFAIL or XPASS: the last step
    of :func:`decide`, and the only code that makes either status.

    ``expected`` is the failing status the list names (True means FAIL): a cell that ends
    that way is XFAIL, one that passes is XPASS, any other outcome stays as it is.
    """
    if expected is None or expected is False:
        return status
    expected = Status.FAIL if expected is True else expected
    if status is Status.PASS:
        return Status.XPASS
    if status is expected:
        return Status.XFAIL
    return status
