"""Functions the worker tests run inside a Worker child (must be importable there)."""
from __future__ import annotations

import os
import signal
import sys
import time


def add(a: int, b: int) -> int:
    return a + b


def fail(message: str) -> None:
    raise ValueError(message)


def sleep_forever() -> None:
    while True:
        time.sleep(1)


def exit_hard(code: int) -> None:
    os._exit(code)


def segfault() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def getenv(name: str) -> str | None:
    return os.environ.get(name)


def pid() -> int:
    return os.getpid()


def noisy(text: str) -> str:
    """Print to stdout and stderr: neither may corrupt the reply frames."""
    print(text)
    print(text, file=sys.stderr, flush=True)
    return text


def unpicklable():
    return lambda: None


def run_spirv(index: int, spirv: bytes, buffers: list[bytes], groups, timeout_s: float):
    """Run a shader on the child's cached device and return (outputs, last_timings)."""
    from harness.worker import cached_device
    device = cached_device(index)
    return device.run(spirv, buffers, groups=groups, timeout_s=timeout_s), device.last_timings
