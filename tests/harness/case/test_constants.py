"""Constant banks 1-4 come from the case: a listing that reads a constant the case does not
give is an ERROR at load naming the instruction's file and line, the bank and the offset, and
the remedy; never a silent 0. A case may take its banks from the kernel's cubin."""
import struct

import pytest

from support.elf import make_elf
from support.listing_kit import listing

from warpboard.harness.case.cubin import bank_words
from warpboard.harness.case.model import CaseError, load_case
from warpboard.harness.run.engine import run_case
from warpboard.harness.run.results import Status

THREADS = 32
HEAD = ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R2, R0, 0x4, c[0x0][0x160]", "LDG.E R4, [R2.64]"]
TAIL = ["STG.E [R2.64], R4", "EXIT"]


def case_with(make_case, body, expected, **parts):
    buffers = [{"name": "out", "words": THREADS, "init": list(range(THREADS)), "expected": expected}]
    return make_case("k/c", sass=listing(HEAD + body + TAIL), buffers=buffers, **parts)


def line_of(case, needle: str) -> int:
    return next(k for k, text in enumerate(case.path.read_text().splitlines(), 1) if needle in text)


def test_a_constant_the_case_does_not_give_is_an_error_naming_bank_line_and_remedy(make_case):
    case = case_with(make_case, ["IADD3 R4, R4, c[0x2][0x8], RZ"], list(range(THREADS)))
    cell = run_case(case, "interp")
    assert cell.status is Status.ERROR
    assert cell.message.startswith(f"{case.path}:{line_of(case, 'c[0x2][0x8]')}: 'IADD3 R4, R4, c[0x2][0x8], RZ' "
                                   "reads constant bank 2 at 0x8, which")
    assert "[[constants]] table (bank = 2)" in cell.message and "warpboard new-case" in cell.message


def test_the_same_case_with_the_word_given_runs(make_case):
    case = case_with(make_case, ["IADD3 R4, R4, c[0x2][0x8], RZ"], [t + 5 for t in range(THREADS)],
                     constants=[{"bank": 2, "offset": 8, "words": [5]}])
    assert run_case(case, "interp").status is Status.PASS


def test_a_register_indexed_read_needs_the_bank(make_case):
    body = ["LOP3.LUT R5, R0, 0x4, RZ, 0xc0, !PT", "LDC R6, c[0x3][R5]", "IADD3 R4, R4, R6, RZ"]
    cell = run_case(case_with(make_case, body, list(range(THREADS))), "interp")
    assert cell.status is Status.ERROR
    assert "reads constant bank 3 at an offset held in a register" in cell.message
    given = case_with(make_case, body, [t + (9 if t & 4 else 2) for t in range(THREADS)],
                      constants=[{"bank": 3, "offset": 0, "words": [2, 9]}])
    assert run_case(given, "interp").status is Status.PASS


def test_a_pair_may_end_past_the_table_but_not_start_outside_it(make_case):
    """ULDC.64 of a one-word table: the high word reads 0, as past a cubin section's end
    (cases/atomics/atomics64_global, recorded on a chip, reads its bank 2 so)."""
    body = ["ULDC.64 UR4, c[0x2][0x0]", "IADD3 R4, R4, UR4, RZ", "IADD3 R4, R4, UR5, RZ"]
    inside = case_with(make_case, body, [t + 3 for t in range(THREADS)],
                       constants=[{"bank": 2, "offset": 0, "words": [3]}])
    assert run_case(inside, "interp").status is Status.PASS
    outside = case_with(make_case, body, [t + 3 for t in range(THREADS)],
                        constants=[{"bank": 2, "offset": 4, "words": [3]}])
    cell = run_case(outside, "interp")
    assert cell.status is Status.ERROR and "reads constant bank 2 at 0x0" in cell.message


def _cubin_case(make_case, case_root, bank2: bytes, **parts):
    (case_root / "k").mkdir(parents=True, exist_ok=True)
    (case_root / "k" / "k.cubin").write_bytes(make_elf({".nv.constant2.k": bank2}, [], []))
    buffers = [{"name": "out", "words": THREADS, "init": list(range(THREADS)),
                "expected": [t + 7 for t in range(THREADS)]}]
    sass = "k:\n.text.k:\n" + listing(HEAD + ["IADD3 R4, R4, c[0x2][0x4], RZ"] + TAIL)
    return make_case("k/c", sass=sass, buffers=buffers, kernel="k", cubin="k.cubin", **parts)


def test_a_case_takes_its_banks_from_the_cubin_it_names(make_case, case_root):
    case = _cubin_case(make_case, case_root, struct.pack("<2I", 0, 7))
    assert (2, 0, (0, 7)) in case.constants          # from 0x0: a pair may start at the zero word
    assert run_case(case, "interp").status is Status.PASS


def test_constants_the_case_writes_win_over_the_cubin(make_case, case_root):
    case = _cubin_case(make_case, case_root, struct.pack("<2I", 0, 1),
                       constants=[{"bank": 2, "offset": 4, "words": [7]}])
    assert [c for c in case.constants if c[0] == 2] == [(2, 4, (7,))]
    assert run_case(case, "interp").status is Status.PASS


def test_an_unreadable_cubin_is_a_case_error(make_case, case_root):
    (case_root / "k").mkdir(parents=True, exist_ok=True)
    (case_root / "k" / "k.cubin").write_bytes(b"not an elf")
    path = make_case.write("k/c", sass="k:\n.text.k:\n" + listing(["EXIT"]), kernel="k", cubin="k.cubin")
    with pytest.raises(CaseError, match=r"cubin: .*k\.cubin cannot be read"):
        load_case(path, case_root)


# ---------------------------------------------------------------- a bank's tables from its bytes
def test_bank_tables_start_at_zero_where_a_pair_begins_with_a_zero_word():
    """fz5018 (seed 5000 on the H200): ``IMAD.HI.U32 R7, R13, R6, c[0x2][0x0]`` reads the
    pair 0x0-0x7 of a bank 2 whose first word is 0; the table must start at 0x0, or the case
    does not give what the kernel reads. Long zero stretches are still left out."""
    words = lambda *w: struct.pack(f"<{len(w)}I", *w)      # noqa: E731
    assert bank_words(words(0, 0xFBE250E0)) == [(0, (0, 0xFBE250E0))]
    assert bank_words(words(*([0] * 16), 7)) == [(64, (7,))]
    assert bank_words(words(1, *([0] * 15), 2)) == [(0, (1, *([0] * 15), 2))]
    assert bank_words(words(1, *([0] * 16), 2, 0, 0)) == [(0, (1,)), (68, (2,))]
    assert bank_words(bytes(64)) == []
