"""Every listing the project has parses: each instruction line of every ``*.sass`` file under
``cases/``, ``corpus/``, ``bench/`` and ``tests/fixtures/listings/``, of the listings inline in
case files, and of the corpus listings ``warpboard corpus`` has cached on this machine
(``.warpboard-cache/corpus``, where a corpus run left them: the public code bases' listings are
not in the repository). Each line is parsed on its own, so one run names every operand the
parser rejects, as ``file:line``; the count of instructions parsed is checked against the
instruction lines found and against a floor, so that a listing skipped whole shows too."""
from __future__ import annotations

import re
from pathlib import Path

from support.paths import ROOT
from warpboard.harness.case.model import load_case
from warpboard.translator.errors import SassSyntaxError
from warpboard.translator.sass.listing import parse_instruction, parse_listing

FOLDERS = ("cases", "corpus", "bench", "tests/fixtures/listings", ".warpboard-cache/corpus")
LISTINGS = sorted(p for d in FOLDERS for p in (ROOT / d).rglob("*.sass"))
INLINE = sorted(p for p in (ROOT / "cases").rglob("*.toml") if 'sass = """' in p.read_text(encoding="utf-8"))
# the instructions of the listings in the repository when this check was written (21,616 in
# 82 files; 16 case files hold 435 inline): fewer means listings went missing
LEAST_INSTRUCTIONS = 21_000
LEAST_INLINE_INSTRUCTIONS = 400

_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s*(.*)$")


def check_listing(text: str, file: str, first_line: int = 1) -> tuple[int, list[str]]:
    """(instruction lines of ``text``, one ``file:line: ...`` message per line that does not
    parse). A kernel whose lines all parse must also parse whole, to as many instructions."""
    count, errors = 0, []
    for k, line in enumerate(text.splitlines()):
        m = _INSTRUCTION.match(line)
        if m is None:
            continue
        count += 1
        try:
            parse_instruction(int(m.group(1), 16), m.group(2), file, first_line + k)
        except SassSyntaxError as err:
            errors.append(str(err))
    if not errors:
        listing = parse_listing(text, file, first_line)
        failed = listing.errors()
        errors += [str(err) for err in failed.values()]
        parsed = sum(len(listing[name].instructions) for name in listing if name not in failed)
        if parsed != count and not errors:
            errors.append(f"{file}: {count} instruction lines, {parsed} instructions parsed")
    return count, errors


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_every_listing_file_parses():
    total, errors, empty = 0, [], []
    for path in LISTINGS:
        count, bad = check_listing(path.read_text(encoding="utf-8"), _name(path))
        total += count
        errors += bad
        if count == 0:
            empty.append(_name(path))
    assert not errors, f"{len(errors)} of {total} instructions do not parse:\n" + "\n".join(errors)
    assert not empty, f"listings with no instruction line: {empty}"
    assert total >= LEAST_INSTRUCTIONS, f"{total} instructions in {len(LISTINGS)} listings"


def test_every_inline_listing_parses():
    total, errors = 0, []
    for path in INLINE:
        case = load_case(path, ROOT / "cases")
        count, bad = check_listing(case.listing_text, _name(path), case.listing_line)
        total += count
        errors += bad
    assert not errors, f"{len(errors)} of {total} instructions do not parse:\n" + "\n".join(errors)
    assert total >= LEAST_INLINE_INSTRUCTIONS, f"{total} instructions in {len(INLINE)} case files"


def test_the_check_names_every_line_that_does_not_parse():
    text = ("        /*0000*/                   HADD2.F32 R0, -RZ, c[0x0] [0x170].H0_H0 ;\n"
            "        /*0010*/                   HADD2 R0, R1, c[0x0] [[0x170] ;\n"
            "        /*0020*/                   MOV R0, c[0x0]] ;\n"
            "        /*0030*/                   EXIT ;\n")
    count, errors = check_listing(text, "k.sass", 10)
    assert count == 4
    assert [e.split(": ", 1)[0] for e in errors] == ["k.sass:11", "k.sass:12"]
    assert "malformed address [[0x170] in 'HADD2 R0, R1, c[0x0] [[0x170]'" in errors[0]
    assert "malformed constant 'c[0x0]]'" in errors[1]
