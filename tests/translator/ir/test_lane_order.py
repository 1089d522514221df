"""The lane-order analysis (translator.ir.order, translator.ir.lane_values): which pairs of memory
accesses get an ordering point, which the analysis clears, and what a point does to the
program's mode, its quiet blocks and the emitted shader. Tiny inline listings; the pcs of the
instructions are 16 apart from 0."""
from __future__ import annotations

import pytest
from warpboard.translator.emit.emitter import translate
from warpboard.translator.ir.lane_values import (
    LANE,
    WARP_X,
    LaneValuesCtx,
    Lin,
    _make,
    atom,
    const,
    lane_layout,
)
from warpboard.translator.ir.order import _lanes_meet
from warpboard.translator.ir.program import load_program
from warpboard.translator.spirv import builder as spirv
from warpboard.translator import Target

TID = "S2R R0, SR_TID.X ;"
OUT, IN = "c[0x0][0x160]", "c[0x0][0x168]"


def _program(*lines: str, block=(64, 1, 1)):
    """A one-kernel program of ``lines``, then EXIT, for a launch of ``block`` threads."""
    body = "\n".join(f"        /*{16 * k:04x}*/                   {line}"
                     for k, line in enumerate([*lines, "EXIT ;", f"BRA 0x{16 * (len(lines) + 1):x} ;"]))
    return load_program(f"Function : k\n.text.k:\n{body}\n", block=block)


def _points(*lines: str, block=(64, 1, 1)) -> list[int]:
    """The indices of the instructions that get an ordering point before them."""
    return sorted(pc // 16 for pc in _program(*lines, block=block).order.points)


# ---------------------------------------------------------------- shared memory, one block
def test_a_lane_reading_back_its_own_slot_needs_no_point():
    assert _points(TID, "STS [R0.X4], R1 ;", "LDS R2, [R0.X4] ;") == []


def test_reading_the_next_lanes_slot_after_the_stores_needs_a_point():
    assert _points(TID, "IADD3 R3, R0, 0x1, RZ ;", "STS [R0.X4], R1 ;", "LDS R2, [R3.X4] ;") == [3]


def test_a_store_after_a_load_of_another_lanes_slot_needs_a_point():
    """Write after read: every lane must read the old word before any lane overwrites it."""
    assert _points(TID, "IADD3 R3, R0, 0x1, RZ ;", "LDS R2, [R3.X4] ;", "STS [R0.X4], R1 ;") == [3]


def test_loads_alone_never_need_a_point():
    assert _points(TID, "IADD3 R3, R0, 0x1, RZ ;", "LDS R2, [R3.X4] ;", "LDS R4, [R0.X4] ;") == []


def test_points_restart_the_pending_accesses():
    """After the point before the load, only the load is pending: the later load of another
    slot conflicts with nothing, and a store to the own slot after the loads does."""
    assert _points(TID, "IADD3 R3, R0, 0x1, RZ ;", "STS [R0.X4], R1 ;", "LDS R2, [R3.X4] ;",
                   "LDS R4, [R0.X4+0x100] ;", "STS [R0.X4], R2 ;") == [3, 5]


def test_a_uniform_address_is_every_lanes_address():
    assert _points("STS [RZ], R1 ;", "LDS R2, [RZ] ;") == [1]
    assert _points("STS [0x10], R1 ;", "LDS R2, [0x20] ;") == []


def test_strides_clear_what_stays_within_each_lanes_span():
    """Lane l owns bytes [16 l, 16 l + 16): a word inside is its own, the word at +16 the
    next lane's."""
    setup = (TID, "IMAD.SHL.U32 R4, R0, 0x10, RZ ;", "STS.128 [R4], R8 ;")
    assert _points(*setup, "LDS R2, [R4+0xc] ;") == []
    assert _points(*setup, "LDS R2, [R4+0x10] ;") == [3]
    assert _points(*setup, "LDS R2, [R4+-0x4] ;") == [3]


def test_a_register_written_again_is_not_the_same_address():
    assert _points(TID, "STS [R0.X4], R1 ;", "IADD3 R0, R0, 0x1, RZ ;", "LDS R2, [R0.X4] ;") == [3]


def test_a_guarded_write_leaves_the_address_unknown():
    assert _points(TID, "ISETP.GT.AND P0, PT, R0, 0x3, PT ;", "STS [R0.X4], R1 ;",
                   "@P0 IADD3 R0, R0, 0x1, RZ ;", "LDS R2, [R0.X4] ;") == [4]


def test_the_lane_index_and_the_warps_first_thread_are_told_apart():
    """``tid & 31`` is the lane, ``tid - (tid & 31)`` the same for the whole warp: the warp's
    tile at 128 * (tid >> 5) with the lane's word in it clears; ``(lane + 1) & 31`` wraps and
    does not."""
    warp_tile = (TID, "LOP3.LUT R5, R0, 0x1f, RZ, 0xc0, !PT ;", "SHF.R.U32.HI R6, RZ, 0x5, R0 ;",
                 "LEA R7, R6, R5, 0x5 ;", "STS [R7.X4], R1 ;")
    assert _points(*warp_tile, "LDS R2, [R0.X4] ;") == []
    assert _points(*warp_tile, "IADD3 R8, R5, 0x1, RZ ;", "LOP3.LUT R8, R8, 0x1f, RZ, 0xc0, !PT ;",
                   "IADD3 R9, R0, -R5, R8 ;", "LDS R2, [R9.X4] ;") == [8]


# ---------------------------------------------------------------- block shapes
def test_in_a_block_narrower_than_a_warp_tid_x_repeats_within_the_warp():
    """8 x 4 threads: lanes 0 and 8 of warp 0 both have SR_TID.X 0, so the same word."""
    own = (TID, "STS [R0.X4], R1 ;", "LDS R2, [R0.X4] ;")
    assert _points(*own, block=(8, 4, 1)) == [2]
    assert _points(*own, block=(64, 1, 1)) == []
    linear = ("S2R R0, SR_TID.X ;", "S2R R3, SR_TID.Y ;", "IMAD R4, R3, c[0x0][0x0], R0 ;",
              "STS [R4.X4], R1 ;", "LDS R2, [R4.X4] ;")
    assert _points(*linear, block=(8, 4, 1)) == []


def test_without_a_block_shape_the_thread_index_proves_nothing():
    assert _program(TID, "STS [R0.X4], R1 ;", "LDS R2, [R0.X4] ;", block=None).order.points
    assert lane_layout(None) is None and lane_layout((64, 2, 1)) == "rows" and lane_layout((8, 4, 1)) == "linear"


# ---------------------------------------------------------------- global memory
PARAM_ADDRESS = ("IMAD.MOV.U32 R7, RZ, RZ, 0x4 ;", TID, f"IMAD.WIDE.U32 R2, R0, R7, {OUT} ;",
                 f"IMAD.WIDE.U32 R4, R0, R7, {IN} ;")


def test_distinct_pointer_parameters_never_meet():
    assert _points(*PARAM_ADDRESS, "STG.E [R2.64], R1 ;", "LDG.E R6, [R4.64+0x4] ;") == []


def test_a_hand_off_through_one_global_buffer_needs_a_point():
    assert _points(*PARAM_ADDRESS, "STG.E [R2.64], R1 ;", "LDG.E R6, [R2.64+0x4] ;") == [5]


def test_an_address_loaded_from_memory_may_be_anywhere_in_its_space():
    assert _points(*PARAM_ADDRESS, "LDG.E.64 R8, [R4.64] ;", "STG.E [R2.64], R1 ;", "LDG.E R6, [R8.64] ;") == [6]


def test_shared_and_global_accesses_never_conflict():
    assert _points(*PARAM_ADDRESS, "STS [RZ], R1 ;", "LDG.E R6, [R2.64] ;", "STG.E [R2.64+0x4], R6 ;") == [6]


def test_reductions_of_one_operation_commute_and_returning_atomics_do_not():
    assert _points(*PARAM_ADDRESS, "RED.E.ADD.STRONG.GPU [R2.64], R1 ;", "RED.E.ADD.STRONG.GPU [R2.64+0x4], R1 ;") == []
    assert _points(*PARAM_ADDRESS, "RED.E.ADD.STRONG.GPU [R2.64], R1 ;", "RED.E.XOR.STRONG.GPU [R2.64+0x4], R1 ;") == [5]
    assert _points(*PARAM_ADDRESS, "ATOMG.E.ADD.STRONG.GPU PT, R6, [R2.64], R1 ;",
                   "ATOMG.E.ADD.STRONG.GPU PT, R8, [R2.64+0x4], R1 ;") == [5]


# ---------------------------------------------------------------- generic addresses
SHARED_WINDOW = (TID, "IMAD.SHL.U32 R3, R0, 0x4, RZ ;", "IADD3 R8, P0, R3, c[0x0][0x18], RZ ;",
                 "IADD3.X R9, RZ, c[0x0][0x1c], RZ, P0, !PT ;")       # R8:R9 = cvta.shared(4 * tid)
LOCAL_WINDOW = ("IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;", "IADD3 R1, R1, -0x10, RZ ;",
                "IADD3 R10, P0, R1, c[0x0][0x20], RZ ;", "IMAD.X R11, RZ, RZ, c[0x0][0x24], P0 ;")
FROM_MEMORY = (*PARAM_ADDRESS, "LDG.E.64 R8, [R4.64] ;")              # R8:R9: a pointer read from memory


def test_a_generic_access_goes_where_its_address_shows():
    """A pointer parameter is global, a window's base plus an offset is that window, a pointer
    read from memory may be anywhere (translator.ir.order.generic_target)."""
    program = _program(*PARAM_ADDRESS, *SHARED_WINDOW[1:], *LOCAL_WINDOW, "LD.E R12, [R2.64] ;",
                       "ST.E [R8.64+0x4], R1 ;", "ATOM.E.ADD.STRONG.GPU PT, R13, [R10.64], R1 ;",
                       "LDG.E.64 R14, [R4.64] ;", "LD.E R12, [R14.64] ;")
    generic = {i.text.split()[0]: program.generic_target(i) for i in program.insts if i.spec.space == "generic"}
    assert generic == {"LD.E": "generic", "ST.E": "shared", "ATOM.E.ADD.STRONG.GPU": "local"}
    assert [program.generic_target(i) for i in program.insts if i.opcode == "LD.E"] == ["global", "generic"]
    assert program.uses_shared and program.uses_local
    only_global = _program(*PARAM_ADDRESS, "LD.E R12, [R2.64] ;", "ST.E [R4.64], R12 ;")
    assert not only_global.uses_shared and not only_global.uses_local


def test_a_generic_store_in_the_shared_window_is_ordered_with_shared_loads():
    """Its offset in the window is its shared address: lane strides compare it with LDS's."""
    assert _points(*SHARED_WINDOW, "ST.E [R8.64], R1 ;", "LDS R2, [R3] ;") == []
    assert _points(*SHARED_WINDOW, "ST.E [R8.64], R1 ;", "LDS R2, [R3+0x4] ;") == [5]


def test_a_generic_address_that_may_be_shared_conflicts_with_shared_and_global_accesses():
    """A store through it may also overwrite the global word another lane's LDG read (the point
    before the ST.E)."""
    assert _points(*FROM_MEMORY, TID, "STS [R0.X4], R1 ;", "LD.E R6, [R8.64] ;") == [7]
    assert _points(*FROM_MEMORY, "STG.E [R2.64], R1 ;", "LD.E R6, [R8.64] ;") == [6]
    assert _points(*FROM_MEMORY, TID, "ST.E [R8.64], R1 ;", "LDS R6, [R0.X4] ;") == [6, 7]
    assert _points(*FROM_MEMORY, "ST.E [R8.64], R1 ;", "LD.E R6, [R8.64+0x4] ;") == [5, 6]


def test_generic_accesses_to_the_stack_or_a_parameter_leave_shared_memory_alone():
    assert _points(*LOCAL_WINDOW, TID, "STS [R0.X4], R1 ;", "ST.E [R10.64], R1 ;", "LD.E R6, [R10.64+0x4] ;",
                   "LDS R7, [R0.X4] ;") == []
    assert _points(*PARAM_ADDRESS, "STS [R0.X4], R1 ;", "ST.E [R2.64], R1 ;", "LDS R6, [R0.X4] ;",
                   "LD.E R7, [R4.64] ;") == []


# ---------------------------------------------------------------- across blocks
def test_pending_accesses_follow_control_flow_into_the_next_block():
    """The store and the load are in different blocks (a branch target between them): a
    turn that needs no vote has no barrier between them, so the point is still needed."""
    assert _points(TID, "IADD3 R3, R0, 0x1, RZ ;", "STS [R0.X4], R1 ;", "BRA 0x40 ;", "LDS R2, [R3.X4] ;") == [4]


def test_a_loop_carries_its_stores_back_to_its_loads():
    """The load of the next lane's word comes before the store in the body, but the store of
    the previous iteration is pending when the loop comes back."""
    points = _points(TID, "IADD3 R3, R0, 0x1, RZ ;", "LDS R2, [R3.X4] ;", "STS [R0.X4], R2 ;",
                     "ISETP.NE.AND P0, PT, R2, RZ, PT ;", "@P0 BRA 0x20 ;")
    assert points == [2, 3]


def test_a_block_barrier_that_waits_orders_what_came_before():
    hand_off = (TID, "IADD3 R3, R0, 0x1, RZ ;", "STS [R0.X4], R1 ;")
    assert _points(*hand_off, "BAR.SYNC.DEFER_BLOCKING 0x0 ;", "LDS R2, [R3.X4] ;") == []
    assert _points(*hand_off, "BAR.ARV 0x0, 0x40 ;", "LDS R2, [R3.X4] ;") == [4]


# ---------------------------------------------------------------- what a point changes
def test_a_point_makes_the_program_run_in_turns_and_its_block_loud():
    cleared = _program(*PARAM_ADDRESS, "LDG.E R6, [R4.64] ;", "STG.E [R2.64], R6 ;")
    handoff = _program(*PARAM_ADDRESS, "STG.E [R2.64], R1 ;", "LDG.E R6, [R2.64+0x4] ;")
    assert cleared.mode == "free" and handoff.mode == "turns"
    (block,) = handoff.reachable.values()
    assert block.quiet and not handoff.quiet(block)
    assert all(cleared.quiet(b) for b in cleared.reachable.values())


def _barriers(code: bytes) -> list[tuple[int, int]]:
    """(execution scope, memory semantics) of every OpControlBarrier in a module, its
    operands looked up among the module's 32-bit constants."""
    words = [int.from_bytes(code[k:k + 4], "little") for k in range(0, len(code), 4)]
    constants, barriers, k = {}, [], 5
    while k < len(words):
        count, opcode = words[k] >> 16, words[k] & 0xFFFF
        if opcode == spirv.OP["Constant"] and count == 4:
            constants[words[k + 2]] = words[k + 3]
        if opcode == spirv.OP["ControlBarrier"]:
            barriers.append((words[k + 1], words[k + 3]))
        k += max(count, 1)
    return [(constants[scope], constants[semantics]) for scope, semantics in barriers]


def test_the_emitter_puts_a_barrier_at_each_point():
    """Workgroup scope where a warp may span subgroups; subgroup scope where a warp is one."""
    lines = (*PARAM_ADDRESS, "STG.E [R2.64], R1 ;", "LDG.E R6, [R2.64+0x4] ;", "STG.E [R4.64], R6 ;")
    cleared = (*PARAM_ADDRESS, "LDG.E R6, [R4.64] ;", "STG.E [R2.64], R6 ;")
    workgroup = _barriers(translate(_program(*lines), (64, 1, 1), mode="turns").spirv)
    baseline = _barriers(translate(_program(*cleared), (64, 1, 1), mode="turns").spirv)
    assert len(workgroup) == len(baseline) + 1
    subgroup = _barriers(translate(_program(*lines), (64, 1, 1), target=Target(warp_subgroups=True)).spirv)
    assert (3, 0x8 | 0x40 | 0x100) in subgroup           # Subgroup; AcquireRelease, Uniform and Workgroup memory


def test_free_mode_is_refused_where_lanes_need_order():
    with pytest.raises(ValueError, match="instruction order"):
        translate(_program(TID, "IADD3 R3, R0, 0x1, RZ ;", "STS [R0.X4], R1 ;", "LDS R2, [R3.X4] ;"),
                  (64, 1, 1), mode="free")


# ---------------------------------------------------------------- the values and the spans
def test_the_thread_index_is_the_warps_part_plus_the_lane():
    ctx = LaneValuesCtx({}, None, None, (64, 1, 1))
    tid = ctx._sreg("SR_TID.X")
    assert tid == _make({WARP_X: 32, LANE: 1}, 0)
    assert ctx.and_(tid, const(0x1F)) == atom(*LANE)
    assert ctx.and_(tid, const(0xFFFFFFE0)) == _make({WARP_X: 32}, 0)
    assert ctx.shr(tid, const(5)) == atom(*WARP_X)
    assert ctx.shr(tid, const(3)).unknown                  # would keep part of the lane
    assert ctx.and_(ctx.add(tid, const(1)), const(0x1F)).unknown     # lane 31 wraps to 0


def test_spans_meet_exactly_when_some_lane_difference_brings_them_together():
    assert not _lanes_meet(4, 31, 0, 4, 4)         # own word, 4-byte stride
    assert _lanes_meet(4, 31, 4, 4, 4)             # the next lane's word
    assert not _lanes_meet(4, 31, 128, 4, 4)       # 32 words on: past the warp's last lane
    assert _lanes_meet(4, 31, 124, 4, 4)           # the word of the lane 31 above
    assert not _lanes_meet(16, 31, 12, 16, 4)      # inside the own 16 bytes
    assert _lanes_meet(0, 0, 0, 4, 4) and not _lanes_meet(0, 0, 4, 4, 4)


def test_values_known_modulo_2_32_keep_their_constant_offsets_small():
    ctx = LaneValuesCtx({}, None, None, (64, 1, 1))
    x = ctx.add(atom(*LANE), ctx.k32(0xFFFFFFFC))          # lane - 4
    assert x == Lin(frozenset({(LANE, 1)}), -4)
    assert ctx.mul(x, ctx.k32(4)) == Lin(frozenset({(LANE, 4)}), -16)
