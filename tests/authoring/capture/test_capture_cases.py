"""The case-writing half of ``warpboard capture`` (authoring/capture/cases.py), without a GPU.

``fixture.tgz`` is a capture recorded on an H200 (driver 580.159.04, CUDA 13.0) of
``capture_fixture.cu`` beside it, run as ``warpboard capture --max-per-kernel 3 --
./capture_fixture``: its cubins and listings, both runs' launch logs and the memory each launch
touched. Its launches make two cases and six reasons; the tests check the cases byte for
byte against what the program did (the parameters it passed, the constants it set) and run
them on the interpreter.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import struct
import tarfile
from pathlib import Path

import pytest
from warpboard.authoring.capture import cases as capture_cases
from warpboard.authoring.capture import check as capture_check
from warpboard.authoring.capture.log import CaptureError
from warpboard.harness.case.model import CaseError, load_case
from warpboard.harness.run.engine import run_case
from warpboard.harness.run.results import Status
from warpboard.translator import abi

HERE = Path(__file__).parent
FIXTURE = HERE / "fixture.tgz"


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """The recorded capture folder, unpacked."""
    top = tmp_path_factory.mktemp("capture")
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(top, filter="data")
    return top / "fixture"


@pytest.fixture(scope="module")
def written(recorded, tmp_path_factory) -> tuple[Path, list[capture_cases.Outcome]]:
    out = tmp_path_factory.mktemp("cases")
    return out, capture_cases.write_cases(recorded, out)


def _copy(recorded: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "capture"
    shutil.copytree(recorded, folder)
    return folder


def _edit_launch(folder: Path, index: int, edit) -> None:
    """``edit(entry)`` on launch ``index`` of both runs' logs (as if the program had done otherwise)."""
    for run in ("run1", "run2"):
        log = folder / run / "launches.jsonl"
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        for entry in entries:
            if entry.get("launch") == index:
                edit(entry)
        log.write_text("".join(json.dumps(e) + "\n" for e in entries))


def _rewrite_launch(folder: Path, index: int, **changes) -> None:
    _edit_launch(folder, index, lambda entry: entry.update(changes))


# ---------------------------------------------------------------- what became of each launch

def test_every_launch_is_a_case_or_a_reason(written):
    out, outcomes = written
    assert [(o.launch, o.kernel, o.case) for o in outcomes if o.case] == [
        (0, "scale", "capture_fixture/scale_0"), (1, "by_struct", "capture_fixture/by_struct_1")]
    reasons = {o.launch: o.reason for o in outcomes if o.reason}
    assert reasons[2].startswith("managed memory")
    assert reasons[3].startswith("host-mapped memory")
    assert reasons[4].startswith("pointers stored inside buffers")
    assert "the second run gave other words" in reasons[5]        # stamp: %globaltimer
    assert reasons[6] == reasons[7] == "over --max-per-kernel"
    summary = json.loads((out / "capture_fixture" / "capture.json").read_text())
    assert summary["launches"] == 8 and len(summary["cases"]) == 2 and len(summary["skipped"]) == 6
    assert {s["launch"] for s in summary["skipped"]} == {2, 3, 4, 5, 6, 7}


def test_cases_carry_the_chip_provenance(written):
    out, _ = written
    case = load_case(out / "capture_fixture" / "scale_0.toml", out)
    assert case.provenance["expected"] == "chip"
    assert "NVIDIA H200" in case.provenance["recorded_on"] and "launch 0 of `./capture_fixture`" in case.provenance["recorded_on"]
    assert "compute_86" in case.provenance["listing"]
    assert case.tags == ("captured",)
    assert (case.grid, case.block, case.shared_bytes) == ((4, 1, 1), (256, 1, 1), 0)


# ---------------------------------------------------------------- relocation

def test_pointer_inside_a_struct_parameter_keeps_its_offset(written):
    """by_struct(Job{b + 16, 400, 0.5f}, a): the struct's pointer points 64 bytes into b."""
    out, _ = written
    case = load_case(out / "capture_fixture" / "by_struct_1.toml", out)
    kinds = [(p.kind, p.value, p.offset) for p in case.params]
    assert kinds[0] == ("buffer", "b0", 64)
    assert kinds[1] == ("u64", (f32(0.5) << 32) | 400, 0)      # n and k, as the driver laid them out
    assert kinds[2] == ("buffer", "b1", 0)
    # b0 is scale's output (b), b1 its input (a): the words before the launch are a's values
    a = [f32(((i * 37) % 101) / 100.0) for i in range(1024)]
    assert case.buffers[1].init == tuple(a)


def test_plain_pointers_and_scalars(written):
    out, _ = written
    case = load_case(out / "capture_fixture" / "scale_0.toml", out)
    assert [(p.kind, p.value, p.offset) for p in case.params] == [
        ("buffer", "b0", 0), ("buffer", "b1", 0), ("u32", 1000, 0)]


# ---------------------------------------------------------------- constant banks

def test_bank3_is_what_the_program_copied_to_the_symbol(written):
    out, _ = written
    case = load_case(out / "capture_fixture" / "scale_0.toml", out)
    bank3 = [c for c in case.constants if c[0] == 3]
    assert bank3 == [(3, 0, tuple(f32(x) for x in (1.5, -2.0, 0.25, 3.0)))]


def test_bank4_points_to_the_device_variable_buffer(written):
    """scale adds to ``__device__ unsigned counter``: bank 4 holds its address, which the case
    relocates to the buffer named after it, with the chip's count after the launch."""
    out, _ = written
    case = load_case(out / "capture_fixture" / "scale_0.toml", out)
    names = [b.name for b in case.buffers]
    counter = names.index("counter")
    assert case.buffers[counter].init == (0,) and case.buffers[counter].expected == (1000,)
    (bank, offset, words), = [c for c in case.constants if c[0] == 4]
    assert (words[1] << 32 | words[0]) == abi.buffer_address(counter) + 0


# ---------------------------------------------------------------- binary buffers

def test_large_buffers_live_in_gzip_files_named_by_their_hash(written):
    out, _ = written
    text = (out / "capture_fixture" / "scale_0.toml").read_text()
    files = re.findall(r'file = "(data/[0-9a-f]{32}\.gz)", sha256 = "([0-9a-f]{64})"', text)
    assert len(files) == 4
    for name, digest in files:
        raw = gzip.decompress((out / "capture_fixture" / name).read_bytes())
        assert len(raw) == 4096 and hashlib.sha256(raw).hexdigest() == digest
        assert name == f"data/{digest[:32]}.gz"
    # scale's output is by_struct's input: one file for both
    assert len(list((out / "capture_fixture" / "data").glob("*.gz"))) == 4


def _scale_case_copy(written, tmp_path) -> tuple[Path, Path]:
    """A copy of scale_0's folder, with the path of its case and of its b0 init data file."""
    out, _ = written
    folder = tmp_path / "capture_fixture"
    shutil.copytree(out / "capture_fixture", folder)
    case = folder / "scale_0.toml"
    name = re.search(r'init = \{ file = "(data/[0-9a-f]+\.gz)"', case.read_text()).group(1)
    return case, folder / name


def test_a_data_file_whose_hash_differs_is_refused(written, tmp_path):
    case, data = _scale_case_copy(written, tmp_path)
    raw = bytearray(gzip.decompress(data.read_bytes()))
    raw[0] ^= 1
    data.write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(CaseError, match=r"scale_0\.toml:\d+: .*sha256"):
        load_case(case, tmp_path)


def test_a_data_file_of_the_wrong_size_is_refused(written, tmp_path):
    case, data = _scale_case_copy(written, tmp_path)
    data.write_bytes(gzip.compress(bytes(4092)))
    with pytest.raises(CaseError, match="holds 4092 bytes, but words = 1024"):
        load_case(case, tmp_path)


# ---------------------------------------------------------------- the cases run

@pytest.mark.parametrize("name", ["scale_0", "by_struct_1"])
def test_captured_cases_pass_on_the_interpreter(written, name):
    out, _ = written
    result = run_case(load_case(out / "capture_fixture" / f"{name}.toml", out), "interp")
    assert result.status == Status.PASS, result.message


def test_a_wrong_expected_word_fails_where_it_is(written, tmp_path):
    out, _ = written
    folder = tmp_path / "capture_fixture"
    shutil.copytree(out / "capture_fixture", folder)
    case = folder / "scale_0.toml"
    case.write_text(case.read_text().replace("expected = [0x3e8]", "expected = [0x3e9]"))
    result = run_case(load_case(case, tmp_path), "interp")
    assert result.status == Status.FAIL
    assert "counter[0]: expected 0x3e9, got 0x3e8" in result.message


# ---------------------------------------------------------------- more reasons, from edited logs
# (with no replay on the interpreter: the reasons come before it)

@pytest.mark.parametrize("changes, reason", [
    ({"cooperative": 1}, "a cooperative launch"),
    ({"cluster": 1}, "thread block clusters"),
    ({"block": [2048, 1, 1]}, "over CUDA's limits"),
    ({"grid": [2048, 1, 1]}, "a case holds at most 262144"),
    ({"skip": "no parameter info for the kernel"}, "no parameter info for the kernel"),
])
def test_launches_a_case_cannot_hold_are_skipped_with_the_reason(recorded, tmp_path, changes, reason):
    folder = _copy(recorded, tmp_path)
    _rewrite_launch(folder, 0, **changes)
    outcome = capture_cases.write_cases(folder, tmp_path / "out", check="off")[0]
    assert outcome.case is None and reason in outcome.reason


def test_launches_on_several_streams_are_skipped(recorded, tmp_path):
    folder = _copy(recorded, tmp_path)
    _rewrite_launch(folder, 1, stream=7)
    outcomes = capture_cases.write_cases(folder, tmp_path / "out", check="off")
    assert not any(o.case for o in outcomes)
    assert all("2 streams may overlap" in o.reason for o in outcomes)


def test_a_launch_missing_from_the_second_run_is_skipped(recorded, tmp_path):
    folder = _copy(recorded, tmp_path)
    log = folder / "run2" / "launches.jsonl"
    log.write_text("".join(line + "\n" for line in log.read_text().splitlines() if '"launch": 1,' not in line))
    outcomes = {o.launch: o for o in capture_cases.write_cases(folder, tmp_path / "out", check="off")}
    assert outcomes[0].case and "not in the second run" in outcomes[1].reason


def test_a_listing_with_texture_instructions_is_skipped(recorded, tmp_path):
    folder = _copy(recorded, tmp_path)
    sass = next(p for p in (folder / "cubins").glob("*.sass") if "by_struct" in p.read_text())
    text = sass.read_text()
    start = text.index(".text.by_struct:")
    sass.write_text(text[:start] + text[start:].replace("EXIT ;", "TEX.SCR.LL R4, R6, R4, R6, 0x0, 0x58, 2D ;", 1))
    outcomes = {o.launch: o for o in capture_cases.write_cases(folder, tmp_path / "out", check="off")}
    assert "textures and surfaces (TEX" in outcomes[1].reason and outcomes[0].case


def test_a_capture_without_meta_says_where(tmp_path):
    with pytest.raises(CaptureError, match="meta.json"):
        capture_cases.write_cases(tmp_path, tmp_path / "out")


# ---------------------------------------------------------------- replay on the interpreter, guards
# A program that reads or writes past its allocation is no case: the chip does not fault there,
# a case holds only the allocations. Small launches are replayed on the interpreter by default
# (--check: all, --no-check: none); the interposer's guards see stores past the end on the chip.

def _shrink_region(folder: Path, launch: int, region: int, size: int) -> None:
    """As if the allocation had been ``size`` bytes: the kernel then reads past its end."""
    _edit_launch(folder, launch, lambda entry: entry["regions"][region].update(size=size))
    for run in ("run1", "run2"):
        for side in ("before", "after"):
            data = folder / run / f"L{launch:06d}.r{region}.{side}"
            data.write_bytes(data.read_bytes()[:size])


def test_check_skips_a_launch_that_reads_past_its_allocation(recorded, tmp_path):
    """scale reads a[0..999]; with a recorded as 512 words, its replay faults outside every
    buffer, and the check turns the case into that reason (without it, the case is written and
    faults when it runs: loud, but not the program's launch)."""
    folder = _copy(recorded, tmp_path)
    _shrink_region(folder, 0, 0, 2048)
    plain = {o.launch: o for o in capture_cases.write_cases(folder, tmp_path / "plain", check=False)}
    assert plain[0].case == "capture_fixture/scale_0" and not plain[0].checked
    checked = {o.launch: o for o in capture_cases.write_cases(folder, tmp_path / "checked", check=True)}
    assert checked[0].case is None
    assert checked[0].reason.startswith("reads outside its allocations: thread 0 (warp 0 lane 0) of block (2, 0, 0)")
    assert "global load of 4 bytes at 0x" in checked[0].reason and "outside every buffer" in checked[0].reason
    assert not (tmp_path / "checked" / "capture_fixture" / "scale_0.toml").exists()
    assert checked[1].case == "capture_fixture/by_struct_1"          # a faithful one stays


def _b_recorded_short(recorded: Path, tmp_path: Path) -> Path:
    """scale(a, b, 1000) stores b[0..999]; with b (region 1) recorded as 512 words, as if the
    program had allocated that much, its threads 512 and up store past b's end: the chip does
    not fault there, so the chip's words of a case could never be matched."""
    folder = _copy(recorded, tmp_path)
    _shrink_region(folder, 0, 1, 2048)
    return folder


def test_a_launch_that_writes_past_its_allocation_is_skipped_by_default(recorded, tmp_path):
    folder = _b_recorded_short(recorded, tmp_path)
    outcomes = {o.launch: o for o in capture_cases.write_cases(folder, tmp_path / "out")}
    assert outcomes[0].case is None
    # the first thread to store past the end: thread 0 of block 2 (the 513th), where and at what address
    assert re.fullmatch(r"writes outside its allocations: thread 0 \(warp 0 lane 0\) of block \(2, 0, 0\) at pc 0x[0-9a-f]{4} "
                        r"\(capture_fixture/capture_fixture_\d\.sm_86\.sass:\d+\): global store of 4 bytes at 0x[0-9a-f]+ "
                        r"outside every buffer", outcomes[0].reason), outcomes[0].reason
    assert not (tmp_path / "out" / "capture_fixture" / "scale_0.toml").exists()
    assert outcomes[1].case == "capture_fixture/by_struct_1" and outcomes[1].checked   # a well-behaved launch stays
    summary = json.loads((tmp_path / "out" / "capture_fixture" / "capture.json").read_text())
    assert summary["cases"] == ["capture_fixture/by_struct_1"] and summary["check"] == "cheap"
    assert {"launch": 0, "kernel": "scale", "reason": outcomes[0].reason} in summary["skipped"]


def test_the_default_replay_leaves_the_faithful_cases_alone(written):
    _, outcomes = written
    assert [(o.case, o.checked) for o in outcomes if o.case] == [
        ("capture_fixture/scale_0", True), ("capture_fixture/by_struct_1", True)]


def test_no_check_writes_the_case_and_full_check_replays_every_launch(recorded, tmp_path, monkeypatch):
    folder = _b_recorded_short(recorded, tmp_path)
    off = capture_cases.write_cases(folder, tmp_path / "off", check="off")[0]
    assert off.case == "capture_fixture/scale_0" and not off.checked
    monkeypatch.setattr(capture_check, "CHEAP_THREADS", 512)          # scale's 1024 threads are over it
    cheap = capture_cases.write_cases(folder, tmp_path / "cheap")
    assert cheap[0].case == "capture_fixture/scale_0" and not cheap[0].checked
    summary = json.loads((tmp_path / "cheap" / "capture_fixture" / "capture.json").read_text())
    assert summary["unchecked"] == ["capture_fixture/scale_0"]    # by_struct's 512 threads were replayed
    full = capture_cases.write_cases(folder, tmp_path / "full", check="full")[0]
    assert full.case is None and full.reason.startswith("writes outside its allocations: thread 0")


def test_a_replay_past_its_time_limit_leaves_the_case_unchecked(recorded, tmp_path, monkeypatch):
    folder = _b_recorded_short(recorded, tmp_path)
    monkeypatch.setattr(capture_check, "CHEAP_SECONDS", 0.001)
    outcomes = capture_cases.write_cases(folder, tmp_path / "out")
    assert [(o.case, o.checked) for o in outcomes if o.case] == [
        ("capture_fixture/scale_0", False), ("capture_fixture/by_struct_1", False)]


def test_a_guard_the_launch_changed_is_a_write_outside_its_allocations(recorded, tmp_path):
    """The interposer watches the first bytes of the allocation after each one a launch was
    given (when the launch was not given it too) and records the first byte the launch changed
    there: the chip's own account of a store past the end, whatever the launch's size."""
    folder = _copy(recorded, tmp_path)
    a, b = 140114860703744, 140114860707840                      # scale's a and b, 4096 bytes each
    _edit_launch(folder, 0, lambda e: e.update(guards=[{"base": b + 4096 + 512, "size": 4096, "region": 1,
                                                         "changed": -1}]))
    _edit_launch(folder, 1, lambda e: e.update(guards=[{"base": a + 4096 + 512, "size": 4096, "region": 1,
                                                         "changed": 8}]))
    outcomes = {o.launch: o for o in capture_cases.write_cases(folder, tmp_path / "out", check="off")}
    assert outcomes[0].case == "capture_fixture/scale_0"         # its guard unchanged
    assert outcomes[1].case is None
    assert outcomes[1].reason == (f"writes outside its allocations: the chip changed the byte at 0x{a + 4096 + 520:x}, "
                                  f"520 bytes past the end of region 1 (4096 bytes at 0x{a:x}), in an allocation "
                                  f"the launch was not given")


def test_the_command_counts_writes_outside_allocations(recorded, tmp_path, capsys):
    import argparse
    from warpboard.authoring.capture import cli as capture_cli
    parser = argparse.ArgumentParser()
    capture_cli.add_arguments(parser)
    assert [parser.parse_args(flags).check for flags in ([], ["--check"], ["--no-check"])] == ["cheap", "full", "off"]
    with pytest.raises(SystemExit):
        parser.parse_args(["--check", "--no-check"])
    folder = _b_recorded_short(recorded, tmp_path)
    assert capture_cli.run(parser.parse_args(["--cases-from", str(folder), "--out", str(tmp_path / "out")])) == 0
    printed = capsys.readouterr().out
    assert "1 cases in" in printed and "(1 replayed on the interpreter)" in printed
    assert re.search(r"^ +1  writes outside its allocations$", printed, re.M), printed
    assert capture_cli.run(parser.parse_args(["--cases-from", str(folder), "--out", str(tmp_path / "off"),
                                              "--no-check"])) == 0
    assert "2 cases in" in capsys.readouterr().out
