"""The MUFU sweep (studies/mufu_sweep.py, cases/float/mufu_*_sweep.toml) and the rates report
(studies/mufu_rates.py, ``warpboard mufu-rates``)."""
from __future__ import annotations

import json
import math
import re

import pytest
from warpboard import cli
from warpboard.harness.case.model import load_case
from warpboard.studies import mufu_rates as mr
from warpboard.studies import mufu_sweep as ms

from support.paths import ROOT

FLOAT = ROOT / "cases" / "float"
SWEEP_IDS = [s.case for s in ms.SWEEPS]


# ---------------------------------------------------------------- the sweep
@pytest.mark.parametrize("case", SWEEP_IDS)
def test_the_sweep_is_deterministic_and_is_what_the_case_holds(case):
    sweep = ms.sweep_named(case)
    words = ms.inputs(sweep)
    assert words == ms.inputs(sweep)
    assert len(words) == len(set(words)) == sweep.words
    loaded = load_case(FLOAT / f"{case}.toml", ROOT / "cases")
    assert list(loaded.buffer("in").init) == words
    assert loaded.kernel == sweep.kernel and loaded.total_threads == sweep.words
    assert "mufu-sweep" in loaded.tags


@pytest.mark.parametrize("case", [s.case for s in ms.SWEEPS if s.fmt == "f32"])
def test_every_binary32_sweep_holds_the_special_values(case):
    words = set(ms.inputs(ms.sweep_named(case)))
    specials = {0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x80800000,
                0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x3F800000}
    assert specials <= words


def test_each_function_sweep_holds_its_interesting_points():
    def has(case, *values):
        words = set(ms.inputs(ms.sweep_named(case)))
        return all(ms.word(v) in words for v in values)
    assert has("mufu_ex2_sweep", 126, -126, 128, -128, 127.99999237060547, -149, 0.5)
    assert has("mufu_lg2_sweep", 1.0, 1 + 2.0 ** -23, 1 - 2.0 ** -24, 2.0, 0.5)
    assert has("mufu_sin_sweep", math.pi / 2, math.pi, -3 * math.pi / 2, 2.0 ** 126)
    assert has("mufu_cos_sweep", math.pi / 2, 32 * math.pi, 2.0 ** 9 * math.pi)
    assert has("mufu_rcp_sweep", 2.0 ** 126, 2.0 ** 127, 2.0 ** -149)
    assert has("mufu_ex2_scaled_sweep", -127, -150)
    powers = set(ms.inputs(ms.sweep_named("mufu_rsq_sweep")))
    assert all(ms.power_of_two(e) in powers and ms.power_of_two(e) + 1 in powers for e in range(-149, 128))
    high = set(ms.inputs(ms.sweep_named("mufu_rcp64h_sweep")))
    assert {0x00000000, 0x800FFFFF, 0x7FF00000, 0x7FF80000, 0x3FF00000, 0x7FEFFFFF} <= high


def test_each_sweep_kernel_is_the_one_mufu_it_names():
    """nvdisasm's listing: one MUFU of the sweep's function between the load and the store;
    the forms without .ftz scale around it, the .ftz ones do nothing else."""
    for sweep in ms.SWEEPS:
        listing = load_case(FLOAT / f"{sweep.case}.toml", ROOT / "cases").kernel_listing
        mufus = re.findall(r"MUFU\.(\w+)", listing)
        assert mufus == [sweep.func.upper()], (sweep.kernel, mufus)
        floats = re.findall(r"\b(FMUL|FADD|FSETP|FSEL)\b", listing)
        if sweep.func in ("sin", "cos"):
            assert "FMUL.RZ" in listing and floats == ["FMUL"]
        elif sweep.ftz or sweep.func == "tanh":
            assert floats == [], (sweep.kernel, floats)
        else:
            assert "FSETP" in floats and ("FMUL" in floats or "FADD" in floats), (sweep.kernel, floats)


# ---------------------------------------------------------------- the CPU's best guess
@pytest.mark.parametrize("case, x, want", [
    ("mufu_rcp_sweep", 0x40000000, 0x3F000000),           # 1/2
    ("mufu_rcp_sweep", 0x80000000, 0xFF800000),           # 1/-0 = -inf
    ("mufu_rcp_sweep", 0x7F7FFFFF, 0x00000000),           # 1/FLT_MAX is a denormal: flushed
    ("mufu_rcp_scaled_sweep", 0x7F7FFFFF, 0x00200000),    # ... kept by the scaling
    ("mufu_rsq_sweep", 0x40800000, 0x3F000000),           # 1/sqrt(4)
    ("mufu_rsq_sweep", 0x00000001, 0x7F800000),           # a denormal counts as +0
    ("mufu_rsq_scaled_sweep", 0x00000001, 0x64B504F3),    # 2^74.5 once scaled
    ("mufu_sqrt_sweep", 0xBF800000, 0x7FFFFFFF),          # sqrt(-1): the canonical NaN
    ("mufu_ex2_sweep", 0xC2FC0000, 0x00800000),           # 2^-126
    ("mufu_ex2_sweep", 0xC2FE0000, 0x00000000),           # 2^-127 flushed
    ("mufu_ex2_scaled_sweep", 0xC2FE0000, 0x00400000),    # 2^-127 kept
    ("mufu_ex2_sweep", 0xFF800000, 0x00000000),           # 2^-inf
    ("mufu_lg2_sweep", 0x00000001, 0xFF800000),           # log2 of a flushed denormal
    ("mufu_lg2_scaled_sweep", 0x00000001, 0xC3150000),    # log2(2^-149) = -149
    ("mufu_lg2_sweep", 0x7FC00000, 0x7FFFFFFF),           # NaN in: the canonical NaN
    ("mufu_sin_sweep", 0x80000000, 0x80000000),           # sin(-0) = -0
    ("mufu_cos_sweep", 0x7F800000, 0x7FFFFFFF),           # cos(inf) = NaN
    ("mufu_tanh_sweep", 0x00000001, 0x00000001),          # tanh keeps denormals
    ("mufu_rcp64h_sweep", 0x40000000, 0x3FE00000),        # 1/2.0
    ("mufu_rcp64h_sweep", 0x80000001, 0xFFF00000),        # a denormal counts as -0
    ("mufu_rsq64h_sweep", 0x40100000, 0x3FE00000),        # 1/sqrt(4.0)
    ("mufu_rsq64h_sweep", 0x40000000, 0x3FE6A09E),        # 1/sqrt(2) truncated to the high word
])
def test_the_reference_at_known_points(case, x, want):
    assert ms.reference(ms.sweep_named(case), x) == want


def test_sin_takes_its_argument_times_one_over_two_pi_rounded_toward_zero():
    assert ms.mul_rz(0x3F800000, ms.INV_2PI) == ms.INV_2PI
    assert ms.mul_rz(0x40490FDB, ms.INV_2PI) == 0x3EFFFFFF       # pi/(2 pi) just below 1/2
    assert ms.mul_rz(0xC0490FDB, ms.INV_2PI) == 0xBEFFFFFF
    sin = ms.sweep_named("mufu_sin_sweep")
    assert ms.reference(sin, ms.word(math.pi / 2)) == 0x3F800000
    assert ms.reference(sin, 0x40490FDB) == ms.word(math.sin(2 * math.pi * ms.value(0x3EFFFFFF)))


# ---------------------------------------------------------------- counting words
@pytest.mark.parametrize("fmt, want, have, judged", [
    ("f32", 0x3F800000, 0x3F800000, ("exact", 0)),
    ("f32", 0x3F800000, 0x3F800001, ("ulp", 1)),
    ("f32", 0x3F800000, 0x3F7FFFFE, ("ulp", 2)),
    ("f32", 0x00000001, 0x80000001, ("ulp", 2)),          # across zero: a step on each side
    ("f32", 0x00000000, 0x80000000, ("ulp", 0)),          # +0 and -0: 0 apart, not exact
    ("f32", 0x80000002, 0x00000003, ("ulp", 5)),
    ("f32", 0x7FFFFFFF, 0x7FC00000, ("nan_payload", None)),
    ("f32", 0x7FFFFFFF, 0x3F800000, ("mismatched", None)),
    ("f32", 0x7F800000, 0x7F7FFFFF, ("mismatched", None)),  # an infinity only matches itself
    ("f32", 0x7F800000, 0xFF800000, ("mismatched", None)),
    ("f64h", 0x7F900000, 0x7F900001, ("ulp", 1)),         # finite as a binary64 high word
    ("f64h", 0x7FF00000, 0x7FEFFFFF, ("mismatched", None)),
    ("f64h", 0x7FF80000, 0xFFF80001, ("nan_payload", None)),
])
def test_judge(fmt, want, have, judged):
    assert mr.judge(fmt, want, have) == judged


def test_tally_counts_exact_words_ulps_nans_and_mismatches():
    inputs = list(range(8))
    expected = [0x3F800000, 0x3F800000, 0x3F800000, 0x00000000, 0x7FFFFFFF, 0x7FFFFFFF, 0x7F800000, 0x40000000]
    got = [0x3F800000, 0x3F800001, 0x3F800003, 0x80000000, 0x7FC00000, 0x7FFFFFFF, 0x7F7FFFFF, 0x40000000]
    t = mr.tally("f32", inputs, expected, got)
    assert (t["inputs"], t["exact"], t["max_ulp"], t["nan_payload"], t["mismatched"]) == (8, 3, 3, 1, 1)
    assert t["exact_pct"] == pytest.approx(37.5)
    assert t["ulp_histogram"] == {"0": 1, "1": 1, "3": 1}
    assert t["within"] == {"1": 6, "2": 6, "4": 7, "16": 7}
    assert t["max_abs"] == 3 * 2.0 ** -23
    assert [e["index"] for e in t["examples"]] == [6, 2, 1, 3, 4]     # mismatched first, then by ulp
    assert t["examples"][0] == {"index": 6, "input": "0x00000006", "expected": "0x7f800000",
                                "got": "0x7f7fffff", "kind": "mismatched", "ulp": None}


# ---------------------------------------------------------------- the report
def _doc(rows, expected="chip", digest="d1", case="float/mufu_rsq_sweep", kernel="mufu_rsq_ftz"):
    sweep = {"case": case, "kernel": kernel, "label": "MUFU.RSQ", "ptx": "rsqrt.approx.ftz.f32", "fmt": "f32",
             "inputs": 8, "compare": "exact", "expected": expected, "recorded_on": "NVIDIA H200 (cc 9.0)",
             "expected_digest": digest}
    devices = sorted({r["device"] for r in rows})
    return {"version": mr.VERSION, "created": "now", "sweeps": [sweep], "rates": rows,
            "devices": [{"id": d, "name": d.upper(), "driver_info": "drv", "subgroup_size": 32} for d in devices]}


def _row(device, got, case="float/mufu_rsq_sweep"):
    expected = [0x3F800000] * 4 + [0x7FFFFFFF] * 4
    return {"device": device, "case": case, "outcome": "ok", "message": "",
            **mr.tally("f32", range(8), expected, got)}


GOOD = [0x3F800000] * 4 + [0x7FFFFFFF] * 4
OFF = [0x3F800000, 0x3F800001, 0x3F800002, 0x3F800000, 0x7FFFFFFF, 0x7FC00000, 0x7FFFFFFF, 0x7FFFFFFF]


def test_markdown_gives_rates_per_function_and_device():
    doc = _doc([_row("interp", GOOD), _row("lavapipe-w8", OFF),
                {"device": "nvidia", "case": "float/mufu_rsq_sweep", "outcome": "unsupported",
                 "message": "MUFU.RSQ: unsupported"}])
    md = mr.markdown(doc)
    assert "the chip's, recorded on NVIDIA H200 (cc 9.0)" in md
    summary = next(line for line in md.splitlines() if line.startswith("| MUFU.RSQ | `rsqrt"))
    assert summary.split(" | ")[3:] == ["`exact`", "2", "100.00 % · 0 ulp",
                                        "62.50 % · 2 ulp (1 NaN payload)", "UNSUPPORTED |"]
    assert "| lavapipe-w8 | MUFU.RSQ | 8 | 5 | 62.50 | 2 | 2.38e-07 | 7 | 8 | 1 | 0 |" in md
    assert "| lavapipe-w8 | MUFU.RSQ | 0x00000002 | 0x3f800000 | 0x3f800002 | 2 |" in md
    assert "NaN with another payload than the expected one is not exact" in md
    assert "| interp | MUFU.RSQ | 8 | 8 | 100.00 | 0 | 0 | 8 | 8 | 0 | 0 |" in md
    assert "lavapipe-w8  MUFU.RSQ" in mr.terminal(doc)


def test_markdown_names_derived_expectations():
    md = mr.markdown(_doc([_row("interp", GOOD)], expected="derived"))
    assert "the CPU's best guess" in md and "`float/mufu_rsq_sweep`" in md


def test_merge_joins_devices_and_refuses_different_expected_words():
    a, b = _doc([_row("interp", GOOD)]), _doc([_row("nvidia", OFF)])
    merged = mr.merge([a, b])
    assert [d["id"] for d in merged["devices"]] == ["interp", "nvidia"]
    assert {(r["device"], r["exact"]) for r in merged["rates"]} == {("interp", 8), ("nvidia", 5)}
    again = mr.merge([merged, _doc([_row("nvidia", GOOD)])])
    assert {(r["device"], r["exact"]) for r in again["rates"]} == {("interp", 8), ("nvidia", 8)}
    with pytest.raises(ValueError, match="measured against different expected words"):
        mr.merge([a, _doc([_row("nvidia", GOOD)], digest="d2")])


def test_write_tolerances_sets_the_largest_ulp_or_exact(make_case):
    for name in ("a", "b"):
        make_case.write(f"float/{name}", buffers=[{"name": "out", "words": 1, "compare": "f32-ulp:9",
                                                   "init": 0, "expected": [0]}])
    doc = mr.merge([_doc([_row("interp", GOOD), _row("lvp", OFF, "float/a")], case="float/a", digest="x"),
                    _doc([_row("interp", GOOD, "float/b")], case="float/b", digest="y")])
    notes = mr.write_tolerances(doc, make_case.root)
    assert notes == ["float/a: compare = f32-ulp:2", "float/b: compare = exact"]
    assert [s["compare"] for s in doc["sweeps"]] == ["f32-ulp:2", "exact"]
    assert make_case.load("float/a").buffer("out").compare == "f32-ulp:2"
    assert make_case.load("float/b").buffer("out").compare == "exact"


# ---------------------------------------------------------------- the command, end to end
def test_mufu_rates_on_the_interpreter_end_to_end(make_case, tmp_path, capsys):
    """A 64-input slice of the RCP sweep, its expected words the reference with one word a
    ulp off and one NaN of another payload: the interpreter's counts say so."""
    sweep = ms.sweep_named("mufu_rcp_sweep")
    words = ms.inputs(sweep)[:64]
    expected = [ms.reference(sweep, w) for w in words]
    nan_at = next(i for i, w in enumerate(words) if ms.is_nan(ms.reference(sweep, w)))
    expected[40] += 1
    expected[nan_at] = 0x7FC00000
    make_case.write("float/rcp_slice", listing_file="mufu_sweep.sm_86.sass",
                    sass=(FLOAT / "mufu_sweep.sm_86.sass").read_text(), kernel="mufu_rcp_ftz",
                    tags=["float", "mufu-sweep"], block=64,
                    buffers=[{"name": "in", "words": 64, "init": words},
                             {"name": "out", "words": 64, "init": 0, "expected": expected}])
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    assert cli.main(["mufu-rates", "--root", str(make_case.root), "--device", "none",
                     "--json", str(out), "--markdown", str(md)]) == 0
    doc = json.loads(out.read_text())
    [row] = doc["rates"]
    assert (row["device"], row["case"], row["outcome"]) == ("interp", "float/rcp_slice", "ok")
    assert (row["exact"], row["max_ulp"], row["nan_payload"], row["mismatched"]) == (62, 1, 1, 0)
    assert doc["sweeps"][0]["label"] == "MUFU.RCP" and doc["sweeps"][0]["expected"] == "derived"
    assert "| MUFU.RCP | `rcp.approx.ftz.f32` | 64 | `exact` | 1 | 96.88 % · 1 ulp (1 NaN payload) |" \
        in md.read_text()
    assert "interp" in capsys.readouterr().out
    assert cli.main(["mufu-rates", "--from-json", str(out), "--from-json", str(out)]) == 0


def test_mufu_rates_says_why_it_cannot_start(make_case, tmp_path, capsys):
    assert cli.main(["mufu-rates", "--root", str(make_case.root), "--device", "none"]) == 2
    assert "no case in" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert cli.main(["mufu-rates", "--from-json", str(bad)]) == 2
    assert f"{bad}:" in capsys.readouterr().err
