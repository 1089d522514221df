"""How much of a set of listings the tables encode, and how much of it nvdisasm reads back as
written: ``warpboard assemble --coverage``.

The sets: ``hand-written`` (the library's cases tagged so: listings written by hand),
``library`` (every case's kernel, each listing and kernel once), ``corpus`` (corpus/cub and the
HeCBench programs, compiled as for training), ``public`` (the cuda-samples, Rodinia and llm.c
files of corpus/public.toml, where their trees are under build/asm-training/), or the listing
files named on the command line, one set each. Per set: instructions, how many were encoded
and round-tripped (:mod:`.roundtrip`), the distinct forms and how many of them were, and the
forms that could not be encoded, by count.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from warpboard.harness.case.model import scan_cases
from warpboard.translator import SassSyntaxError, parse_listing

from ..toolchain import ToolFailed
from .encode import encode_section
from .roundtrip import compare_sections
from .table import Table, load_table
from .training import ROOT, listing, sources
from .words import listing_words

SETS = ("hand-written", "library", "corpus", "public")
BATCH_WORDS = 150_000


@dataclass
class SetCoverage:
    """What the tables make of one set of listings."""
    name: str
    kernels: int = 0
    instructions: int = 0
    encoded: int = 0
    roundtripped: int = 0
    forms: Counter = field(default_factory=Counter)           # form -> instructions
    forms_encoded: set = field(default_factory=set)
    forms_roundtripped: set = field(default_factory=set)     # encoded forms whose every instruction reads back
    mismatched: set = field(default_factory=set)
    unencoded: Counter = field(default_factory=Counter)       # form -> instructions not encoded
    reasons: dict = field(default_factory=dict)               # form -> the first error
    differences: list = field(default_factory=list)           # first few round-trip differences
    unparsed: list = field(default_factory=list)

    def row(self) -> dict:
        pct = lambda n, d: f"{100 * n / d:.1f}%" if d else "-"   # noqa: E731
        return {"set": self.name, "kernels": self.kernels, "instructions": self.instructions,
                "encoded": f"{self.encoded} ({pct(self.encoded, self.instructions)})",
                "round-tripped": f"{self.roundtripped} ({pct(self.roundtripped, self.instructions)})",
                "forms": len(self.forms),
                "forms encoded": f"{len(self.forms_encoded)} ({pct(len(self.forms_encoded), len(self.forms))})",
                "forms round-tripped": f"{len(self.forms_roundtripped)} "
                                       f"({pct(len(self.forms_roundtripped), len(self.forms))})"}


def _case_listings() -> tuple[list, list]:
    """(hand-written, every) case listing as (text, file, first line, kernel), each once."""
    cases, _ = scan_cases(ROOT / "cases")
    every, hand, seen = [], [], set()
    for case in cases:
        item = (case.listing_text, str(case.listing_path.relative_to(ROOT)), case.listing_line, case.kernel)
        if (item[1], item[2], item[3]) not in seen:
            seen.add((item[1], item[2], item[3]))
            every.append(item)
        if "hand-written" in case.tags:
            hand.append(item)
    return hand, every


def _compiled(which: tuple[str, ...]) -> list:
    out = []
    for source in (s for w in which for s in sources(w)):
        try:
            out.append((listing(source), source.name, 1, None))
        except ToolFailed:
            continue
    return out


def set_listings(name: str) -> list:
    """The (text, file, first line, kernel or None for all) of a named set or a listing file."""
    if name in ("hand-written", "library"):
        hand, every = _case_listings()
        return hand if name == "hand-written" else every
    if name == "corpus":
        return _compiled(("cub", "hecbench"))
    if name == "public":
        return _compiled(("public",))
    path = Path(name)
    if path.is_dir():
        return [(p.read_text(encoding="utf-8"), str(p), 1, None) for p in sorted(path.rglob("*.sass"))]
    return [(path.read_text(encoding="utf-8"), str(path), 1, None)]


def measure(name: str, listings: list, table: Table, nvdisasm: str | None = None) -> SetCoverage:
    """Encode and round-trip every kernel of ``listings`` (see :func:`set_listings`)."""
    out, batch, size = SetCoverage(name), [], 0
    for text, file, first_line, kernel in listings:
        parsed, given = parse_listing(text, file, first_line), listing_words(text)
        for k in ([kernel] if kernel else list(parsed)):
            try:
                section = parsed[k]
            except (SassSyntaxError, KeyError) as e:
                out.unparsed.append(str(e))
                continue
            batch.append((section, encode_section(section, table, given.get(k, {}))))
            size += len(section.instructions)
            if size >= BATCH_WORDS:
                _count(out, batch, nvdisasm)
                batch, size = [], 0
    _count(out, batch, nvdisasm)
    return out


def _count(out: SetCoverage, batch: list, nvdisasm: str | None) -> None:
    if not batch:
        return
    for checked in compare_sections(batch, nvdisasm):
        out.kernels += 1
        for e, ok in zip(checked.encoded, checked.matched):
            out.instructions += 1
            out.forms[e.key] += 1
            if e.word is None:
                out.unencoded[e.key] += 1
                out.reasons.setdefault(e.key, e.error)
                continue
            out.encoded += 1
            out.forms_encoded.add(e.key)
            out.roundtripped += ok
            if not ok:
                out.mismatched.add(e.key)
        out.differences += checked.differences[:max(0, 10 - len(out.differences))]
    out.forms_encoded -= set(out.unencoded)
    out.forms_roundtripped = out.forms_encoded - out.mismatched


def coverage(names: list[str] | None = None, table: Table | None = None, nvdisasm: str | None = None,
             log=print) -> list[SetCoverage]:
    """The coverage of each named set (default: :data:`SETS` whose listings are there)."""
    table = table or load_table()
    results = []
    for name in names or SETS:
        listings = set_listings(name)
        if not listings:
            log(f"{name}: no listings (not compiled, or its sources are absent)")
            continue
        results.append(measure(name, listings, table, nvdisasm))
    return results


__all__ = ["SETS", "SetCoverage", "coverage", "measure", "set_listings"]
