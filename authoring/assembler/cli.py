"""``warpboard assemble``: SM86 listing text to instruction words, and the tables behind it.

    warpboard assemble LISTING [--kernel K] -o WORDS [--check]
    warpboard assemble --learn [--sets cases,cub,hecbench,public]
    warpboard assemble --coverage [LISTING...]

The first writes one kernel's words (16 bytes an instruction, the bytes of its cubin section);
``--check`` then reads them back with ``nvdisasm --binary SM86`` and compares them with the
listing. ``--learn`` compiles the training code (cached under .warpboard-cache/assembler/) and
writes the tables again (authoring/assembler/sm86_forms.json). ``--coverage`` prints, per set
of listings (by default the library's hand-written listings, all its listings, corpus/cub
with the HeCBench programs, and the public corpus where it is compiled), the instructions and
distinct forms encoded and round-tripped, and the forms it cannot encode, by count.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tabulate import tabulate

from warpboard.harness.files import OutputError, output_problem, write_atomic

from ..toolchain import ToolFailed, ToolMissing
from .coverage import SetCoverage, coverage
from .encode import AssemblerError, assemble_words
from .learn import learn
from .roundtrip import roundtrip
from .table import TABLE_PATH, load_table
from .training import SETS
from .words import to_bytes

DESCRIPTION = ("Assemble an SM86 listing into its instruction words (--check: read them back with nvdisasm); "
               "--learn: learn the encoding tables from nvcc's code again; --coverage: how much of the "
               "library and the corpus the tables encode.")
SHOWN_FORMS = 15


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``warpboard assemble`` options to a parser."""
    p.add_argument("listing", nargs="?", help="an SM86 listing (nvdisasm -c, with or without -hex)")
    p.add_argument("--kernel", help="the kernel to assemble (default: the listing's only one)")
    p.add_argument("-o", "--output", help="the words file to write")
    p.add_argument("--check", action="store_true",
                   help="read the words back with nvdisasm and compare them with the listing")
    p.add_argument("--learn", action="store_true", help="compile the training code and write the tables again")
    p.add_argument("--sets", default=",".join(SETS),
                   help=f"with --learn: the training sets (default {','.join(SETS)}; a set whose sources are "
                        "absent adds nothing)")
    p.add_argument("--coverage", nargs="*", metavar="LISTING",
                   help="coverage of the tables: of these listing files (or folders of .sass), else of the "
                        "library and the corpus")
    p.add_argument("--table", type=Path, default=TABLE_PATH, help="the tables (default: the shipped ones)")
    return p


def report(results: list[SetCoverage], shown: int = SHOWN_FORMS) -> str:
    """The coverage table, then each set's forms that were not encoded, by count."""
    lines = [tabulate([r.row() for r in results], headers="keys")]
    for r in results:
        if r.unencoded:
            lines.append(f"\n{r.name}: {sum(r.unencoded.values())} instructions of {len(r.unencoded)} forms "
                         "not encoded:")
            lines += [f"  {n:6d}  {k}" for k, n in r.unencoded.most_common(shown)]
            if len(r.unencoded) > shown:
                lines.append(f"  ... and {len(r.unencoded) - shown} forms more")
        if r.differences:
            lines.append(f"\n{r.name}: {len(r.mismatched)} forms read back otherwise, e.g. {r.differences[0]}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Carry out ``warpboard assemble``; the exit code (2: bad usage or an unencodable
    listing, 1: the words do not read back as the listing)."""
    try:
        if args.learn:
            sets = tuple(s for s in args.sets.split(",") if s)
            unknown = [s for s in sets if s not in SETS]
            if unknown:
                raise AssemblerError(f"--sets: no training set {unknown[0]!r} (the sets: {', '.join(SETS)})")
            learn(sets, args.table, log=lambda m: print(m, file=sys.stderr, flush=True))
            return 0
        table = load_table(args.table)
        if args.coverage is not None:
            print(report(coverage(args.coverage or None, table, log=lambda m: print(m, file=sys.stderr))))
            return 0
        if not args.listing or not args.output:
            raise AssemblerError("give a LISTING and -o WORDS (or --learn, or --coverage)")
        if problem := output_problem(args.output):
            raise AssemblerError(problem)
        try:
            text = Path(args.listing).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise AssemblerError(f"{args.listing}: cannot read the listing: {e}") from None
        words = assemble_words(text, args.kernel, args.listing, table)
        write_atomic(args.output, to_bytes(words))
        print(f"{args.listing}: {len(words)} instructions -> {args.output} ({16 * len(words)} bytes)")
        if args.check:
            difference = roundtrip(text, args.kernel, args.listing, table)
            if difference:
                print(f"warpboard assemble: {difference}", file=sys.stderr)
                return 1
            print(f"nvdisasm reads all {len(words)} back as the listing writes them")
        return 0
    except (AssemblerError, ToolMissing, ToolFailed, FileNotFoundError) as e:
        print(f"warpboard assemble: {e}", file=sys.stderr)
        return 2
    except OutputError as e:
        print(f"warpboard assemble: {e}", file=sys.stderr)
        return 1


__all__ = ["DESCRIPTION", "add_arguments", "report", "run"]
