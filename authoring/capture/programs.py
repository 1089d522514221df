"""``warpboard corpus --capture MANIFEST``: build the public code bases' programs and capture them.

The manifest (``corpus/capture.toml``) names code bases (``[[codebase]]``: root, include
folders, nvcc flags) and programs (``[[program]]``: the folder it is built and run in, its
sources, its arguments). Each program is built with nvcc for sm_86 and for the GPU present
(``-gencode arch=compute_86,code=sm_86 -gencode arch=compute_XY,code=sm_XY``), captured
(:func:`authoring.capture.record.record`) into ``OUT/<program>/`` and its cases written to
``OUT/cases/<program>/``. ``OUT/capture.md`` and ``OUT/capture.json`` tabulate each
program's launches, cases and skips by reason; a program that does not build or run is a
row saying why, and the others still run.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tabulate import tabulate

from . import cases, record
from warpboard.harness.case.toml_text import tomllib
from .. import toolchain
from .log import CaptureError

MAX_BYTES = 4 << 20       # device memory a launch may touch to become a case (both sides: 8 MiB)



@dataclass
class Program:
    name: str
    codebase: str
    root: Path
    dir: Path
    sources: list[str]
    args: list[str]
    flags: list[str]
    max_per_kernel: int = 8


@dataclass
class Row:
    program: str
    codebase: str
    launches: int = 0
    cases: int = 0
    skipped: Counter = field(default_factory=Counter)
    error: str = ""


def load_manifest(path: Path) -> list[Program]:
    data = tomllib.loads(path.read_text())
    bases = {}
    for b in data.get("codebase", []):
        root = Path(os.path.expandvars(b["root"]))
        root = root if root.is_absolute() else path.parent / root
        bases[b["name"]] = (root, b.get("include", []), b.get("flags", []))
    out = []
    for p in data.get("program", []):
        root, include, flags = bases[p["codebase"]]
        out.append(Program(p["name"], p["codebase"], root, root / p["dir"], p["sources"], p.get("args", []),
                           [f"-I{root / i}" for i in include] + flags + p.get("flags", []),
                           p.get("max_per_kernel", 8)))
    return out


def gpu_arch() -> str:
    """sm_XY of the GPU present (nvidia-smi), else sm_90."""
    cap = record.gpu_facts().get("compute_capability", "")
    return "sm_" + cap.replace(".", "") if cap else "sm_90"


def build(program: Program, out: Path, arch: str) -> tuple[Path, str]:
    """The program's executable, built with both targets; (path, the command)."""
    nvcc = toolchain.find_nvcc()
    exe = (out / "bin" / program.name).resolve()
    exe.parent.mkdir(parents=True, exist_ok=True)
    number = arch.split("_", 1)[1]
    cmd = [nvcc, "-O2", "-gencode", "arch=compute_86,code=sm_86", "-gencode", f"arch=compute_{number},code=sm_{number}",
           "-o", str(exe), *program.sources, *program.flags]
    toolchain.run(cmd, f"building {program.name}", cwd=program.dir)
    shown = shlex.join(["nvcc", *cmd[1:6], "-o", program.name, *program.sources,
                        *(f for f in program.flags if not f.startswith(f"-I{program.root}"))])
    return exe, shown


def capture_all(manifest: Path, out: Path, only: list[str] | None = None, runs: int = 2,
                timeout: float = 300, max_bytes: int = MAX_BYTES, jobs: int = 0, check: bool = False) -> list[Row]:
    """Build (``jobs`` at once) and capture (one at a time) every program of the manifest, or
    those named in ``only``; a launch touching more than ``max_bytes`` is listed, not kept;
    the cases of small launches are replayed on the interpreter (:class:`cases.Replays`),
    every case with ``check``."""
    arch = gpu_arch()
    chosen = [p for p in load_manifest(manifest) if not only or p.name in only]
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        built = list(pool.map(lambda p: _try(build, p, out, arch), chosen))
    rows = []
    for program, made in zip(chosen, built):
        row = Row(program.name, program.codebase)
        rows.append(row)
        try:
            if isinstance(made, Exception):
                raise made
            exe, command = made
            folder = out / program.name
            record.record([str(exe), *program.args], folder, program.name, program.max_per_kernel, max_bytes,
                          runs=runs, timeout=timeout, build=command, cwd=program.dir)
            meta = json.loads((folder / "meta.json").read_text())
            meta["argv"] = [program.name, *program.args]          # the case says how it was run
            (folder / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
            outcomes = cases.write_cases(folder, out / "cases", check="full" if check else "cheap")
        except (CaptureError, toolchain.ToolMissing, toolchain.ToolFailed, subprocess.SubprocessError, OSError) as e:
            row.error = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
            print(f"{program.name}: {row.error}", flush=True)
            continue
        row.launches = len(outcomes)
        row.cases = sum(1 for o in outcomes if o.case)
        row.skipped = Counter(cases.reason_kind(o.reason) for o in outcomes if o.reason)
        print(f"{program.name}: {row.launches} launches, {row.cases} cases", flush=True)
    write_table(rows, out)
    return rows


def _try(fn, *args):
    try:
        return fn(*args)
    except (toolchain.ToolMissing, toolchain.ToolFailed, OSError) as e:
        return e


def write_table(rows: list[Row], out: Path) -> None:
    table = [[r.program, r.codebase, r.launches, r.cases,
              "; ".join(f"{n}× {k}" for k, n in r.skipped.most_common()) or ("" if not r.error else r.error)]
             for r in rows]
    headers = ["program", "code base", "launches", "cases", "skipped (reason)"]
    total = ["**all**", f"{len({r.codebase for r in rows if r.cases})} code bases",
             sum(r.launches for r in rows), sum(r.cases for r in rows), ""]
    out.mkdir(parents=True, exist_ok=True)
    (out / "capture.md").write_text(tabulate(table + [total], headers, tablefmt="github") + "\n")
    (out / "capture.json").write_text(json.dumps(
        [{"program": r.program, "codebase": r.codebase, "launches": r.launches, "cases": r.cases,
          "skipped": dict(r.skipped), "error": r.error} for r in rows], indent=1) + "\n")
