"""The interpreter runs a warp's lanes through shared memory instruction by instruction, as the
chip does, so warp-synchronous code (a store, a __syncwarp() that ptxas made a NOP, a load of
another lane's slot) gets the lockstep words; a scheduler that lets each lane run its basic
block alone, the way a translated block runs per invocation, must get them wrong. The words
come from cases/warpsync_mem/lockstep_expected.py, worked out from the CUDA source."""
import importlib.util
import struct

import pytest
from support.paths import CASES
from warpboard.harness.case.model import load_case
from warpboard.harness.run.dispatch import prepare
from warpboard.translator.interp.machine import Interpreter, Memory


def _lockstep_module():
    path = CASES / "warpsync_mem" / "lockstep_expected.py"
    spec = importlib.util.spec_from_file_location("lockstep_expected", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOCKSTEP = _lockstep_module()


class LaneByLane(Interpreter):
    """A deliberately wrong scheduler: the threads that share a turn run the block one after
    another, each to its end, instead of instruction by instruction."""

    def step(self, cta, block, parts, free=False):
        for t in parts:
            super().step(cta, block, [t], free)


def _run(case_id: str, interpreter=Interpreter) -> dict[str, list[int]]:
    """Every buffer's words after one launch of the case on the given interpreter class."""
    case = load_case(CASES / f"{case_id}.toml", CASES)
    prep = prepare(case)
    buffers = [bytearray(b) for b in prep.buffers]
    interpreter(prep.program, prep.launch, Memory(buffers), prep.cbank, case.shared_bytes, prep.budget).run()
    return {b.name: list(struct.unpack(f"<{b.words}I", data)) for b, data in zip(case.buffers, buffers)}


def _lockstep(case_id: str) -> dict[str, list[int]]:
    return LOCKSTEP.expected(load_case(CASES / f"{case_id}.toml", CASES))


def _differing(got: dict, want: dict) -> int:
    return sum(g != w for name in want for g, w in zip(got[name], want[name]))


SHARED_CASES = ["warpsync_mem/smem_transpose", "warpsync_mem/war_shared", "warpsync_mem/cub_exchange_b2s",
                "warpsync_mem/cub_block_store_warp_transpose", "warpsync_mem/volatile_reduce_tail"]


@pytest.mark.parametrize("case_id", SHARED_CASES)
def test_the_interpreter_gives_the_lockstep_words(case_id):
    assert _differing(_run(case_id), _lockstep(case_id)) == 0


@pytest.mark.parametrize("case_id", SHARED_CASES)
def test_running_a_block_lane_by_lane_gets_other_lanes_words_wrong(case_id):
    wrong = _differing(_run(case_id, LaneByLane), _lockstep(case_id))
    assert wrong > 0, "a lane-by-lane scheduler passed: the case cannot tell the two apart"


def test_lane_by_lane_goes_wrong_exactly_where_a_lane_reads_a_later_lane():
    """In the shared transpose lane l of an n-lane warp reads slots n*i + l, stored by lane
    (n*i + l) // 4. Run lane by lane, only the last lane of each warp finds all four stored
    (every writer is at most itself); every other lane reads a slot still zero."""
    got = _run("warpsync_mem/smem_transpose", LaneByLane)["out"]
    want = _lockstep("warpsync_mem/smem_transpose")["out"]
    wrong = {t for t, (g, w) in enumerate(zip(got, want)) if g != w}
    assert wrong == set(range(80)) - {31, 63, 79}


@pytest.mark.parametrize("case_id", ["warpsync_mem/global_handoff", "warpsync_mem/war_global"])
def test_the_interpreter_orders_global_hand_offs_between_lanes(case_id):
    assert _differing(_run(case_id), _lockstep(case_id)) == 0
