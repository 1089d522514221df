"""harness.run.worker: values, exceptions, timeouts and crashes each come back as a reply,
and the Worker keeps working afterwards."""
from __future__ import annotations

import os
import time

import pytest
from warpboard.harness.run.worker import Worker, WorkerReply


@pytest.fixture
def worker():
    with Worker({"WARPBOARD_TEST_VAR": "seen-in-child"}, "test") as w:
        yield w


def test_value_and_env(worker):
    reply = worker.call("support.worker_targets:add", 2, 3, timeout_s=10)
    assert reply == WorkerReply("ok", value=5, elapsed_s=reply.elapsed_s)
    assert worker.call("support.worker_targets:getenv", "WARPBOARD_TEST_VAR",
                       timeout_s=10).value == "seen-in-child"
    assert "WARPBOARD_TEST_VAR" not in os.environ  # the parent is untouched


def test_child_persists_across_calls(worker):
    first = worker.call("support.worker_targets:pid", timeout_s=10).value
    assert worker.call("support.worker_targets:pid", timeout_s=10).value == first
    assert first != os.getpid() and worker.starts == 1


def test_exception_gives_error_with_traceback(worker):
    reply = worker.call("support.worker_targets:fail", "boom", timeout_s=10)
    assert reply.kind == "error" and reply.error == "ValueError: boom"
    assert "worker_targets.py" in reply.traceback and "in fail" in reply.traceback
    assert worker.call("support.worker_targets:add", 1, 1, timeout_s=10).value == 2


@pytest.mark.parametrize("target, message", [
    ("no_such_module:f", "ModuleNotFoundError"),
    ("support.worker_targets:no_such_function", "AttributeError"),
    ("worker_targets", "not of the form"),
    ("support.worker_targets:unpicklable", "unpicklable"),
])
def test_bad_targets_are_errors(worker, target, message):
    reply = worker.call(target, timeout_s=10)
    assert reply.kind == "error" and message in reply.error


def test_unpicklable_argument_is_an_error(worker):
    reply = worker.call("support.worker_targets:add", lambda: 1, 2, timeout_s=10)
    assert reply.kind == "error" and "not picklable" in reply.error


def test_prints_do_not_corrupt_replies(worker):
    reply = worker.call("support.worker_targets:noisy", "hello", timeout_s=10)
    assert reply.value == "hello"
    assert "hello" in reply.stderr_tail


def test_timeout_kills_and_next_call_works(worker):
    before = worker.call("support.worker_targets:pid", timeout_s=10).value
    start = time.monotonic()
    reply = worker.call("support.worker_targets:sleep_forever", timeout_s=0.5)
    assert reply.kind == "timeout"
    assert time.monotonic() - start < 3.0
    with pytest.raises(ProcessLookupError):
        os.kill(before, 0)  # the old child is gone
    after = worker.call("support.worker_targets:pid", timeout_s=10)
    assert after.ok and after.value != before and worker.starts == 2


@pytest.mark.parametrize("target, args, exit_code, sig", [
    ("support.worker_targets:exit_hard", (3,), 3, None),
    ("support.worker_targets:segfault", (), -11, "SIGSEGV"),
])
def test_crash_and_next_call_works(worker, target, args, exit_code, sig):
    reply = worker.call(target, *args, timeout_s=10)
    assert (reply.kind, reply.exit_code, reply.signal) == ("crash", exit_code, sig)
    assert "crash" in reply.describe()
    if sig:
        assert "segfault" in reply.stderr_tail  # faulthandler's Python stack
    assert worker.call("support.worker_targets:add", 1, 2, timeout_s=10).value == 3


def test_close_ends_child():
    worker = Worker({}, "closing")
    pid = worker.call("support.worker_targets:pid", timeout_s=10).value
    worker.close()
    assert worker.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_worker_ends_when_its_parent_is_killed(tmp_path):
    """A run killed from outside leaves no worker behind: the child in the middle of a long
    call notices its parent is gone and exits, instead of running the call to its end."""
    import subprocess
    import sys
    script = tmp_path / "parent.py"
    pid_file = tmp_path / "child.pid"
    script.write_text(
        "import sys, threading, time\n"
        f"sys.path[:0] = {[p for p in sys.path if p]!r}\n"
        "from warpboard.harness.run.worker import Worker\n"
        "w = Worker(None, 'orphan')\n"
        f"print(w.call('support.worker_targets:pid', timeout_s=60).value, file=open({str(pid_file)!r}, 'w'))\n"
        "w.call('support.worker_targets:sleep_forever', timeout_s=600)\n")
    parent = subprocess.Popen([sys.executable, str(script)])
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    time.sleep(0.5)                       # the child is inside sleep_forever now
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(child, 9)
    pytest.fail(f"worker {child} outlived its killed parent by 10 s")
