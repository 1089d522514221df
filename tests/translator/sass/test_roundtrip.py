"""Parse then print reproduces the listing: every instruction of every listing under cases/
``bench/`` and ``tests/fixtures/listings/`` (``*.sass`` files and listings inline in case files), printed from its parsed fields by translator.sass.printer, equals the text on
its line (whitespace normalised, ``.reuse`` dropped). Every difference is listed before the
test fails, so one run shows everything the parser loses (as NAK's disassembler tests do)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from warpboard.harness.case.model import CaseError, load_case
from warpboard.translator.sass.listing import parse_listing
from warpboard.translator.sass.printer import format_instruction

from support.paths import ROOT

LISTINGS = sorted(p for d in ("cases", "bench", "tests/fixtures/listings") for p in (ROOT / d).rglob("*.sass"))
INLINE = sorted(p for p in (ROOT / "cases").rglob("*.toml") if 'sass = """' in p.read_text(encoding="utf-8"))

_ADDRESS = re.compile(r"^\s*/\*[0-9a-fA-F]{4,}\*/")
_ENCODING = re.compile(r"/\*\s*0x[0-9a-fA-F]+\s*\*/")


def normalise(line: str) -> str:
    """The instruction text of a listing line: no address, encoding comment, ';' or .reuse."""
    text = _ENCODING.sub("", _ADDRESS.sub("", line)).strip()
    text = text[:-1] if text.endswith(";") else text
    text = re.sub(r"\.reuse\b", "", text)
    return " ".join(text.split())


def differences(text: str, file: str, first_line: int = 1, whole: str | None = None) -> tuple[int, list[str]]:
    """(instructions compared, one message per instruction that does not print back).

    ``whole`` is the file the listing sits in from line ``first_line`` (a case file)."""
    lines = (whole if whole is not None else text).splitlines()
    count, diffs = 0, []
    for section in parse_listing(text, file, first_line).values():
        for raw in section.instructions:
            count += 1
            want, got = normalise(lines[raw.line - 1]), format_instruction(raw)
            if got != want:
                diffs.append(f"{file}:{raw.line}: expected {want!r}, printed {got!r}")
    return count, diffs


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@pytest.mark.parametrize("path", LISTINGS, ids=_id)
def test_listing_round_trips(path: Path):
    count, diffs = differences(path.read_text(encoding="utf-8"), _id(path))
    assert count > 0, f"{path}: no instructions parsed"
    assert not diffs, f"{len(diffs)} of {count} instructions do not print back:\n" + "\n".join(diffs)


@pytest.mark.parametrize("path", INLINE, ids=_id)
def test_inline_listing_round_trips(path: Path):
    try:
        case = load_case(path, ROOT / "cases")
    except CaseError as exc:
        pytest.fail(f"case does not load: {exc}")
    count, diffs = differences(case.listing_text, _id(path), case.listing_line, path.read_text(encoding="utf-8"))
    assert count > 0, f"{path}: no instructions parsed"
    assert not diffs, f"{len(diffs)} of {count} instructions do not print back:\n" + "\n".join(diffs)


def test_listings_found():
    assert len([p for p in LISTINGS if p.is_relative_to(ROOT)]) >= 5


# Forms of sm86-semantics.md §1 that the shipped listings lack, in nvdisasm's and
# cuobjdump's spellings.
FORMS = """\
        /*0000*/                   CS2R R4, SRZ ;
        /*0010*/                   S2R R0, SR_LANEID ;
        /*0020*/              @!PT LDS RZ, [RZ] ;
        /*0030*/              @UP0 IADD3 R2, -R10.reuse, 0x27, RZ ;
        /*0040*/                   IADD3 R0, R0, -0x1, RZ ;
        /*0050*/                   LDG.E R5, [R2.64+-0x40] ;
        /*0060*/                   LDG.E R2, desc[UR4][R2.64+0x10] ;
        /*0070*/                   LDS R5, [R7.X4+0x200] ;
        /*0080*/                   LDS.U16 R5, [0x40] ;
        /*0090*/                   STS [R2+-0x4], R5 ;
        /*00a0*/                   LDC R4, c[0x0][R2+0x160] ;
        /*00b0*/                   LDC R4, c[0x3][UR4+0x4] ;
        /*00c0*/                   FSETP.GEU.AND P0, PT, |R5|, 1.175494350822287508e-38, PT ;
        /*00d0*/                   FFMA R0, -|R2|, 0.5, -1 ;
        /*00e0*/                   FADD R0, R0, +INF ;
        /*00f0*/                   FSEL R0, R1, -QNAN , !P0 ;
        /*0100*/                   HFMA2.MMA R3, -RZ, RZ, 0, 5.9604644775390625e-08 ;
        /*0110*/                   FMUL R0, |c[0x0][0x160]|, 16777216 ;
        /*0120*/                   LOP3.LUT R4, ~R4, R5, RZ, 0xc0, !PT ;
        /*0130*/                   ISETP.GE.U32.AND.EX P0, PT, R3, R5, PT, P0 ;
        /*0140*/                   PRMT R5, R16.B1, 0x7710, RZ ;
        /*0150*/                   VOTEU.ANY UR4, UPT, PT ;
        /*0160*/                   BSSY B0, `(.L_x_0) ;
        /*0170*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm70_votesync_ballot) ;
        /*0180*/                   RET.REL.NODEC R2 `(kernel) ;
        /*0190*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*01a0*/                   BRA `(.L_x_0);
        /*01b0*/                   NOP;
        /*01c0*/                   FSETP.GEU.AND P1, PT, |R3|.reuse, 1.17549435e-38, PT ;
        /*01d0*/                   FADD R0, -|R3|.H1, -INF ;
        /*01e0*/                   DEPBAR.LE SB0, 0x0 ;
        /*01f0*/                   DEPBAR.LE SB0, 0x1, {4,3} ;
        /*0200*/                   LDS R0, [R2+URZ] ;
        /*0210*/                   LDS R0, [R2.X4+R3] ;
        /*0220*/                   STS [R2+R3+0x10], R0 ;
        /*0230*/                   LDG.E R0, [R2.64+UR4+-0x10] ;
        /*0240*/                   LDG.E R0, desc[UR4][R2.64] ;
        /*0250*/                   MOV R0, c[0x2][0x0] ;
        /*0260*/                   LDC R0, c[0x3][R2+0x10] ;
        /*0270*/                   TEX.SCR.LL R0, R2, R4, R0, 0x0, 0x5a, 2D ;
        /*0280*/                   TLD.SCR.LZ R4, R2, 0x0, 0x58, ARRAY_2D, 0x3 ;
        /*0290*/                   S2R R0, SR_CLOCKLO ;
        /*02a0*/                   PLOP3.LUT P0, PT, !P1, PT, PT, 0x8, 0x0 ;
        /*02b0*/                   FMUL R0, R1, 1e+10 ;
"""

CUOBJDUMP = """\
        /*0000*/                   MOV R1, c[0x0][0x28] ;                   /* 0x00000a0000017a02 */
                                                                            /* 0x000fe40000000f00 */
        /*0010*/                   BSSY B0, 0x70 ;                          /* 0x0000005000007945 */
                                                                            /* 0x000fe20003800000 */
        /*0020*/              @!P0 BRA 0x60 ;                               /* 0x0000003000008947 */
                                                                            /* 0x000fea0003800000 */
        /*0030*/                   CALL.REL.NOINC 0x80 ;                    /* 0x0000004000007944 */
                                                                            /* 0x000fea0003c00000 */
        /*0040*/                   RET.REL.NODEC R4 0x0 ;                   /* 0xffffffb004007950 */
                                                                            /* 0x000fea0003c3ffff */
        /*0050*/                   BRA 0x50;                                /* 0xfffffff000007947 */
                                                                            /* 0x000fc0000383ffff */
"""


@pytest.mark.parametrize("text", [FORMS, CUOBJDUMP], ids=["nvdisasm-forms", "cuobjdump"])
def test_forms_round_trip(text: str):
    count, diffs = differences(text, "<forms>")
    assert count == len([line for line in text.splitlines() if _ADDRESS.match(line)])
    assert not diffs, "\n".join(diffs)
