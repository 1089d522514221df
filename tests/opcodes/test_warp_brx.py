"""BRX, the indirect branch of nvcc's jump tables: decoding (its BRANCH_TARGETS annotation
becomes the pcs it may reach: block leaders and successors), the address it goes to (next pc
+ offset + a register pair, as nvcc's tables in constant bank 2 assume), and a FAULT for an
address the listing does not name, on the interpreter and on lavapipe."""
from __future__ import annotations

import pytest
from warpboard.translator.errors import ProgramError, UnsupportedInstruction
from warpboard.translator.ir.program import load_program

from support.listing_kit import SENTINEL, listing

# Each thread loads its selector, clamps it to 0..3 (as nvcc's IMNMX.U32 does), reads the
# target from the table in bank 2, sign-extends it into the pair's high word, and branches.
# Lines are numbered from 1; pcs from 0 (BRX at 0x90, so its next pc is 0xa0). P0 is false
# on thread 5 alone, for a guarded BRX.
TABLE_KERNEL = [
    "S2R R0, SR_TID.X",
    "ISETP.NE.U32.AND P0, PT, R0, 0x5, PT",
    "IMAD.WIDE.U32 R2, R0, 0x4, c[0x0][0x160]",
    "LDG.E R4, [R2.64]",
    "IMAD.WIDE.U32 R8, R0, 0x4, c[0x0][0x168]",
    "IMNMX.U32 R4, R4, 0x3, PT",
    "IMAD.SHL.U32 R4, R4, 0x4, RZ",
    "LDC R6, c[0x2][R4]",
    "SHF.R.S32.HI R7, RZ, 0x1f, R6",
    '{guard}BRX R6 {offset}                    (*"BRANCH_TARGETS .L_x_1,.L_x_2,.L_x_3"*)',
    "MOV R10, 0x99",
    "BRA `(.L_x_9)",
    ".L_x_1:", "MOV R10, 0x11", "BRA `(.L_x_9)",        # 0xc0
    ".L_x_2:", "MOV R10, 0x22", "BRA `(.L_x_9)",        # 0xe0
    ".L_x_3:", "MOV R10, 0x33",                         # 0x100
    ".L_x_9:", "STG.E [R8.64], R10", "EXIT",            # 0x110
]
L1, L2, L3, L9 = 0xC0, 0xE0, 0x100, 0x110
NEXT_PC = 0xA0


def kernel(offset: int = -NEXT_PC, guard: str = "") -> list[str]:
    sign = "-" if offset < 0 else ""
    return [line.format(guard=guard, offset=f"{sign}{abs(offset):#x}") for line in TABLE_KERNEL]


def run_table(backend, table: list[int], selectors: list[int], offset: int = -NEXT_PC, guard: str = ""):
    return backend.run(kernel(offset, guard), [selectors, [SENTINEL] * len(selectors)], threads=len(selectors),
                       constants=((2, 0, tuple(table)),))


# ---------------------------------------------------------------- decoding
def test_branch_targets_become_pcs_leaders_and_successors():
    program = load_program(listing(kernel()), None, "t.sass")
    brx = next(i for i in program.insts if i.base == "BRX")
    assert brx.targets == (L1, L2, L3) and brx.target is None and brx.destinations == (L1, L2, L3)
    assert {L1, L2, L3, NEXT_PC} <= set(program.blocks)
    assert program.successors(program.blocks[0]) == [L1, L2, L3]
    assert set(program.reachable) >= {L1, L2, L3, L9}


def test_a_guarded_brx_may_fall_through():
    program = load_program(listing(kernel(guard="@P0 ")), None, "t.sass")
    block = next(b for b in program.blocks.values() if b.insts[-1].base == "BRX")
    assert program.successors(block) == [L1, L2, L3, NEXT_PC]


def test_a_backward_target_makes_a_loop():
    lines = ["S2R R0, SR_TID.X", ".L_x_0:", "LDS R4, [R0]", "LDC R6, c[0x2][R4]",
             'BRX R6 -0x30 (*"BRANCH_TARGETS .L_x_0,.L_x_5"*)', ".L_x_5:", "EXIT"]
    assert load_program(listing(lines), None, "t.sass").may_spin


def test_brx_without_branch_targets_is_unsupported():
    text = listing(["LDC R6, c[0x2][0x0]", "BRX R6 -0x20", "EXIT"])
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(text, None, "t.sass")
    assert str(err.value) == ("t.sass:2: BRX without a BRANCH_TARGETS annotation: the listing does not say "
                              "where it may go, in 'BRX R6 -0x20'")
    assert err.value.opcode == "BRX"


def test_an_unknown_branch_target_label_is_an_error():
    text = listing(["LDC R6, c[0x2][0x0]", 'BRX R6 -0x20 (*"BRANCH_TARGETS .L_x_1,.L_x_7"*)', ".L_x_1:", "EXIT"])
    with pytest.raises(ProgramError) as err:
        load_program(text, None, "t.sass")
    assert str(err.value) == ("t.sass:2: unknown label .L_x_7 in the branch targets of "
                              "'BRX R6 -0x20'")


def test_a_branch_target_outside_the_kernel_is_an_error():
    text = listing(["LDC R6, c[0x2][0x0]", 'BRX R6 -0x20 (*"BRANCH_TARGETS 0x20,0x400"*)', "EXIT"])
    with pytest.raises(ProgramError) as err:
        load_program(text, None, "t.sass")
    assert str(err.value) == "t.sass:2: target 0x400 is outside kernel <anonymous>"


# ---------------------------------------------------------------- running it
SELECTORS = [0, 1, 2, 3, 7, 0xFFFFFFFF, 2, 1] * 4
REACHED = {0: 0x11, 1: 0x22, 2: 0x33}


def test_each_lane_goes_where_its_table_word_says(backend):
    """Lanes of one warp take different targets of one BRX (the table's order is not the
    targets' order), then meet again."""
    table = [L2, L3, L1, L1]                   # selector 0 -> .L_x_2, 1 -> .L_x_3, 2 and more -> .L_x_1
    run = run_table(backend, table, SELECTORS)
    assert run.outcome == "ok", f"{backend.name}: {run.detail}"
    by_table = {L1: 0x11, L2: 0x22, L3: 0x33}
    assert run.buffers[1] == [by_table[table[min(s, 3)]] for s in SELECTORS]


def test_the_address_is_next_pc_plus_offset_plus_the_register(backend):
    """With an offset other than nvcc's ``-next pc`` the table's words are read relative to it."""
    table = [w - (NEXT_PC - 0x40) for w in (L1, L2, L3, L3)]
    run = run_table(backend, table, SELECTORS, offset=-0x40)
    assert run.outcome == "ok", f"{backend.name}: {run.detail}"
    assert run.buffers[1] == [REACHED.get(min(s, 3), 0x33) for s in SELECTORS]


def test_a_guarded_off_lane_falls_through(backend):
    run = run_table(backend, [L1, L2, L3, L3], SELECTORS, guard="@P0 ")
    assert run.outcome == "ok", f"{backend.name}: {run.detail}"
    assert run.buffers[1][5] == 0x99
    assert [w for t, w in enumerate(run.buffers[1]) if t != 5] == \
        [REACHED.get(min(s, 3), 0x33) for t, s in enumerate(SELECTORS) if t != 5]


@pytest.mark.parametrize("bad", [L9, L1 + 4, 0x80000000 | L1], ids=["unnamed-block", "mid-instruction", "high-word"])
def test_an_address_it_does_not_name_faults(backend, bad):
    """.L_x_9 starts a block but is not a BRANCH_TARGETS of the BRX; a table word with its
    sign bit set puts ones in the pair's high word: neither is a target."""
    run = run_table(backend, [L1, L2, L3, bad], SELECTORS)
    assert run.outcome == "fault", f"{backend.name}: {run.outcome} {run.detail}"
    address = bad | (0xFFFFFFFF << 32 if bad >> 31 else 0)
    assert "at pc 0x0090 (kernel.sass:10: BRX R6 -0xa0): branch to " in run.detail
    assert f"branch to {address:#x}, which is not one of its branch targets" in run.detail
