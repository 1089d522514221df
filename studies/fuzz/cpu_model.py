"""Expected words without a GPU: run generated kernels on the CPU model of CUDA semantics.

The model is ``cases/tools/cpu_collectives.h`` (one OS thread per CUDA thread of a block,
blocks one after another, warp collectives meeting by mask, block barriers as real
barriers; see that header). This module writes one C++ host program for a batch of
kernels (``main.cpp``: the batch's ``.cu`` included, one launch function per kernel),
compiles it once with ``g++ -O1`` (UBSan on: signed overflow, bad shifts, division by zero
and float-to-int conversions out of range abort the run), and runs the binary once per
kernel, twice: with two different poison values for a shuffle's out-of-mask source. A
program is accepted when both runs end normally with the same words; otherwise the reason
is kept (``rule break: ...``, a sanitizer report, a leaked poison value): every rejection
is a generator bug.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .generate import Program

TOOLS = Path(__file__).resolve().parents[2] / "cases" / "tools"
if not TOOLS.is_dir():     # an installed package: the checkout's cases/tools, from where it runs
    TOOLS = Path("cases/tools").resolve()
POISONS = ("deadbeefdeadbeef", "0123456789abcdef")
# UBSan, plus the float checks it leaves out: a float-to-int conversion out of range and a
# division by zero are rule breaks of a generated program (the GPU saturates; C++ is undefined).
# A read of an uninitialized variable (e.g. a local that shadows the one its initializer means
# to read) fails the build.
CXXFLAGS = ["-std=c++20", "-O1", "-pthread", "-fsanitize=undefined,float-cast-overflow,float-divide-by-zero",
            "-fno-sanitize-recover=all", "-Wno-unused-variable", "-Wno-unused-but-set-variable",
            "-Werror=uninitialized", "-Werror=maybe-uninitialized"]


class ModelBuildError(RuntimeError):
    """The batch's host program did not compile (the message has g++'s output)."""


@dataclass
class ModelResult:
    """The words the model computed for ``out`` (None when it rejected the program)."""
    name: str
    words: list[int] | None
    error: str = ""
    build_failed: bool = False    # g++ refused the batch's host program (error has its output)

    @property
    def accepted(self) -> bool:
        return self.words is not None


def _c_words(words) -> str:
    return ", ".join(f"{w}u" for w in words)


def host_source(programs: list[Program], cu_path: Path) -> str:
    """The C++ host program that launches ``programs[i]`` when called with argument i."""
    lines = ['#include "cpu_collectives.h"', f'#include "{cu_path.resolve()}"', "#include <cstdio>", ""]
    for i, p in enumerate(programs):
        lines.append(f"static void run{i}() {{")
        lines.append(f"    static uint32_t out[{len(p.out_init)}];")
        lines.append(f"    static uint32_t in[{len(p.in_words)}] = {{{_c_words(p.in_words)}}};")
        for index, word in enumerate(p.out_init):
            if word:
                lines.append(f"    out[{index}] = {word}u;")
        lines.append(f"    wb_launch_threads(dim3{{{p.grid}, 1, 1}}, dim3{{{p.block}, 1, 1}}, "
                     f"[] {{ {p.name}(wb_ptr{{out}}, wb_ptr{{in}}); }});")
        lines.append(f'    for (unsigned w = 0; w < {len(p.out_init)}; w++) std::printf("%u ", out[w]);')
        lines.append('    std::printf("\\n");')
        lines.append("}")
    lines.append("int main(int argc, char **argv) {")
    lines.append("    switch (argc > 1 ? std::atoi(argv[1]) : -1) {")
    for i in range(len(programs)):
        lines.append(f"    case {i}: run{i}(); return 0;")
    lines.append('    default: std::fprintf(stderr, "usage: model INDEX\\n"); return 2;')
    lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def compile_model(programs: list[Program], cu_path: Path, work: Path, cxx: str | None = None) -> Path:
    """Build the batch's model binary in ``work``; its path."""
    cxx = cxx or shutil.which("g++") or "g++"
    work.mkdir(parents=True, exist_ok=True)
    main = work / "model_main.cpp"
    main.write_text(host_source(programs, cu_path))
    exe = work / "model"
    proc = subprocess.run([cxx, *CXXFLAGS, "-I", str(TOOLS), "-o", str(exe), str(main)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ModelBuildError(f"{main}: g++ failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return exe


def _run_once(exe: Path, index: int, poison: str, timeout_s: float) -> tuple[list[int] | None, str]:
    env = dict(os.environ, WB_POISON=poison)
    try:
        proc = subprocess.run([str(exe), str(index)], capture_output=True, text=True, env=env,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"the model did not finish in {timeout_s:g} s"
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        why = next((ln for ln in lines if "rule break" in ln or "runtime error" in ln),
                   lines[-1] if lines else f"exit status {proc.returncode}")
        return None, why.strip()
    return [int(w) for w in proc.stdout.split()], ""


def run_model(exe: Path, programs: list[Program], jobs: int = 0, timeout_s: float = 120.0) -> list[ModelResult]:
    """Every program of the batch on the model (twice, with two poison values)."""
    def one(index: int) -> ModelResult:
        p = programs[index]
        first, why = _run_once(exe, index, POISONS[0], timeout_s)
        if first is None:
            return ModelResult(p.name, None, why)
        second, why = _run_once(exe, index, POISONS[1], timeout_s)
        if second is None:
            return ModelResult(p.name, None, why)
        if first != second:
            at = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
            return ModelResult(p.name, None, f"out[{at}] depends on an undefined shuffle value "
                                             f"(0x{first[at]:08x} / 0x{second[at]:08x} with two poisons)")
        if len(first) != len(p.out_init):
            return ModelResult(p.name, None, f"the model printed {len(first)} words, not {len(p.out_init)}")
        return ModelResult(p.name, first)
    with ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(one, range(len(programs))))


def model_batch(programs: list[Program], cu_path: Path, work: Path, jobs: int = 0) -> list[ModelResult]:
    """Compile and run a batch; a failed compile rejects every program with g++'s message."""
    try:
        exe = compile_model(programs, cu_path, work)
    except ModelBuildError as e:
        return [ModelResult(p.name, None, str(e), build_failed=True) for p in programs]
    return run_model(exe, programs, jobs)
