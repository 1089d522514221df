"""Functions tests run inside a Worker child, by name (``support.worker_targets:add``): a child
process imports this module, so these live here and not in conftest.py as fixtures."""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from warpboard.harness.case.model import discover_cases
from warpboard.harness.run.engine import run_case, worker_run
from warpboard.harness.run.results import CaseResult, Outcome, Status
from warpboard.harness.run.worker import cached_device
from warpboard.translator import Target

from support.paths import CASES


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
    device = cached_device(index)
    return device.run(spirv, buffers, groups=groups, timeout_s=timeout_s), device.last_timings


def run_case_here(case_id: str) -> dict:
    """The cell of one library case on the child's device 0, as the engine decides it."""

    root = CASES
    case = discover_cases(root, [case_id])[0]
    device = cached_device(0)
    result = run_case(case, "child", device)
    return {"status": result.status.name, "message": result.message, "subgroup_size": device.info.subgroup_size}


def misbehave(case, index, device_id, options, translator=None):
    """The engine's cell target, except that cases named crash_me and hang_me crash and hang."""
    if "crash_me" in case.id:
        os._exit(7)
    if "hang_me" in case.id:
        time.sleep(3600)
    return worker_run(case, index, device_id, options, translator)


def lose_device(case, index, device_id, options, translator=None):
    """The engine's cell target, except that from a case named lose_me on, this process's
    driver reports its device lost: the binding's vkWaitForFences raises VkErrorDeviceLost,
    as NVIDIA's driver does after a shader it had to kill, and keeps raising it, as a lost
    device does (only a new process gets a working one)."""
    if "lose_me" in case.id:
        import vulkan
        cached_device(index)            # opened and probed before the loss
        wait = vulkan.vkWaitForFences

        def lost(*args):
            wait(*args)                 # the work is done: nothing in flight when the objects go
            raise vulkan.VkErrorDeviceLost()
        vulkan.vkWaitForFences = lost
    result = worker_run(case, index, device_id, options, translator)
    result["message"] = f"{result.get('message') or ''} [pid {os.getpid()}]"
    return result


def with_mine(case, index, device_id, options, translator=None):
    """The engine's cell target in a worker where a fourth strategy, "mine" (the turns
    strategy under another name: tests/translator/test_extending.py), is registered."""
    from warpboard.translator import STRATEGIES, Strategy, register
    from warpboard.translator.emit import turns
    if "mine" not in STRATEGIES:
        register(Strategy("mine", "turns", flow="free or turns", warp_model="the turns strategy's, counted",
                          make=turns.warp_for, warp_subgroups=True, tight_loops=True))
    return worker_run(case, index, device_id, options, translator)


def pid_cell(case, index, device_id, options, translator=None) -> dict:
    """A PASS cell whose message is the worker's pid (which process ran the case)."""
    return CaseResult(case.id, device_id, Status.PASS, message=str(os.getpid()), outcome=Outcome.OK.value).to_json()


def scripted_cell(case, index, device_id, options, translator=None) -> dict:
    """A cell whose outcomes are scripted by its case path, ``/dir/<name>.<o1>-<o2>-....toml``
    (each ``ok`` or ``fail``): the n-th call for that path ends with the n-th outcome (the last
    one repeats). Calls are counted in files under ``dir``, across worker processes."""
    case_path = str(case.path)
    stem = os.path.basename(case_path).removesuffix(".toml")
    name, _, script = stem.partition(".")
    outcomes = script.split("-")
    counter = os.path.join(os.path.dirname(case_path), f"{stem}.{device_id}.calls")
    calls = int(open(counter).read()) if os.path.exists(counter) else 0
    with open(counter, "w") as f:
        f.write(str(calls + 1))
    ok = outcomes[min(calls, len(outcomes) - 1)] == "ok"
    result = CaseResult(name, device_id, Status.PASS if ok else Status.FAIL, outcome=Outcome.OK.value,
                        message="" if ok else f"call {calls + 1} failed", mismatch_count=0 if ok else 1)
    return result.to_json()


def per_warp_disagreements(width: int, patterns: list[str] | None, bench: tuple[str, ...] = (),
                           mode: str = "turns", root: str | None = None,
                           inline: int | None = None, tight_loops: bool = True,
                           max_words: int | None = None, budget: int | None = None) -> tuple[int, list[str]]:
    """The library's cases of ``mode`` (``patterns``), launched as one block
    of ``width`` threads (one block: what several would race for, atomics or a flag another
    block sets, comes out in the device's order) on the child's device 0, whose subgroups
    then are the warp: the
    shader's per-warp turns against the interpreter's. (cases compared, what disagreed: the
    outcome, the words (cases compared within a tolerance aside) or, where both ran to the end,
    the turns). ``bench``: bench kernels to add, one block each; ``root``: another case folder
    (a fuzz campaign's); ``inline``: the instructions chains may copy into a shader (its
    ``INLINE_FLOOR``, with no share over it), in this child only; ``tight_loops``: the shader
    as a GPU gets it (self-loops in their own cases; these short programs stay far below
    lavapipe's limit on a shader's loop iterations); ``max_words``: leave out the cases whose
    shader is larger (lavapipe compiles a 300 K-word per-warp shader for minutes); ``budget``:
    the step budget of both sides (default: each case's)."""
    import dataclasses

    if inline is not None:
        from warpboard.translator.emit.turns import loop
        loop.INLINE_FLOOR, loop.INLINE_SHARE = inline, 0.0

    from warpboard.studies.bench import bench_cases

    from warpboard.harness.run.dispatch import (
        prepare,
        run_interpreter,
        run_vulkan,
        translate_case,
        warps_are_subgroups,
    )
    from warpboard.harness.vk.probe import probe
    device = cached_device(0)
    info = dataclasses.replace(device.info, probe=probe(device))
    compared, wrong = 0, []
    cases = (discover_cases(Path(root) if root else CASES, patterns) if patterns != [] else []) + [c for c in bench_cases(1) if c.id in bench]
    for case in cases:
        case = dataclasses.replace(case, block=(width, 1, 1), grid=(1, 1, 1))   # no other block to race
        prep = prepare(case, budget)
        if prep.program.mode != mode:
            continue
        if not warps_are_subgroups(info, case.block):
            return compared, [f"{case.id}: the device's subgroups are not the warp of {width} threads ({info.probe})"]
        shader, _ = translate_case(prep, None, Target(warp_subgroups=True, tight_loops=tight_loops), use_cache=False)
        if max_words is not None and len(shader.spirv) // 4 > max_words:
            continue
        cpu = run_interpreter(prep, per_warp=True)
        gpu = run_vulkan(device, prep, shader, timeout_s=120)
        exact = all(b.compare == "exact" for b in case.buffers)
        if cpu.outcome != gpu.outcome:
            wrong.append(f"{case.id}: {cpu.outcome} in the interpreter, {gpu.outcome} in the shader: {gpu.detail}")
        elif cpu.outcome == "ok" and exact and cpu.buffers != gpu.buffers:
            wrong.append(f"{case.id}: the words differ")
        elif mode == "turns" and cpu.outcome == "ok" and cpu.counters["turns"] != gpu.counters["turns"]:
            wrong.append(f"{case.id}: {cpu.counters['turns']} turns in the interpreter, {gpu.counters['turns']} in the shader")
        compared += 1
    return compared, wrong
