"""The lane-vectorized interpreter (translator/interp/vector) against the scalar one, its oracle:
the same words, outcome, message, printf records and counts (turns, steps, instructions) on
the library's cases, and the same values word by word on the arithmetic."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from warpboard.harness.case.model import BufferSpec, Param
from warpboard.harness.run.dispatch import prepare
from warpboard.translator import abi
from warpboard.translator.errors import TranslatorError
from warpboard.translator.interp.machine import Interpreter, Memory
from warpboard.translator.interp.vector import VectorInterpreter
from warpboard.translator.interp.vector import words
from warpboard.translator.interp.vector.ctx import LaneCtx
from warpboard.translator.ir.program import load_program
from warpboard.translator.isa import ctx
from warpboard.translator.values import intops

from support.paths import library_cases

SLOW = {"repro/rp_4_12"}      # 6 s on the scalar interpreter: the campaign run has it
EXPECTED_REDOS = ("Fault", "BadPc", "Livelock", "UnsupportedInstruction", "Redo: printf", "Redo: a failing lane",
                  "Redo: the step budget", "Redo: threads share")


def _run(cls, prep, per_warp: bool):
    buffers = [bytearray(b) for b in prep.buffers]
    machine = cls(prep.program, prep.launch, Memory(buffers), prep.cbank, prep.case.shared_bytes, prep.budget, per_warp)
    try:
        stats = machine.run()
        outcome = ("ok", stats.turns, stats.steps, stats.instructions)
    except TranslatorError as exc:
        outcome = (type(exc).__name__, str(exc))
    return outcome, [bytes(b) for b in buffers], machine.printf.records, machine.printf.dropped, machine


def _same(case, per_warp: bool):
    try:
        prep = prepare(case)
    except TranslatorError:
        pytest.skip("the case does not decode")
    *scalar, _ = _run(Interpreter, prep, per_warp)
    *vector, machine = _run(VectorInterpreter, prep, per_warp)
    assert vector[0] == scalar[0]
    assert vector[1] == scalar[1], "buffers differ"
    assert vector[2:] == scalar[2:], "printf records differ"
    unexpected = [r for r in machine.redos if not r.startswith(EXPECTED_REDOS)]
    assert not unexpected, unexpected


_CASES = library_cases()


# make test compares every sixth case of the library and every reproduction; the campaign, all
_SAMPLE = [c for i, c in enumerate(_CASES) if c.id not in SLOW and (i % 6 == 0 or c.id.startswith("repro/"))]


@pytest.mark.parametrize("case", _SAMPLE, ids=lambda c: c.id)
def test_the_library_runs_the_same(case):
    _same(case, per_warp=False)


@pytest.mark.campaign
@pytest.mark.parametrize("case", _CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("per_warp", [False, True], ids=["block", "per-warp"])
def test_the_whole_library_runs_the_same_both_ways(case, per_warp):
    _same(case, per_warp)


def test_lane_ctx_speaks_the_whole_vocabulary():
    vocabulary = {n for n in vars(ctx.Ctx) if not n.startswith("_")} | set(intops.OPERATIONS)
    assert not sorted(w for w in vocabulary if not callable(getattr(LaneCtx, w, None)))
    assert set(words.OPERATIONS) == set(intops.OPERATIONS)


_EDGES32 = [0, 1, 2, 31, 32, 33, 63, 64, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF]
_EDGES64 = _EDGES32 + [1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 0xFFFFFFFF00000000]


def _samples(wide: bool, rng, n=200):
    edges = _EDGES64 if wide else _EDGES32
    return edges + [rng.getrandbits(64 if wide else 32) for _ in range(n)]


# op -> argument kinds: v (32-bit word), w (64-bit word), s (shift amount), b (boolean)
_SIGNATURES = {"add": "vv", "sub": "vv", "mul": "vv", "and_": "vv", "or_": "vv", "xor": "vv", "not_": "v",
               "shl": "vs", "shr": "vs", "sar": "vs", "popc": "v", "brev": "v", "sel": "bvv", "b2v": "b",
               "band": "bb", "bor": "bb", "bxor": "bb", "bnot": "b", "selb": "bbb", "zext": "v", "sext": "v",
               "lo": "w", "hi": "w", "join": "vv", "add64": "ww", "mul64": "ww", "shl64": "ws", "shr64": "ws",
               "sar64": "ws"}


@pytest.mark.parametrize("op", sorted(_SIGNATURES))
def test_the_array_words_are_intops_lane_by_lane(op):
    rng = random.Random(op)
    n = 300
    columns = []
    for kind in _SIGNATURES[op]:
        if kind == "b":
            columns.append([rng.random() < 0.5 for _ in range(n)])
        elif kind == "s":
            columns.append([rng.choice([0, 1, 5, 31, 32, 33, 63, 64, 65, 200, 0xFFFFFFFF]) for _ in range(n)])
        else:
            columns.append((_samples(kind == "w", rng) * 2)[:n])
    arrays = [np.array(c, bool if k == "b" else np.uint64) for c, k in zip(columns, _SIGNATURES[op])]
    got = getattr(words, op)(*arrays).tolist()
    want = [getattr(intops, op)(*args) for args in zip(*columns)]
    assert [int(g) for g in got] == [int(w) for w in want]


@pytest.mark.parametrize("signed", [False, True])
def test_compares_and_msb_are_intops_lane_by_lane(signed):
    rng = random.Random(7)
    a, b = _samples(False, rng), list(reversed(_samples(False, rng)))
    va, vb = np.array(a, np.uint64), np.array(b, np.uint64)
    for op in ctx.CMP_OPS:
        assert words.cmp(op, va, vb, signed).tolist() == [intops.cmp(op, x, y, signed) for x, y in zip(a, b)]
    assert words.msb(va, signed).tolist() == [intops.msb(x, signed) for x in a]


_RACE = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   S2R R5, SR_LANEID ;
        /*0020*/                   MOV R3, 0x4 ;
        /*0030*/                   IMAD.WIDE R2, R5, R3, c[0x0][0x160] ;
        /*0040*/                   LDG.E R4, [R2.64] ;
        /*0050*/                   IADD3 R4, R4, 0x1, R0 ;
        /*0060*/                   STG.E [R2.64], R4 ;
        /*0070*/                   EXIT ;
.L_x_0:
        /*0080*/                   BRA `(.L_x_0);
"""


def test_a_free_run_whose_threads_share_words_is_done_again_thread_by_thread():
    """Warps 0 and 1 add to the same 32 words in quiet code: run together, warp 1 would read
    before warp 0 writes; the scalar order (thread after thread) is kept by doing it again."""
    program = load_program(f"Function : race\n.text.race:\n{_RACE}\n")
    launch = abi.Launch((1, 1, 1), (64, 1, 1))
    cbank = abi.constant_bank(launch, [("u64", abi.buffer_address(0))], ())
    results = []
    for cls in (Interpreter, VectorInterpreter):
        buffers = [bytearray(4 * 32)]
        machine = cls(program, launch, Memory(buffers), cbank)
        machine.run()
        results.append((bytes(buffers[0]), machine.stats.steps, machine.stats.instructions))
    assert program.mode == "free" and results[0] == results[1]
    assert results[0][0][:4] == (0 + 1 + 32 + 1).to_bytes(4, "little")
    assert any("share" in r for r in machine.redos)


@pytest.mark.parametrize("case_id, grid, words, u32", [
    ("captured/inlinePTX/sequence_gpu_0", 32, [8192], 8000),
    ("captured/reduction/reduce2_int_2", 12, [3072, 12], 3072),
])
def test_a_case_relaunched_on_a_bigger_grid_runs_the_same(case_id, grid, words, u32):
    """As bench/interp_big_launch.py times them: many blocks, buffers of random words."""
    case = next(c for c in _CASES if c.id == case_id)
    rng = random.Random(1)
    buffers = tuple(BufferSpec(b.name, w, tuple(rng.randrange(1 << 16) for _ in range(w)), None)
                    for b, w in zip(case.buffers, words))
    params = tuple(Param("u32", u32) if p.kind == "u32" else p for p in case.params)
    _same(dataclasses.replace(case, grid=(grid, 1, 1), buffers=buffers, params=params), per_warp=False)
