"""Recording a program's launches on an NVIDIA GPU: the GPU side of ``warpboard capture``.

Why an injection library and not a preloaded runtime: the CUDA driver loads the library
named by ``CUDA_INJECTION64_PATH`` into every process at ``cuInit``, whatever the program
is linked with (nvcc links the runtime statically by default, which an ``LD_PRELOAD`` shim
of ``libcudart.so`` never sees), and CUPTI's callbacks then see each launch at the driver's
entry points with its function handle, so the parameter layout comes from the driver
(``cuFuncGetParamInfo``) rather than from guessing.

:func:`record` builds the interposer (``interposer.c``, once per source and CUDA), takes the
program's sm_86 cubins out of its fat binary (``cuobjdump -xelf all``) and disassembles them,
names their module variables for the interposer to read, runs the program ``runs`` times
(``run1/``, ``run2/``...: a second run shows which launches' words depend on timing) and
writes ``meta.json``.
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from warpboard.harness.case import cubin as cubin_file
from .. import toolchain
from .log import CaptureError

HERE = Path(__file__).parent
SOURCE = HERE / "interposer.c"
VARIABLE_SECTIONS = (".nv.constant3", ".nv.global", ".nv.global.init")


def cuda_home() -> Path:
    """The CUDA toolkit holding cupti.h (CUDA_HOME, nvcc's folder, /usr/local/cuda)."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    try:
        candidates.append(str(Path(toolchain.find_nvcc()).resolve().parent.parent))
    except toolchain.ToolMissing:
        pass
    candidates.append("/usr/local/cuda")
    for c in filter(None, candidates):
        for inc in (Path(c) / "include", Path(c) / "extras" / "CUPTI" / "include"):
            if (inc / "cupti.h").is_file():
                return Path(c)
    raise toolchain.ToolMissing("cupti.h not found: capture needs a CUDA toolkit with CUPTI "
                                "(set CUDA_HOME to it)")


def _cupti_dirs(home: Path) -> tuple[Path, Path]:
    for inc, lib in ((home / "include", home / "lib64"), (home / "extras/CUPTI/include", home / "extras/CUPTI/lib64")):
        if (inc / "cupti.h").is_file() and any(lib.glob("libcupti.so*")):
            return inc, lib
    raise toolchain.ToolMissing(f"libcupti.so not found under {home}")


def _libcuda() -> str:
    """The driver library to link against: libcuda.so.1 where ldconfig knows it, or the
    toolkit's stub."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        if "libcuda.so.1 " in line and "=>" in line:
            return line.split("=>", 1)[1].strip()
    for d in ("/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"):
        if (Path(d) / "libcuda.so.1").exists():
            return str(Path(d) / "libcuda.so.1")
    raise toolchain.ToolMissing("libcuda.so.1 not found: capture runs where the NVIDIA driver is installed")


def build_interposer(cache: Path) -> Path:
    """The interposer's shared library, compiled with the C compiler into ``cache``."""
    home = cuda_home()
    inc, lib = _cupti_dirs(home)
    key = hashlib.sha256(SOURCE.read_bytes() + str(home).encode()).hexdigest()[:16]
    out = cache / f"libwarpboard_capture-{key}.so"
    if out.is_file():
        return out
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc:
        raise toolchain.ToolMissing("no C compiler (cc, gcc) to build the capture interposer")
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [cc, "-O2", "-shared", "-fPIC", "-o", str(out), str(SOURCE), f"-I{inc}", f"-I{home / 'include'}",
           f"-L{lib}", "-lcupti", _libcuda(), "-lpthread", f"-Wl,-rpath,{lib}"]
    toolchain.run(cmd, "building the capture interposer")
    return out


def extract_cubins(program: Path, folder: Path) -> list[Path]:
    """The program's sm_86 cubins with their listings (``.sass`` beside each)."""
    tool = toolchain.find_cuobjdump()
    work = folder / "all"
    work.mkdir(parents=True, exist_ok=True)
    toolchain.run([tool, "-xelf", "all", str(program.resolve())], "cuobjdump -xelf", cwd=work)
    kept = []
    for path in sorted(work.glob("*.cubin")):
        if ".sm_86." in path.name:
            target = folder / (path.name[:-len(".sm_86.cubin")].replace(".", "_") + ".cubin")
            shutil.move(str(path), target)
            target.with_suffix(".sass").write_text(toolchain.disassemble(target))
            kept.append(target)
    shutil.rmtree(work)
    return kept


def variable_names(cubins: list[Path]) -> list[str]:
    """Names of the module variables (``__constant__``, ``__device__``) of the cubins."""
    names = set()
    for path in cubins:
        data = path.read_bytes()
        sections = [name for name, _ in cubin_file.sections(data)]
        for sym in cubin_file.symbols(data):
            if sym.section and sym.size and sym.section < len(sections) and sections[sym.section] in VARIABLE_SECTIONS:
                names.add(sym.name)
    return sorted(names)


def gpu_facts() -> dict:
    """The GPU's name, compute capability and driver, as nvidia-smi says."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {}
    try:
        out = subprocess.run([smi, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    if not out:
        return {}
    name, cap, driver = (x.strip() for x in (out[0].split(",") + ["", "", ""])[:3])
    return {"gpu": name, "compute_capability": cap, "driver": driver}


def record(argv: list[str], out: Path, name: str | None = None, max_per_kernel: int = 8,
           max_bytes: int = 64 << 20, runs: int = 2, timeout: float = 600, build: str | None = None,
           cwd: Path | None = None, cache: Path = Path(".warpboard-cache/capture")) -> dict:
    """Record ``argv``'s launches into ``out``; returns the meta document."""
    program = Path(shutil.which(argv[0], path=str(cwd) if cwd and "/" not in argv[0] else None) or argv[0])
    if not program.is_file():
        raise CaptureError(f"{argv[0]}: no such program")
    library = build_interposer(cache.resolve())
    out.mkdir(parents=True, exist_ok=True)
    cubins = extract_cubins(program, out / "cubins")
    if not cubins:
        raise CaptureError(f"{program}: no sm_86 code in it; build it with "
                           "-gencode arch=compute_86,code=sm_86 beside the GPU's own target")
    (out / "globals.txt").write_text("".join(n + "\n" for n in variable_names(cubins)))
    meta = {"name": name or program.name, "argv": argv, "cwd": str((cwd or Path.cwd()).resolve()),
            "runs": runs, "build": build or "built by its own build", **gpu_facts(),
            "cuda": toolchain.nvcc_version(toolchain.find_nvcc()) if shutil.which("nvcc") else "",
            "max_per_kernel": max_per_kernel, "max_bytes": max_bytes, "exit": []}
    for k in range(1, runs + 1):
        folder = out / f"run{k}"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir()
        env = {**os.environ, "CUDA_INJECTION64_PATH": str(library), "WARPBOARD_CAPTURE_DIR": str(folder.resolve()),
               "WARPBOARD_CAPTURE_MAX_PER_KERNEL": str(max_per_kernel), "WARPBOARD_CAPTURE_MAX_BYTES": str(max_bytes),
               "WARPBOARD_CAPTURE_GLOBALS": str((out / "globals.txt").resolve()), "CUDA_MODULE_LOADING": "EAGER"}
        try:
            proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CaptureError(f"`{shlex.join(argv)}` did not end within {timeout:g} s under capture") from None
        (folder / "stdout.txt").write_bytes(proc.stdout[-65536:])
        (folder / "stderr.txt").write_bytes(proc.stderr[-65536:])
        meta["exit"].append(proc.returncode)
        if not (folder / "launches.jsonl").is_file():
            raise CaptureError(f"`{shlex.join(argv)}` ran (exit {proc.returncode}) but the interposer wrote "
                               f"nothing: did it use the GPU? stderr: {proc.stderr[-400:].decode(errors='replace')}")
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta

