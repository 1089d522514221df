"""Give cases their kernels' machine code: ``warpboard words [CASES...]``.

A case's ``words`` table (harness/case/words.py) names a file of raw SM86 instruction words
beside it, named by its hash, and the kernel's offset and size in it. This module writes them:

- for a case with a ``source``, the words nvcc makes: the source is compiled as its listing was
  (``nvcc -cubin -arch=sm_86``), and the file holds the ``.text.<kernel>`` section of every
  kernel of the cubin, in the listing's order; a case whose listing is not what nvcc prints for
  that cubin is left as it is, with the reason (it was edited, or built another way);
- for any other case (hand-written and edited listings, captured programs) the words an
  assembler makes from the listing (``assemble``: a function of the listing text and kernel);
- every case's words are checked against its listing by ``nvdisasm --binary SM86``
  (:func:`harness.case.words.first_difference`) before the case file is changed.

:func:`attach` is what the case tools (new-case, capture, corpus, fuzz) call for one case.
"""
from __future__ import annotations

import argparse
import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from warpboard.harness.case import cubin as case_cubin
from warpboard.harness.case.model import Case, discover_cases, listing_kernels
from warpboard.harness.case.words import find_nvdisasm, first_difference
from warpboard.translator import TranslatorError

from . import toolchain
from .assembler import encode as assembler_encode

DATA_DIR = "data"
SUFFIX = ".sm86"


@dataclass
class Outcome:
    case: str
    how: str = ""           # "nvcc", "assembled", or "" where no words were written
    reason: str = ""        # why not


def text_sections(image: bytes) -> dict[str, bytes]:
    """kernel name -> its ``.text.<kernel>`` section of a cubin."""
    return {name[len(".text."):]: body for name, body in case_cubin.sections(image) if name.startswith(".text.")}


def store(folder: Path, kernels: list[tuple[str, bytes]]) -> tuple[str, str, dict[str, tuple[int, int]]]:
    """Write the kernels' words, one after another, into ``folder/data/<hash>.sm86``: (the
    file relative to ``folder``, its sha256, kernel -> (offset, size))."""
    blob, where = b"", {}
    for name, words in kernels:
        where[name] = (len(blob), len(words))
        blob += words
    digest = hashlib.sha256(blob).hexdigest()
    rel = f"{DATA_DIR}/{digest[:32]}{SUFFIX}"
    target = folder / rel
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)
    return rel, digest, where


_WORDS_LINE = re.compile(r"^words\s*=.*\n", re.M)
_LISTING_LINE = re.compile(r"^(?:listing|sass)\s*=.*\n", re.M)
_FIRST_TABLE = re.compile(r"^\[", re.M)


def attach(case_path: Path, rel: str, digest: str, offset: int, size: int) -> None:
    """Set the case file's ``words`` to that slice of ``rel``: a top-level line after its
    listing (before the first table), replacing one it had."""
    text = case_path.read_text()
    table = _FIRST_TABLE.search(text)
    top, rest = (text[:table.start()], text[table.start():]) if table else (text, "")
    line = f'words = {{ file = "{rel}", sha256 = "{digest}", offset = {offset}, size = {size} }}\n'
    if _WORDS_LINE.search(top):
        top = _WORDS_LINE.sub(lambda _: line, top, count=1)
    else:
        at = _LISTING_LINE.search(top)
        if at is None:
            cut = len(top.rstrip("\n")) + 1 if top.strip() else 0
        elif re.search(r'("""|\'\'\')\s*$', at.group(0).rstrip("\n")):
            cut = at.start()                  # an inline listing: before its multi-line string
        else:
            cut = at.end()
        top = top[:cut] + line + top[cut:]
    case_path.write_text(top + rest)


def from_nvcc(case: Case, compiled: dict[Path, bytes]) -> tuple[list[tuple[str, bytes]], str]:
    """(every kernel's words, in the listing's order, from the case's source compiled as
    ``nvcc -cubin -arch=sm_86``, "") or ([], why not); whether they are the listing's
    instructions is for :func:`give_words` to check."""
    source = case.source
    if source not in compiled:
        compiled[source] = toolchain.compile_listing(source)[2]
    sections = text_sections(compiled[source])
    if (case.kernel or "") not in sections and len(sections) != 1:
        return [], f"nvcc makes no kernel {case.kernel!r} of {source.name}"
    order = [k for k in listing_kernels(case.listing_text) if k in sections] or list(sections)
    return [(k, sections[k]) for k in order], ""


def give_words(cases: Iterable[Case], assemble: Callable[[str, str | None], bytes] | None = None,
               force: bool = False) -> list[Outcome]:
    """Words for each case that has none (every case with ``force``), checked against its
    listing; what became of each."""
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        raise toolchain.ToolMissing("nvdisasm is needed to check words against listings "
                                    "(pip install nvidia-cuda-nvdisasm)")
    compiled: dict[Path, bytes] = {}
    outcomes = []
    for case in cases:
        out = Outcome(case.id)
        outcomes.append(out)
        if case.words is not None and not force:
            out.reason = "has words"
            continue
        kernels, why = [], "no source"
        if case.source is not None:
            try:
                kernels, why = from_nvcc(case, compiled)
            except (toolchain.ToolMissing, toolchain.ToolFailed) as e:
                why = str(e).splitlines()[0]
        how = "nvcc"
        if not kernels and assemble is not None:
            try:
                kernels, how = [(case.kernel or "", assemble(case.kernel_listing, case.kernel))], "assembled"
            except ValueError as e:
                why = f"{why}; the assembler: {e}"
        if not kernels:
            out.reason = why
            continue
        mine = dict(kernels).get(case.kernel or "", kernels[0][1])
        try:
            differs = first_difference(mine, case.listing_text, case.kernel, nvdisasm)
        except (TranslatorError, ValueError, OSError) as e:
            differs = f"{type(e).__name__}: {e}"
        if differs:
            out.reason = f"{how} words differ from the listing: {differs}"
            continue
        rel, digest, where = store(case.path.parent, kernels)
        offset, size = where.get(case.kernel or "", where[kernels[0][0]])
        attach(case.path, rel, digest, offset, size)
        out.how = how
    return outcomes




DESCRIPTION = ("Give cases their kernels' SM86 instruction words: nvcc's for cases with a source, the "
               "assembler's for the others, each checked against its listing with nvdisasm --binary SM86.")


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``warpboard words`` options to a parser."""
    p.add_argument("cases", nargs="*", help="case ids or fnmatch patterns (default: every case)")
    p.add_argument("--root", default="cases", help="the case library (default: cases)")
    p.add_argument("--force", action="store_true", help="write words again for cases that have them")
    p.add_argument("--no-assemble", action="store_true", help="only nvcc's words (no assembler)")
    return p


def run(args: argparse.Namespace) -> int:
    """Carry out ``warpboard words``: one line per case left without words, then the counts;
    exit 1 when any case is left without them."""
    assemble = None if args.no_assemble else assembler_encode.assemble
    outcomes = give_words(discover_cases(args.root, args.cases or None), assemble, args.force)
    left = [o for o in outcomes if not o.how and o.reason != "has words"]
    for o in left:
        print(f"{o.case}: {o.reason}")
    counts = Counter(o.how or ("had words" if o.reason == "has words" else "left without") for o in outcomes)
    print(", ".join(f"{n} {what}" for what, n in sorted(counts.items())))
    return 1 if left else 0


__all__ = ["Outcome", "text_sections", "store", "attach", "from_nvcc", "give_words", "add_arguments", "run"]
