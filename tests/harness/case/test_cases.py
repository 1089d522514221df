"""The case files under cases/ and the loader's error messages (harness/case/model.py)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import tomllib
from warpboard.harness.case.model import (
    BufferSpec,
    Case,
    CaseError,
    Param,
    discover_cases,
    kernel_section,
    load_case,
)
from warpboard.harness.run.engine import run_case
from warpboard.harness.run.results import Status

from support.paths import CASES

CASE_FILES = sorted(CASES.rglob("*.toml"))
TRUTH_JSON = CASES / "truth" / "results.sm_90.json"     # run_truth.cu's output on the chip


def _id(p: Path) -> str:
    return p.relative_to(CASES).with_suffix("").as_posix()


# ---------------------------------------------------------------- the shipped cases

def test_discover_finds_every_case_sorted():
    cases = discover_cases(CASES)
    assert [c.id for c in cases] == sorted(_id(p) for p in CASE_FILES)
    assert len([c for c in cases if c.id.startswith("truth/")]) == 12
    assert len([c for c in cases if c.id.startswith("basic/")]) >= 4


def test_discover_patterns_filter_on_id():
    ids = [c.id for c in discover_cases(CASES, ["truth/shfl_*", "basic/bit_ops"])]
    assert ids == ["basic/bit_ops", "truth/shfl_half_warps", "truth/shfl_xor_reduce"]


@pytest.mark.parametrize("path", CASE_FILES, ids=_id)
def test_case_loads_and_names_its_provenance(path):
    case = load_case(path)
    assert case.id == _id(path)
    kind = case.provenance["expected"]
    assert kind in ("chip", "derived")
    assert case.provenance["listing"]
    if kind == "chip":
        assert case.provenance["recorded_on"]
    else:
        assert case.provenance["derivation"]
    assert any(b.expected is not None for b in case.buffers)
    if "captured" in case.tags:  # a real program's launch: the listing from its cubin
        assert "nvdisasm" in case.provenance["listing"] and "captured by warpboard capture" in case.provenance["recorded_on"]
    elif case.source is None:    # a hand-written listing says so
        assert "hand" in case.provenance["listing"].lower()
    if case.kernel is not None and case.source is not None:
        assert f".text.{case.kernel}:" in case.kernel_listing
    assert "/*0000*/" in case.kernel_listing


def test_no_two_cases_are_the_same_program():
    seen: dict[tuple, str] = {}
    for case in discover_cases(CASES):
        key = _program(case)
        assert key not in seen, f"{case.id} is the same program as {seen[key]}"
        seen[key] = case.id


def _program(case: Case) -> tuple:
    """What the device runs: the kernel's instructions (its own name masked), the launch,
    the buffers' sizes and contents and the parameters (buffers by position)."""
    code = tuple((line.replace(case.kernel, "<kernel>") if case.kernel else line).strip()
                 for line in case.kernel_listing.splitlines() if "/*" in line)
    names = [b.name for b in case.buffers]
    params = tuple((p.kind, names.index(p.value) if p.kind == "buffer" else p.value)
                   for p in case.params)
    return (code, case.grid, case.block, case.shared_bytes,
            tuple((b.words, b.init) for b in case.buffers), params)


def test_truth_cases_hold_the_recorded_results():
    """Every truth case expects the words run_truth.cu printed on the chip (one block of 64)."""
    assert TRUTH_JSON.is_file(), f"{TRUTH_JSON}: missing (the recorded results of run_truth.cu)"
    doc = json.loads(TRUTH_JSON.read_text())
    recorded = doc["results"]
    cases = discover_cases(CASES, ["truth/*"])
    assert doc["launch"] == {"grid": 1, "block": 64}
    assert {(c.grid, c.block) for c in cases} == {((1, 1, 1), (64, 1, 1))}
    assert {c.kernel: c.buffer("out").expected for c in cases} == \
        {k: tuple(v) for k, v in recorded.items()}


def _derivation(path) -> str:
    return tomllib.loads(path.read_text())["provenance"].get("derivation", "")


# CUDA sources without collectives, barriers or spins can be run per thread on the CPU; a
# derivation kept beside chip words (record-truth keeps it where they agree) is checked too
DERIVED = [p for p in CASE_FILES if "run_on_cpu" in _derivation(p) and '"collective-free"' in p.read_text()]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("path", DERIVED, ids=_id)
def test_derived_cases_reproduce_on_the_cpu(path):
    run = subprocess.run([str(CASES / "tools" / "run_on_cpu.sh"), "--check", str(path)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


# derivations that end in the Python that computes the words (derived cases, and chip cases
# whose words the derivation matched when they were recorded)
HAND_DERIVED = [p for p in CASE_FILES if "Computed by:" in _derivation(p)]


@pytest.mark.parametrize("path", HAND_DERIVED, ids=_id)
def test_hand_derivations_reproduce(path):
    case = load_case(path)
    env: dict = {}
    exec(case.provenance["derivation"].split("Computed by:", 1)[1], env)
    assert {b.name: b.expected for b in case.buffers if b.expected is not None} == \
        {name: tuple(words) for name, words in env["expected"].items()}


# ---------------------------------------------------------------- the loader

GOOD = '''\
name = "tiny"
summary = "Smallest case."
tags = ["loop"]
kernel = "tiny"
listing = "tiny.sass"

[provenance]
expected = "chip"
recorded_on = "somewhere"
listing = "by hand"

[launch]
grid = 2
block = [48]

[[buffers]]
name = "out"
words = 4
init = 7
expected = [1, 2, 3, 0xffffffff]

[[params]]
buffer = "out"

[[params]]
u64 = 0x1234
'''
LISTING = ".text.tiny:\n        /*0000*/                   EXIT ;\n"


def _write(make_case, text: str = GOOD, listing: str | None = LISTING) -> Path:
    """cases/tiny.toml with ``text`` and, unless None, its listing tiny.sass beside it."""
    return make_case.write_text("tiny", text, {} if listing is None else {"tiny.sass": listing})


def _error(make_case, text: str, listing: str | None = LISTING) -> str:
    path = _write(make_case, text, listing)
    with pytest.raises(CaseError) as info:
        load_case(path)
    return str(info.value)


def test_good_case_loads(make_case):
    case = load_case(_write(make_case), root=make_case.root)
    assert case.id == "tiny" and case.name == "tiny" and case.tags == ("loop",)
    assert case.grid == (2, 1, 1) and case.block == (48, 1, 1)
    assert (case.threads_per_block, case.total_threads, case.warps_per_block) == (48, 96, 2)
    assert case.shared_bytes == 16384 and case.step_budget is None and case.source is None
    assert case.buffers == (BufferSpec("out", 4, (7, 7, 7, 7), (1, 2, 3, 0xFFFFFFFF)),)
    assert case.params == (Param("buffer", "out"), Param("u64", 0x1234))
    assert case.listing_text == LISTING and case.listing_line == 1
    assert case.listing_path == make_case.root / "tiny.sass"


def test_id_is_the_path_below_cases(make_case):
    path = make_case.write_text("vote/tiny", GOOD, {"tiny.sass": LISTING})
    assert path == make_case.root / "vote" / "tiny.toml" and make_case.root.name == "cases"
    assert load_case(path).id == "vote/tiny"
    assert [c.id for c in discover_cases(make_case.root)] == ["vote/tiny"]


def test_inline_listing_starts_after_the_quotes(make_case):
    text = GOOD.replace('listing = "tiny.sass"\n',
                        'sass = """\n.text.tiny:\n    EXIT ;\n"""\n')
    case = load_case(_write(make_case, text, listing=None))
    assert case.listing_text == ".text.tiny:\n    EXIT ;\n"
    assert case.listing_path == make_case.root / "tiny.toml" and case.listing_line == 6


def test_unknown_key(make_case):
    msg = _error(make_case, GOOD.replace("block = [48]", "block = [48]\nblocks = 3"))
    assert msg == (f"{make_case.root}/tiny.toml:15: unknown key 'launch.blocks' "
                   "(allowed: grid, block, shared_bytes)")


def test_unknown_top_level_key(make_case):
    msg = _error(make_case, "colour = 1\n" + GOOD)
    assert msg.startswith(f"{make_case.root}/tiny.toml:1: unknown key 'colour' (allowed: name, ")


def test_wrong_expected_length(make_case):
    msg = _error(make_case, GOOD.replace("[1, 2, 3, 0xffffffff]", "[1, 2, 3]"))
    assert msg == f"{make_case.root}/tiny.toml:20: buffers[0].expected: 3 words, but words = 4"


def test_word_outside_u32(make_case):
    msg = _error(make_case, GOOD.replace("0xffffffff", "0x100000000"))
    assert msg == (f"{make_case.root}/tiny.toml:20: buffers[0].expected[3]: 4294967296 "
                   "is not a u32 (0..0xffffffff)")


def test_missing_listing_file(make_case):
    msg = _error(make_case, GOOD, listing=None)
    assert msg == f"{make_case.root}/tiny.toml:5: listing: no such file: {make_case.root}/tiny.sass"


def test_kernel_not_in_listing(make_case):
    msg = _error(make_case, GOOD.replace('kernel = "tiny"', 'kernel = "tiny2"'))
    assert msg == f"{make_case.root}/tiny.toml:4: kernel: 'tiny2' is not in the listing (kernels: tiny)"


def test_kernel_needed_when_the_listing_has_several(make_case):
    two = LISTING + ".text.other:\n        /*0000*/                   EXIT ;\n"
    msg = _error(make_case, GOOD.replace('kernel = "tiny"\n', ""), listing=two)
    assert msg == (f"{make_case.root}/tiny.toml:4: kernel: the listing has 2 kernels (tiny, other); "
                   'name one with kernel = "..."')


def test_both_listing_and_sass(make_case):
    msg = _error(make_case, GOOD.replace('listing = "tiny.sass"\n',
                                        'listing = "tiny.sass"\nsass = "EXIT ;"\n'))
    assert msg == (f"{make_case.root}/tiny.toml:6: give either 'listing' (a SASS file) "
                   "or 'sass' (the listing inline), not both")


def test_param_names_unknown_buffer(make_case):
    msg = _error(make_case, GOOD.replace('buffer = "out"', 'buffer = "outt"'))
    assert msg == (f"{make_case.root}/tiny.toml:23: params[0].buffer: no buffer named 'outt' "
                   "(buffers: out)")


def test_chip_provenance_needs_recorded_on(make_case):
    msg = _error(make_case, GOOD.replace('recorded_on = "somewhere"\n', ""))
    assert msg == f'{make_case.root}/tiny.toml:7: provenance.recorded_on: required when expected = "chip"'


def test_a_chip_time_is_a_positive_number_of_milliseconds(make_case):
    ok = _write(make_case, GOOD.replace('recorded_on = "somewhere"\n', 'recorded_on = "somewhere"\nchip_ms = 0.25\n'))
    assert load_case(ok, root=make_case.root).provenance["chip_ms"] == 0.25
    msg = _error(make_case, GOOD.replace('recorded_on = "somewhere"\n', 'recorded_on = "somewhere"\nchip_ms = "fast"\n'))
    assert "provenance.chip_ms: the launch's kernel time on the chip in milliseconds, a positive number, not 'fast'" in msg


def test_missing_required_key(make_case):
    msg = _error(make_case, GOOD.replace('summary = "Smallest case."\n', ""))
    assert msg == f"{make_case.root}/tiny.toml: missing required key 'summary'"


def test_invalid_toml(make_case):
    msg = _error(make_case, GOOD.replace("grid = 2", "grid = "))
    assert msg == f"{make_case.root}/tiny.toml:13: invalid TOML: Invalid value"


def test_discover_reports_every_broken_case(make_case):
    for name in ("a", "b"):
        make_case.write_text(name, 'name = "x"\n')
    with pytest.raises(CaseError) as info:
        discover_cases(make_case.root)
    lines = str(info.value).splitlines()
    assert [re.sub(r":.*", "", line) for line in lines] == \
        [f"{make_case.root}/a.toml", f"{make_case.root}/b.toml"]


def test_kernel_section_cuts_one_kernel_out():
    text = ("//------ .text.a ------\n\t.section\t.text.a\n.text.a:\n  /*0000*/ EXIT ;\n\n"
            "//------ .text.b ------\n\t.section\t.text.b\n.text.b:\n  /*0000*/ BRA ;\n")
    assert kernel_section(text, "a") == \
        "//------ .text.a ------\n\t.section\t.text.a\n.text.a:\n  /*0000*/ EXIT ;\n"
    assert kernel_section(text, "b").endswith(".text.b:\n  /*0000*/ BRA ;\n")
    assert kernel_section(text, None) == text


def test_u32_param_out_of_range(make_case):
    msg = _error(make_case, GOOD.replace("u64 = 0x1234", "u32 = 0x100000000"))
    assert msg == f"{make_case.root}/tiny.toml:26: params[1].u32: 4294967296 is not a u32 (0..0xffffffff)"


def test_error_in_a_later_buffer_points_at_its_table(make_case):
    msg = _error(make_case, GOOD + '\n[[buffers]]\nname = "in"\nwords = 2\ninit = [1]\n')
    assert msg == f"{make_case.root}/tiny.toml:31: buffers[1].init: 1 word, but words = 2"


PENDING = (GOOD.replace('expected = "chip"\nrecorded_on = "somewhere"', 'expected = "pending"')
           .replace("expected = [1, 2, 3, 0xffffffff]\n", "")
           .replace('listing = "tiny.sass"', 'listing = "tiny.sass"\nsource = "tiny.cu"'))


def test_pending_case_loads(make_case):
    (make_case.root / "tiny.cu").write_text("// kernel\n")
    case = load_case(_write(make_case, PENDING))
    assert case.provenance == {"expected": "pending", "listing": "by hand"}
    assert all(b.expected is None for b in case.buffers)


def test_a_pending_case_runs_as_pending_never_as_pass(make_case):
    # nothing to compare the words with: the cell says so instead of passing
    (make_case.root / "tiny.cu").write_text("// kernel\n")
    pending = run_case(load_case(_write(make_case, PENDING)), "interp")
    assert pending.status is Status.PENDING and "record-truth" in pending.message
    assert run_case(load_case(_write(make_case, GOOD)), "interp").status is not Status.PENDING


def test_pending_case_needs_a_source(make_case):
    msg = _error(make_case, PENDING.replace('source = "tiny.cu"\n', ""))
    assert msg == (f'{make_case.root}/tiny.toml:8: provenance.expected: "pending" needs a CUDA '
                   "`source` (or a `cubin`) to record the expected words from")


def test_pending_case_has_no_expected_words(make_case):
    (make_case.root / "tiny.cu").write_text("// kernel\n")
    msg = _error(make_case, PENDING.replace("init = 7\n", "init = 7\nexpected = [1, 2, 3, 4]\n"))
    assert msg.startswith(f'{make_case.root}/tiny.toml:20: buffers[0].expected: a "pending" case has '
                          "no expected words yet")


def test_unknown_provenance_kind(make_case):
    msg = _error(make_case, GOOD.replace('expected = "chip"', 'expected = "guessed"'))
    assert msg == (f'{make_case.root}/tiny.toml:8: provenance.expected: must be "chip", "derived" or '
                   "\"pending\", got 'guessed'")
