"""The code the tables are learned from, compiled once: CUDA sources by set, each compiled with
``nvcc -cubin -arch=sm_86 -O3`` and disassembled with ``nvdisasm -c -hex`` (every instruction
with its two words), the listing cached under ``.warpboard-cache/assembler/`` by a hash of the
source and its flags.

The sets: ``cases`` (every ``.cu`` below ``cases/``), ``cub`` (``corpus/cub``, with
corpus/manifest.toml's flags), ``hecbench`` (the HeCBench programs of corpus/capture.toml,
under ``.carry/hecbench``) and ``public`` (the cuda-samples, Rodinia and llm.c files that
corpus/public.toml names, when their trees are under ``build/asm-training/``). A file that does
not compile is left out with its first error line; a set whose tree is absent is empty.
"""
from __future__ import annotations

import hashlib
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from warpboard.harness.files import write_atomic

from ..toolchain import ARCH, ToolFailed, compile_cubin, find_nvcc, find_nvdisasm, run

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".warpboard-cache" / "assembler"
PUBLIC_TREES = ROOT / "build" / "asm-training"
OPT_FLAGS = ("-O3",)
SETS = ("cases", "cub", "hecbench", "public")
COMPILE_TIMEOUT_S = 900


@dataclass(frozen=True)
class Source:
    """One CUDA file of a training set and the nvcc flags it needs (after -cubin -arch)."""
    set: str
    path: Path
    flags: tuple[str, ...] = OPT_FLAGS

    @property
    def name(self) -> str:
        try:
            return str(self.path.relative_to(ROOT))
        except ValueError:
            return str(self.path)

    def digest(self) -> str:
        return hashlib.sha256(self.path.read_bytes() + repr((self.flags, ARCH)).encode()).hexdigest()[:24]


@dataclass
class Compiled:
    """The listings of a set of sources, and the files that did not compile, with why."""
    listings: dict[Source, str] = field(default_factory=dict)
    failed: dict[Source, str] = field(default_factory=dict)


def _toml(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def sources(which: str, root: Path = ROOT) -> list[Source]:
    """The sources of one training set, in a stable order."""
    if which == "cases":
        return [Source("cases", p) for p in sorted((root / "cases").rglob("*.cu"))]
    if which == "cub":
        out = []
        for base in _toml(root / "corpus" / "manifest.toml").get("codebase", []):
            folder = root / "corpus" / base["root"]
            flags = (*OPT_FLAGS, *base.get("flags", []), *(f"-I{folder / i}" for i in base.get("include", [])))
            out += [Source("cub", folder / f, flags) for f in base.get("files", []) if (folder / f).is_file()]
        return out
    if which == "hecbench":
        data = _toml(root / "corpus" / "capture.toml")
        base = next((b for b in data.get("codebase", []) if b["name"] == "hecbench"), {})
        tree = root / ".carry" / "hecbench"
        return [Source("hecbench", tree / p["dir"] / s, (*OPT_FLAGS, *base.get("flags", []), *p.get("flags", [])))
                for p in data.get("program", []) if p.get("codebase") == "hecbench"
                for s in p["sources"] if s.endswith(".cu") and (tree / p["dir"] / s).is_file()]
    if which == "public":
        out = []
        for base in _toml(root / "corpus" / "public.toml").get("codebase", []):
            tree = PUBLIC_TREES / base["name"]
            flags = (*OPT_FLAGS, *base.get("flags", []), *(f"-I{(tree / i).resolve()}" for i in base.get("include", [])))
            out += [Source("public", tree / f, flags) for f in base.get("files", []) if (tree / f).is_file()]
        return out
    raise ValueError(f"unknown training set {which!r} (the sets: {', '.join(SETS)})")


def listing(source: Source, cache: Path = CACHE) -> str:
    """The ``nvdisasm -c -hex`` listing of a source, compiled unless the cache has it;
    ToolFailed when nvcc fails (and the failure is cached too, so it is not tried again)."""
    key = source.digest()
    done, failed = cache / f"{key}.sass", cache / f"{key}.failed"
    if done.is_file():
        return done.read_text(encoding="utf-8")
    if failed.is_file():
        raise ToolFailed("nvcc", ["nvcc", str(source.path)], 1, failed.read_text(encoding="utf-8"))
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="wb-asm-nvcc-") as tmp:
        cubin = Path(tmp) / "k.cubin"
        try:
            compile_cubin(source.path, cubin, ARCH, source.flags, find_nvcc(), source.path.parent, COMPILE_TIMEOUT_S)
        except ToolFailed as e:
            write_atomic(str(failed), e.output.encode("utf-8"))
            raise
        text = run([find_nvdisasm(), "-c", "-hex", str(cubin)], "nvdisasm", timeout=COMPILE_TIMEOUT_S)
    write_atomic(str(done), text.encode("utf-8"))
    return text


def compile_sets(which: tuple[str, ...] = SETS, cache: Path = CACHE, progress=None) -> Compiled:
    """Every listing of the chosen sets (one nvcc at a time)."""
    out = Compiled()
    todo = [s for w in which for s in sources(w)]
    for k, source in enumerate(todo):
        if progress:
            progress(k, len(todo), source.name)
        try:
            out.listings[source] = listing(source, cache)
        except ToolFailed as e:
            lines = [ln.strip() for ln in e.output.splitlines() if "error" in ln.lower()] or ["failed"]
            out.failed[source] = lines[0][:200]
    return out


__all__ = ["CACHE", "Compiled", "SETS", "Source", "compile_sets", "listing", "sources"]
