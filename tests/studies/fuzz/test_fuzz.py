"""``warpboard fuzz`` (studies/fuzz/): the generator, the CPU model of CUDA collectives, a campaign."""
from __future__ import annotations

import json
import re
import shutil
import struct
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from warpboard.harness.case.model import load_case
from warpboard.studies.fuzz import campaign, cli, cpu_model, knobs
from warpboard.studies.fuzz import merge as fuzz_merge
from warpboard.studies.fuzz.build import batch_source, build_batch
from warpboard.studies.fuzz.campaign import Plan, table
from warpboard.studies.fuzz.generate import Program, generate
from warpboard.studies.fuzz.merge import merge
from warpboard.harness.run.engine import Options
from warpboard.authoring import toolchain, truth
from warpboard.authoring.truth import GpuInfo

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def _program(name: str, body: str, block: int = 32, grid: int = 1, out_words: int | None = None) -> Program:
    """A hand-written kernel ``name(unsigned *out, const unsigned *in)`` as a Program."""
    threads = block * grid
    return Program(0, name, f'extern "C" __global__ void {name}(unsigned *out, const unsigned *in) {{\n{body}\n}}\n',
                   block, grid, tuple(range(threads)), (0,) * (out_words or threads), ())


def _model(tmp_path: Path, programs: list[Program]) -> list[cpu_model.ModelResult]:
    cu = tmp_path / "b.cu"
    cu.write_text(batch_source(programs))
    return cpu_model.model_batch(programs, cu, tmp_path / "work", jobs=2)


# ---------------------------------------------------------------- the generator

def test_same_seed_same_program_and_seeds_differ():
    k = knobs.load()
    assert generate(7, k) == generate(7, k)
    assert generate(7, k).source != generate(8, k).source
    assert generate(7, k).name == "fz7"


def test_generated_programs_cover_the_features():
    k = knobs.load()
    seen = set().union(*(generate(s, k).features for s in range(60)))
    for feature in ("if-lane", "if-data", "switch-lane", "switch-data", "loop-lane", "loop-uniform",
                    "break", "continue", "return", "vote-ballot", "vote-any", "vote-all", "vote-uni",
                    "shfl-idx", "shfl-up", "shfl-down", "shfl-xor", "shfl-64", "shfl-width-4",
                    "match-any", "match-all", "reduce-add-signed", "reduce-min", "reduce-xor",
                    "syncwarp", "syncthreads-count", "exchange-block", "exchange-warp", "atomic",
                    "div32", "div16", "div64"):
        assert feature in seen, feature


def test_the_float_knob_writes_every_float_statement_and_changes_no_other_program():
    floats = knobs.load(knobs.DEFAULT_FILE.with_name("floats.toml"))
    seen = set().union(*(generate(s, floats).features for s in range(60)))
    kinds = ("arith", "fma", "div", "sqrt", "round", "to-int", "compare", "from-int", "double", "shfl")
    assert {f"float-{k}" for k in kinds} <= seen
    # float = 0 (the default) draws nothing: the programs of every campaign so far stay the same
    plain = knobs.load()
    assert plain.weight("float") == 0
    for s in range(40):
        p = generate(s, plain)
        assert "float f0" not in p.source and not any(f.startswith("float") for f in p.features)
        assert p.source == generate(s, plain).source


def test_a_hoisted_mask_never_takes_the_prologues_name():
    # seed 1003688 (small.toml) hoists a mask as the first fresh name, which was m0 again:
    # nvcc refused the redeclaration and the whole batch of 20 programs with it
    source = generate(1003688, knobs.load(knobs.DEFAULT_FILE.parent / "small.toml")).source
    declared = re.findall(r"const unsigned (m\d+) =", source)
    assert declared[0] == "m0" and len(declared) > 1 and len(set(declared)) == len(declared)


def test_knobs_turn_features_off(tmp_path):
    path = tmp_path / "k.toml"
    path.write_text("[program]\nblock_sizes = [48]\ngrids = [2]\n[weights]\nshfl = 0\ndiv16 = 0\ndiv64 = 0\n")
    k = knobs.load(path)
    programs = [generate(s, k) for s in range(20)]
    assert {(p.block, p.grid) for p in programs} == {(48, 2)}
    assert not any("__shfl" in p.source or "unsigned short" in p.source for p in programs)


def test_knob_file_errors_name_the_file_and_key(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[weights]\nshuffle = 2\n")
    with pytest.raises(knobs.KnobError, match=r"bad\.toml: unknown key 'weights\.shuffle'"):
        knobs.load(path)
    path.write_text("[program]\nblock_sizes = [0]\n")
    with pytest.raises(knobs.KnobError, match=r"program\.block_sizes"):
        knobs.load(path)


def test_split_masks_give_each_group_of_a_collective_its_own_lanes(tmp_path):
    """With ``split_masks = 100`` every warp collective's mask is cut by a lane bit; the
    default (0) leaves the programs of a seed unchanged."""
    path = tmp_path / "k.toml"
    path.write_text("[program]\nsplit_masks = 100\n")
    split = [generate(s, knobs.load(path)) for s in range(20)]
    plain = [generate(s, knobs.load()) for s in range(20)]
    assert all("split-mask" in p.features for p in split if {"vote", "shfl", "reduce"} & set(p.features))
    assert not any("split-mask" in p.features for p in plain)
    cut = re.findall(r"\(\(lane >> (\d)\) & 1u\) \? 0x([0-9a-f]{8})u : 0x([0-9a-f]{8})u", split[0].source)
    assert cut
    for bit, high, low in cut:
        assert int(high, 16) == sum(1 << lane for lane in range(32) if lane >> int(bit) & 1)
        assert int(high, 16) ^ int(low, 16) == 0xFFFFFFFF
    path.write_text("[program]\nsplit_masks = 101\n")
    with pytest.raises(knobs.KnobError, match=r"program\.split_masks"):
        knobs.load(path)


@needs_gxx
def test_split_mask_programs_pass_the_model(tmp_path):
    path = tmp_path / "k.toml"
    path.write_text("[program]\nsplit_masks = 50\n")
    programs = [generate(s, knobs.load(path)) for s in range(300, 304)]
    results = _model(tmp_path, programs)
    assert [r.error for r in results] == [""] * len(programs)


def test_shards_split_a_campaign():
    whole = Plan(seed=10, count=11).seeds()
    parts = [Plan(seed=10, count=11, shard=(k, 3)).seeds() for k in (1, 2, 3)]
    assert sorted(s for p in parts for s in p) == whole == list(range(10, 21))
    assert cli.parse_shard("2/8") == (2, 8)


# ---------------------------------------------------------------- the CPU model

@needs_gxx
def test_generated_programs_pass_the_model(tmp_path):
    programs = [generate(s, knobs.load()) for s in range(100, 106)]
    results = _model(tmp_path, programs)
    assert [r.error for r in results] == [""] * len(programs)
    assert all(len(r.words) == len(p.out_init) for r, p in zip(results, programs))


@needs_gxx
def test_float_programs_pass_the_model(tmp_path):
    floats = knobs.load(knobs.DEFAULT_FILE.with_name("floats.toml"))
    programs = [generate(s, floats) for s in range(7000, 7006)]
    results = _model(tmp_path, programs)
    assert [r.error for r in results] == [""] * len(programs)


@needs_gxx
def test_model_moves_a_floats_bits_through_a_shuffle(tmp_path):
    body = """
    unsigned lane = threadIdx.x & 31u;
    const float f = -1.5f * (float)lane;
    out[lane] = __float_as_uint(__shfl_xor_sync(0xffffffffu, f, 1u));
    """
    (result,) = _model(tmp_path, [_program("fshfl", body)])
    assert result.accepted, result.error
    assert result.words == [struct.unpack("<I", struct.pack("<f", -1.5 * (lane ^ 1)))[0] for lane in range(32)]


@needs_gxx
def test_model_computes_collectives(tmp_path):
    body = """
    unsigned t = threadIdx.x, lane = t & 31u;
    unsigned m = t < 32u ? 0xffffffffu : 0xffffu;               // 48 threads: warp 1 has 16 lanes
    out[t * 6u + 0u] = __ballot_sync(m, lane & 1u);
    out[t * 6u + 1u] = __shfl_up_sync(m, lane * 10u, 3u, 8);
    out[t * 6u + 2u] = (unsigned)__reduce_min_sync(m, (int)lane - 5);
    out[t * 6u + 3u] = __match_any_sync(m, lane % 3u);
    out[t * 6u + 4u] = (unsigned)__syncthreads_count(lane < 4u);
    if (lane < 8u) out[t * 6u + 5u] = __shfl_xor_sync(0xffu, lane + 100u, 5u);
    """
    p = _program("collectives", body, block=48, out_words=48 * 6)
    (result,) = _model(tmp_path, [p])
    assert result.accepted, result.error
    for t in range(48):
        lane, n = t % 32, (32 if t < 32 else 16)
        lanes = range(n)
        words = result.words[t * 6:t * 6 + 6]
        assert words[0] == sum(1 << i for i in lanes if i & 1)
        assert words[1] == (lane - 3 if lane % 8 >= 3 else lane) * 10
        assert words[2] == (-5) & 0xFFFFFFFF
        assert words[3] == sum(1 << i for i in lanes if i % 3 == lane % 3)
        assert words[4] == 8            # lanes 0..3 of both warps
        assert words[5] == ((lane ^ 5) + 100 if lane < 8 else 0)


ILL_DEFINED = {
    "shfl_mask_names_idle_lanes": (
        "if (lane < 16u) out[lane] = __shfl_sync(0xffffffffu, lane, 0u);",
        r"rule break: .*(__shfl_sync with mask 0xffffffff names lanes 0x[0-9a-f]+ that have exited|"
        r"exits while lanes 0x[0-9a-f]+ wait for it at __shfl_sync)"),
    "syncwarp_masks_differ": (
        "__syncwarp(lane < 16u ? 0xffffu : 0xffffffffu);\nout[lane] = lane;",
        r"rule break: .*(exits while lanes 0x[0-9a-f]+ wait for it at __syncwarp|"
        r"__syncwarp with mask 0xffffffff names lanes 0x[0-9a-f]+ that have exited)"),
    "ballot_mask_omits_caller": (
        "if (lane == 3u) out[lane] = __ballot_sync(0x0fu, 1);",
        # lanes 0-2 exit before or after lane 3 arrives: the model's threads race, both are breaks
        r"rule break: .*(__ballot_sync with mask 0x0000000f|"
        r"exits while lanes 0x[0-9a-f]+ wait for it at __ballot_sync \(line \d+\) with mask 0x0000000f)"),
    "syncthreads_in_divergent_code": (
        "if (lane & 1u) __syncthreads(); else out[lane] = 1u;",
        r"rule break: .*__syncthreads"),
    "float_to_int_out_of_range": (
        "out[lane] = (unsigned)(int)(3.0e9f + (float)lane);",
        r"outside the range of representable values|float-cast-overflow"),
    "shfl_source_outside_mask_used": (
        "if (lane < 8u) out[lane] = __shfl_sync(0xffu, lane, lane + 8u);",
        r"depends on an undefined shuffle value"),
}


@pytest.fixture(scope="module")
def ill_defined_results(tmp_path_factory):
    """The CPU model's verdicts on ILL_DEFINED (one compile for all of them)."""
    programs = [_program(name, "unsigned lane = threadIdx.x & 31u;\n" + body)
                for name, (body, _) in ILL_DEFINED.items()]
    mp = pytest.MonkeyPatch()
    mp.setenv("WB_DEADLOCK_S", "2")
    try:
        results = _model(tmp_path_factory.mktemp("ill"), programs)
    finally:
        mp.undo()
    return {r.name: r for r in results}


@needs_gxx
@pytest.mark.xdist_group("fuzz-ill-defined")      # one compile of ILL_DEFINED for all of them
@pytest.mark.parametrize("name", sorted(ILL_DEFINED))
def test_model_rejects_ill_defined_programs(ill_defined_results, name):
    result = ill_defined_results[name]
    assert not result.accepted
    assert re.search(ILL_DEFINED[name][1], result.error), result.error


@needs_gxx
def test_model_refuses_a_mask_that_reads_itself(tmp_path):
    # a local that shadows the mask its own initializer means to read (what a generator slip
    # once wrote: the hoisted mask named m0 like the prologue's) reads an uninitialized value
    body = ("    const unsigned lane = threadIdx.x & 31u, m0 = 0xffffffffu;\n"
            "    if (in[lane] & 1u) { const unsigned m0 = (m0 & 0x55555555u); out[lane] = __ballot_sync(m0, 1); }")
    [result] = _model(tmp_path, [_program("self_read", body)])
    assert not result.accepted and result.build_failed and "uninitialized" in result.error


# ---------------------------------------------------------------- a campaign

@pytest.mark.skipif(not toolchain.cuda_tools_present() or shutil.which("g++") is None, reason="needs nvcc, nvdisasm and g++")
@pytest.mark.xdist_group("fuzz-campaign")
@pytest.mark.campaign
def test_small_campaign_end_to_end(tmp_path, capsys):
    out, summary = tmp_path / "c", tmp_path / "summary.json"
    code = cli.run_argv(["--seed", "5", "--count", "8", "--out", str(out), "--jobs", "2",
                         "--json", str(summary)])
    assert code == 0, capsys.readouterr().err
    doc = json.loads(summary.read_text())
    assert doc["programs"] == 8 and doc["cases"] == 8 and not doc["rejected_by_model"]
    interp = doc["devices"]["interp"]
    assert interp["total"] == 8 and sum(interp["counts"].values()) == 8
    assert sorted(interp["cells"]) == sorted(f"fz{s}" for s in range(5, 13))
    failing = {f["case"] for items in interp["failures"].values() for f in items}
    assert len(failing) == 8 - interp["counts"].get("PASS", 0)
    assert sorted(p.name for p in out.glob("fz*.toml")) == [f"fz{s}.toml" for s in sorted(range(5, 13), key=str)]
    assert "interp" in capsys.readouterr().out
    # the same campaign again, from what was built: its seed and count are the directory's
    again = tmp_path / "again.json"
    assert cli.run_argv(["--out", str(out), "--reuse", "--no-interp", "--json", str(again)]) == 0
    doc = json.loads(again.read_text())
    assert (doc["seed"], doc["count"], doc["programs"]) == (5, 8, 8)


@pytest.mark.skipif(not toolchain.cuda_tools_present() or shutil.which("g++") is None, reason="needs nvcc, nvdisasm and g++")
@pytest.mark.xdist_group("fuzz-campaign")
def test_a_program_the_compilers_refuse_costs_only_its_own_case(tmp_path):
    good = generate(5, knobs.load())
    bad = _program("fzbad", "    unsigned x = 1u;\n    unsigned x = 2u;\n    out[0] = x;")
    built = build_batch([good, bad], tmp_path, "batch0000", jobs=2)
    assert [(b.program.name, b.status) for b in built] == [("fz5", "case"), ("fzbad", "build-error")]
    assert "batch0000-fzbad.cu" in built[1].message and "already been declared" in built[1].message
    assert (tmp_path / "fz5.toml").is_file() and 'source = "batch0000-fz5.cu"' in (tmp_path / "fz5.toml").read_text()


class _FakeGpu:
    """A record-truth runner that returns the cases' expected words, one word changed in ``odd``."""

    def __init__(self, odd: str):
        self.odd = odd

    def info(self):
        return GpuInfo("Fake GPU", (9, 0), "13.0", "580.0", "nvcc")

    def run(self, case):
        words = [list(b.expected if b.expected is not None else b.init) for b in case.buffers]
        if case.id == self.odd:
            words[0][0] ^= 1
        return words


@pytest.mark.skipif(not toolchain.cuda_tools_present() or shutil.which("g++") is None, reason="needs nvcc, nvdisasm and g++")
@pytest.mark.xdist_group("fuzz-campaign")
def test_record_writes_one_batch_and_compares_with_the_model(tmp_path, monkeypatch, capsys):
    out, chip, summary = tmp_path / "c", tmp_path / "chip.json", tmp_path / "s.json"
    monkeypatch.setattr(truth, "make_runner", lambda compiler, timeout: _FakeGpu("fz21"))
    args = ["--seed", "20", "--count", "3", "--out", str(out)]
    assert cli.run_argv(args + ["--build-only"]) == 0
    model_word = load_case(out / "fz21.toml", out).buffers[0].expected[0]
    code = cli.run_argv(args + ["--reuse", "--no-interp", "--record", str(chip), "--repeat", "2",
                                "--json", str(summary)])
    assert code == 0, capsys.readouterr().err
    recorded = json.loads(chip.read_text())
    assert sorted(recorded["cases"]) == ["fz20", "fz21", "fz22"]
    assert recorded["recorded_on"].startswith("Fake GPU (compute capability 9.0)")
    assert json.loads(summary.read_text())["chip"]["model_differs"] == ["fz21"]
    case = load_case(out / "fz21.toml", out)
    assert case.provenance["expected"] == "chip"
    assert case.provenance["recorded_on"] == recorded["recorded_on"]
    assert case.buffers[0].expected[0] == model_word ^ 1


def test_reuse_takes_the_shard_asked_for(tmp_path):
    """``--reuse --shard K/N`` on a campaign built whole runs only that share of it."""
    programs = {f"fz{40 + i}": {"seed": 40 + i, "status": "rejected", "message": "x"} for i in range(10)}
    (tmp_path / "campaign.json").write_text(json.dumps({"seed": 40, "count": 10, "shard": [1, 1],
                                                         "knobs": None, "programs": programs}))
    whole = cli.reload_built(Plan(40, 10, (1, 1), None, tmp_path))
    third = cli.reload_built(Plan(40, 10, (2, 3), None, tmp_path))
    assert [b.program.name for b in whole] == list(programs)
    assert [b.program.name for b in third] == ["fz41", "fz44", "fz47"]


def test_a_device_column_is_dealt_out_to_every_job():
    """A device column's cases run in ``jobs`` worker processes, not one: a driver compiles on
    the CPU, so one worker per device left all but one core idle on a 16-core GPU machine."""

    cases = [SimpleNamespace(id=f"fz{i}", path=f"/nowhere/fz{i}.toml") for i in range(6)]
    columns = [campaign.Column("gpu-a", 0), campaign.Column("gpu-b", 1)]
    results = campaign.run(cases, columns, Options(timeout_s=30, target="support.worker_targets:pid_cell"),
                           jobs=3)
    for device in ("gpu-a", "gpu-b"):
        cells = [r for r in results if r.device == device]
        assert sorted(r.case for r in cells) == sorted(f"fz{i}" for i in range(6))
        assert len({r.message for r in cells}) == 3


def test_stop_after_starts_no_cell_past_the_limit():

    cases = [SimpleNamespace(id=f"fz{i}", path=f"/nowhere/fz{i}.toml") for i in range(4)]
    options = Options(timeout_s=30, target="support.worker_targets:pid_cell")
    columns = [campaign.Column("gpu-a", 0)]
    assert campaign.run(cases, columns, options, jobs=2, stop_after_s=0) == []
    assert len(campaign.run(cases, columns, options, jobs=2, stop_after_s=60)) == 4


def _summary(shard, cells, seed=40, count=10):
    """A ``warpboard fuzz --json`` summary with one device and these cells."""
    failures = {}
    for case, status in cells.items():
        if status != "PASS":
            failures.setdefault(status, []).append({"case": case, "seed": int(case[2:]), "message": f"{case} broke"})
    device = {"total": len(cells), "cells": cells, "counts": dict(Counter(cells.values())),
              "agreement": 0.0, "failures": failures}
    return {"seed": seed, "count": count, "shard": list(shard), "programs": len(cells), "cases": len(cells),
            "rejected_by_model": [], "build_errors": [], "devices": {"lavapipe-w4": device}}


def test_fuzz_merge_unions_the_shards_cells():
    """Shards of different N may overlap; a cell run twice counts once, by its last run, and a
    change of status between runs is listed."""
    a = _summary((1, 2), {"fz40": "PASS", "fz42": "PASS", "fz44": "LIVELOCK"})
    b = _summary((1, 4), {"fz40": "PASS", "fz44": "PASS"})
    c = _summary((2, 2), {"fz41": "FAIL", "fz43": "PASS"})
    merged = merge([("a", a), ("b", b), ("c", c)])
    w4 = merged["devices"]["lavapipe-w4"]
    assert merged["cases"] == 5 and w4["total"] == 5 and w4["not_run"] == 0
    assert w4["counts"] == {"FAIL": 1, "PASS": 4}
    assert w4["agreement"] == 80.0
    assert w4["differs"] == ["fz44"]
    assert w4["failures"] == {"FAIL": [{"case": "fz41", "seed": 41, "message": "fz41 broke"}]}
    page = table(merged, markdown=True)
    assert "5 of 10 programs (seed 40, merged from 3 summaries)" in page
    assert re.search(r"^\| lavapipe-w4 +\| +5 \| +4 \| +1 \|", page, re.M)
    assert "- lavapipe-w4 FAIL (1):\n  - fz41: `fz41 broke`" in page


def test_fuzz_merge_refuses_another_campaign_and_summaries_without_cells(tmp_path, capsys):
    a = _summary((1, 2), {"fz40": "PASS"})
    other = _summary((2, 2), {"fz41": "PASS"}, seed=41)
    with pytest.raises(fuzz_merge.MergeError, match="seed 41 count 10, but a has seed 40"):
        fuzz_merge.merge([("a", a), ("b", other)])
    old = json.loads(json.dumps(a))
    del old["devices"]["lavapipe-w4"]["cells"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    args = fuzz_merge.argparse.Namespace(summaries=[str(tmp_path / "old.json")], json=None)
    assert fuzz_merge.run(args) == 2
    assert "no per-cell statuses" in capsys.readouterr().err


def test_big_blocks_size_the_shared_array_by_the_block(tmp_path):
    """big_blocks.toml: blocks of 256..1024 threads in grids of up to 4; the exchange array
    holds a word per thread of the block (sh[t] for every t), and blocks of 128 or fewer
    keep the 128 words their programs always had."""
    big = knobs.load(knobs.DEFAULT_FILE.parent / "big_blocks.toml")
    programs = [generate(s, big) for s in range(12)]
    assert {p.block for p in programs} <= {256, 320, 512, 736, 1000, 1024} and max(p.block for p in programs) > 512
    assert {p.grid for p in programs} <= {1, 2, 4}
    for p in programs:
        assert f"__shared__ unsigned sh[{p.block}];" in p.source
    assert "__shared__ unsigned sh[128];" in generate(3, knobs.load()).source
    path = tmp_path / "k.toml"
    path.write_text("[program]\nblock_sizes = [1025]\n")
    with pytest.raises(knobs.KnobError, match=r"program\.block_sizes"):
        knobs.load(path)
