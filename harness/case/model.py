"""Test cases as data: the case model, its strict TOML loader and case discovery.

A case is one SASS kernel, how to launch it, the buffers it reads and writes, and the
words those buffers must hold afterwards; ``cases/README.md`` documents the format.
Everything is validated on load, so a typo in a case file is reported as
``cases/vote/x.toml:14: ...`` rather than surfacing later as a baffling mismatch.

This module holds the model (:class:`Case` and its parts), the limits a case must keep,
the checks of each table, and the entry points (:func:`load_case`, :func:`discover_cases`,
:func:`scan_cases`). The TOML-level checks with their ``file:line:`` errors are in
:mod:`harness.case.fields`, the listing and kernel helpers in :mod:`harness.case.listing`,
the printf tables in :mod:`harness.case.printf`; the names callers use from those are
importable from here too.
"""
from __future__ import annotations

import fnmatch
import hashlib
import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from warpboard.translator import abi

from . import cubin as cubin_file
from . import printf as case_printf
from .fields import (
    MAX_FILE_BYTES,
    CaseError,
    Checker,
    Locator,
    file_beside,
    parse_toml,
    read_text,
    toml_type_name,
)
from .listing import has_kernel, kernel_name, kernel_section, listing_kernels, load_listing
from .words import check_words, load_words, words_cache, words_problems

DEFAULT_SHARED_BYTES = 16384
MAX_SHARED_BYTES = 101376        # 99 KiB: the most shared memory one sm_86 block can have
MAX_BLOCK_THREADS = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)  # CUDA's per-dimension block limits
MAX_GRID_DIM = 65535             # the least maxComputeWorkGroupCount Vulkan guarantees
MAX_TOTAL_THREADS = 1 << 18      # the interpreter runs every thread of the launch on the CPU
MAX_BUFFER_WORDS = 1 << 24       # 64 MiB per buffer
MAX_TOTAL_WORDS = 1 << 25        # 128 MiB in all of a case's buffers
MAX_STEP_BUDGET = 1 << 24        # steps per thread (free) or turns per block (turns)
MAX_SUMMARY_CHARS = 500
MAX_NAME_CHARS = 100
PROVENANCE_KINDS = ("chip", "derived", "pending")

TOP_KEYS = ("name", "summary", "tags", "kernel", "listing", "sass", "source",
            "step_budget", "provenance", "launch", "buffers", "params", "constants",
            "strings", "printf", "cubin", "words")
PROVENANCE_KEYS = ("expected", "recorded_on", "listing", "derivation", "chip_ms")
LAUNCH_KEYS = ("grid", "block", "shared_bytes")
BUFFER_KEYS = ("name", "words", "init", "expected", "compare")
PARAM_KINDS = ("buffer", "u8", "u16", "u32", "u64")
PARAM_BITS = {"u8": 8, "u16": 16, "u32": 32, "u64": 64}
CONSTANT_KEYS = ("bank", "offset", "words")
CONSTANT_BANKS = (1, 4)          # banks a case may fill (0 is the launch's: see translator.abi)
CONSTANT_BANK_BYTES = abi.BANK_BYTES     # one constant bank (banks 1-4; bank 0 is the ABI's)
MAX_CUBIN_BYTES = 64 << 20       # a cubin a case takes its constant banks from

_TAG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class BrokenCase:
    """A case file that did not load: it becomes an ERROR row, the other cases still run."""
    id: str
    path: Path
    message: str


@dataclass(frozen=True)
class BufferSpec:
    """One device buffer of 32-bit words: its initial contents and, if checked, its final ones."""
    name: str
    words: int
    init: tuple[int, ...]
    expected: tuple[int, ...] | None
    compare: str = "exact"      # or "f32-ulp:N[,abs:2^-K]": finite binary32 words within N ulp
                                # (or 2^-K apart) are equal


COMPARE_FORMS = re.compile(r"exact|f32-ulp:([0-9]{1,7})(,abs:2\^-[0-9]{1,3})?")


@dataclass(frozen=True)
class Param:
    """One kernel parameter: ``kind`` "buffer" (value: buffer name, passed as its 64-bit
    address plus ``offset`` bytes), "u8", "u16", "u32" or "u64" (value: the integer; each
    naturally aligned)."""
    kind: str
    value: str | int
    offset: int = 0


@dataclass(frozen=True)
class Case:
    """One loaded, validated case (see cases/README.md for the file format)."""
    id: str
    path: Path
    name: str
    summary: str
    tags: tuple[str, ...]
    kernel: str | None
    listing_text: str
    listing_path: Path
    listing_line: int
    source: Path | None
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    step_budget: int | None
    buffers: tuple[BufferSpec, ...]
    params: tuple[Param, ...]
    provenance: dict = field(hash=False)
    constants: tuple[tuple[int, int, tuple[int, ...]], ...] = ()   # (bank, byte offset, words)
    strings: tuple[tuple[int, str], ...] = ()        # global data: (byte offset, text), by offset
    printf_expected: tuple[str, ...] | None = None   # the lines the launch prints, in any order
    words: bytes | None = field(default=None, repr=False)   # the kernel's SM86 instruction words (words.py)

    @property
    def global_data(self) -> bytes:
        """The kernel's initialised global data (its strings), empty when it has none."""
        return case_printf.global_data(self.strings)

    @property
    def threads_per_block(self) -> int:
        """Threads in one block (x*y*z)."""
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def num_blocks(self) -> int:
        """Blocks in the grid (x*y*z)."""
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def total_threads(self) -> int:
        """Threads in the whole launch."""
        return self.threads_per_block * self.num_blocks

    @property
    def warps_per_block(self) -> int:
        """32-lane warps per block (the last is partial unless 32 divides the block)."""
        return -(-self.threads_per_block // 32)

    @property
    def kernel_listing(self) -> str:
        """Only this case's kernel out of ``listing_text`` (see :func:`kernel_section`)."""
        return kernel_section(self.listing_text, self.kernel)

    def buffer(self, name: str) -> BufferSpec:
        """The buffer called ``name`` (KeyError if there is none)."""
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)


# ---------------------------------------------------------------- loading

def load_case(path: str | Path, root: str | Path | None = None, check: bool = True) -> Case:
    """Load and validate one case file. ``root`` is the cases directory the id is taken
    relative to; by default the nearest ancestor called ``cases`` (else the file stem).
    ``check``: its words against its listing (:func:`words_problems`)."""
    path = Path(path)
    text = read_text(path)
    data = parse_toml(path, text)
    loc = Locator(path, text)
    top = Checker(loc, data, "")
    top.only(TOP_KEYS)
    name, summary, tags = _short(top, "name", MAX_NAME_CHARS), _short(top, "summary", MAX_SUMMARY_CHARS), _tags(top)
    confine = case_root(path, root)
    listing_text, listing_path, listing_line = load_listing(top, path, text, confine)
    kernel, source = kernel_name(top, listing_text), file_beside(top, path, "source", confine)
    step_budget = top.integer("step_budget", 1, MAX_STEP_BUDGET, required=False)
    provenance = _provenance(loc, top.table_("provenance"))
    grid, block, shared = _launch(loc, top.table_("launch"))
    buffers = _buffers(loc, top.tables("buffers"), path, confine)
    if provenance["expected"] == "pending":
        _check_pending(loc, source or file_beside(top, path, "cubin", confine), buffers)
    params = tuple(_param(loc, t, i, buffers)
                   for i, t in enumerate(top.tables("params", required=False)))
    constants = tuple(_constants(loc, t, i) for i, t in enumerate(top.tables("constants", required=False)))
    constants += _cubin_constants(top, file_beside(top, path, "cubin", confine), kernel or (listing_kernels(listing_text) or [""])[0],
                                  {bank for bank, _, _ in constants})
    strings, printf_expected = _printf(loc, top, len(buffers))
    words = load_words(top, path, confine)
    if check and words is not None and (differs := check_words(words, kernel_section(listing_text, kernel), kernel,
                                                                 words_cache())):
        raise top.err("words", differs)
    return Case(id=_case_id(path, root), path=path, name=name, summary=summary, tags=tags,
                kernel=kernel, listing_text=listing_text, listing_path=listing_path,
                listing_line=listing_line, source=source, grid=grid, block=block,
                shared_bytes=shared, step_budget=step_budget, buffers=buffers,
                params=params, provenance=provenance, constants=constants, strings=strings,
                printf_expected=printf_expected, words=words)


def discover_cases(root: str | Path = "cases", patterns: Iterable[str] | None = None) -> list[Case]:
    """All ``*.toml`` cases below ``root`` (recursively), sorted by id; ``patterns`` are
    fnmatch patterns on the id (a case is kept if any matches). Every selected file is
    loaded; if any fail, one CaseError lists all their messages, one per line."""
    cases, broken = scan_cases(root, patterns)
    if broken:
        raise CaseError("\n".join(b.message for b in broken))
    return cases


def scan_cases(root: str | Path = "cases",
               patterns: Iterable[str] | None = None) -> tuple[list[Case], list[BrokenCase]]:
    """The selected cases below ``root`` (as :func:`discover_cases`) and, apart, the files
    that did not load, each with its ``file:line: ...`` message: one bad file costs its own
    row, not the run. CaseError only when ``root`` is not a folder."""
    root = Path(root)
    if not root.is_dir():
        raise CaseError(f"{root}: no such cases directory")
    patterns = list(patterns) if patterns is not None else None
    found = sorted((_case_id(p, root), p) for p in root.rglob("*.toml"))
    if patterns is not None:
        found = [(i, p) for i, p in found if any(fnmatch.fnmatchcase(i, pat) for pat in patterns)]
    cases, broken = [], []
    for case_id, p in found:
        try:
            cases.append(load_case(p, root, check=False))
        except CaseError as e:
            broken.append(BrokenCase(case_id, p, str(e)))
        except Exception as e:  # noqa: BLE001 - a loader bug costs this row only
            broken.append(BrokenCase(case_id, p, f"{p}: {type(e).__name__}: {e}"))
    problems = words_problems(cases)
    broken += [BrokenCase(c.id, c.path, problems[c.id]) for c in cases if c.id in problems]
    return [c for c in cases if c.id not in problems], sorted(broken, key=lambda b: b.id)


def load_cases(paths: Iterable[str | Path], root: str | Path | None = None) -> list[Case]:
    """:func:`load_case` for each path, their words checked in one nvdisasm run; the first
    error raised as a CaseError."""
    cases = [load_case(p, root, check=False) for p in paths]
    problems = words_problems(cases)
    if problems:
        raise CaseError("\n".join(problems.values()))
    return cases


def case_root(path: Path, root: str | Path | None) -> Path:
    """The folder a case's files must stay inside: ``root``, else the nearest ancestor
    called ``cases``, else the case file's own folder."""
    if root is not None:
        return Path(root)
    return next((a for a in path.parents if a.name == "cases"), path.parent)


def _case_id(path: Path, root: str | Path | None) -> str:
    """The path below the cases directory, without ``.toml`` and with ``/`` separators."""
    if root is None:
        root = next((a for a in path.parents if a.name == "cases"), None)
    if root is not None:
        try:
            return path.with_suffix("").relative_to(root).as_posix()
        except ValueError:
            pass
    return path.stem


# ---------------------------------------------------------------- the tables

def _short(top: Checker, key: str, limit: int) -> str:
    """A required string of at most ``limit`` characters."""
    text = top.string(key)
    if len(text) > limit:
        raise top.err(key, f"{key}: {len(text)} characters, at most {limit}")
    return text


def _tags(top: Checker) -> tuple[str, ...]:
    """Lowercase, hyphenated, unique tags."""
    tags = top.data.get("tags", [])
    if not isinstance(tags, list):
        raise top.err("tags", f"tags: must be an array of strings, not {toml_type_name(tags)}")
    for i, t in enumerate(tags):
        if not isinstance(t, str) or not _TAG.match(t):
            raise top.err("tags", f"tags[{i}]: {t!r} is not a tag "
                                  "(lowercase letters, digits and '-')")
        if t in tags[:i]:
            raise top.err("tags", f"tags[{i}]: duplicate tag {t!r}")
    return tuple(tags)


def _launch(loc: Locator, data: dict) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """(grid, block, shared_bytes) from the [launch] table."""
    c = Checker(loc, data, "launch", "launch")
    c.only(LAUNCH_KEYS)
    grid, block = c.dims("grid", (MAX_GRID_DIM,) * 3), c.dims("block", MAX_BLOCK_DIMS)
    threads = block[0] * block[1] * block[2]
    if threads > MAX_BLOCK_THREADS:
        raise c.err("block", f"launch.block: {threads} threads per block, "
                             f"at most {MAX_BLOCK_THREADS}")
    if threads * grid[0] * grid[1] * grid[2] > MAX_TOTAL_THREADS:
        raise c.err("grid", f"launch.grid: {threads * grid[0] * grid[1] * grid[2]} threads in "
                            f"the launch, at most {MAX_TOTAL_THREADS}")
    shared = c.integer("shared_bytes", 0, MAX_SHARED_BYTES, required=False)
    return grid, block, DEFAULT_SHARED_BYTES if shared is None else shared


def _buffer(loc: Locator, data: dict, index: int, path: Path, confine: Path) -> BufferSpec:
    """One [[buffers]] table."""
    c = Checker(loc, data, f"buffers[{index}]", "buffers", index)
    c.only(BUFFER_KEYS)
    name = c.string("name")
    if not _IDENT.match(name):
        raise c.err("name", f"buffers[{index}].name: {name!r} is not an identifier")
    words = c.integer("words", 1, MAX_BUFFER_WORDS)
    c.required("init")
    init = _words(c, "init", words, True, path, confine)
    expected = _words(c, "expected", words, False, path, confine) if "expected" in data else None
    compare = c.string("compare", required=False) or "exact"
    if not COMPARE_FORMS.fullmatch(compare):
        raise c.err("compare", f'buffers[{index}].compare: {compare!r} is not "exact", "f32-ulp:N" '
                               'or "f32-ulp:N,abs:2^-K" (N a whole number of units in the last place, '
                               "2^-K an absolute difference)")
    return BufferSpec(name, words, init, expected, compare)


def _words(c: Checker, key: str, count: int, fill_ok: bool, path: Path, confine: Path) -> tuple[int, ...]:
    """A buffer's ``init`` or ``expected``: words in the file, or ``{file, sha256}``: the
    gzip-compressed little-endian bytes of a file beside the case (see cases/README.md)."""
    if not isinstance(c.data[key], dict):
        return c.words(key, count, fill_ok)
    label = c.name(key)
    sub = Checker(c.loc, c.data[key], label, c.table, c.index)
    sub.only(("file", "sha256"))
    target = file_beside(sub, path, "file", confine)
    if target is None:
        raise c.err(key, f"{label}: a table here needs file = \"...\" and sha256 = \"...\"")
    digest = sub.string("sha256").lower()
    try:
        inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)       # gzip framing
        raw = inflate.decompress(target.read_bytes(), 4 * count + 1)
    except (OSError, zlib.error) as e:
        raise c.err(key, f"{label}.file: {target} is not a readable gzip file: {e}") from None
    if len(raw) != 4 * count or not inflate.eof:
        held = f"{len(raw)} bytes" if inflate.eof else f"more than {4 * count} bytes"
        raise c.err(key, f"{label}.file: {target} holds {held}, but words = {count} ({4 * count} bytes)")
    if hashlib.sha256(raw).hexdigest() != digest:
        raise c.err(key, f"{label}.file: {target}'s bytes have sha256 {hashlib.sha256(raw).hexdigest()}, "
                         f"not {digest}")
    return struct.unpack(f"<{count}I", raw)


def _buffers(loc: Locator, tables: list[dict], path: Path, confine: Path) -> tuple[BufferSpec, ...]:
    """All [[buffers]] tables: at least one, with unique names."""
    if not tables:
        raise loc.error("buffers: a case needs at least one [[buffers]] table", "buffers")
    buffers = tuple(_buffer(loc, t, i, path, confine) for i, t in enumerate(tables))
    total = sum(b.words for b in buffers)
    if total > MAX_TOTAL_WORDS:
        raise loc.error(f"buffers: {total} words in all, at most {MAX_TOTAL_WORDS}", "buffers")
    for i, b in enumerate(buffers):
        if b.name in (o.name for o in buffers[:i]):
            raise loc.error(f"buffers[{i}].name: duplicate buffer name '{b.name}'",
                            "name", "buffers", i)
    return buffers


def _param(loc: Locator, data: dict, index: int, buffers: tuple[BufferSpec, ...]) -> Param:
    """One [[params]] table: exactly one of buffer / u32 / u64."""
    c = Checker(loc, data, f"params[{index}]", "params", index)
    c.only(PARAM_KINDS + ("offset",))
    kinds = [k for k in data if k in PARAM_KINDS]
    if len(kinds) != 1:
        raise c.err(None, f"params[{index}]: give exactly one of {', '.join(PARAM_KINDS)}")
    kind = kinds[0]
    if kind == "buffer":
        name = c.string("buffer")
        names = [b.name for b in buffers]
        if name not in names:
            raise c.err("buffer", f"params[{index}].buffer: no buffer named '{name}' "
                                  f"(buffers: {', '.join(names)})")
        size = 4 * buffers[names.index(name)].words
        offset = c.integer("offset", 0, size, required=False) or 0
        return Param("buffer", name, offset)
    if "offset" in data:
        raise c.err("offset", f"params[{index}].offset: only a buffer parameter has an offset")
    return Param(kind, c.uint(kind, data[kind], c.name(kind), PARAM_BITS[kind]))


def _cubin_constants(top: Checker, cubin: Path | None, kernel: str, given: set[int]) -> tuple:
    """The banks the kernel's cubin holds (``cubin = "k.cubin"``), but those [[constants]] give."""
    if cubin is None:
        return ()
    if cubin.stat().st_size > MAX_CUBIN_BYTES:
        raise top.err("cubin", f"cubin: {cubin} is over {MAX_CUBIN_BYTES} bytes")
    try:
        tables = cubin_file.kernel_constants(cubin.read_bytes(), kernel)
    except cubin_file.CubinError as e:
        raise top.err("cubin", f"cubin: {cubin} cannot be read: {e}") from None
    return tuple(t for t in tables if t[0] not in given)


def _constants(loc: Locator, data: dict, index: int) -> tuple[int, int, tuple[int, ...]]:
    """One [[constants]] table: words of constant bank ``bank`` from byte ``offset`` on."""
    c = Checker(loc, data, f"constants[{index}]", "constants", index)
    c.only(CONSTANT_KEYS)
    bank = c.integer("bank", *CONSTANT_BANKS)
    offset = c.integer("offset", 0, CONSTANT_BANK_BYTES - 4, required=False) or 0
    if offset % 4:
        raise c.err("offset", f"constants[{index}].offset: {offset:#x} is not a multiple of 4")
    words = c.required("words")
    if not isinstance(words, list) or not words:
        raise c.err("words", f"constants[{index}].words: must be a non-empty array of u32")
    if offset + 4 * len(words) > CONSTANT_BANK_BYTES:
        raise c.err("words", f"constants[{index}].words: {len(words)} words from {offset:#x} "
                             f"go past the bank's {CONSTANT_BANK_BYTES:#x} bytes")
    return bank, offset, c.words("words", len(words), fill_ok=False)


def _printf(loc: Locator, top: Checker, buffers: int):
    """The [[strings]] tables and the [printf] table's expected lines (None: not checked)."""
    strings = [case_printf.check_string(Checker(loc, t, f"strings[{i}]", "strings", i), i)
               for i, t in enumerate(top.tables("strings", required=False))]
    table = top.table_("printf", required=False)
    lines = case_printf.check_printf(Checker(loc, table, "printf", "printf")) if table is not None else None
    return case_printf.check_strings(strings, loc, buffers), lines


def _provenance(loc: Locator, data: dict) -> dict:
    """The [provenance] table: where the expected words come from."""
    c = Checker(loc, data, "provenance", "provenance")
    c.only(PROVENANCE_KEYS)
    kind = c.string("expected")
    if kind not in PROVENANCE_KINDS:
        raise c.err("expected", f"provenance.expected: must be \"chip\", \"derived\" or "
                                f"\"pending\", got {kind!r}")
    c.string("listing")
    needed = {"chip": "recorded_on", "derived": "derivation"}.get(kind)
    if needed and not c.string(needed, required=False):
        raise c.err(None, f"provenance.{needed}: required when expected = \"{kind}\"")
    c.string("recorded_on", required=False)
    c.string("derivation", required=False)
    chip = data.get("chip_ms")
    if chip is not None and (isinstance(chip, bool) or not isinstance(chip, (int, float)) or not chip > 0):
        raise c.err("chip_ms", f"provenance.chip_ms: the launch's kernel time on the chip in milliseconds, "
                               f"a positive number, not {chip!r}")
    return dict(data)


def _check_pending(loc: Locator, source: Path | None, buffers: tuple[BufferSpec, ...]) -> None:
    """A pending case (written by ``warpboard new-case``, awaiting ``warpboard
    record-truth``) has a CUDA source (or a cubin) to record from and no expected words yet."""
    if source is None:
        raise loc.error('provenance.expected: "pending" needs a CUDA `source` (or a `cubin`) to record '
                        "the expected words from", "expected", "provenance")
    for i, b in enumerate(buffers):
        if b.expected is not None:
            raise loc.error(f'buffers[{i}].expected: a "pending" case has no expected words '
                            "yet (record them with warpboard record-truth, or say where they "
                            "come from in provenance.expected)", "expected", "buffers", i)



# The model's own names, and those of case_fields and case_listing that callers use with it.
__all__ = ["BrokenCase", "BufferSpec", "Case", "CaseError", "Param", "case_root", "discover_cases",
           "has_kernel", "kernel_section", "listing_kernels", "load_case", "read_text", "scan_cases",
           "COMPARE_FORMS", "CONSTANT_BANK_BYTES", "CONSTANT_BANKS", "DEFAULT_SHARED_BYTES",
           "MAX_BLOCK_DIMS", "MAX_BLOCK_THREADS", "MAX_BUFFER_WORDS", "MAX_FILE_BYTES", "MAX_GRID_DIM",
           "MAX_NAME_CHARS", "MAX_SHARED_BYTES", "MAX_STEP_BUDGET", "MAX_SUMMARY_CHARS",
           "MAX_TOTAL_THREADS", "MAX_TOTAL_WORDS", "PARAM_BITS", "PARAM_KINDS", "PROVENANCE_KINDS"]
