"""``warpboard record-truth``: expected words from a real NVIDIA GPU.

    warpboard record-truth [CASES...] [--force] [--repeat N] [--json OUT] [--from-json IN]

For each selected case with a CUDA ``source``: compile the source for the GPU at hand
(nvcc ``-cubin -arch=sm_XY``, else NVRTC through CuPy), launch ``kernel`` with the case's
grid, block, buffers (``init``) and parameters, ``--repeat`` times, and, when every run
left the same words, write them into the case file as each buffer's ``expected`` and the
provenance as ``expected = "chip"`` with ``recorded_on`` naming the GPU, its compute
capability, the CUDA version and the driver. Only those keys are rewritten; the rest of
the file stays as it is.

Which buffers get ``expected``: those the kernel changed, and those that already had one
(``--all-buffers``: every buffer). Without CASES, every ``expected = "pending"`` case is
selected (those written by ``warpboard new-case``). Cases with ``expected = "derived"``
(worked out by hand or on the CPU) are refused unless ``--force``.

What the kernel prints with ``printf`` is captured (the driver prints it on descriptor 1 at
the synchronisation) and written as the case's ``[printf] expected`` lines, where it printed
any or the case has strings or a ``[printf]`` table; the repeats must print the same lines
(in any order: the order between threads is not defined).

``--json OUT`` also writes what was recorded (every buffer's words, per case) as JSON;
``--from-json IN`` applies such a file, recorded on another machine, without a GPU.
Exit status: 0 all recorded, 1 some refused or failed, 2 cannot start (no CuPy, no GPU,
a broken case file), 3 stopped because the GPU failed or a launch hung.
The GPU is only touched through :class:`CupyRunner` (made by :func:`make_runner`), so the
rewriting and the rules are testable without one.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from .capture import captured_stdout
from .cases import Case, CaseError, discover_cases, load_case
from .newcase import toml_string, toml_words
from .printf import split_lines

try:
    import tomllib
except ModuleNotFoundError:  # python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]


class TruthError(RuntimeError):
    """A case that could not be recorded (the message says why)."""


class NoGpu(TruthError):
    """No way to run CUDA here: CuPy missing, no GPU, no driver."""


class GpuFailure(TruthError):
    """The GPU failed or hung during a launch: later launches cannot be trusted."""


# ---------------------------------------------------------------- the GPU side

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


def _launched(result) -> Launched:
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
        self.nvcc = shutil.which("nvcc") if compiler in ("auto", "nvcc") else None
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
        if self.nvcc:
            out = subprocess.run([self.nvcc, "--version"], capture_output=True, text=True).stdout
            m = re.search(r"release (\d+\.\d+), V([\d.]+)", out)
            if m:
                return m.group(1)
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
                proc = subprocess.run([self.nvcc, "-cubin", f"-arch={arch}", "-o", str(cubin),
                                       str(source)], capture_output=True, text=True)
                if proc.returncode != 0:
                    raise TruthError(f"nvcc -arch={arch} {source.name} failed:\n{proc.stderr}")
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
            if p.kind == "buffer":
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


# ---------------------------------------------------------------- TOML rewriting

@dataclass
class _Entry:
    key: str
    start: int           # first line (0-based)
    end: int             # last line, inclusive


@dataclass
class _Table:
    name: str | None     # None: the top level
    index: int           # n-th table of that name (arrays of tables)
    header: int | None   # its header line
    entries: list[_Entry] = field(default_factory=list)


_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?\s*(#.*)?$")


def _value_end(lines: list[str], line: int, col: int) -> int:
    """The last line of the value that starts at lines[line][col:] (strings, arrays,
    inline tables and comments understood)."""
    depth, i, j = 0, line, col
    while i < len(lines):
        text = lines[i]
        while j < len(text):
            ch = text[j]
            if ch == "#":
                break
            if text.startswith('"""', j) or text.startswith("'''", j):
                quote = text[j:j + 3]
                i, j = _multiline_end(lines, i, j + 3, quote)
                text = lines[i]
                continue
            if ch in "\"'":
                k = j + 1
                while k < len(text) and text[k] != ch:
                    k += 2 if ch == '"' and text[k] == "\\" else 1
                j = k + 1
                continue
            if ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
            j += 1
        if depth <= 0:
            return i
        i, j = i + 1, 0
    return len(lines) - 1


def _multiline_end(lines: list[str], i: int, j: int, quote: str) -> tuple[int, int]:
    """(line, column just after) the closing ``quote`` of a multi-line string."""
    while i < len(lines):
        text = lines[i]
        while j < len(text):
            if quote == '"""' and text[j] == "\\":
                j += 2
                continue
            if text.startswith(quote, j):
                j += 3
                while j < len(text) and text[j] == quote[0]:   # """"" ends with quotes in it
                    j += 1
                return i, j
            j += 1
        i, j = i + 1, 0
    return len(lines) - 1, len(lines[-1]) if lines else 0


def _scan(lines: list[str]) -> list[_Table]:
    """The tables of a TOML file and the line spans of their key = value entries."""
    tables = [_Table(None, 0, None)]
    seen: dict[str, int] = {}
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if not s or s.startswith("#"):
            i += 1
            continue
        m = _HEADER.match(lines[i])
        if m:
            name = m.group(2)
            seen[name] = seen.get(name, -1) + 1
            tables.append(_Table(name, seen[name] if m.group(1) == "[[" else 0, i))
            i += 1
            continue
        eq = lines[i].find("=")
        if eq < 0:
            i += 1
            continue
        key = lines[i][:eq].strip().strip('"\'')
        end = _value_end(lines, i, eq + 1)
        tables[-1].entries.append(_Entry(key, i, end))
        i = end + 1
    return tables


class _Editor:
    """Line edits to a TOML text, located by table and key, applied bottom-up."""

    def __init__(self, text: str):
        self.lines = text.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"
        self.tables = _scan(self.lines)
        self.edits: list[tuple[int, int, list[str]]] = []    # (at, remove, insert)

    def table(self, name: str | None, index: int = 0) -> _Table:
        for t in self.tables:
            if t.name == name and t.index == index:
                return t
        raise TruthError(f"no [{name}] table number {index}")

    def set(self, name: str | None, index: int, key: str, value: str,
            after: tuple[str, ...] = ()) -> None:
        """``key = value`` in the table: replacing the entry, else placed after the first of
        ``after`` that is there, else after the table's last entry."""
        t = self.table(name, index)
        new = [ln + "\n" for ln in f"{key} = {value}".split("\n")]
        for e in t.entries:
            if e.key == key:
                self.edits.append((e.start, e.end - e.start + 1, new))
                return
        anchor = next((e for k in after for e in t.entries if e.key == k), None)
        if anchor is None and t.entries:
            anchor = t.entries[-1]
        at = anchor.end + 1 if anchor else (t.header + 1 if t.header is not None else 0)
        self.edits.append((at, 0, new))

    def has_table(self, name: str) -> bool:
        return any(t.name == name for t in self.tables)

    def add_table(self, name: str, key: str, value: str) -> None:
        """A new ``[name]`` table holding ``key = value``, at the end of the file."""
        self.edits.append((len(self.lines), 0, ["\n", f"[{name}]\n"]
                           + [ln + "\n" for ln in f"{key} = {value}".split("\n")]))

    def delete(self, name: str | None, index: int, key: str) -> None:
        for e in self.table(name, index).entries:
            if e.key == key:
                self.edits.append((e.start, e.end - e.start + 1, []))

    def text(self) -> str:
        lines = list(self.lines)
        # bottom-up; at one line, replacements and deletions before insertions, and later
        # insertions first (so that insertions at one place keep the order they were made)
        order = sorted(enumerate(self.edits), key=lambda ie: (ie[1][0], ie[1][1] > 0, ie[0]),
                       reverse=True)
        for _, (at, remove, insert) in order:
            lines[at:at + remove] = insert
        return "".join(lines)


def toml_lines(lines: list[str]) -> str:
    """A TOML array of strings, one a line."""
    return "[\n" + "".join(f"    {toml_string(line)},\n" for line in lines) + "]" if lines else "[]"


def rewrite_case_text(text: str, recorded_on: str, expected: dict[int, list[int]],
                      printf: list[str] | None = None) -> str:
    """The case file ``text`` with provenance ``expected = "chip"`` and ``recorded_on``
    (``derivation`` dropped), ``expected`` of the buffers given (index -> words) and, where
    ``printf`` is given, ``[printf] expected`` lines; every other line as it was. Checked by
    parsing both texts."""
    before = tomllib.loads(text)
    ed = _Editor(text)
    ed.set("provenance", 0, "expected", '"chip"')
    ed.set("provenance", 0, "recorded_on", toml_string(recorded_on), after=("expected",))
    ed.delete("provenance", 0, "derivation")
    for index, words in sorted(expected.items()):
        ed.set("buffers", index, "expected", toml_words("expected", words)[len("expected = "):],
               after=("init",))
    if printf is not None:
        if ed.has_table("printf"):
            ed.set("printf", 0, "expected", toml_lines(printf))
        else:
            ed.add_table("printf", "expected", toml_lines(printf))
    new = ed.text()
    want = json.loads(json.dumps(before))
    want["provenance"]["expected"] = "chip"
    want["provenance"]["recorded_on"] = recorded_on
    want["provenance"].pop("derivation", None)
    for index, words in expected.items():
        want["buffers"][index]["expected"] = list(words)
    if printf is not None:
        want.setdefault("printf", {})["expected"] = list(printf)
    try:
        got = tomllib.loads(new)
    except tomllib.TOMLDecodeError as e:
        raise TruthError(f"rewriting the case file would break it ({e}); left as it was") from None
    if got != want:
        raise TruthError("rewriting the case file would change more than the expected words "
                         "and the provenance; left as it was")
    return new


# ---------------------------------------------------------------- recording

@dataclass
class Outcome:
    case: str
    status: str                    # recorded | refused | failed | skipped
    message: str = ""
    buffers: dict[str, list[int]] | None = None
    printf: list[str] | None = None


def printf_to_record(case: Case, lines: list[str]) -> list[str] | None:
    """The lines to write as ``[printf] expected``: where the kernel printed any, or the
    case prints (it has strings or a [printf] table already); None: leave the case alone."""
    return list(lines) if lines or case.strings or case.printf_expected is not None else None


def choose_buffers(case: Case, final: list[list[int]], all_buffers: bool = False) -> dict[int, list[int]]:
    """Buffer index -> words to record: changed buffers and those already checked."""
    return {i: list(words) for i, (b, words) in enumerate(zip(case.buffers, final))
            if all_buffers or b.expected is not None or tuple(words) != b.init}


def refusal(case: Case, force: bool) -> str | None:
    """Why ``case`` may not be recorded, or None."""
    if case.source is None:
        return "no CUDA `source` to run"
    if case.kernel is None:
        return "no `kernel` named"
    if case.provenance.get("expected") == "derived" and not force:
        return ('its expected words are "derived" (worked out by hand or on the CPU); '
                "use --force to replace them with the chip's")
    return None


def apply(case: Case, final: list[list[int]], recorded_on: str, all_buffers: bool = False,
          write: bool = True, printf: list[str] | None = None) -> str:
    """Write ``final`` (every buffer's words after the kernel) and, where given, the lines it
    printed into the case file."""
    chosen = choose_buffers(case, final, all_buffers)
    if not chosen:
        raise TruthError("the kernel changed no buffer: nothing to record "
                         "(give the output buffers an init the kernel overwrites, or --all-buffers)")
    text = case.path.read_text(encoding="utf-8")
    new = rewrite_case_text(text, recorded_on, chosen, printf)
    if write:
        case.path.write_text(new, encoding="utf-8")
        try:
            load_case(case.path)
        except CaseError as e:
            case.path.write_text(text, encoding="utf-8")
            raise TruthError(f"the rewritten case does not load ({e}); left as it was") from None
    names = ", ".join(case.buffers[i].name for i in sorted(chosen))
    lines = "" if printf is None else f" and {len(printf)} printf line{'s' * (len(printf) != 1)}"
    return f"expected words for {names}{lines}" + ("" if write else " (not written: --no-write)")


def record(cases: list[Case], runner: Runner, *, force: bool = False, repeat: int = 3,
           all_buffers: bool = False, write: bool = True,
           report: Callable[[Outcome], None] = lambda o: None,
           results: dict | None = None) -> list[Outcome]:
    """Run and record every case; ``results`` (if given) collects the JSON document."""
    info = runner.info()
    recorded_on = info.recorded_on(repeat)
    if results is not None:
        results.update({"recorded_on": recorded_on, "gpu": info.name,
                        "compute_capability": f"{info.capability[0]}.{info.capability[1]}",
                        "cuda": info.cuda, "driver": info.driver, "compiler": info.compiler,
                        "repeat": repeat, "cases": results.get("cases", {})})
    outcomes = []
    for case in cases:
        why = refusal(case, force)
        buffers = None
        if why:
            out = Outcome(case.id, "refused", why)
        else:
            try:
                runs = [_launched(runner.run(case)) for _ in range(repeat)]
                if any(r.buffers != runs[0].buffers for r in runs[1:]):
                    raise TruthError(f"the {repeat} runs left different words: the kernel is "
                                     "not deterministic (atomics' order? a race?); not recorded")
                if any(sorted(r.printf) != sorted(runs[0].printf) for r in runs[1:]):
                    raise TruthError(f"the {repeat} runs printed different lines; not recorded")
                buffers = {b.name: words for b, words in zip(case.buffers, runs[0].buffers)}
                lines = printf_to_record(case, runs[0].printf)
                out = Outcome(case.id, "recorded",
                              apply(case, runs[0].buffers, recorded_on, all_buffers, write, lines),
                              buffers, lines)
            except GpuFailure as e:
                out = Outcome(case.id, "failed", str(e))
                outcomes.append(out)
                _note(results, out)
                report(out)
                raise
            except TruthError as e:
                out = Outcome(case.id, "failed", str(e), buffers)
        outcomes.append(out)
        _note(results, out)
        report(out)
    return outcomes


def _note(results: dict | None, out: Outcome) -> None:
    if results is not None:
        entry = {"status": out.status, "message": out.message}
        if out.buffers is not None:
            entry["buffers"] = out.buffers
        if out.printf is not None:
            entry["printf"] = out.printf
        results.setdefault("cases", {})[out.case] = entry


def apply_json(cases: list[Case], doc: dict, *, force: bool = False, all_buffers: bool = False,
               write: bool = True, report: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Apply results recorded elsewhere (``--json``) to the selected cases."""
    recorded = doc.get("cases", {})
    outcomes = []
    for case in cases:
        entry = recorded.get(case.id)
        why = refusal(case, force)
        if entry is None or "buffers" not in entry:
            out = Outcome(case.id, "skipped", "not in the results file" if entry is None
                          else f"not recorded there: {entry.get('message', '')}")
        elif why:
            out = Outcome(case.id, "refused", why)
        else:
            bufs = entry["buffers"]
            try:
                if sorted(bufs) != sorted(b.name for b in case.buffers):
                    raise TruthError(f"the results file has buffers {', '.join(bufs)}, the case "
                                     f"{', '.join(b.name for b in case.buffers)}")
                final = [bufs[b.name] for b in case.buffers]
                for b, words in zip(case.buffers, final):
                    if len(words) != b.words:
                        raise TruthError(f"buffer {b.name}: {len(words)} words recorded, "
                                         f"the case has {b.words}")
                lines = entry.get("printf")
                if lines is not None and not (isinstance(lines, list) and all(isinstance(x, str) for x in lines)):
                    raise TruthError("the results file's printf entry is not a list of lines")
                out = Outcome(case.id, "recorded",
                              apply(case, final, doc["recorded_on"], all_buffers, write, lines), bufs, lines)
            except TruthError as e:
                out = Outcome(case.id, "failed", str(e))
        outcomes.append(out)
        report(out)
    return outcomes


def select(root: str | Path, patterns: list[str], exclude: list[str] = ()) -> list[Case]:
    """The named cases, or (none named) every pending case; minus ``exclude`` patterns."""
    cases = discover_cases(root, patterns or None)
    if not patterns:
        cases = [c for c in cases if c.provenance.get("expected") == "pending"]
    return [c for c in cases if not any(fnmatch.fnmatchcase(c.id, x) for x in exclude)]


DESCRIPTION = ("Run cases' CUDA sources on an NVIDIA GPU (CuPy) and write the words "
               "they leave as the cases' expected values, with provenance.")


def _at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``warpboard record-truth`` options to a parser (a fresh one or a subparser)."""
    p.add_argument("cases", nargs="*", help="case ids or fnmatch patterns "
                                            "(default: every case whose expected is \"pending\")")
    p.add_argument("--root", default="cases", help="the case library (default: cases)")
    p.add_argument("--exclude", action="append", default=[],
                   help="leave out cases matching this pattern (repeatable)")
    p.add_argument("--force", action="store_true",
                   help="also overwrite cases whose expected words are \"derived\"")
    p.add_argument("--repeat", type=_at_least_one, default=3,
                   help="runs per case, which must all agree (default 3)")
    p.add_argument("--all-buffers", action="store_true",
                   help="record every buffer, not only those the kernel changed")
    p.add_argument("--json", dest="json_out", help="also write what was recorded as JSON")
    p.add_argument("--from-json", help="apply a JSON written by --json elsewhere (no GPU needed)")
    p.add_argument("--no-write", action="store_true", help="leave the case files alone")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per launch (default 30)")
    p.add_argument("--compiler", choices=["auto", "nvcc", "nvrtc"], default="auto",
                   help="how to compile for the GPU (default: nvcc if on the PATH, else NVRTC)")
    return p


def main(argv: list[str] | None = None) -> int:
    """``warpboard record-truth`` on its own: parse ``argv`` and run."""
    p = argparse.ArgumentParser(prog="warpboard record-truth", description=DESCRIPTION)
    return run(add_arguments(p).parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Carry out ``warpboard record-truth`` for parsed arguments; return the exit code."""
    try:
        cases = select(args.root, args.cases, args.exclude)
    except CaseError as e:
        print(f"warpboard record-truth: {e}", file=sys.stderr)
        return 2
    if not cases:
        print("warpboard record-truth: no case selected (no pending cases; name cases to "
              "re-record them)", file=sys.stderr)
        return 0

    def report(o: Outcome) -> None:
        print(f"{o.status:9s} {o.case}" + (f": {o.message}" if o.message else ""), flush=True)

    write = not args.no_write
    if args.from_json:
        try:
            doc = json.loads(Path(args.from_json).read_text())
        except (OSError, ValueError) as e:
            print(f"warpboard record-truth: {args.from_json}: {e}", file=sys.stderr)
            return 2
        outcomes = apply_json(cases, doc, force=args.force, all_buffers=args.all_buffers,
                              write=write, report=report)
    else:
        try:
            runner = make_runner(args.compiler, args.timeout)
        except NoGpu as e:
            print(f"warpboard record-truth: {e}", file=sys.stderr)
            return 2
        results: dict = {}
        outcomes: list[Outcome] = []

        def report_and_save(o: Outcome) -> None:
            outcomes.append(o)
            report(o)
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(results, indent=1))

        print(f"recording on {runner.info().recorded_on(args.repeat)}", flush=True)
        try:
            record(cases, runner, force=args.force, repeat=args.repeat,
                   all_buffers=args.all_buffers, write=write, report=report_and_save,
                   results=results)
        except GpuFailure as e:
            print(f"warpboard record-truth: stopped: {e}", file=sys.stderr)
            return 3
    bad = [o for o in outcomes if o.status != "recorded"]
    print(f"{len(outcomes) - len(bad)} recorded, {len(bad)} not")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
