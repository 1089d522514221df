"""What the subcommands of ``warpboard`` share: the usage error, bounded numeric options,
their limits, and the exit status of an interrupted run."""
from __future__ import annotations

import argparse
from typing import Callable

MAX_TIMEOUT_S = 24 * 3600
MAX_REPEAT = 100
INTERRUPTED = 130                   # the shell's status for a process ended by SIGINT


class UsageError(Exception):
    """A command that cannot run as asked; :func:`main` prints it on one line, exit 2."""


def bounded(kind: type, lo, hi, *, above: bool = False) -> Callable[[str], object]:
    """An argparse type: ``kind`` (int or float) within lo..hi (``above``: strictly above lo)."""
    def parse(text: str):
        value = kind(text)          # a ValueError reads "invalid int value: 'x'"
        if value != value or (value <= lo if above else value < lo) or value > hi:
            raise argparse.ArgumentTypeError(f"{text} is outside {'(' if above else ''}{lo}..{hi}"
                                             f"{')' if above else ''}")
        return value
    parse.__name__ = kind.__name__
    return parse
