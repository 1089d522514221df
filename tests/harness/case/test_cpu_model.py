"""The CPU model of CUDA (cases/tools/cpu_collectives.h, run by run_on_cpu.sh --collectives)
refuses a kernel whose words depend on the order its threads ran, and the library's CSR SpMV
repro is free of such a race.

``repro/spmv_csr_vector_1d`` first had all 16 lanes of a row store ``y[m] = temp`` after a
width-16 ``__shfl_down_sync`` tree, where only lane 0 holds the row's sum and lanes 1-15 hold
partial sums (an out-of-range source gives the lane its own value). Which of the 16 words
survives one STG is undefined in CUDA: the interpreter and lavapipe kept lane 15's, the case
lane 0's, and the model whichever OS thread stored last, a different word from run to run."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from warpboard.harness.run.engine import run_case
from warpboard.harness.run.results import Status

from support.paths import CASES, library_case

RUN_ON_CPU = CASES / "tools" / "run_on_cpu.sh"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

# every lane of a half-warp reduces, then stores: lane 0 alone when `guard` is true
KERNEL = """
extern "C" __global__ void halves(unsigned *out) {
    unsigned lane16 = threadIdx.x % 16, v = threadIdx.x + 1;
    for (int i = 8; i > 0; i >>= 1) v += __shfl_down_sync(0xFFFFFFFF, v, i, 16);
    if (GUARD) out[threadIdx.x / 16] = v;
}
"""


def _case(tmp_path, guard: str):
    (tmp_path / "halves.cu").write_text(KERNEL.replace("GUARD", guard))
    path = tmp_path / "halves.toml"
    path.write_text('name = "halves"\nsummary = "s"\nkernel = "halves"\nlisting = "none.sass"\n'
                    'source = "halves.cu"\n[launch]\ngrid = [2, 1, 1]\nblock = [64, 1, 1]\n'
                    '[[buffers]]\nname = "out"\nwords = 4\ninit = 0\n[[params]]\nbuffer = "out"\n')
    return path


def _run(*args):
    return subprocess.run([str(RUN_ON_CPU), "--collectives", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_lanes_storing_different_words_to_one_address_are_refused(tmp_path):
    """16 lanes store 16 different sums to one word: two orders of the threads keep different
    words, and the model says so instead of printing one order's words as expected ones."""
    run = _run(_case(tmp_path, "true"))
    assert run.returncode != 0, run.stdout
    assert "depend on the order the threads ran" in run.stderr
    assert "expected = [" not in run.stdout


@pytest.mark.campaign     # compiles and runs the CPU model twice: a few seconds
def test_the_same_reduction_stored_by_lane_0_gives_its_words(tmp_path):
    """Lane 0 of each half holds the sum of its 16 values (t + 1 for t in the half)."""
    run = _run(_case(tmp_path, "lane16 == 0"))
    assert run.returncode == 0, run.stderr
    sums = [sum(t + 1 for t in range(16 * h, 16 * h + 16)) for h in range(4)]
    assert f"expected = [\n    {', '.join(map(str, sums))},\n]" in run.stdout


@pytest.mark.campaign     # compiles and runs the CPU model twice: a few seconds
def test_the_spmv_repro_is_race_free_and_every_back_end_gives_its_words():
    """The model gives the case's words in two orders of the threads, and the interpreter,
    which kept lane 15's partial sums while every lane stored, gives them too."""
    run = _run("--check", CASES / "repro" / "spmv_csr_vector_1d.toml")
    assert run.returncode == 0, run.stdout + run.stderr
    result = run_case(library_case("repro/spmv_csr_vector_1d"), "interp")
    assert result.status is Status.PASS, result.message
