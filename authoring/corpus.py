"""``warpboard corpus``: compile CUDA code bases for sm_86 and sort every kernel by what the
translator makes of it.

    warpboard corpus MANIFEST.toml... [--out runs/corpus-sm_86] [--jobs N]
        [--cache DIR] [--discover]

A manifest names code bases, each a source tree (``root``, beside the manifest unless absolute;
``$VARIABLES`` are expanded) with its include directories, nvcc flags and the ``.cu`` files to
compile (``files``); files left out say why (``skipped``). Every file is
compiled with ``nvcc -cubin -arch=sm_86 -O3`` and disassembled with nvdisasm; every kernel of
the listing is then classified (:data:`STATUSES`): it translates to SPIR-V that ``spirv-val``
accepts, the translator calls it UNSUPPORTED (with the opcode), its module is invalid, or the
translator fails some other way. The table goes to ``OUT.md`` and ``OUT.json``: totals per code
base, and the opcodes that block the most kernels (every instruction of a kernel is decoded on
its own, so a kernel counts once under each opcode the opcode table lacks).

``--discover`` lists each code base's ``.cu`` files under its root, compiles them and rewrites
the manifest's ``files`` and ``skipped`` from what compiled (the first error line is the
reason), so that later runs compile exactly the same files.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path


from warpboard.translator import TranslatorError, UnsupportedInstruction, decode, load_program, parse_listing, translate

from .capture import programs as capture_programs
from warpboard.harness.case.model import listing_kernels
from warpboard.harness.case.toml_text import toml_string, tomllib
from warpboard.harness.files import write_atomic
from .toolchain import ARCH, ToolFailed, ToolMissing, compile_cubin, disassemble, find_nvcc, find_nvdisasm, nvcc_version

OPT_FLAGS = ("-O3",)
NVCC_FLAGS = ("-cubin", f"-arch={ARCH}", *OPT_FLAGS)
BLOCK = (128, 1, 1)                 # the launch shape kernels are translated for
SHARED_BYTES = 49152                # the static shared memory a block may declare
KERNEL_TIMEOUT_S = 120
COMPILE_TIMEOUT_S = 600
STATUSES = ("translates", "unsupported", "invalid", "error")
TOP_BLOCKERS = 25


class CorpusError(RuntimeError):
    """A manifest that cannot be read, or a code base whose root is missing."""


@dataclass
class CodeBase:
    """One code base of a manifest: where its tree is and how to compile which files."""
    name: str
    root: Path
    source: str = ""                            # where the tree comes from (a URL), for the table
    include: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    manifest: Path = Path()


# ---------------------------------------------------------------- the manifest

def load_manifest(path: Path) -> list[CodeBase]:
    """The code bases of a manifest; a relative ``root`` is beside the manifest."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise CorpusError(f"{path}: {e}") from None
    bases = []
    for i, entry in enumerate(data.get("codebase", [])):
        unknown = set(entry) - {"name", "root", "source", "include", "flags", "files", "skipped"}
        if unknown or "name" not in entry or "root" not in entry:
            raise CorpusError(f"{path}: codebase #{i + 1}: needs name and root"
                              + (f"; unknown keys {sorted(unknown)}" if unknown else ""))
        expanded = os.path.expandvars(entry["root"])
        if "$" in expanded:
            raise CorpusError(f"{path}: codebase {entry['name']}: root {entry['root']!r} names an "
                              "unset environment variable")
        root = (path.parent / expanded).resolve()   # nvcc runs in each file's own directory
        bases.append(CodeBase(entry["name"], root, entry.get("source", ""),
                              list(entry.get("include", [])), list(entry.get("flags", [])),
                              list(entry.get("files", [])), dict(entry.get("skipped", {})), path))
    return bases


def manifest_text(bases: list[CodeBase], roots: dict[str, str]) -> str:
    """The TOML text of a manifest (``roots``: each code base's root as it was written)."""
    out = ["# Code bases for `warpboard corpus`: each file is compiled with nvcc -cubin -arch=sm_86 -O3.",
           "# `skipped` says why a .cu file of the tree is left out (its first compile error)."]
    for b in bases:
        out += ["", "[[codebase]]", f"name = {toml_string(b.name)}",
                f"root = {toml_string(roots[b.name])}"]
        if b.source:
            out.append(f"source = {toml_string(b.source)}")
        out.append("include = [" + ", ".join(toml_string(i) for i in b.include) + "]")
        out.append("flags = [" + ", ".join(toml_string(f) for f in b.flags) + "]")
        out.append("files = [" + "".join(f"\n    {toml_string(f)}," for f in b.files) + "\n]")
        out += ["", "[codebase.skipped]"] + [f"{toml_string(k)} = {toml_string(v)}"
                                             for k, v in sorted(b.skipped.items())]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- compiling

def compile_flags(base: CodeBase) -> tuple[str, ...]:
    """nvcc's flags for the files of a code base, after -cubin -arch=sm_86."""
    includes = [f"-I{(base.root / inc).resolve()}" for inc in base.include]
    return (*OPT_FLAGS, *base.flags, *includes)


def compile_listing(base: CodeBase, rel: str, cache: Path | None) -> str:
    """The nvdisasm listing of one file (from the cache when the source and flags are the
    same); RuntimeError with the first error line when it does not compile."""
    nvcc, nvdisasm = find_nvcc(), find_nvdisasm()
    source = base.root / rel
    key = hashlib.sha256(source.read_bytes() + repr((base.flags, base.include, NVCC_FLAGS)).encode()
                         ).hexdigest()[:24]
    cached = cache / f"{key}.sass" if cache else None
    if cached and cached.is_file():
        return cached.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="wb-corpus-") as tmp:
        cubin = Path(tmp) / "k.cubin"
        try:
            compile_cubin(source, cubin, ARCH, compile_flags(base), nvcc, source.parent, COMPILE_TIMEOUT_S)
            text = disassemble(cubin, nvdisasm, COMPILE_TIMEOUT_S)
        except ToolFailed as e:
            raise RuntimeError(first_error(e.output)) from None
    if cached:
        cache.mkdir(parents=True, exist_ok=True)
        write_atomic(str(cached), text.encode("utf-8"))
    return text


def first_error(text: str) -> str:
    """The first line of compiler output that says 'error' (else the first line), shortened."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "failed")
    line = re.sub(r"(?<![\w.])/(?:[^\s/:\"]+/)+", "", line)     # file names without their directories
    return line[:200]


# ---------------------------------------------------------------- classifying

def spirv_val(code: bytes) -> str | None:
    """spirv-val's complaint about a module (Vulkan 1.1 rules), or None when it is valid."""
    proc = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", "-"], input=code,
                          capture_output=True, check=False, timeout=KERNEL_TIMEOUT_S)
    if proc.returncode == 0:
        return None
    return (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()[:300] or "rejected"


def blocker_key(error) -> str:
    """What an UnsupportedInstruction blames: the bare opcode when the table lacks it, else the
    opcode with the modifier or form it lacks (``ATOMS.POPC``), else the opcode as printed."""
    message = str(error)
    if "unknown opcode" in message or " is not translated: " in message:
        return error.opcode.split(".")[0]
    if m := re.search(r"unsupported modifier \.(\w+) of (\w+)", message):
        return f"{m.group(2)}.{m.group(1)}"
    return error.opcode


def decode_blockers(section) -> list[str]:
    """Every opcode (or opcode and modifier) of a kernel that the opcode table lacks."""
    found = []
    for raw in section.instructions:
        try:
            decode(raw, section.labels)
        except UnsupportedInstruction as e:
            found.append(blocker_key(e))
        except TranslatorError:
            pass
    return sorted(set(found))


def classify_kernel(text: str, kernel: str, where: str) -> dict:
    """What the translator makes of one kernel: its status, the blocking opcode, the message."""
    row = {"kernel": kernel, "status": "error", "opcode": None, "message": None, "insts": None,
           "blockers": [], "digest": None}
    try:
        section = parse_listing(text, where)[kernel]
        row["insts"] = len(section.instructions)
        row["digest"] = hashlib.sha256("\n".join(r.text for r in section.instructions).encode()).hexdigest()[:16]
        row["blockers"] = decode_blockers(section)
        shader = translate(load_program(text, kernel, where), BLOCK, SHARED_BYTES)
        complaint = spirv_val(shader.spirv)
        row["status"], row["message"] = ("invalid", complaint) if complaint else ("translates", None)
    except UnsupportedInstruction as e:
        row.update(status="unsupported", opcode=blocker_key(e), message=str(e)[:300])
        if row["opcode"] not in row["blockers"]:
            row["blockers"] = sorted(row["blockers"] + [row["opcode"]])
    except Exception as e:          # noqa: BLE001 - any failure is this kernel's "error"
        row["message"] = f"{type(e).__name__}: {e}"[:300]
    return row


class _Timeout(BaseException):
    """A kernel's classification ran past KERNEL_TIMEOUT_S (not an Exception, so that
    classify_kernel's catch-all lets it through)."""


def _alarm(signum, frame):
    raise _Timeout()


def classify_file(base: CodeBase, rel: str, cache: Path | None) -> dict:
    """Compile one file and classify each of its kernels (run in a worker process)."""
    entry = {"codebase": base.name, "file": rel, "compile_error": None, "kernels": []}
    try:
        text = compile_listing(base, rel, cache)
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        entry["compile_error"] = str(e)
        return entry
    signal.signal(signal.SIGALRM, _alarm)
    for kernel in listing_kernels(text):
        signal.alarm(KERNEL_TIMEOUT_S)
        try:
            entry["kernels"].append(classify_kernel(text, kernel, f"{base.name}/{rel}.{ARCH}.sass"))
        except _Timeout:
            entry["kernels"].append({"kernel": kernel, "status": "error", "opcode": None, "insts": None,
                                     "message": f"timed out after {KERNEL_TIMEOUT_S} s", "blockers": [],
                                     "digest": None})
        finally:
            signal.alarm(0)
    return entry


def run_corpus(bases: list[CodeBase], jobs: int, cache: Path | None, discover: bool = False,
               progress=None) -> list[dict]:
    """Every file's entry (in manifest order); with ``discover``, every .cu under each root."""
    work = []
    for b in bases:
        if not b.root.is_dir():
            raise CorpusError(f"{b.manifest}: codebase {b.name}: no directory {b.root}")
        files = sorted(p.relative_to(b.root).as_posix() for p in b.root.rglob("*.cu")) \
            if discover else b.files
        work += [(b, rel) for rel in files]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(classify_file, b, rel, cache) for b, rel in work]
        entries = []
        for n, f in enumerate(futures, 1):
            entries.append(f.result())
            if progress:
                progress(n, len(work), entries[-1])
    return entries


# ---------------------------------------------------------------- the table

def unique_kernels(entries: list[dict], codebase: str) -> list[tuple[dict, dict]]:
    """(file entry, kernel row) of a code base, each kernel once: a kernel that several files
    compile to the same instructions (a shared header) counts where it is first met."""
    seen, rows = set(), []
    for e in entries:
        if e["codebase"] != codebase:
            continue
        for k in e["kernels"]:
            key = (k["kernel"], k["digest"] or id(k))
            if key not in seen:
                seen.add(key)
                rows.append((e, k))
    return rows


def summarize(entries: list[dict], bases: list[CodeBase]) -> dict:
    """Totals per code base and over all (each kernel once), and the opcodes blocking the most
    kernels."""
    per = {}
    blockers, first = Counter(), Counter()
    for b in bases:
        mine = [e for e in entries if e["codebase"] == b.name]
        rows = [k for _, k in unique_kernels(entries, b.name)]
        counts = Counter(k["status"] for k in rows)
        per[b.name] = {"source": b.source, "files": len(mine),
                       "compile_errors": sum(bool(e["compile_error"]) for e in mine),
                       "skipped": len(set(b.skipped) - {e["file"] for e in mine}), "kernels": len(rows),
                       **{s: counts.get(s, 0) for s in STATUSES}}
        for k in rows:
            blockers.update(k["blockers"])
            if k["opcode"]:
                first[k["opcode"]] += 1
    total = {key: sum(p[key] for p in per.values())
             for key in ("files", "compile_errors", "skipped", "kernels", *STATUSES)}
    return {"codebases": per, "total": total,
            "blockers": blockers.most_common(), "first_blockers": first.most_common()}


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f} %" if d else "-"


def render_markdown(summary: dict, entries: list[dict], meta: dict) -> str:
    """The table as markdown: totals per code base, top blockers, then the failing kernels."""
    out = [f"# Corpus: every kernel of {meta['files']} files compiled for {ARCH}", "",
           f"nvcc {meta['nvcc']} `{' '.join(NVCC_FLAGS)}`; translated for block {BLOCK[0]}x{BLOCK[1]}x"
           f"{BLOCK[2]} with {SHARED_BYTES} bytes of shared memory; modules checked with "
           "`spirv-val --target-env vulkan1.1`. Re-measure: `" + meta["command"] + "`.", "",
           "| code base | files | not compiled | kernels | translate | unsupported | invalid | error |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    rows = list(summary["codebases"].items()) + [("**total**", summary["total"])]
    for name, p in rows:
        out.append(f"| {name} | {p['files']} | {p['compile_errors'] + p['skipped']} | {p['kernels']} | "
                   f"{p['translates']} ({_pct(p['translates'], p['kernels'])}) | {p['unsupported']} | "
                   f"{p['invalid']} | {p['error']} |")
    out += ["", "## Opcodes that block the most kernels", "",
            "A kernel counts once under every opcode (or modifier) it uses that the opcode table "
            "lacks; *first* counts the one translation stopped at.", "",
            "| opcode | kernels | first |", "| --- | ---: | ---: |"]
    first = dict(summary["first_blockers"])
    for op, n in summary["blockers"][:TOP_BLOCKERS]:
        out.append(f"| `{op}` | {n} | {first.get(op, 0)} |")
    out += ["", "## Kernels that do not translate", "", "| code base | file | kernel | status | why |",
            "| --- | --- | --- | --- | --- |"]
    for name in summary["codebases"]:
        for e, k in unique_kernels(entries, name):
            if k["status"] != "translates":
                why = (k["message"] or "").split("\n")[0].replace("|", "\\|")
                out.append(f"| {e['codebase']} | {e['file']} | `{k['kernel'][:60]}` | {k['status']} | {why[:160]} |")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- the command

DESCRIPTION = ("Compile the CUDA code bases a manifest names for sm_86 and classify every kernel: "
               "translates, UNSUPPORTED (with the opcode), invalid SPIR-V or error; write the "
               "table as markdown and JSON.")


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``warpboard corpus`` options to a parser."""
    p.add_argument("manifest", nargs="+", help="manifest TOML files ([[codebase]] entries)")
    p.add_argument("--out", default="runs/corpus-sm_86",
                   help="the table, without suffix: OUT.md and OUT.json (default %(default)s)")
    p.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)),
                   help="files compiled and classified at once")
    p.add_argument("--cache", default=".warpboard-cache/corpus",
                   help="listings kept by source hash (default %(default)s; '' for none)")
    p.add_argument("--discover", action="store_true",
                   help="compile every .cu under each root and rewrite the manifests' files/skipped")
    p.add_argument("--capture", action="store_true",
                   help="the manifests name programs ([[program]], e.g. corpus/capture.toml): build each for "
                        "sm_86 and the GPU present and capture its launches as cases into --out (needs an NVIDIA GPU)")
    p.add_argument("--program", action="append", help="with --capture: only these programs (repeatable)")
    p.add_argument("--max-bytes", type=int, default=4 << 20,
                   help="with --capture: device memory a launch may touch to become a case (default 4 MiB)")
    p.add_argument("--check", action="store_true",
                   help="with --capture: replay each case on the interpreter; launches that touch memory "
                        "outside their allocations are skipped")
    return p


def _progress(n: int, total: int, entry: dict) -> None:
    state = entry["compile_error"] or ", ".join(f"{k['status']}" for k in entry["kernels"]) or "no kernels"
    print(f"[{n}/{total}] {entry['codebase']}/{entry['file']}: {state[:120]}", file=sys.stderr, flush=True)


def _rewrite_manifests(paths: list[Path], bases: list[CodeBase], entries: list[dict]) -> None:
    """Write each manifest back with the files that compiled and why the others did not."""
    for path in paths:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        roots = {c["name"]: c["root"] for c in raw.get("codebase", [])}
        mine = [b for b in bases if b.manifest == path]
        for b in mine:
            done = [e for e in entries if e["codebase"] == b.name]
            b.files = [e["file"] for e in done if not e["compile_error"]]
            b.skipped = {**{e["file"]: e["compile_error"] for e in done if e["compile_error"]},
                         **{k: v for k, v in b.skipped.items() if not k.endswith(".cu")}}
        write_atomic(str(path), manifest_text(mine, roots).encode("utf-8"))


def run(args: argparse.Namespace) -> int:
    """Carry out ``warpboard corpus``; the exit code (2: a manifest or tool problem)."""
    paths = [Path(m) for m in args.manifest]
    if args.capture:
        out = Path(args.out if args.out != "runs/corpus-sm_86" else "build/capture")
        rows = [r for m in paths for r in capture_programs.capture_all(m, out, args.program, max_bytes=args.max_bytes,
                                                                    jobs=args.jobs, check=args.check)]
        print((out / "capture.md").read_text())
        return 0 if any(r.cases for r in rows) else 1
    try:
        bases = [b for m in paths for b in load_manifest(m)]
        nvcc = find_nvcc()
        find_nvdisasm()
        entries = run_corpus(bases, max(1, args.jobs), Path(args.cache) if args.cache else None,
                             args.discover, _progress)
    except (CorpusError, ToolMissing) as e:
        print(f"warpboard corpus: {e}", file=sys.stderr)
        return 2
    if args.discover:
        _rewrite_manifests(paths, bases, entries)
    summary = summarize(entries, bases)
    meta = {"arch": ARCH, "nvcc": nvcc_version(nvcc), "flags": list(NVCC_FLAGS), "block": list(BLOCK),
            "shared_bytes": SHARED_BYTES, "files": len(entries),
            "command": f"warpboard corpus {' '.join(args.manifest)} --out {args.out}"}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out + ".json", json.dumps({"meta": meta, "summary": summary, "files": entries},
                                                indent=1).encode("utf-8"))
    write_atomic(args.out + ".md", render_markdown(summary, entries, meta).encode("utf-8"))
    t = summary["total"]
    print(f"{t['kernels']} kernels in {t['files']} files: {t['translates']} translate "
          f"({_pct(t['translates'], t['kernels'])}), {t['unsupported']} unsupported, {t['invalid']} invalid, "
          f"{t['error']} errors -> {args.out}.md, {args.out}.json")
    return 0
