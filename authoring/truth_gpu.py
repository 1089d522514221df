"""The GPU side of ``warpboard record-truth``: compile a case's CUDA source, launch it, read back.

:class:`CupyRunner` compiles with nvcc (``-cubin -arch=sm_XY``) or, without it, NVRTC through
CuPy, launches the case's kernel on GPU 0 with its grid, block, buffers and parameters, waits
with a deadline (a hung kernel stops the recording: :class:`GpuFailure`), and returns every
buffer's words and the lines the kernel printed (the driver writes printf output to descriptor
1 at the synchronisation, which :func:`authoring.stdout.captured_stdout` collects). CuPy is
imported only when a runner is made, so the rest of record-truth, and its tests, run without
one; :func:`make_runner` is the one place a runner is made. The errors of record-truth live
here because the GPU ones are its kinds.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from warpboard.harness.case.model import Case
from warpboard.harness.run.printf import split_lines
from . import toolchain
from .stdout import captured_stdout


class TruthError(RuntimeError):
    """A case that could not be recorded (the message says why)."""


class NoGpu(TruthError):
    """No way to run CUDA here: CuPy missing, no GPU, no driver."""


def _nvcc_or_none() -> str | None:
    try:
        return toolchain.find_nvcc()
    except toolchain.ToolMissing:
        return None


class GpuFailure(TruthError):
    """The GPU failed or hung during a launch: later launches cannot be trusted."""


@dataclass
class GpuInfo:
    """What ``recorded_on`` says about the machine."""
    name: str
    capability: tuple[int, int]
    cuda: str            # the CUDA version of the compiler used, e.g. "13.0"
    driver: str          # e.g. "580.159.04"
    compiler: str = "nvcc"

    def recorded_on(self, repeats: int) -> str:
        major, minor = self.capability
        runs = "1 run" if repeats == 1 else f"identical over {repeats} runs"
        return (f"{self.name} (compute capability {major}.{minor}), CUDA {self.cuda} "
                f"({self.compiler} -arch=sm_{major}{minor}), driver {self.driver}, {runs}")


@dataclass
class Launched:
    """What one launch left: every buffer's words and the lines the kernel printed."""
    buffers: list[list[int]]
    printf: list[str] = field(default_factory=list)


class Runner(Protocol):
    def info(self) -> GpuInfo: ...
    def run(self, case: Case) -> "Launched | list[list[int]]": ...   # a list: nothing printed


def as_launched(result) -> Launched:
    """A runner's result as :class:`Launched` (a plain list of buffers: nothing printed)."""
    return result if isinstance(result, Launched) else Launched([list(w) for w in result])


class CupyRunner:
    """Compiles and launches cases through CuPy on GPU 0."""

    def __init__(self, compiler: str = "auto", timeout_s: float = 30.0):
        try:
            import cupy
            import numpy
        except ImportError as e:
            raise NoGpu(f"record-truth needs CuPy and an NVIDIA GPU, and CuPy is not "
                        f"importable here ({e}): pip install cupy-cuda13x (or cupy-cuda12x "
                        f"for a CUDA 12 driver), or record on a machine that has it, write "
                        f"--json there and apply it here with --from-json") from None
        self.cp, self.np = cupy, numpy
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # CUDARuntimeError: no driver, no device
            raise NoGpu(f"CuPy finds no usable NVIDIA GPU: {e}") from None
        if count < 1:
            raise NoGpu("CuPy finds no NVIDIA GPU")
        self.timeout_s = timeout_s
        self.nvcc = _nvcc_or_none() if compiler in ("auto", "nvcc") else None
        if compiler == "nvcc" and not self.nvcc:
            raise NoGpu("--compiler nvcc: nvcc is not on the PATH")
        self.compiler = "nvcc" if self.nvcc else "nvrtc"
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        self._name = name.decode() if isinstance(name, bytes) else str(name)
        self._cc = (int(props["major"]), int(props["minor"]))
        self._tmp = tempfile.TemporaryDirectory(prefix="wb-truth-")
        self._modules: dict[Path, object] = {}
        self._info: GpuInfo | None = None

    def info(self) -> GpuInfo:
        if self._info is None:
            self._info = GpuInfo(self._name, self._cc, self._cuda_version(),
                                 self._driver_version(), self.compiler)
        return self._info

    def _cuda_version(self) -> str:
        version = toolchain.nvcc_version(self.nvcc) if self.nvcc else ""
        if version:
            return version
        major, minor = self.cp.cuda.nvrtc.getVersion()
        return f"{major}.{minor}"

    def _driver_version(self) -> str:
        try:
            import pynvml
            pynvml.nvmlInit()
            v = pynvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        except Exception:
            pass
        smi = shutil.which("nvidia-smi")
        if smi:
            out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True).stdout.strip().splitlines()
            if out and out[0].strip():
                return out[0].strip()
        v = self.cp.cuda.runtime.driverGetVersion()
        return f"(CUDA driver API {v // 1000}.{v % 1000 // 10})"

    def _module(self, source: Path):
        source = source.resolve()
        if source not in self._modules:
            arch = f"sm_{self._cc[0]}{self._cc[1]}"
            if self.nvcc:
                cubin = Path(self._tmp.name) / f"m{len(self._modules)}.cubin"
                try:
                    toolchain.compile_cubin(source, cubin, arch, nvcc=self.nvcc)
                except toolchain.ToolFailed as e:
                    raise TruthError(f"nvcc -arch={arch} {source.name} failed:\n{e.output}") from None
                self._modules[source] = self.cp.RawModule(path=str(cubin))
            else:
                self._modules[source] = self.cp.RawModule(
                    code=source.read_text(), backend="nvrtc", options=("-std=c++17",))
        return self._modules[source]

    def run(self, case: Case) -> Launched:
        cp, np = self.cp, self.np
        try:
            fn = self._module(case.source).get_function(case.kernel)
        except TruthError:
            raise
        except Exception as e:
            raise TruthError(f"cannot load kernel {case.kernel!r} from {case.source}: {e}") from None
        arrays = [cp.asarray(np.array(b.init, dtype=np.uint32)) for b in case.buffers]
        names = [b.name for b in case.buffers]
        args = []
        for p in case.params:
            if p.kind == "buffer" and p.offset:
                args.append(np.uint64(arrays[names.index(p.value)].data.ptr + p.offset))
            elif p.kind == "buffer":
                args.append(arrays[names.index(p.value)])
            else:
                args.append({"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}[p.kind](p.value))
        try:
            with captured_stdout() as printed:
                self._launch(fn, case, args)
            return Launched([a.get().astype(np.uint32).tolist() for a in arrays], split_lines(printed.text))
        except GpuFailure:
            raise
        except Exception as e:
            raise GpuFailure(f"the launch failed: {e}") from None

    def _launch(self, fn, case: Case, args: list) -> None:
        """Launch and wait (the driver prints the kernel's printf output at the synchronisation)."""
        cp = self.cp
        fn(case.grid, case.block, tuple(args))
        done = cp.cuda.Event()
        done.record()
        deadline = time.monotonic() + self.timeout_s
        while not done.done:
            if time.monotonic() > deadline:
                raise GpuFailure(f"the kernel did not finish in {self.timeout_s:g} s "
                                 "(a deadlock?); stopping: the GPU is still busy with it")
            time.sleep(0.001)
        cp.cuda.runtime.deviceSynchronize()


def make_runner(compiler: str = "auto", timeout_s: float = 30.0) -> Runner:
    """The runner record-truth uses (tests replace this)."""
    return CupyRunner(compiler, timeout_s)
