"""``warpboard reduce`` (studies/fuzz/reduce.py): edit sites of generated programs, the
failure classes a reduction keeps, and a reduction of an injected failure to a case file."""
from __future__ import annotations

import json
import random
import shutil

import pytest
from warpboard.harness.case.model import load_case
from warpboard.studies.fuzz import cpu_model, knobs
from warpboard.studies.fuzz.build import batch_source
from warpboard.studies.fuzz.generate import generate, generate_edited
from warpboard.studies.fuzz.reduce import (
    Checker,
    Reduction,
    moves,
    origin,
    reduce_program,
    signature,
    unsupported_mnemonic,
    with_step_budget,
    write_case,
)
from warpboard.harness.run.results import CaseResult, Mismatch, Status
from warpboard.authoring import toolchain

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


needs_cuda = pytest.mark.skipif(not (toolchain.cuda_tools_present() and shutil.which("g++")), reason="needs nvcc, nvdisasm and g++")
NEEDLE_SEED, NEEDLE = 157, "__match_any_sync"      # a match_any inside a per-lane loop, 18 statements


def _random_edits(seed: int, share: float) -> dict[int, int]:
    _, sites = generate_edited(seed, knobs.load())
    rng = random.Random(seed)
    return {s.id: rng.randrange(len(s.labels)) for s in sites if s.labels and rng.random() < share}


# ---------------------------------------------------------------- edit sites

def test_no_edits_give_the_generated_program_and_edits_keep_every_site():
    k = knobs.load()
    for seed in range(40):
        plain, sites = generate_edited(seed, k)
        assert plain == generate(seed, k)
        edited, again = generate_edited(seed, k, _random_edits(seed, 0.4), "e")
        assert again == sites, seed                      # site ids do not move under edits
        assert edited.source != plain.source and edited.name == "e"


def test_deleting_a_statement_removes_it_and_its_exits_from_the_masks():
    k = knobs.load()
    seed = next(s for s in range(200) if "return;" in generate(s, k).source and "continue;" in generate(s, k).source)
    plain, sites = generate_edited(seed, k)
    statements = [s for s in sites if s.kind == "statement:exit"]
    assert statements and "(0u)" not in plain.source
    edited, _ = generate_edited(seed, k, {s.id: 0 for s in statements})
    assert edited.source.count("return;") + edited.source.count("continue;") == 0
    assert "  " not in edited.source.replace("\n", "").replace("    ", "\t")   # no padding left


def test_moves_skip_sites_inside_deleted_statements():
    _, sites = generate_edited(NEEDLE_SEED, knobs.load())
    loop = next(s for s in sites if s.kind == "statement:loop_lane")
    inside = {s.id for s in sites if loop.id in s.within}
    assert inside
    left = {sid for sid, _ in moves(sites, {loop.id: 0}, singles=True)}
    assert not left & inside and loop.id not in left
    assert inside <= {sid for sid, _ in moves(sites, {}, singles=True)}
    assert sites[moves(sites, {}, singles=False)[0][0]].kind.startswith("statement")   # big cuts first


@needs_gxx
def test_edited_programs_stay_defined_on_the_cpu_model(tmp_path):
    programs = [generate_edited(s, knobs.load(), _random_edits(s, 0.3), f"e{s}")[0] for s in range(300, 316)]
    cu = tmp_path / "b.cu"
    cu.write_text(batch_source(programs))
    results = cpu_model.model_batch(programs, cu, tmp_path / "work", jobs=2)
    assert [r.error for r in results if not r.accepted] == []


# ---------------------------------------------------------------- failure classes

def test_the_failure_class_a_reduction_keeps():
    wrong = CaseResult("c", "interp", Status.FAIL, mismatches=[Mismatch("out", 3, 1, 2)], mismatch_count=1)
    assert signature(wrong) == ("FAIL", "out")
    assert signature(CaseResult("c", "interp", Status.LIVELOCK, "step budget spent at 0x10")) == ("LIVELOCK",)
    unsupported = CaseResult("c", "interp", Status.UNSUPPORTED,
                             "a.sass:921: unsupported modifier .U16 of I2F in 'I2F.U16 R5, R27'")
    assert signature(unsupported) == ("UNSUPPORTED", "I2F.U16")
    assert unsupported_mnemonic("b.sass:138: constant bank 2 in IMAD.WIDE.U32 R12, R12, R13, c[0x2][0x0]") \
        == "constant bank 2"
    assert unsupported_mnemonic("b.sass:7: operand |R3| of FSETP") == "FSETP"


def test_origin_reads_the_campaign_and_asks_for_a_seed_otherwise(tmp_path):
    case = tmp_path / "fz42.toml"
    case.write_text('name = "fz42"\n')
    with pytest.raises(ValueError, match="give --seed"):
        origin(case, None, None)
    (tmp_path / "campaign.json").write_text(json.dumps({"knobs": "k.toml", "programs": {"fz42": {"seed": 42}}}))
    assert origin(case, None, None) == (42, "k.toml")
    assert origin(case, 7, "other.toml") == (7, "other.toml")


# ---------------------------------------------------------------- a whole reduction

@needs_cuda
@pytest.mark.campaign
def test_reduce_keeps_an_injected_failure_and_writes_a_case(tmp_path):
    """The "failure" is containing a match_any: the reducer must cut the rest away."""
    k = knobs.load()
    check = Checker(tmp_path / "work", lambda built, root: [NEEDLE in b.program.source for b in built], batch=40, jobs=2)
    r: Reduction = reduce_program(NEEDLE_SEED, k, check)
    before, after = r.statements({}), r.statements()
    assert before == 18 and 1 <= after <= 3, (before, after)
    assert NEEDLE in r.reduced.source
    assert len(r.reduced.source.splitlines()) < len(r.original.source.splitlines()) // 2
    path = write_case(r, tmp_path / "random", "fz157_reduced", "CPU model of CUDA semantics, reduced")
    case = load_case(path, tmp_path / "random")
    assert case.kernel == "fz157_reduced" and case.provenance["expected"] == "derived"
    assert (tmp_path / "random" / "fz157_reduced.cu").read_text().count(NEEDLE) == 1
    model = cpu_model.model_batch([generate_edited(NEEDLE_SEED, k, r.edits, "fz157_reduced")[0]],
                                  tmp_path / "random" / "fz157_reduced.cu", tmp_path / "m", jobs=2)[0]
    assert model.accepted and list(case.buffers[0].expected) == model.words


def test_the_reduced_case_keeps_the_step_budget_it_was_reduced_under(make_case):
    """A LIVELOCK reduced under --budget 500 passes under the default budget: the case says 500."""
    path = make_case.write("random/fz1_livelock", step_budget=90000)
    text = with_step_budget(path.read_text(), 500)
    assert text.count("step_budget") == 1 and "step_budget = 500\n" in text
    path.write_text(text)
    assert make_case.load("random/fz1_livelock").step_budget == 500
    assert with_step_budget(text, None) == text
