"""What the mutation fuzzer (test_mutants) asks of each mutant, run inside a worker process.

:func:`evaluate` takes one mutated case through what ``warpboard run`` does with a case: load
and decode, the interpreter, translation, ``spirv-val`` on the module, and a lavapipe
dispatch, and returns a :class:`Verdict`. The translator's own errors (ProgramError,
SassSyntaxError, UnsupportedInstruction) are statuses of a verdict; any other exception
escapes to the worker, which reports it with its traceback: that is what the fuzzer fails on.

When the two back ends both end OK with different words, the interpreter runs the mutant
again recording every memory access, to tell an order-dependent program (two threads
touch one word, one of them writing, in an order neither back end promises) from a real
disagreement.
"""
from __future__ import annotations

import shutil
import struct
import subprocess
import time
from dataclasses import dataclass, field

from warpboard.harness.run.compare import abs_tolerance, tolerance, within
from warpboard.harness.run.dispatch import (
    prepare,
    run_interpreter,
    run_vulkan,
    translate_case,
    warps_are_subgroups,
)
from warpboard.harness.run.worker import cached_device
from warpboard.harness.vk import VkTimeout
from warpboard.translator.errors import TranslatorError
from warpboard.translator.interp.machine import Interpreter, Memory
from warpboard.translator.interp.thread import ThreadCtx
from warpboard.translator import Target

TARGET_ENV = "vulkan1.1"


@dataclass
class Verdict:
    """How one mutant fared. ``rejected`` is the translator's error when the mutant did not
    load; ``interp``/``lavapipe`` an outcome (OK, FAULT, LIVELOCK, BAD_PC, TIMEOUT), an error
    ("ProgramError: ...") or "" when that back end did not run it."""
    rejected: str = ""
    mode: str = ""
    interp: str = ""
    interp_words: list[bytes] | None = None
    translated: str = ""            # "ok" or the translator's error
    spirv_error: str | None = None  # spirv-val's complaint about the module
    lavapipe: str = ""
    lavapipe_words: list[bytes] | None = None
    racy: str | None = None         # set where both end OK and differ: the order-dependent word, or ""
    tolerances: list[tuple[int, float] | None] = field(default_factory=list)  # per buffer: (ulp, absolute), or exact
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def both_ok(self) -> bool:
        return self.interp == "OK" and self.lavapipe == "OK"

    @property
    def agree(self) -> bool:
        """Equal words, or within the ulp a buffer's ``compare`` allows (MUFU results)."""
        if self.interp_words is None or self.lavapipe_words is None:
            return self.interp_words == self.lavapipe_words
        return all(a == b or (tol is not None and len(a) == len(b) and all(
                       within(tol[0], x, y, tol[1]) for x, y in zip(_words(a), _words(b))))
                   for a, b, tol in zip(self.interp_words, self.lavapipe_words,
                                        self.tolerances or [None] * len(self.interp_words)))


def _words(buffer: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(buffer) // 4}I", buffer[: len(buffer) // 4 * 4])


def _error(exc: TranslatorError) -> str:
    return f"{type(exc).__name__}: {exc}"


MUFU_ULPS = 4       # words of a mutant with a MUFU may differ by this much (f32 ulps)


def evaluate(case, budget: int, device_index: int | None, timeout_s: float) -> Verdict:
    """Worker target: one mutant through load, interpreter, translation, spirv-val, lavapipe."""
    verdict, clock = Verdict(), time.perf_counter()
    verdict.tolerances = [None if tolerance(b.compare) is None else (tolerance(b.compare), abs_tolerance(b.compare))
                          for b in case.buffers]
    try:
        prep = prepare(case, budget)
    except TranslatorError as exc:
        verdict.rejected = _error(exc)
        return verdict
    verdict.mode = prep.program.mode
    if any(i.spec.name == "MUFU" for i in prep.program.insts):
        # a mutant may leave a MUFU result unrefined (a Newton step deleted or moved): its last
        # bits then reach memory, and they are the device's own approximation by design
        verdict.tolerances = [tol or (MUFU_ULPS, 0.0) for tol in verdict.tolerances]
    _interpret(prep, verdict)
    verdict.seconds["interp"] = time.perf_counter() - clock
    device = _device(device_index)
    try:
        shader, _ = translate_case(prep, target=Target(warp_subgroups=device is not None and warps_are_subgroups(device.info)),
                                   use_cache=False)
        verdict.translated = "ok"
    except TranslatorError as exc:
        verdict.translated = _error(exc)
        return verdict
    verdict.spirv_error = spirv_val(shader.spirv)
    if device is not None and verdict.spirv_error is None:
        clock = time.perf_counter()
        _dispatch(device, prep, shader, timeout_s, verdict)
        verdict.seconds["lavapipe"] = time.perf_counter() - clock
    if verdict.both_ok and not verdict.agree:
        verdict.racy = order_dependent_word(prep)
    return verdict


def _interpret(prep, verdict: Verdict) -> None:
    try:
        raw = run_interpreter(prep)
    except TranslatorError as exc:
        verdict.interp = _error(exc)
        return
    verdict.interp, verdict.interp_words = raw.outcome.name, raw.buffers


def _dispatch(device, prep, shader, timeout_s: float, verdict: Verdict) -> None:
    try:
        raw = run_vulkan(device, prep, shader, timeout_s=timeout_s)
    except VkTimeout:
        verdict.lavapipe = "TIMEOUT"
        return
    verdict.lavapipe, verdict.lavapipe_words = raw.outcome.name, raw.buffers


def _device(index: int | None):
    if index is None:
        return None
    return cached_device(index)


def spirv_val(code: bytes) -> str | None:
    """spirv-val's complaint about a module, or None when it is valid (or spirv-val is absent)."""
    if shutil.which("spirv-val") is None:
        return None
    proc = subprocess.run(["spirv-val", "--target-env", TARGET_ENV, "-"], input=code,
                          capture_output=True, check=False)
    if proc.returncode == 0:
        return None
    return (proc.stderr or proc.stdout).decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"


# ---------------------------------------------------------------- order dependence
@dataclass(frozen=True)
class Access:
    thread: tuple                 # (block, thread id in the block)
    writes: bool
    unordered: bool               # in quiet code (each thread on its own) or in free mode
    turn: int


class _RecordingCtx(ThreadCtx):
    """A thread's context that notes every memory access of an enabled lane."""

    def _note(self, space: str, addr: int, nbytes: int, writes: bool) -> None:
        if not self.en or self.gather:
            return
        m = self.m
        access = Access((self.t.ctaid, self.t.tid), writes, m.free or self.inst.quiet, m.stats.turns)
        where = (space,) if space == "global" else (space, self.t.ctaid)
        for word in range(addr // 4, (addr + max(nbytes, 1) - 1) // 4 + 1):
            m.accesses.setdefault((*where, word), []).append(access)

    def load(self, space, addr, nbytes, signed):
        self._note(space, addr, nbytes, False)
        return super().load(space, addr, nbytes, signed)

    def store(self, space, addr, nbytes, values):
        self._note(space, addr, nbytes, True)
        return super().store(space, addr, nbytes, values)

    def atomic(self, space, op, addr, value, compare, signed):
        self._note(space, addr, 4, True)
        return super().atomic(space, op, addr, value, compare, signed)


class _RecordingInterpreter(Interpreter):
    def __init__(self, *args, free: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.free, self.accesses = free, {}

    def ctx(self, cta, t, inst, oracle, gather=False):
        return _RecordingCtx(self, cta, t, inst, oracle, gather)


def order_dependent_word(prep) -> str:
    """A memory word two threads touch, one writing, in an order neither back end fixes (the
    threads are in different blocks, or either access runs in quiet code or free mode, or both
    run in the same turn); "" when the program has none."""
    machine = _RecordingInterpreter(prep.program, prep.launch, Memory([bytearray(b) for b in prep.buffers]),
                                    prep.cbank, prep.case.shared_bytes, prep.budget, free=prep.program.mode == "free")
    try:
        machine.run()
    except TranslatorError:
        pass
    for key, accesses in machine.accesses.items():
        for a in accesses:
            for b in accesses:
                if a.thread < b.thread and (a.writes or b.writes) and _unordered(a, b):
                    return f"{key[0]} word {key[-1] * 4:#x}: threads {a.thread} and {b.thread}"
    return ""


def _unordered(a: Access, b: Access) -> bool:
    return a.thread[0] != b.thread[0] or a.unordered or b.unordered or a.turn == b.turn
