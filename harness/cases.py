"""Test cases as data: the case model, its strict TOML loader and case discovery.

A case is one SASS kernel, how to launch it, the buffers it reads and writes, and the
words those buffers must hold afterwards; ``cases/README.md`` documents the format.
Everything is validated on load, so a typo in a case file is reported as
``cases/vote/x.toml:14: ...`` rather than surfacing later as a baffling mismatch.
Line numbers for semantic errors come from a plain text search of the file
(:class:`_Locator`): good enough for hand-written files, and kept deliberately simple.
"""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

try:
    import tomllib
except ModuleNotFoundError:  # python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

from translator.sass import ANONYMOUS, parse_listing

from . import case_printf

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
MAX_FILE_BYTES = 16 << 20        # a case file or a listing
PROVENANCE_KINDS = ("chip", "derived", "pending")

TOP_KEYS = ("name", "summary", "tags", "kernel", "listing", "sass", "source",
            "step_budget", "provenance", "launch", "buffers", "params", "constants",
            "strings", "printf")
PROVENANCE_KEYS = ("expected", "recorded_on", "listing", "derivation")
LAUNCH_KEYS = ("grid", "block", "shared_bytes")
BUFFER_KEYS = ("name", "words", "init", "expected", "compare")
PARAM_KINDS = ("buffer", "u8", "u16", "u32", "u64")
PARAM_BITS = {"u8": 8, "u16": 16, "u32": 32, "u64": 64}
CONSTANT_KEYS = ("bank", "offset", "words")
CONSTANT_BANKS = (1, 4)          # banks a case may fill (0 is the launch's: see translator.abi)
CONSTANT_BANK_BYTES = 0x1000     # translator.abi.BANK_BYTES

_TAG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-]+)\s*\]")
_BANNER = re.compile(r"^\s*//-{5,}")      # nvdisasm's "//---- .text.NAME ----" above a section
_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


class CaseError(ValueError):
    """A case file that cannot be used; the message starts with ``path:line: `` where known."""


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
    address), "u8", "u16", "u32" or "u64" (value: the integer; each naturally aligned)."""
    kind: str
    value: str | int


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


# ---------------------------------------------------------------- listings

def listing_kernels(text: str) -> list[str]:
    """The kernels of a SASS listing in order, as the translator's parser finds them: nvdisasm's
    ``.section .text.NAME`` (or a ``.text.NAME:`` label without it), cuobjdump's ``Function :
    NAME``; empty for a bare hand-written listing (then the whole text is the kernel)."""
    return [name for name in parse_listing(text) if name != ANONYMOUS]


def has_kernel(text: str, kernel: str) -> bool:
    """Whether the listing has a kernel called ``kernel`` (see :func:`listing_kernels`)."""
    return kernel != ANONYMOUS and kernel in parse_listing(text)


def kernel_section(text: str, kernel: str | None) -> str:
    """The part of a listing that belongs to ``kernel``: from its header (and the ``//----``
    banner above it) to the next kernel's banner, trailing blank lines dropped (nvdisasm puts
    each kernel and its internal subroutines in one ``.text.NAME`` section, cuobjdump in one
    ``Function :`` block). The whole text when no kernel is named or the listing lacks it."""
    listing = parse_listing(text)
    if kernel is None or kernel == ANONYMOUS or kernel not in listing:
        return text
    lines = text.splitlines(keepends=True)
    start, end = listing.span(kernel)
    while start > 0 and _BANNER.match(lines[start - 1]):
        start -= 1
    while end > start + 1 and (not lines[end - 1].strip() or _BANNER.match(lines[end - 1])):
        end -= 1
    return "".join(lines[start:end])


# ---------------------------------------------------------------- error locations

class _Locator:
    """Finds the line of a key in the raw file text, to put line numbers on semantic errors."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = text.splitlines()
        self.headers = [(i, m.group(1)) for i, m in
                        ((i, _HEADER.match(line)) for i, line in enumerate(self.lines)) if m]

    def _span(self, table: str | None, index: int) -> tuple[int, int, int | None]:
        """Line range (start, end, header line) of the top level or of a (nth array) table."""
        if table is None:
            return 0, self.headers[0][0] if self.headers else len(self.lines), None
        found = [h for h in self.headers if h[1] == table]
        if index >= len(found):
            return 0, 0, None
        head = found[index][0]
        nxt = [h[0] for h in self.headers if h[0] > head]
        return head + 1, nxt[0] if nxt else len(self.lines), head

    def line(self, key: str | None = None, table: str | None = None, index: int = 0) -> int | None:
        """1-based line of ``key`` (in ``table``, its ``index``-th if an array of tables),
        falling back to the table's header line; None when not found."""
        start, end, head = self._span(table, index)
        if key is not None:
            pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
            for i in range(start, end):
                if pat.match(self.lines[i]):
                    return i + 1
        return None if head is None else head + 1

    def error(self, msg: str, key: str | None = None, table: str | None = None,
              index: int = 0) -> CaseError:
        """A CaseError for ``msg``, prefixed with ``path:line:`` (or ``path:``)."""
        return _error(self.path, self.line(key, table, index), msg)


def _error(path: Path, line: int | None, msg: str) -> CaseError:
    where = f"{path}:{line}" if line else f"{path}"
    return CaseError(f"{where}: {msg}")


def _tname(v: Any) -> str:
    """TOML's name for the type of a parsed value, for messages."""
    if isinstance(v, bool):
        return "boolean"
    return {str: "string", int: "integer", float: "float", list: "array",
            dict: "table"}.get(type(v), type(v).__name__)


def _short_repr(v: Any, limit: int = 60) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ---------------------------------------------------------------- field checks

class _Checker:
    """Typed access to one table of the parsed file, raising located CaseErrors."""

    def __init__(self, loc: _Locator, data: dict, label: str, table: str | None = None,
                 index: int = 0):
        self.loc, self.data, self.label = loc, data, label
        self.table, self.index = table, index

    def err(self, key: str | None, msg: str) -> CaseError:
        return self.loc.error(msg, key, self.table, self.index)

    def name(self, key: str) -> str:
        """The dotted label of ``key`` used in messages, e.g. ``buffers[0].init``."""
        return f"{self.label}.{key}" if self.label else key

    def only(self, allowed: Iterable[str]) -> None:
        allowed = tuple(allowed)
        for key in self.data:
            if key not in allowed:
                raise self.err(key, f"unknown key '{self.name(key)}' "
                                    f"(allowed: {', '.join(allowed)})")

    def required(self, key: str) -> Any:
        if key not in self.data:
            raise self.err(None, f"missing required key '{self.name(key)}'")
        return self.data[key]

    def string(self, key: str, required: bool = True) -> str | None:
        v = self.required(key) if required else self.data.get(key)
        if v is not None and not isinstance(v, str):
            raise self.err(key, f"{self.name(key)}: must be a string, not {_tname(v)}")
        return v

    def integer(self, key: str, lo: int, hi: int, required: bool = True) -> int | None:
        v = self.required(key) if required else self.data.get(key)
        if v is None:
            return None
        if not _is_int(v):
            raise self.err(key, f"{self.name(key)}: must be an integer, not {_tname(v)}")
        if not lo <= v <= hi:
            raise self.err(key, f"{self.name(key)}: {v} is outside {lo}..{hi}")
        return v

    def words(self, key: str, count: int, fill_ok: bool) -> tuple[int, ...]:
        """A list of ``count`` u32 words (or, if ``fill_ok``, one word repeated)."""
        v = self.data[key]
        if fill_ok and _is_int(v):
            self.uint(key, v, self.name(key))
            return (v,) * count
        if not isinstance(v, list):
            what = "a u32 or an array of u32" if fill_ok else "an array of u32"
            raise self.err(key, f"{self.name(key)}: must be {what}, not {_tname(v)}")
        if len(v) != count:
            raise self.err(key, f"{self.name(key)}: {len(v)} word{'s' * (len(v) != 1)}, "
                                f"but words = {count}")
        for i, w in enumerate(v):
            self.uint(key, w, f"{self.name(key)}[{i}]")
        return tuple(v)

    def uint(self, key: str, v: Any, label: str, bits: int = 32) -> int:
        """``v`` checked to be a u32 (or u64) integer; ``label`` names it in messages."""
        if not _is_int(v):
            raise self.err(key, f"{label}: must be an integer, not {_tname(v)}")
        if not 0 <= v < 1 << bits:
            raise self.err(key, f"{label}: {v} is not a u{bits} (0..{(1 << bits) - 1:#x})")
        return v

    def dims(self, key: str, limits: tuple[int, int, int]) -> tuple[int, int, int]:
        """A launch dimension: an int or a list of 1-3 positive ints, padded with 1s, each
        at most its entry of ``limits``."""
        v = self.required(key)
        dims = [v] if _is_int(v) else v
        if (not isinstance(dims, list) or not 1 <= len(dims) <= 3
                or not all(_is_int(d) and d >= 1 for d in dims)):
            raise self.err(key, f"{self.name(key)}: must be a positive integer or an array "
                                f"of 1-3 positive integers, got {_short_repr(v)}")
        dims = dims + [1] * (3 - len(dims))
        for axis, d, most in zip("xyz", dims, limits):
            if d > most:
                raise self.err(key, f"{self.name(key)}: {axis} = {d}, at most {most}")
        return dims[0], dims[1], dims[2]

    def table_(self, key: str, required: bool = True) -> dict | None:
        v = self.required(key) if required else self.data.get(key)
        if v is not None and not isinstance(v, dict):
            raise self.err(key, f"{self.name(key)}: must be a table, not {_tname(v)}")
        return v

    def tables(self, key: str, required: bool = True) -> list[dict]:
        v = self.required(key) if required else self.data.get(key, [])
        if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
            raise self.err(key, f"{self.name(key)}: must be an array of tables ([[{key}]])")
        return v


# ---------------------------------------------------------------- loading

def load_case(path: str | Path, root: str | Path | None = None) -> Case:
    """Load and validate one case file. ``root`` is the cases directory the id is taken
    relative to; by default the nearest ancestor called ``cases`` (else the file stem)."""
    path = Path(path)
    text = read_text(path)
    data = _parse(path, text)
    loc = _Locator(path, text)
    top = _Checker(loc, data, "")
    top.only(TOP_KEYS)
    name, summary, tags = _short(top, "name", MAX_NAME_CHARS), _short(top, "summary", MAX_SUMMARY_CHARS), _tags(top)
    confine = case_root(path, root)
    listing_text, listing_path, listing_line = _listing(top, path, text, confine)
    kernel, source = _kernel(top, listing_text), _beside(top, path, "source", confine)
    step_budget = top.integer("step_budget", 1, MAX_STEP_BUDGET, required=False)
    provenance = _provenance(loc, top.table_("provenance"))
    grid, block, shared = _launch(loc, top.table_("launch"))
    buffers = _buffers(loc, top.tables("buffers"))
    if provenance["expected"] == "pending":
        _check_pending(loc, source, buffers)
    params = tuple(_param(loc, t, i, buffers)
                   for i, t in enumerate(top.tables("params", required=False)))
    constants = tuple(_constants(loc, t, i) for i, t in enumerate(top.tables("constants", required=False)))
    strings, printf_expected = _printf(loc, top, len(buffers))
    return Case(id=_case_id(path, root), path=path, name=name, summary=summary, tags=tags,
                kernel=kernel, listing_text=listing_text, listing_path=listing_path,
                listing_line=listing_line, source=source, grid=grid, block=block,
                shared_bytes=shared, step_budget=step_budget, buffers=buffers,
                params=params, provenance=provenance, constants=constants, strings=strings,
                printf_expected=printf_expected)


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
            cases.append(load_case(p, root))
        except CaseError as e:
            broken.append(BrokenCase(case_id, p, str(e)))
        except Exception as e:  # noqa: BLE001 - a loader bug costs this row only
            broken.append(BrokenCase(case_id, p, f"{p}: {type(e).__name__}: {e}"))
    return cases, broken


def read_text(path: Path, what: str = "case file") -> str:
    """A UTF-8 text file of at most MAX_FILE_BYTES, or a CaseError naming it (and the line
    of the first byte that is not UTF-8)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise CaseError(f"{path}: {what} larger than {MAX_FILE_BYTES >> 20} MiB")
        raw = path.read_bytes()
    except OSError as e:
        raise CaseError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise CaseError(f"{path}:{line}: {what} is not UTF-8 (byte {raw[e.start]:#04x} "
                        f"at offset {e.start})") from None


def case_root(path: Path, root: str | Path | None) -> Path:
    """The folder a case's files must stay inside: ``root``, else the nearest ancestor
    called ``cases``, else the case file's own folder."""
    if root is not None:
        return Path(root)
    return next((a for a in path.parents if a.name == "cases"), path.parent)


def _parse(path: Path, text: str) -> dict:
    """The parsed TOML, or a CaseError at the line tomllib complains about."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise _error(path, None, "invalid TOML: values nested too deeply") from None
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POS.search(msg)
        line = int(m.group(1)) if m else None
        raise _error(path, line, f"invalid TOML: {_TOML_POS.sub('', msg)}") from None


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


def _beside(top: _Checker, path: Path, key: str, confine: Path) -> Path | None:
    """A file named by ``key`` relative to the case file, which must exist inside the case
    root ``confine`` (no absolute paths, no ``..`` or links out of the library)."""
    name = top.string(key, required=False)
    if name is None:
        return None
    target = path.parent / name
    inside = Path(os.path.realpath(confine))
    if Path(name).is_absolute() or not Path(os.path.realpath(target)).is_relative_to(inside):
        raise top.err(key, f"{key}: {name!r} is outside the case root {confine}")
    if not target.is_file():
        raise top.err(key, f"{key}: no such file: {target}")
    return target


def _short(top: _Checker, key: str, limit: int) -> str:
    """A required string of at most ``limit`` characters."""
    text = top.string(key)
    if len(text) > limit:
        raise top.err(key, f"{key}: {len(text)} characters, at most {limit}")
    return text


def _listing(top: _Checker, path: Path, text: str, confine: Path) -> tuple[str, Path, int]:
    """(listing text, file it is in, 1-based line where it starts) from listing or sass."""
    has_file, has_inline = "listing" in top.data, "sass" in top.data
    if has_file and has_inline:
        raise top.err("sass", "give either 'listing' (a SASS file) or 'sass' "
                              "(the listing inline), not both")
    if not has_file and not has_inline:
        raise top.err(None, "missing 'listing' (a SASS file beside the case) "
                            "or 'sass' (the listing inline)")
    if has_inline:
        return top.string("sass"), path, _inline_start(top.loc, text)
    target = _beside(top, path, "listing", confine)
    try:
        return read_text(target, "listing"), target, 1
    except CaseError as e:
        raise top.err("listing", f"listing: {e}") from None


def _inline_start(loc: _Locator, text: str) -> int:
    """The line where an inline ``sass = \"\"\"...`` string's text starts: the next line
    when the opening quotes end their line (TOML drops that newline), else the same."""
    line = loc.line("sass") or 1
    rest = loc.lines[line - 1].split("=", 1)[-1].strip()
    for quotes in ('"""', "'''"):
        if rest.startswith(quotes):
            return line + 1 if rest == quotes else line
    return line


def _kernel(top: _Checker, listing: str) -> str | None:
    """The kernel name, checked against the listing's labels."""
    kernel = top.string("kernel", required=False)
    found = listing_kernels(listing)
    if kernel is None:
        if len(found) > 1:
            raise top.err("listing" if "listing" in top.data else "sass",
                          f"kernel: the listing has {len(found)} kernels "
                          f"({', '.join(found)}); name one with kernel = \"...\"")
        return None
    if not has_kernel(listing, kernel):
        known = f"kernels: {', '.join(found)}" if found else "no kernel labels found"
        raise top.err("kernel", f"kernel: '{kernel}' is not in the listing ({known})")
    return kernel


def _tags(top: _Checker) -> tuple[str, ...]:
    """Lowercase, hyphenated, unique tags."""
    tags = top.data.get("tags", [])
    if not isinstance(tags, list):
        raise top.err("tags", f"tags: must be an array of strings, not {_tname(tags)}")
    for i, t in enumerate(tags):
        if not isinstance(t, str) or not _TAG.match(t):
            raise top.err("tags", f"tags[{i}]: {t!r} is not a tag "
                                  "(lowercase letters, digits and '-')")
        if t in tags[:i]:
            raise top.err("tags", f"tags[{i}]: duplicate tag {t!r}")
    return tuple(tags)


def _launch(loc: _Locator, data: dict) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """(grid, block, shared_bytes) from the [launch] table."""
    c = _Checker(loc, data, "launch", "launch")
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


def _buffer(loc: _Locator, data: dict, index: int) -> BufferSpec:
    """One [[buffers]] table."""
    c = _Checker(loc, data, f"buffers[{index}]", "buffers", index)
    c.only(BUFFER_KEYS)
    name = c.string("name")
    if not _IDENT.match(name):
        raise c.err("name", f"buffers[{index}].name: {name!r} is not an identifier")
    words = c.integer("words", 1, MAX_BUFFER_WORDS)
    c.required("init")
    init = c.words("init", words, fill_ok=True)
    expected = c.words("expected", words, fill_ok=False) if "expected" in data else None
    compare = c.string("compare", required=False) or "exact"
    if not COMPARE_FORMS.fullmatch(compare):
        raise c.err("compare", f'buffers[{index}].compare: {compare!r} is not "exact", "f32-ulp:N" '
                               'or "f32-ulp:N,abs:2^-K" (N a whole number of units in the last place, '
                               "2^-K an absolute difference)")
    return BufferSpec(name, words, init, expected, compare)


def _buffers(loc: _Locator, tables: list[dict]) -> tuple[BufferSpec, ...]:
    """All [[buffers]] tables: at least one, with unique names."""
    if not tables:
        raise loc.error("buffers: a case needs at least one [[buffers]] table", "buffers")
    buffers = tuple(_buffer(loc, t, i) for i, t in enumerate(tables))
    total = sum(b.words for b in buffers)
    if total > MAX_TOTAL_WORDS:
        raise loc.error(f"buffers: {total} words in all, at most {MAX_TOTAL_WORDS}", "buffers")
    for i, b in enumerate(buffers):
        if b.name in (o.name for o in buffers[:i]):
            raise loc.error(f"buffers[{i}].name: duplicate buffer name '{b.name}'",
                            "name", "buffers", i)
    return buffers


def _param(loc: _Locator, data: dict, index: int, buffers: tuple[BufferSpec, ...]) -> Param:
    """One [[params]] table: exactly one of buffer / u32 / u64."""
    c = _Checker(loc, data, f"params[{index}]", "params", index)
    c.only(PARAM_KINDS)
    if len(data) != 1:
        raise c.err(None, f"params[{index}]: give exactly one of {', '.join(PARAM_KINDS)}")
    kind = next(iter(data))
    if kind == "buffer":
        name = c.string("buffer")
        names = [b.name for b in buffers]
        if name not in names:
            raise c.err("buffer", f"params[{index}].buffer: no buffer named '{name}' "
                                  f"(buffers: {', '.join(names)})")
        return Param("buffer", name)
    return Param(kind, c.uint(kind, data[kind], c.name(kind), PARAM_BITS[kind]))


def _constants(loc: _Locator, data: dict, index: int) -> tuple[int, int, tuple[int, ...]]:
    """One [[constants]] table: words of constant bank ``bank`` from byte ``offset`` on."""
    c = _Checker(loc, data, f"constants[{index}]", "constants", index)
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


def _printf(loc: _Locator, top: _Checker, buffers: int):
    """The [[strings]] tables and the [printf] table's expected lines (None: not checked)."""
    strings = [case_printf.check_string(_Checker(loc, t, f"strings[{i}]", "strings", i), i)
               for i, t in enumerate(top.tables("strings", required=False))]
    table = top.table_("printf", required=False)
    lines = case_printf.check_printf(_Checker(loc, table, "printf", "printf")) if table is not None else None
    return case_printf.check_strings(strings, loc, buffers), lines


def _provenance(loc: _Locator, data: dict) -> dict:
    """The [provenance] table: where the expected words come from."""
    c = _Checker(loc, data, "provenance", "provenance")
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
    return dict(data)


def _check_pending(loc: _Locator, source: Path | None, buffers: tuple[BufferSpec, ...]) -> None:
    """A pending case (written by ``warpboard new-case``, awaiting ``warpboard
    record-truth``) has a CUDA source to record from and no expected words yet."""
    if source is None:
        raise loc.error('provenance.expected: "pending" needs a CUDA `source` to record '
                        "the expected words from", "expected", "provenance")
    for i, b in enumerate(buffers):
        if b.expected is not None:
            raise loc.error(f'buffers[{i}].expected: a "pending" case has no expected words '
                            "yet (record them with warpboard record-truth, or say where they "
                            "come from in provenance.expected)", "expected", "buffers", i)
