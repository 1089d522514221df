"""``warpboard new-case``: a case file from a CUDA source, in one command.

    warpboard new-case KERNEL.cu --kernel NAME --out cases/<cat>/<name>.toml
        [--grid X[,Y,Z]] [--block X[,Y,Z]] [--buffer name:words[:init]]...
        [--param buffer:NAME|u8:V|u16:V|u32:V|u64:V]... [--tags a,b] [--summary TEXT]

compiles the source for sm_86 with nvcc (``-cubin``), disassembles it with nvdisasm (from
the PATH, else from the ``nvidia-cuda-nvdisasm`` wheel), writes ``<stem>.sm_86.sass``
beside the case (copying the ``.cu`` there when it lives elsewhere) and a complete case
file whose provenance is ``expected = "pending"``: the expected words are left out, for
``warpboard record-truth`` to fill in on a machine with an NVIDIA GPU.

Buffer ``init``: a number (every word), ``iota`` (0, 1, 2, ...), ``random`` or
``random:SEED`` (fixed pseudo-random words; the seed defaults to 1), or a comma-separated
list of exactly ``words`` numbers. Without ``--param``, every buffer is a parameter, in
the order given. The kernel's constant banks 2 and 3 (``__constant__`` data, nvcc's own
tables) are read from the cubin into ``[[constants]]`` tables, and so is bank 4 where it
points to printf's format strings (and vprintf), which become ``[[strings]]`` tables.
"""
from __future__ import annotations

import argparse
import filecmp
import random
import re
import shutil
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from warpboard.harness.case import cubin
from warpboard.harness.case.model import PARAM_BITS, CaseError, listing_kernels, load_case
from warpboard.harness.case.toml_text import toml_string, toml_words
from . import toolchain, words
from .toolchain import ARCH, ToolFailed, ToolMissing


class NewCaseError(RuntimeError):
    """Anything else that stops new-case (bad arguments, a failed compile, ...)."""


# ---------------------------------------------------------------- TOML text helpers

def compile_listing(source: Path, arch: str = ARCH, nvcc: str | None = None,
                    nvdisasm: str | None = None) -> tuple[str, str, bytes]:
    """(nvdisasm -c text, nvcc version, the cubin) of ``source``; NewCaseError when nvcc or
    nvdisasm fails."""
    try:
        return toolchain.compile_listing(source, arch, nvcc, nvdisasm)
    except ToolFailed as e:
        raise NewCaseError(str(e)) from None


def case_constants(image: bytes, kernel: str, source: Path) -> list[tuple[int, int, tuple[int, ...]]]:
    """The [[constants]] tables of a kernel: its cubin's banks 2 and 3 (``__constant__``
    data, nvcc's own tables) and bank 4 (pointers to printf's strings and to vprintf,
    resolved), as (bank, byte offset, words)."""
    try:
        return cubin.kernel_constants(image, kernel)
    except cubin.CubinError as e:
        raise NewCaseError(f"{source}: the cubin nvcc wrote cannot be read: {e}") from None


def case_strings(image: bytes, source: Path) -> list[tuple[int, str]]:
    """The [[strings]] tables of a kernel: the strings of its global data (printf's formats)."""
    try:
        return cubin.bank4_and_strings(image)[1]
    except (cubin.CubinError, ValueError, struct.error) as e:
        raise NewCaseError(f"{source}: the cubin nvcc wrote cannot be read: {e}") from None


# ---------------------------------------------------------------- arguments

@dataclass
class BufferArg:
    name: str
    words: int
    init: int | list[int]


def parse_dims(text: str, what: str) -> list[int]:
    """'64' or '8,6' or '5,3,4' (also 'x' separated) -> 1-3 positive ints."""
    parts = [p for p in re.split(r"[,x]", text.strip()) if p.strip()]
    try:
        dims = [int(p, 0) for p in parts]
    except ValueError:
        dims = []
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise NewCaseError(f"--{what} {text!r}: give 1-3 positive integers, e.g. 64 or 8,6")
    return dims


def _u32(text: str, what: str) -> int:
    try:
        v = int(text.strip(), 0)
    except ValueError:
        raise NewCaseError(f"{what}: {text!r} is not an integer") from None
    if not 0 <= v <= 0xFFFFFFFF:
        raise NewCaseError(f"{what}: {v} is not a u32")
    return v


def make_init(spec: str, words: int, what: str) -> int | list[int]:
    """A buffer's init from its --buffer spec (see the module docstring)."""
    spec = spec.strip()
    if spec == "iota":
        return [i & 0xFFFFFFFF for i in range(words)]
    if spec == "random" or spec.startswith("random:"):
        seed = _u32(spec.split(":", 1)[1], what) if ":" in spec else 1
        rng = random.Random(seed)
        return [rng.getrandbits(32) for _ in range(words)]
    if "," in spec:
        values = [_u32(v, what) for v in spec.split(",") if v.strip()]
        if len(values) != words:
            raise NewCaseError(f"{what}: {len(values)} values, but the buffer has {words} words")
        return values
    return _u32(spec, what)


def parse_buffer(text: str) -> BufferArg:
    """name:words[:init] (init: number, iota, random[:seed] or a comma list; default 0)."""
    parts = text.split(":", 2)
    what = f"--buffer {text!r}"
    if len(parts) < 2 or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", parts[0]):
        raise NewCaseError(f"{what}: expected name:words[:init], e.g. out:64 or in:64:random")
    try:
        words = int(parts[1], 0)
    except ValueError:
        raise NewCaseError(f"{what}: words {parts[1]!r} is not an integer") from None
    if words < 1:
        raise NewCaseError(f"{what}: a buffer needs at least one word")
    return BufferArg(parts[0], words, make_init(parts[2] if len(parts) > 2 else "0", words, what))


def parse_param(text: str, buffers: list[BufferArg]) -> tuple[str, str | int]:
    """buffer:NAME, u8:V, u16:V, u32:V or u64:V (char, bool and short parameters: u8, u16)."""
    kind, _, value = text.partition(":")
    what = f"--param {text!r}"
    if kind == "buffer":
        names = [b.name for b in buffers]
        if value not in names:
            raise NewCaseError(f"{what}: no buffer named {value!r} (buffers: {', '.join(names)})")
        return kind, value
    if kind in PARAM_BITS:
        try:
            v = int(value, 0)
        except ValueError:
            raise NewCaseError(f"{what}: {value!r} is not an integer") from None
        if not 0 <= v < 1 << PARAM_BITS[kind]:
            raise NewCaseError(f"{what}: {v} does not fit a {kind}")
        return kind, v
    raise NewCaseError(f"{what}: expected buffer:NAME, u8:V, u16:V, u32:V or u64:V")


# ---------------------------------------------------------------- the case file

def case_text(*, name: str, summary: str, tags: list[str], kernel: str, listing: str,
              source: str, listing_cmd: str, grid: list[int], block: list[int],
              buffers: list[BufferArg], params: list[tuple[str, str | int]], constants=(),
              strings=(), from_binary: bool = False) -> str:
    """The TOML text of a pending case (``source``: its CUDA source, or with ``from_binary``
    its cubin)."""
    lines = [f"name = {toml_string(name)}",
             f"summary = {toml_string(summary)}",
             "tags = [" + ", ".join(toml_string(t) for t in tags) + "]",
             f"kernel = {toml_string(kernel)}",
             f"listing = {toml_string(listing)}",
             f"{'cubin' if from_binary else 'source'} = {toml_string(source)}",
             "",
             "[provenance]",
             'expected = "pending"',
             f"listing = {toml_string(listing_cmd)}",
             "",
             "[launch]",
             f"grid = {_dims_toml(grid)}",
             f"block = {_dims_toml(block)}"]
    for b in buffers:
        lines += ["", "[[buffers]]", f"name = {toml_string(b.name)}", f"words = {b.words}"]
        lines.append(f"init = {b.init}" if isinstance(b.init, int)
                     else toml_words("init", b.init, hex_words=True))
    for kind, value in params:
        lines += ["", "[[params]]",
                  f"{kind} = {toml_string(value) if kind == 'buffer' else value}"]
    lines += constants_toml(constants)
    for offset, text in strings:
        lines += ["", "[[strings]]", f"offset = {offset:#x}", f"text = {toml_string(text)}"]
    return "\n".join(lines) + "\n"


def constants_toml(constants) -> list[str]:
    """The ``[[constants]]`` tables of (bank, byte offset, words) triples, as lines."""
    lines = []
    for bank, offset, words in constants:
        lines += ["", "[[constants]]", f"bank = {bank}", f"offset = {offset:#x}",
                  toml_words("words", list(words), hex_words=True)]
    return lines


def _dims_toml(dims: list[int]) -> str:
    dims = list(dims) + [1] * (3 - len(dims))
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _place_source(source: Path, out_dir: Path) -> str:
    """The source's name as the case will refer to it: copied beside the case if needed."""
    target = out_dir / source.name
    if target.resolve() == source.resolve():
        return source.name
    if target.exists() and not filecmp.cmp(source, target, shallow=False):
        raise NewCaseError(f"{target} exists and differs from {source}: move the source "
                           "beside the case, or rename one of them")
    shutil.copyfile(source, target)
    return source.name


def new_case(source: Path | None, kernel: str, out: Path, *, grid=(1,), block=(32,),
             buffers: list[BufferArg] | None = None, params=None, tags=(), summary=None,
             force: bool = False, nvcc: str | None = None, nvdisasm: str | None = None,
             cubin: Path | None = None):
    """Write ``<stem>.sm_86.sass``, the kernels' words and the case ``out``; return the loaded
    Case. From a CUDA ``source`` compiled for sm_86, or from an sm_86 ``cubin`` (an author's
    binary without its source: its listing from nvdisasm, its words and constant banks from it;
    the cubin is kept beside the case as what the expected words are to be recorded from)."""
    given = Path(cubin) if cubin is not None else Path(source)
    out = Path(out)
    if not given.is_file():
        raise NewCaseError(f"{given}: no such {'cubin' if cubin is not None else 'CUDA source'}")
    if out.suffix != ".toml":
        raise NewCaseError(f"--out {out}: a case file ends in .toml")
    if out.exists() and not force:
        raise NewCaseError(f"{out} exists (use --force to overwrite it)")
    buffers = buffers or [BufferArg("out", _threads(grid, block), 0)]
    params = params or [("buffer", b.name) for b in buffers]
    for t in tags:
        if not re.match(r"^[a-z0-9][a-z0-9-]*$", t):
            raise NewCaseError(f"--tags: {t!r} is not a tag (lowercase letters, digits and '-')")
    if cubin is not None:
        image = given.read_bytes()
        try:
            text, version = toolchain.disassemble(given, nvdisasm), ""
        except toolchain.ToolFailed as e:
            raise NewCaseError(f"{given}: nvdisasm cannot read it: {e}") from None
    else:
        text, version, image = compile_listing(given, ARCH, nvcc, nvdisasm)
    found = listing_kernels(text)
    if kernel not in found:
        hint = " (declare it extern \"C\" so that its name is not mangled)" \
            if any(kernel in k for k in found) else ""
        raise NewCaseError(f"{given}: kernel {kernel!r} is not in the sm_86 listing "
                           f"(kernels: {', '.join(found) or 'none'}){hint}")
    out.parent.mkdir(parents=True, exist_ok=True)
    src_name = _place_source(given, out.parent)
    listing = f"{given.stem}.{ARCH}.sass"
    listing_path = out.parent / listing
    if listing_path.exists() and not force and listing_path.read_text(encoding="utf-8") != text:
        raise NewCaseError(f"{listing_path} exists and differs from what nvcc gives now (a hand edit?): "
                           "use --force to overwrite it")
    listing_path.write_text(text, encoding="utf-8")
    if cubin is not None:
        cmd = f"nvdisasm -c {src_name} > {listing}"
    else:
        built = f"{given.stem}.cubin"
        cmd = (f"nvcc{' ' + version if version else ''} -cubin -arch={ARCH} -o {built} {src_name}"
               f" && nvdisasm -c {built} > {listing}")
    out.write_text(case_text(
        name=out.stem, summary=summary or f"{kernel} from {src_name}.", tags=list(tags),
        kernel=kernel, listing=listing, source=src_name, listing_cmd=cmd,
        grid=list(grid), block=list(block), buffers=buffers, params=params,
        constants=case_constants(image, kernel, given), strings=case_strings(image, given),
        from_binary=cubin is not None), encoding="utf-8")
    sections = words.text_sections(image)
    rel, digest, where = words.store(out.parent, [(k, sections[k]) for k in found if k in sections])
    words.attach(out, rel, digest, *where[kernel])
    try:
        return load_case(out)
    except CaseError as e:
        raise NewCaseError(f"the written case does not load: {e}") from None


def _threads(grid, block) -> int:
    n = 1
    for d in list(grid) + list(block):
        n *= d
    return n


DESCRIPTION = ("Compile a CUDA kernel for sm_86, disassemble it and write a case file "
               "awaiting its expected words (warpboard record-truth fills them in).")


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``warpboard new-case`` options to a parser (a fresh one or a subparser)."""
    p.add_argument("source", nargs="?", help="the .cu file (kernels extern \"C\")")
    p.add_argument("--cubin", help="instead of a source: an sm_86 cubin (the listing from nvdisasm, the "
                                   "words and constant banks from the cubin)")
    p.add_argument("--kernel", required=True, help="the kernel's name")
    p.add_argument("--out", required=True, help="the case file to write, cases/<cat>/<name>.toml")
    p.add_argument("--grid", default="1", help="X[,Y,Z] (default 1)")
    p.add_argument("--block", default="32", help="X[,Y,Z] (default 32)")
    p.add_argument("--buffer", action="append", default=[],
                   help="name:words[:init], init = number | iota | random[:seed] | a,b,c,... "
                        "(repeatable; default: one buffer 'out' of one word per thread)")
    p.add_argument("--param", action="append", default=[],
                   help="buffer:NAME | u8:V | u16:V | u32:V | u64:V, in the kernel's order "
                        "(repeatable; default: every buffer in order)")
    p.add_argument("--tags", default="", help="comma-separated tags")
    p.add_argument("--summary", help="one sentence: what the case exercises")
    p.add_argument("--force", action="store_true", help="overwrite an existing case file or listing")
    return p


def main(argv: list[str] | None = None) -> int:
    """``warpboard new-case`` on its own: parse ``argv`` and run."""
    p = argparse.ArgumentParser(prog="warpboard new-case", description=DESCRIPTION)
    return run(add_arguments(p).parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Carry out ``warpboard new-case`` for parsed arguments; return the exit code."""
    try:
        grid, block = parse_dims(args.grid, "grid"), parse_dims(args.block, "block")
        buffers = [parse_buffer(b) for b in args.buffer] or \
            [BufferArg("out", _threads(grid, block), 0)]
        if len({b.name for b in buffers}) != len(buffers):
            raise NewCaseError("--buffer: two buffers with the same name")
        params = [parse_param(q, buffers) for q in args.param]
        tags = [t.strip() for t in args.tags.split(",") if t.strip()]
        if (args.source is None) == (args.cubin is None):
            raise NewCaseError("give a CUDA source or --cubin, one of the two")
        case = new_case(args.source and Path(args.source), args.kernel, Path(args.out), grid=grid, block=block,
                        buffers=buffers, params=params, tags=tags, summary=args.summary,
                        force=args.force, cubin=args.cubin and Path(args.cubin))
    except (ToolMissing, NewCaseError) as e:
        print(f"warpboard new-case: {e}", file=sys.stderr)
        return 2
    if args.cubin:
        print(f"wrote {args.out} ({case.id}: {len(case.kernel_listing.splitlines())} listing lines, "
              f"{len(case.words) // 16} instructions of machine code, {case.total_threads} threads); its expected "
              f"words are pending: record them by running {Path(args.cubin).name} on a GPU that runs sm_86 code, "
              "and say so in [provenance] (record-truth needs a CUDA source)")
        return 0
    print(f"wrote {args.out} ({case.id}: {len(case.kernel_listing.splitlines())} listing lines, "
          f"{case.total_threads} threads); its expected words are pending: "
          f"run `warpboard record-truth {case.id}` on a machine with an NVIDIA GPU, or, for words "
          f"from the CPU model of CUDA in seconds, `cases/tools/run_on_cpu.sh --collectives {args.out}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
