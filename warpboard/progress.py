"""Progress of a run on standard error: counts, rate and time left. On a terminal a bar (tqdm)
with each failure printed above it as it happens; elsewhere (CI logs) a line every
``every_s`` seconds and at the end, and each failure's line. ``verbose`` prints every cell."""
from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm

from warpboard.reports.render import plain

EVERY_S = 30.0


class Progress:
    """The callback the engine calls with each finished cell (a CaseResult)."""

    def __init__(self, total: int, verbose: bool = False, stream: TextIO | None = None,
                 every_s: float = EVERY_S, tty: bool | None = None):
        self.total, self.verbose, self.every_s = total, verbose, every_s
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.done = self.failed = 0
        self.start = self.last = time.monotonic()
        self.bar = tqdm(total=total, file=self.stream, unit="cell", dynamic_ncols=True,
                        leave=False) if self.tty else None

    def __call__(self, r) -> None:
        self.done += 1
        self.failed += r.status.is_failure
        if self.verbose or r.status.is_failure or r.status.value == "FLAKY":
            self._say(f"[{self.done}/{self.total}] {plain(r.device):14s} {r.status.value:11s} {plain(r.case)}  "
                      f"{plain(_first_line(r.message))}")
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.failed} failed", refresh=False)
            self.bar.update(1)
        elif time.monotonic() - self.last >= self.every_s or self.done == self.total:
            self.last = time.monotonic()
            self._say(self.line())

    def line(self) -> str:
        """``[120/633] 19%, 3.20 cells/s, 2m40s left, 1 failed``."""
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate else 0.0
        pct = 100 * self.done / self.total if self.total else 100.0
        return (f"[{self.done}/{self.total}] {pct:.0f}%, {rate:.2f} cells/s, "
                f"{tqdm.format_interval(left)} left, {self.failed} failed")

    def _say(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""
