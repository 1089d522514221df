"""The closed set of outcomes a case can have on a device, decided in one place.

Every cell of the scoreboard holds one of these. Only :func:`apply_expectation` turns
PASS/FAIL into XPASS/XFAIL, and only :func:`decide` turns a raw run into a status.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, asdict
from typing import Any

RESULTS_VERSION = 1


class Status(str, enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    XFAIL = "XFAIL"          # failed, and the device's expectations file says it fails
    XPASS = "XPASS"          # passed although the expectations file says it fails
    FLAKY = "FLAKY"          # differed between repeats (--repeat)
    LIVELOCK = "LIVELOCK"    # the in-shader (or interpreter) step budget was spent
    FAULT = "FAULT"          # a load or store outside every buffer
    TIMEOUT = "TIMEOUT"      # the watchdog killed the worker
    CRASH = "CRASH"          # the worker process died
    UNSUPPORTED = "UNSUPPORTED"  # an instruction or device feature is missing (named)
    ERROR = "ERROR"          # anything else, with its traceback

    @property
    def is_failure(self) -> bool:
        """Whether this outcome should turn a CI job red."""
        return self not in (Status.PASS, Status.XFAIL, Status.UNSUPPORTED)


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
    subgroup_size: int | None = None
    traceback: str | None = None

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
    """Turn a cell listed in a device's expectations file into XFAIL or XPASS.

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
