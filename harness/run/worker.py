"""Run work for one device configuration in its own process, so a hang or a crash costs
one scoreboard cell, not the run.

Why ``subprocess`` + pickle frames rather than ``multiprocessing``:

* The child is a fresh ``exec`` of the interpreter with ``env`` already in its
  environment, so variables read when a driver loads (``LP_NATIVE_VECTOR_WIDTH``) or in
  library constructors are in effect from the first instruction. ``spawn`` re-imports the
  parent's ``__main__`` in the child first, which may import Vulkan before the child's
  entry could set anything; ``fork`` copies a process whose driver threads do not survive.
* ``start_new_session`` makes the child a process-group leader, so a timeout kills the
  whole group (including anything it started) with one ``killpg``.
* The protocol runs over the child's original stdin/stdout; the child then points fd 1
  at its stderr, so stray prints (Python or driver C code) cannot corrupt the frames.
  The child's stderr goes to a file whose new bytes come back in every reply.
"""
from __future__ import annotations

import dataclasses
import faulthandler
import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import weakref
from dataclasses import dataclass
from typing import Any

from . import cache
from .cache import driver_cache_env

_HEADER = struct.Struct("<Q")
_STDERR_TAIL = 8192          # bytes of child stderr returned per reply
_STDERR_ROTATE = 1 << 20     # truncate the child's stderr file beyond this size
_CLOSE_GRACE_S = 2.0         # how long close() lets the child exit on its own


@dataclass
class WorkerReply:
    """What one call produced: exactly one of a value, an error, a timeout or a crash."""
    kind: str                       # "ok" | "error" | "timeout" | "crash"
    value: Any = None               # the function's return value (kind "ok")
    error: str | None = None        # "ExcType: message" (kind "error"), or what happened
    traceback: str | None = None    # the child's formatted traceback (kind "error")
    exit_code: int | None = None    # the child's exit status (kind "crash")
    signal: str | None = None       # e.g. "SIGSEGV" when a signal ended the child
    stderr_tail: str = ""           # the child's stderr written during this call
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    def describe(self) -> str:
        """One line for logs and scoreboard cells."""
        if self.kind == "crash":
            how = self.signal or f"exit code {self.exit_code}"
            return f"crash ({how}) after {self.elapsed_s:.2f}s"
        if self.kind == "timeout":
            return f"timeout after {self.elapsed_s:.2f}s"
        if self.kind == "error":
            return self.error or "error"
        return "ok"


class _ChildGone(Exception):
    """The protocol pipe closed: the child died."""


class _Deadline(Exception):
    """The call ran past its timeout."""


class Worker:
    """A long-lived child process that calls "module:function" targets with ``env`` set.

    The child starts lazily on the first call and after a timeout or crash, and lives
    across calls so whatever it caches (see :func:`cached_device`) is opened once.
    ``call`` never raises for child failures: it always returns a :class:`WorkerReply`.
    One call at a time: a Worker is not thread-safe (use one Worker per thread).
    """

    def __init__(self, env: dict[str, str] | None = None, name: str = "worker") -> None:
        self.env = dict(env or {})
        self.name = name
        self.starts = 0
        self.stopped = False            # set by interrupt(): no further child is started
        self._lock = threading.Lock()   # interrupt() and starting a child exclude each other
        self._proc: subprocess.Popen | None = None
        fd, self._stderr_path = tempfile.mkstemp(prefix=f"warpboard-{_slug(name)}-",
                                                 suffix=".stderr")
        os.close(fd)
        self._finalizer = weakref.finalize(self, _cleanup, {}, self._stderr_path)

    @property
    def pid(self) -> int | None:
        """The running child's pid, or None when no child is running."""
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Worker({self.name!r}, pid={self.pid})"

    def call(self, fn_qualname: str, *args, timeout_s: float, **kwargs) -> WorkerReply:
        """Run ``fn_qualname`` ("module:function") in the child with picklable args."""
        start = time.monotonic()
        try:
            request = pickle.dumps((fn_qualname, args, kwargs))
        except Exception as exc:  # noqa: BLE001 - reported, not raised, like child errors
            return WorkerReply("error", error=f"arguments are not picklable: {exc!r}",
                               traceback=traceback.format_exc())
        offset = self._stderr_offset()
        reply = self._exchange(request, start + timeout_s)
        reply.elapsed_s = time.monotonic() - start
        reply.stderr_tail = self._stderr_since(offset)
        return reply

    def interrupt(self) -> None:
        """Stop this worker from another thread (Ctrl-C): kill the running child's group,
        so a call in progress returns at once as a crash, and start no new child."""
        with self._lock:            # a child being started is started, then killed here
            self.stopped = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _exchange(self, request: bytes, deadline: float) -> WorkerReply:
        """Send one request and wait for its reply; kill the child on timeout."""
        try:
            with self._lock:
                if self.stopped:
                    return WorkerReply("crash", error=f"worker {self.name!r} was interrupted")
                proc = self._ensure_child()
            _send(proc.stdin, request)
            frame = _receive(proc.stdout.fileno(), deadline)
        except _Deadline:
            self._kill()
            return WorkerReply("timeout", error="the call ran past its timeout; "
                                                "the worker was killed")
        except (_ChildGone, BrokenPipeError, ConnectionResetError):
            return self._reap()
        except OSError as exc:  # e.g. the interpreter could not be started
            self._kill()
            return WorkerReply("crash", error=f"worker {self.name!r} failed: {exc!r}")
        except BaseException:  # e.g. KeyboardInterrupt: a late reply would desync
            self._kill()
            raise
        try:
            kind, *rest = pickle.loads(frame)
        except Exception as exc:  # noqa: BLE001 - e.g. a class the parent cannot import
            return WorkerReply("error", error=f"the reply could not be unpickled: {exc!r}",
                               traceback=traceback.format_exc())
        if kind == "ok":
            return WorkerReply("ok", value=rest[0])
        return WorkerReply("error", error=rest[0], traceback=rest[1])

    def _ensure_child(self) -> subprocess.Popen:
        """The running child, starting one (with ``env`` applied at exec) if needed."""
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        if self._proc is not None:  # died while idle: release its pipes
            _close_pipes(self._proc)
        self._proc = None
        env = {**os.environ, **self.env, **driver_cache_env(self.env), "WARPBOARD_WORKER": self.name}
        with open(self._stderr_path, "ab") as err:
            proc = subprocess.Popen(
                [sys.executable, "-c", "import warpboard.harness.run.worker as w; w._child_main()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env,
                start_new_session=True, close_fds=True)
        self._proc = proc
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _cleanup, {"proc": proc},
                                           self._stderr_path)
        self.starts += 1
        _send(proc.stdin, pickle.dumps({"sys_path": list(sys.path)}))
        return proc

    def _kill(self) -> None:
        """SIGKILL the child's whole process group and reap it."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _kill_group(proc)
            _close_pipes(proc)

    def _reap(self) -> WorkerReply:
        """The child died mid-call: collect how it ended."""
        proc, self._proc = self._proc, None
        if proc is None:
            return WorkerReply("crash", error="the worker could not be started")
        try:
            code = proc.wait(timeout=_CLOSE_GRACE_S)
        except subprocess.TimeoutExpired:  # pipe closed but process lingers
            _kill_group(proc)
            code = proc.returncode
        _kill_group(proc)  # anything it left behind in its group
        _close_pipes(proc)
        return WorkerReply("crash", error=f"worker {self.name!r} died", exit_code=code,
                           signal=_signal_name(code))

    def close(self) -> None:
        """End the child: EOF first (it closes its devices), SIGKILL after a grace time."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop(proc)
        self._finalizer()

    # ------------------------------------------------------------------ stderr file

    def _stderr_offset(self) -> int:
        try:
            size = os.path.getsize(self._stderr_path)
            if size > _STDERR_ROTATE:  # the child appends (O_APPEND), so this is safe
                os.truncate(self._stderr_path, 0)
                return 0
            return size
        except OSError:
            return 0

    def _stderr_since(self, offset: int) -> str:
        """The last _STDERR_TAIL bytes the child wrote to stderr after ``offset``."""
        try:
            with open(self._stderr_path, "rb") as f:
                f.seek(max(offset, os.path.getsize(self._stderr_path) - _STDERR_TAIL))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


# ---------------------------------------------------------------------- parent helpers

def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name)[:40]


def _signal_name(code: int | None) -> str | None:
    """"SIGSEGV" for a returncode of -11; None when no signal ended the process."""
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _send(pipe, payload: bytes) -> None:
    pipe.write(_HEADER.pack(len(payload)) + payload)
    pipe.flush()


def _receive(fd: int, deadline: float) -> bytes:
    """One frame from ``fd``; _Deadline past ``deadline``, _ChildGone on EOF."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    return _read_exact(fd, size, deadline)


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    """``n`` bytes from ``fd`` (poll, not select: fds may exceed FD_SETSIZE)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    chunks, left = [], n
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not poller.poll(max(1, int(wait * 1000))):
            raise _Deadline()
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise _ChildGone()
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group led by ``proc`` and reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _close_pipes(proc: subprocess.Popen) -> None:
    for pipe in (proc.stdin, proc.stdout):
        try:
            pipe.close()
        except OSError:
            pass


def _stop(proc: subprocess.Popen) -> None:
    """Ask the child to exit by closing its stdin; kill its group if it does not."""
    try:
        proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=_CLOSE_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    _kill_group(proc)
    _close_pipes(proc)


def _cleanup(state: dict, stderr_path: str) -> None:
    """Finalizer: stop a child left running and remove the stderr file."""
    if state.get("proc") is not None and state["proc"].poll() is None:
        _stop(state["proc"])
    try:
        os.unlink(stderr_path)
    except OSError:
        pass


# ------------------------------------------------------------------------ child side

_DEVICES: dict[int, Any] = {}


def cached_device(index: int = 0):
    """The child's open :class:`harness.vk.Device` for ``index`` (opened on first use), its
    ``info`` carrying the subgroup probe's facts (:func:`probed`).

    Targets call this so a worker opens its device once; it is closed when the child
    exits normally.
    """
    if index not in _DEVICES:
        from .. import vk  # imported here: the parent never needs Vulkan
        root = cache.cache_dir()
        _DEVICES[index] = probed(vk.Device(index, cache_dir=root / "pipelines" if root else None))
    return _DEVICES[index]


def forget_device(index: int = 0) -> None:
    """Close and drop the child's cached device ``index`` (one the driver lost, or that timed
    out): the next :func:`cached_device` opens a new one."""
    device = _DEVICES.pop(index, None)
    if device is not None:
        device.close()


def fresh_device(index: int = 0, statistics: bool = False):
    """A new :class:`harness.vk.Device` for ``index``, beside the cached one (the caller
    closes it), probed (`warpboard bench` measures its kernels "alone" on one of these);
    ``statistics``: its pipelines keep the driver's statistics of their code, where offered."""
    from .. import vk  # imported here: the parent never needs Vulkan
    return probed(vk.Device(index, statistics=statistics))


def probed(device):
    """``device`` with its subgroup probe's facts in ``info.probe`` (one small dispatch): what
    the translator decides by (harness.run.dispatch.warps_are_subgroups, the real subgroup
    size) is what the device's subgroups really are, not what it reports."""
    from .. import vk  # imported here: the parent never needs Vulkan
    if device.info.probe is None:
        device.info = dataclasses.replace(device.info, probe=vk.probe.probe(device))
    return device


def _resolve(fn_qualname: str):
    """Import "package.module:function" (dots after the colon walk attributes)."""
    module_name, sep, attr = fn_qualname.partition(":")
    if not sep or not attr:
        raise ValueError(f"target {fn_qualname!r} is not of the form 'module:function'")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _execute(fn_qualname: str, args: tuple, kwargs: dict) -> bytes:
    """Run one target; a pickled ("ok", value) or ("error", text, traceback)."""
    try:
        value = _resolve(fn_qualname)(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the whole point is to report it
        return pickle.dumps(("error", f"{type(exc).__name__}: {exc}",
                             traceback.format_exc()))
    try:
        return pickle.dumps(("ok", value))
    except Exception as exc:  # noqa: BLE001
        return pickle.dumps(("error", f"{fn_qualname} returned an unpicklable "
                             f"{type(value).__name__}: {exc}", traceback.format_exc()))


PARENT_CHECK_S = 1.0    # how often a worker looks whether its parent still lives


def _watch_parent(parent: int) -> None:
    """End this worker as soon as its parent is gone (the parent killed from outside): it
    would otherwise run its cell to the end, minutes for a big launch, before it reads EOF."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def _child_main() -> None:
    """Serve requests from the parent until EOF, then close cached devices and exit; exit at
    once when the parent dies (:func:`_watch_parent`)."""
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    faulthandler.enable()  # a SIGSEGV leaves the Python stack in stderr_tail
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # prints from targets and drivers land in stderr, not in the frames
    code = 0
    try:
        init = _child_read(proto_in)
        if init is not None:
            sys.path[:] = init["sys_path"]
            while (request := _child_read(proto_in)) is not None:
                _send(proto_out, _execute(*request))
    except BrokenPipeError:  # the parent went away
        code = 1
    except SystemExit as exc:  # a target called sys.exit(): end like it asked
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        for device in _DEVICES.values():
            device.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # skip interpreter/driver teardown, which can hang after a timeout


def _child_read(pipe):
    header = pipe.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    body = pipe.read(size)
    return pickle.loads(body) if len(body) == size else None
