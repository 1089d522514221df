"""What a CUDA kernel prints, captured where the driver writes it: file descriptor 1.

The CUDA driver prints the device's printf buffer with the C library's stdio on the process's
standard output when the launch is synchronised. :func:`captured_stdout` points descriptor 1
at a temporary file around that and flushes C stdio (and Python's) before and after, so the
text lands in the file and nothing of the process's own output is lost or caught.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
from dataclasses import dataclass


@dataclass
class Captured:
    """The bytes written to descriptor 1 inside the ``with`` block (filled when it ends)."""
    data: bytes = b""

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "backslashreplace")


def _flush_c_stdio() -> None:
    """fflush(NULL): every C stdio stream of the process (the driver's printf buffer goes
    through stdout's)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):     # no C library to flush (not a POSIX system)
        pass


@contextlib.contextmanager
def captured_stdout():
    """``with captured_stdout() as out: ...``: descriptor 1 goes to a file meanwhile;
    ``out.data`` holds what was written to it."""
    out = Captured()
    sys.stdout.flush()
    _flush_c_stdio()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as sink:
        try:
            os.dup2(sink.fileno(), 1)
            yield out
        finally:
            sys.stdout.flush()
            _flush_c_stdio()
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            out.data = sink.read()
