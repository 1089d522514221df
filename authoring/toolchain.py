"""The CUDA tools warpboard drives, found and run in one place: nvcc (compile for sm_86 or the
GPU's own architecture), nvdisasm (the listing) and cuobjdump.

Every tool missing is a :class:`ToolMissing` that says where it was looked for; a tool that
runs and fails is a :class:`ToolFailed` with the command line and what the tool printed.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from warpboard.harness.case import words as case_words

ARCH = "sm_86"
TIMEOUT_S = 600


class ToolMissing(RuntimeError):
    """nvcc, nvdisasm or cuobjdump cannot be found."""


class ToolFailed(RuntimeError):
    """A tool ran and exited non-zero: the command line and the tool's own message."""

    def __init__(self, what: str, cmd: list[str], returncode: int, output: str):
        super().__init__(f"{what} failed (exit {returncode}):\n  {' '.join(cmd)}\n{output.rstrip()}")
        self.cmd, self.returncode, self.output = cmd, returncode, output


def _cuda_homes() -> list[str]:
    """Where a CUDA toolkit may be when its tools are not on the PATH."""
    return [h for h in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda") if h]


def _in_cuda_home(tool: str) -> str | None:
    for home in _cuda_homes():
        path = Path(home) / "bin" / tool
        if os.access(path, os.X_OK):
            return str(path)
    return None


def find_nvcc() -> str:
    """nvcc from the PATH (or $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin), else
    ToolMissing."""
    found = shutil.which("nvcc") or _in_cuda_home("nvcc")
    if found:
        return found
    raise ToolMissing(
        "nvcc not found: install the CUDA toolkit (or the nvidia-cuda-nvcc wheel) and put "
        "it on the PATH, or set CUDA_HOME")


_wheel_nvdisasm = case_words.wheel_nvdisasm      # the runner's lookup, one implementation


def find_nvdisasm() -> str:
    """nvdisasm from the PATH, else from the nvidia-cuda-nvdisasm wheel, else ToolMissing."""
    found = shutil.which("nvdisasm") or _wheel_nvdisasm()
    if found:
        return found
    raise ToolMissing(
        "nvdisasm not found: it is neither on the PATH nor in an installed "
        "nvidia-cuda-nvdisasm wheel (pip install nvidia-cuda-nvdisasm puts it in "
        "site-packages/nvidia/cu13/bin/nvdisasm)")


def find_cuobjdump() -> str:
    """cuobjdump from the PATH or the CUDA toolkit, else ToolMissing."""
    found = shutil.which("cuobjdump") or _in_cuda_home("cuobjdump")
    if found:
        return found
    raise ToolMissing("cuobjdump not found: install the CUDA toolkit and put it on the PATH, or set CUDA_HOME")


def cuda_tools_present() -> bool:
    """Whether nvcc and nvdisasm can both be found (what new-case, fuzz and corpus need)."""
    try:
        find_nvcc()
        find_nvdisasm()
    except ToolMissing:
        return False
    return True


def tool_release(tool: str) -> str:
    """'13.0' from a CUDA tool's ``--version`` (nvcc, nvdisasm; '' if it does not say)."""
    try:
        text = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"release (\d+\.\d+)", text)
    return m.group(1) if m else ""


def nvcc_version(nvcc: str) -> str:
    """'13.0' from ``nvcc --version`` ('' if it does not say)."""
    return tool_release(nvcc)


def run(cmd: list[str], what: str, cwd: Path | None = None, timeout: float = TIMEOUT_S) -> str:
    """A tool's standard output; ToolMissing when it cannot start, ToolFailed when it fails."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout)
    except OSError as e:
        raise ToolMissing(f"{what}: cannot run {cmd[0]}: {e.strerror or e}") from None
    if proc.returncode != 0:
        raise ToolFailed(what, cmd, proc.returncode, proc.stderr or proc.stdout)
    return proc.stdout


def compile_cubin(source: Path, cubin: Path, arch: str = ARCH, flags: tuple[str, ...] = (),
                  nvcc: str | None = None, cwd: Path | None = None, timeout: float = TIMEOUT_S) -> None:
    """``nvcc -cubin -arch=<arch> <flags> -o cubin source``."""
    nvcc = nvcc or find_nvcc()
    run([nvcc, "-cubin", f"-arch={arch}", *flags, "-o", str(cubin), str(source)], "nvcc", cwd, timeout)


def disassemble(cubin: Path, nvdisasm: str | None = None, timeout: float = TIMEOUT_S) -> str:
    """``nvdisasm -c cubin``: the listing warpboard reads."""
    return run([nvdisasm or find_nvdisasm(), "-c", str(cubin)], "nvdisasm", timeout=timeout)


def compile_listing(source: Path, arch: str = ARCH, nvcc: str | None = None,
                    nvdisasm: str | None = None) -> tuple[str, str, bytes]:
    """(nvdisasm -c text, nvcc version, the cubin) of ``source`` compiled with nvcc -cubin -arch=arch."""
    nvcc = nvcc or find_nvcc()
    nvdisasm = nvdisasm or find_nvdisasm()
    with tempfile.TemporaryDirectory(prefix="wb-nvcc-") as tmp:
        cubin = Path(tmp) / (source.stem + ".cubin")
        compile_cubin(source.resolve(), cubin, arch, nvcc=nvcc, cwd=Path(tmp))
        text = disassemble(cubin, nvdisasm)
        image = cubin.read_bytes()
    return text, nvcc_version(nvcc), image
