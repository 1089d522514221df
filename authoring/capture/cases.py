"""Cases from a recorded capture: each faithful launch becomes a case file, the rest a reason.

A capture folder (see :mod:`authoring.capture.record`) holds the program's sm_86 cubins and
their listings (``cubins/``), what the interposer recorded in each run (``run1/``,
``run2/``: :mod:`authoring.capture.log`) and ``meta.json`` (the program, its arguments, the GPU
and driver, how it was built). :func:`write_cases` writes, below ``OUT/<program>/``:

- one listing per cubin (``<cubin>.sm_86.sass``), shared by its kernels' cases;
- one case per kept launch, ``<kernel>_<launch>.toml``: its grid, block and shared memory,
  the parameters with every device pointer relocated to the case's buffer and offset, the
  words of each buffer before the launch as ``init`` and after it as ``expected``
  (``provenance.expected = "chip"``), constant banks 2 and 4 from the cubin and bank 3 as the
  program had set it (``cudaMemcpyToSymbol``) when it launched;
- buffers of more than :data:`INLINE_WORDS` words as gzip files ``data/<sha256>.gz``, named
  by the hash of their bytes (a launch's output is often the next one's input: one file).

A launch that cannot become a faithful case is listed with its reason (:func:`reason_kind`
gives the reasons' kinds); nothing is guessed. A launch that reads or writes outside its
allocations is one (:mod:`authoring.capture.check`): the interposer's guards saw it change the
next allocation, or its case, replayed on the interpreter as it is written, faults outside
every buffer.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from warpboard.translator import abi

from warpboard.harness.case import cubin as cubin_file
from warpboard.harness.case import model
from warpboard.harness.case.listing import kernel_section
from warpboard.harness.case.toml_text import toml_string
from .check import Replays, guard_reason
from ..words import attach, store, text_sections
from .cubins import CONSTANT3, Cubin, bank_tables, has_strings, load_cubins, variable_used
from .log import MEMTYPE_DEVICE, CaptureError, Launch, read_run

INLINE_WORDS = 64                 # larger buffers go to data files
TEXTURE_OPS = re.compile(r"\b(TEX|TLD|TLD4|TXQ|TXD|TMML|SULD|SUST|SURED|SUATOM)(\.[A-Z0-9_.]+)?\s")
MUFU = re.compile(r"\bMUFU\.")
MUFU_COMPARE = "f32-ulp:2,abs:2^-21"   # the library's widest MUFU tolerance in everyday use


@dataclass
class Outcome:
    """What became of one launch: a case file, or the reason there is none. ``checked``: its
    case was replayed on the interpreter to the end (:class:`authoring.capture.check.Replays`)."""
    launch: int
    kernel: str
    case: str | None = None
    reason: str | None = None
    checked: bool = False


def reason_kind(reason: str) -> str:
    """A reason without its particulars (what follows " (" or ": "), for counting reasons."""
    return reason.split(" (", 1)[0].split(": ", 1)[0]


def demangle(names: list[str]) -> dict[str, str]:
    """Readable names (c++filt where there is one), the mangled name otherwise."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    try:
        out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {n: n for n in names}
    lines = out.splitlines()
    return {n: (lines[i] if i < len(lines) else n) for i, n in enumerate(names)}


def short_name(readable: str) -> str:
    """A file-name-safe short form of a kernel's name: the function name, no arguments."""
    base = readable.split("(", 1)[0]
    base = re.sub(r"<.*", "", base).split("::")[-1].strip() or readable
    return re.sub(r"[^A-Za-z0-9_]+", "_", base)[:60].strip("_") or "kernel"


# ---------------------------------------------------------------- checks


def _region_reason(launch: Launch) -> str | None:
    for r in launch.regions:
        if r.managed:
            return f"managed memory (a parameter points into {r.size} bytes of cudaMallocManaged memory)"
        if r.memtype != MEMTYPE_DEVICE:
            return (f"host-mapped memory (a parameter points into {r.size} bytes of host memory the device "
                    f"maps)" if r.memtype == 1 else f"memory of type {r.memtype} (neither device nor host)")
    return None


def _pointers_inside(launch: Launch, data: dict[int, tuple[bytes, bytes]]) -> str | None:
    """A buffer holding an address of device memory the program had allocated then."""
    ranges = sorted({(r.base, r.size) for r in launch.regions} | set(launch.live))
    if not ranges:
        return None
    starts = np.array([b for b, _ in ranges], dtype=np.uint64)
    ends = np.array([b + s for b, s in ranges], dtype=np.uint64)
    for k, (before, after) in data.items():
        if launch.regions[k].name:
            continue
        for side, raw in (("before", before), ("after", after)):
            words = np.frombuffer(raw[:len(raw) // 8 * 8], dtype="<u8")
            if not len(words):
                continue
            at = np.searchsorted(starts, words, side="right") - 1
            hit = (at >= 0) & (words < ends[np.maximum(at, 0)]) & (words != 0)
            if hit.any():
                first = int(np.argmax(hit))
                return (f"pointers stored inside buffers (region {k} {side} the launch holds 0x{int(words[first]):x} "
                        f"at byte {8 * first}, an address of device memory)")
    return None


def _limits(launch: Launch, shared: int) -> str | None:
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    if threads > model.MAX_BLOCK_THREADS or any(b > m for b, m in zip(launch.block, model.MAX_BLOCK_DIMS)):
        return f"a block of {launch.block} threads, over CUDA's limits"
    if any(g > model.MAX_GRID_DIM for g in launch.grid):
        return f"grid {launch.grid}: a dimension over {model.MAX_GRID_DIM}"
    total = threads * launch.grid[0] * launch.grid[1] * launch.grid[2]
    if total > model.MAX_TOTAL_THREADS:
        return f"{total} threads in the launch, a case holds at most {model.MAX_TOTAL_THREADS}"
    if shared > model.MAX_SHARED_BYTES:
        return f"{shared} bytes of shared memory, a case holds at most {model.MAX_SHARED_BYTES}"
    return None


# ---------------------------------------------------------------- parts of a case


def param_tables(launch: Launch, buffers: dict[int, str]) -> tuple[list[dict], str | None]:
    """The [[params]] tables that lay out ``launch.param_bytes`` byte for byte: an 8-byte
    aligned word pointing into a buffer's region becomes ``{buffer, offset}``, the other bytes
    the largest naturally aligned pieces (the loader aligns each piece to its size, so the
    pieces land where the driver put them). A pointer into a region that is no buffer is
    a reason instead."""
    raw, end, out, at = launch.param_bytes, len(launch.param_bytes), [], 0
    while at < end:
        if at % 8 == 0 and at + 8 <= end:
            value, = struct.unpack_from("<Q", raw, at)
            k = next((k for k, r in enumerate(launch.regions) if value and r.base <= value < r.base + r.size),
                     next((k for k, r in enumerate(launch.regions) if value and r.holds(value)), None))
            if k is not None:
                if k not in buffers:
                    return [], f"parameter bytes {at}..{at + 7} point into {launch.regions[k].name or 'memory'} " \
                               f"that a case cannot hold as a buffer"
                out.append({"buffer": buffers[k], "offset": value - launch.regions[k].base})
                at += 8
                continue
        size = next(s for s in (8, 4, 2, 1) if at % s == 0 and at + s <= end)
        kind = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}[size]
        value = int.from_bytes(raw[at:at + size], "little")
        out.append({kind: value})
        at += size
    return out, None


def words_of(raw: bytes) -> tuple[int, ...]:
    raw = raw + bytes(-len(raw) % 4)
    return struct.unpack(f"<{len(raw) // 4}I", raw)


class DataFiles:
    """Buffer contents as gzip files named by their hash, written once."""

    def __init__(self, folder: Path):
        self.folder = folder

    def put(self, raw: bytes) -> dict:
        raw = raw + bytes(-len(raw) % 4)
        digest = hashlib.sha256(raw).hexdigest()
        path = self.folder / f"{digest[:32]}.gz"
        if not path.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            path.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
        return {"file": f"{self.folder.name}/{path.name}", "sha256": digest}


# ---------------------------------------------------------------- one launch


def _toml_words(words: tuple[int, ...], fill_ok: bool = False) -> str:
    """A word list, or one fill word where the key takes one (``init``)."""
    if fill_ok and len(set(words)) == 1 and len(words) > 1:
        return f"0x{words[0]:x}"
    return "[" + ", ".join(f"0x{w:x}" for w in words) + "]"


def _toml_value(value, fill_ok: bool = False) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_string(v)}" for k, v in value.items()) + " }"
    return _toml_words(value, fill_ok)


@dataclass
class Context:
    """What every case of one capture shares."""
    meta: dict
    cubins: list[Cubin]
    readable: dict[str, str]
    out: Path
    files: DataFiles
    written_listings: set[str] = field(default_factory=set)


def case_for(ctx: Context, launch: Launch, again: Launch | None) -> Outcome:
    """The case of one launch, written under ``ctx.out``, or the reason there is none."""
    made = _make(ctx, launch, again)
    return made if isinstance(made, Outcome) else Outcome(launch.index, launch.kernel, reason=made)


def _make(ctx: Context, launch: Launch, again: Launch | None) -> Outcome | str:
    if launch.skip:
        return launch.skip
    if launch.cooperative:
        return "a cooperative launch (grid-wide synchronisation needs every block resident at once)"
    if launch.cluster:
        return "thread block clusters (sm_90): no sm_86 equivalent"
    if r := _region_reason(launch):
        return r
    if not launch.copied:
        return "memory not copied"
    if r := guard_reason(launch):
        return r
    cubin = next((c for c in ctx.cubins if launch.kernel in c.kernels), None)
    if cubin is None:
        return "no sm_86 code for the kernel (build with -gencode arch=compute_86,code=sm_86 beside the GPU's own)"
    listing = kernel_section(cubin.listing, launch.kernel)
    if m := TEXTURE_OPS.search(listing):
        return f"textures and surfaces ({m.group(1)} in the listing)"
    if "vprintf" in listing:
        return "prints with printf (what a launch prints is not captured apart from the others')"
    static_shared = next((len(body) for name, body in cubin_file.sections(cubin.data)
                          if name == f".nv.shared.{launch.kernel}"), 0)
    shared = static_shared + launch.shared
    if r := _limits(launch, shared):
        return r
    data = {k: (launch.memory(k, "before"), launch.memory(k, "after")) for k in range(len(launch.regions))}
    if r := _pointers_inside(launch, data):
        return r
    if again is not None and (r := _differs(launch, again, data)):
        return r
    if again is None and ctx.meta.get("runs", 1) > 1:
        return "not in the second run (its launches differ)"
    buffer_regions = [k for k, r in enumerate(launch.regions)
                      if not (r.name and (s := cubin.symbol(r.name)) and cubin.section_of(s) == CONSTANT3)]
    buffer_regions = [k for k in buffer_regions
                      if not launch.regions[k].name or variable_used(cubin, listing, launch.regions[k].name)]
    room = abi.MAX_BUFFERS - (1 if has_strings(cubin) else 0)
    if len(buffer_regions) > room:
        return f"{len(buffer_regions)} device allocations, a case holds {room}"
    if sum(-(-launch.regions[k].size // 4) for k in buffer_regions) > model.MAX_TOTAL_WORDS:
        return "buffers over the case limit of 128 MiB"
    names = {k: (launch.regions[k].name and re.sub(r"\W", "_", launch.regions[k].name)[:40]) or f"b{i}"
             for i, k in enumerate(buffer_regions)}
    params, r = param_tables(launch, names)
    if r:
        return r
    constants, r = bank_tables(cubin, launch.kernel, listing, launch, data, names, buffer_regions)
    if r:
        return r
    case = _write(ctx, launch, cubin, listing, data, buffer_regions, names, params, constants, shared)
    return Outcome(launch.index, launch.kernel, case=case)


def _differs(launch: Launch, again: Launch, data: dict[int, tuple[bytes, bytes]]) -> str | None:
    if again.kernel != launch.kernel or len(again.regions) != len(launch.regions) or not again.copied:
        return "the second run launched something else here (its launches differ)"
    for k in range(len(launch.regions)):
        if again.regions[k].size != launch.regions[k].size:
            return f"region {k} has another size in the second run"
        for side, mine in zip(("before", "after"), data[k]):
            if again.memory(k, side) != mine:
                return f"the second run gave other words (region {k} {side} the launch): timing-dependent"
    return None


def _write(ctx: Context, launch: Launch, cubin: Cubin, listing: str, data, buffer_regions, names, params,
           constants, shared) -> str:
    program = ctx.meta["name"]
    folder = ctx.out / program
    folder.mkdir(parents=True, exist_ok=True)
    listing_name = f"{cubin.stem}.sm_86.sass"
    if listing_name not in ctx.written_listings:
        (folder / listing_name).write_text(cubin.listing)
        ctx.written_listings.add(listing_name)
    readable = ctx.readable.get(launch.kernel, launch.kernel)
    stem = f"{short_name(readable)}_{launch.index}"
    mufu = bool(MUFU.search(listing))
    command = " ".join(ctx.meta["argv"])
    runs = ctx.meta.get("runs", 1)
    lines = [
        f"name = {toml_string(stem)}",
        f"summary = {toml_string(f'Launch {launch.index} of {program} ({command[:200]}): {readable[:200]}')}",
        'tags = ["captured"]',
        f"kernel = {toml_string(launch.kernel)}",
        f"listing = {toml_string(listing_name)}",
        "",
        "[provenance]",
        'expected = "chip"',
        "recorded_on = " + toml_string(
            f"{ctx.meta.get('gpu', 'NVIDIA GPU')}, driver {ctx.meta.get('driver', '?')}, CUDA {ctx.meta.get('cuda', '?')}: "
            f"launch {launch.index} of `{command}` captured by warpboard capture"
            + (f", identical over {runs} runs" if runs > 1 else "")),
        "listing = " + toml_string(f"{ctx.meta.get('build', 'built by its own build')}; cuobjdump -xelf all; "
                                   f"nvdisasm -c {cubin.stem}.cubin"),
        *([f"chip_ms = {launch.device_ns / 1e6!r}  # the launch's kernel time on that GPU (CUPTI activity record)"]
          if launch.device_ns is not None else []),
        "",
        "[launch]",
        f"grid = [{', '.join(map(str, launch.grid))}]",
        f"block = [{', '.join(map(str, launch.block))}]",
        f"shared_bytes = {shared}",
    ]
    for k in buffer_regions:
        before, after = data[k]
        init, expected = words_of(before), words_of(after)
        big = len(init) > INLINE_WORDS
        lines += ["", "[[buffers]]", f"name = {toml_string(names[k])}", f"words = {len(init)}",
                  f"init = {_toml_value(ctx.files.put(before) if big else init, fill_ok=True)}",
                  f"expected = {_toml_value(ctx.files.put(after) if big else expected)}"]
        if mufu and before != after:
            lines.append(f'compare = "{MUFU_COMPARE}"')
    for p in params:
        lines += ["", "[[params]]"] + [f"{k} = {toml_string(v) if isinstance(v, str) else v}" for k, v in p.items()]
    for bank, offset, words in constants:
        lines += ["", "[[constants]]", f"bank = {bank}", f"offset = 0x{offset:x}", f"words = [{', '.join(f'0x{w:x}' for w in words)}]"]
    path = folder / f"{stem}.toml"
    path.write_text("\n".join(lines) + "\n")
    sections = text_sections(cubin.data)
    if launch.kernel in sections:             # the kernels' machine code, as the cubin holds it
        rel, digest, where = store(folder, sorted(sections.items()))
        attach(path, rel, digest, *where[launch.kernel])
    return f"{program}/{stem}"


# ---------------------------------------------------------------- a whole capture


def write_cases(capture: str | Path, out: str | Path | None = None, check: str | bool = "cheap") -> list[Outcome]:
    """Cases for every launch of the capture folder's first run (checked against the second,
    where there is one), under ``out`` (default ``CAPTURE/cases``); ``capture.json`` there
    lists each launch's outcome. ``check``: which cases are replayed on the interpreter, the
    launches whose replay loads or stores outside their allocations being skipped instead
    (:class:`Replays`): "cheap" (the default) the small ones, each within a time limit, "full"
    (or True) all, "off" (or False) none."""
    capture = Path(capture)
    try:
        meta = json.loads((capture / "meta.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise CaptureError(f"{capture}/meta.json: {e}") from None
    out = Path(out) if out else capture / "cases"
    cubins = load_cubins(capture)
    _, first = read_run(capture / "run1")
    again = {}
    if meta.get("runs", 1) > 1:
        again = {l.index: l for l in read_run(capture / "run2")[1]}
    ctx = Context(meta, cubins, demangle(sorted({l.kernel for l in first})), out, DataFiles(out / meta["name"] / "data"))
    streams = {l.stream for l in first}
    outcomes = []
    with Replays(check) as replays:
        for launch in first:
            if len(streams) > 1:
                outcomes.append(Outcome(launch.index, launch.kernel,
                                        reason=f"launches on {len(streams)} streams may overlap; their words are not one launch's"))
                continue
            outcomes.append(replays.check(case_for(ctx, launch, again.get(launch.index)), launch, out))
    summary = {"program": meta["name"], "argv": meta["argv"], "launches": len(first),
               "cases": [o.case for o in outcomes if o.case],
               "skipped": [{"launch": o.launch, "kernel": ctx.readable.get(o.kernel, o.kernel), "reason": o.reason}
                           for o in outcomes if o.reason],
               "check": replays.mode,
               "unchecked": [o.case for o in outcomes if o.case and not o.checked]}
    (out / meta["name"]).mkdir(parents=True, exist_ok=True)
    (out / meta["name"] / "capture.json").write_text(json.dumps(summary, indent=1) + "\n")
    return outcomes
