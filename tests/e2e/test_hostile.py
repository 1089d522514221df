"""A bad input costs its own cell and nothing more: results survive a full disk and Ctrl-C,
case files cannot reach outside the library, terminals see no raw escapes, the SPIR-V cache
cannot poison a run, one broken case file is one ERROR row, values are checked where they
enter, and the command line answers every mistake with one line, never a traceback.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from warpboard import cli
from warpboard.harness import files
from warpboard.harness.case.model import CaseError, load_case
from warpboard.harness.run import cache, devices, engine
from warpboard.harness.run.dispatch import prepare, translate_case
from warpboard.harness.run.results import Status
from warpboard.harness.vk import DeviceInfo

from support.paths import ROOT

WARPBOARD = [sys.executable, "-m", "warpboard"]
SPIN = """        /*0000*/                   S2R R0, SR_TID.X ;
.L_x_1:
        /*0010*/                   IADD3 R0, R0, 0x1, RZ ;
        /*0020*/                   BRA `(.L_x_1) ;
        /*0030*/                   EXIT ;
"""
PASSING = {"buffers": [{"name": "out", "words": 1, "init": 0, "expected": [0]}]}


def run_cli(*argv) -> int:
    return cli.main([str(a) for a in argv])


@contextlib.contextmanager
def file_size_limit(nbytes: int):
    """Writes past ``nbytes`` fail (EFBIG) in this process, as on a full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".tmp" in p.name)


@pytest.fixture
def no_run(monkeypatch):
    """Fails the test if any cell would run."""
    def refuse(*args, **kwargs):
        raise AssertionError("a cell ran")
    monkeypatch.setattr(engine, "run_matrix", refuse)


@pytest.fixture
def library(make_case):
    """A case root with three passing cases."""
    for name in ("a", "b", "c"):
        make_case.write(f"basic/{name}", **PASSING)
    return make_case.root


# ================================================================ 1. no lost results
def test_run_keeps_the_old_results_when_the_disk_fills(library, tmp_path, capsys):
    old = tmp_path / "old.json"
    old.write_text('{"old": true}')
    with file_size_limit(1024):
        code = run_cli("run", "--device", "none", "--root", library, "-o", old)
    assert code == 1
    assert old.read_text() == '{"old": true}'
    assert leftovers(tmp_path) == []
    err = capsys.readouterr().err
    assert f"{old}: cannot write" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["report", "merge", "outdir"])
def test_reports_keep_the_old_file_when_the_disk_fills(command, results, tmp_path, capsys):
    source = tmp_path / "results.json"
    source.write_text(json.dumps(results))
    out = tmp_path / "out"
    out.mkdir()
    target = out / ("scoreboard.md" if command == "outdir" else "x.out")
    target.write_text("old")
    argv = {"report": ["report", source, "--format", "html", "-o", target],
            "merge": ["merge", source, source, "-o", target],
            "outdir": ["report", source, "--outdir", out]}[command]
    with file_size_limit(512):
        code = run_cli(*argv)
    assert code == 1, capsys.readouterr().err
    assert target.read_text() == "old" and leftovers(out) == []


def test_an_atomic_write_that_fails_leaves_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text("old")

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(files.os, "fsync", no_space)
    with pytest.raises(files.OutputError, match=r"r\.json: cannot write: No space left on device"):
        files.write_atomic(target, "new" * 1000)
    assert target.read_text() == "old" and leftovers(tmp_path) == []


def test_an_atomic_write_keeps_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        files.write_atomic(tmp_path / "new.json", "{}")
    finally:
        os.umask(umask)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o644
    (tmp_path / "old.json").write_text("")
    (tmp_path / "old.json").chmod(0o640)
    files.write_atomic(tmp_path / "old.json", "{}")
    assert (tmp_path / "old.json").stat().st_mode & 0o777 == 0o640


def test_output_naming_a_directory_is_a_usage_error_before_any_cell(library, tmp_path, capsys, no_run):
    assert run_cli("run", "--device", "none", "--root", library, "-o", tmp_path) == 2
    assert capsys.readouterr().err.strip() == f"warpboard run: error: {tmp_path} is a directory, not a file"
    assert run_cli("merge", tmp_path / "a.json", "-o", tmp_path) == 2


def test_ctrl_c_stops_the_workers_and_writes_what_finished(make_case, tmp_path):
    make_case.write("basic/a_quick", **PASSING)
    for name in ("b_spin", "c_spin", "d_spin"):
        make_case.write(f"spin/{name}", sass=SPIN, step_budget=1 << 24, **PASSING)
    out = tmp_path / "partial.json"
    proc = subprocess.Popen(WARPBOARD + ["run", "-v", "--device", "none", "--root", str(make_case.root),
                                         "-o", str(out)], cwd=ROOT, stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    first = proc.stderr.readline()
    assert "basic/a_quick" in first and "PASS" in first, first
    time.sleep(0.5)                                 # b_spin is running in the worker
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert time.monotonic() - started < 15
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    doc = json.loads(out.read_text())
    assert doc["partial"] is True
    assert [(r["case"], r["status"]) for r in doc["results"]] == [("basic/a_quick", "PASS")]


# ================================================================ 2. case paths stay in the library
@pytest.mark.parametrize("key, name", [
    ("listing", "../../../../../../../../etc/passwd"),
    ("listing", "/etc/passwd"),
    ("listing", "../../outside.sass"),
    ("source", "../../outside.cu"),
    ("listing", "link.sass"),
])
def test_case_paths_are_confined_to_the_case_root(make_case, key, name):
    outside = make_case.root.parent
    (outside / "outside.sass").write_text("        /*0000*/                   EXIT ;\n")
    (outside / "outside.cu").write_text("// not in the library\n")
    (make_case.root / "basic").mkdir()
    (make_case.root / "basic" / "link.sass").symlink_to(outside / "outside.sass")
    parts = {"listing_file": None, **PASSING}
    text = make_case.path("basic/evil")
    make_case.write("basic/evil", **parts, **({"source": name} if key == "source" else {}))
    if key == "listing":
        lines = text.read_text().splitlines()
        start = lines.index("sass = '''")
        lines[start:start + 3] = [f"listing = {json.dumps(name)}"]
        text.write_text("\n".join(lines) + "\n")
    with pytest.raises(CaseError) as err:
        load_case(text, make_case.root)
    line = next(i for i, t in enumerate(text.read_text().splitlines(), 1) if t.startswith(key))
    assert str(err.value) == f"{text}:{line}: {key}: {name!r} is outside the case root {make_case.root}"


def test_record_truth_refuses_a_source_outside_the_library(make_case, capsys):
    (make_case.root.parent / "outside.cu").write_text("// not in the library\n")
    make_case.write("truth/evil", source="../../outside.cu", **PASSING)
    assert run_cli("record-truth", "--root", make_case.root, "truth/evil") == 2
    assert "source: '../../outside.cu' is outside the case root" in capsys.readouterr().err


# ================================================================ 3. output sanitised for terminals
def test_escapes_in_case_ids_and_messages_never_reach_the_terminal(make_case, capsys):
    make_case.write("basic/red\x1b[31mALERT\x1b]0;title\x07",
                    buffers=[{"name": "out", "words": 1, "init": 0, "expected": [1]}])
    make_case.write_text("basic/bad", "name = 'x\x1b[2J'\nsummary = 3\n")
    assert run_cli("run", "-v", "--device", "none", "--root", make_case.root) == 1      # a FAIL and an ERROR
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert "\x1b" not in stream and "\x07" not in stream
    assert "FAIL" in captured.err and "ERROR" in captured.err


def test_a_results_file_cannot_put_escapes_in_the_table(results, tmp_path, capsys):
    results["results"][0]["status"] = "\x1b[2JPWNED"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results))
    run_cli("report", path)
    assert "\x1b" not in capsys.readouterr().out


# ================================================================ 4. the SPIR-V cache verifies its files
CACHED = ROOT / "cases" / "truth" / "loop_ballot.toml"


def test_a_truncated_cache_entry_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPBOARD_CACHE", str(tmp_path))
    prep = prepare(load_case(CACHED))
    first, _ = translate_case(prep)
    for entry in (tmp_path / "spirv").rglob("*.spv"):
        entry.write_bytes(entry.read_bytes()[:64])
    again, _ = translate_case(prep)
    assert again.spirv == first.spirv and not again.cached
    third, _ = translate_case(prep)                 # the good entry is back
    assert third.cached and third.spirv == first.spirv


def test_an_unusable_cache_folder_means_no_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("WARPBOARD_CACHE", str(blocker))
    shader, _ = translate_case(prepare(load_case(CACHED)))
    assert shader.spirv[:4] == cache.SPIRV_MAGIC and not shader.cached


def test_a_full_cache_folder_means_no_cache_and_no_temporary_files(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPBOARD_CACHE", str(tmp_path))
    prep = prepare(load_case(CACHED))
    before = set(tmp_path.rglob("*"))          # the words' verdict, kept when the case loaded
    with file_size_limit(64):
        shader, _ = translate_case(prep)
    assert not shader.cached and len(shader.spirv) > 64
    assert not [p for p in set(tmp_path.rglob("*")) - before if not p.is_dir()]     # folders at most


# ================================================================ 5. one bad case file, one ERROR row
BAD_FILES = {
    "zero_block": (None, "launch.block: must be a positive integer"),
    "not_utf8": (b"name = 'x'\nsummary = '\xff\xfe'\n", ":2: case file is not UTF-8"),
    "deep": ("x = " + "[" * 5000 + "]" * 5000 + "\n", "invalid TOML: values nested too deeply"),
    "bad_toml": ("name = \n", ":1: invalid TOML"),
}


def test_a_bad_case_file_is_an_error_row_and_the_others_run(library, make_case, tmp_path, capsys):
    for name, (text, _) in BAD_FILES.items():
        if text is None:
            make_case.write(f"broken/{name}", block=[0, 1, 1], **PASSING)
            continue
        path = library / "broken" / f"{name}.toml"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "r.json"
    assert run_cli("run", "--device", "none", "--root", library, "-o", out) == 1       # the broken rows
    cells = {r["case"]: r for r in json.loads(out.read_text())["results"]}
    assert {c: r["status"] for c, r in cells.items() if c.startswith("basic/")} == \
        {"basic/a": "PASS", "basic/b": "PASS", "basic/c": "PASS"}
    for name, (_, message) in BAD_FILES.items():
        cell = cells[f"broken/{name}"]
        assert cell["status"] == "ERROR" and cell["message"].startswith(str(library / "broken" / name))
        assert message in cell["message"], cell["message"]
    assert "Traceback" not in capsys.readouterr().err


# ================================================================ 6. values checked where they enter
@pytest.mark.parametrize("parts, message", [
    ({"step_budget": 2 ** 32}, ":4: step_budget: 4294967296 is outside 1..16777216"),
    ({"grid": [65536, 65536, 65536]}, "launch.grid: x = 65536, at most 65535"),
    ({"grid": [1024, 1024, 1]}, "launch.grid: 33554432 threads in the launch, at most 262144"),
    ({"block": [1, 1, 128]}, "launch.block: z = 128, at most 64"),
    ({"buffers": [{"name": "out", "words": 268435456, "init": 0}]},
     "buffers[0].words: 268435456 is outside 1..16777216"),
    ({"summary": "x" * 600}, ":2: summary: 600 characters, at most 500"),
])
def test_case_values_are_limited_on_load(make_case, parts, message):
    parts = {**PASSING, **parts}
    with pytest.raises(CaseError, match=message.replace("[", r"\[").replace(".", r"\.")):
        make_case("basic/big", **parts)


@pytest.mark.parametrize("option", [["--budget", "-5"], ["--budget", "0"], ["--budget", str(2 ** 32)],
                                    ["--timeout", "-1"], ["--timeout", "nan"], ["--repeat", "0"]])
def test_run_options_are_limited(library, option, capsys, no_run):
    assert run_cli("run", "--device", "none", "--root", library, *option) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"warpboard run: error: argument {option[0]}: ")


def test_a_launch_beyond_the_device_is_unsupported(make_case):
    case = make_case("basic/wide", block=512, **PASSING)
    small = SimpleNamespace(max_workgroup_invocations=256, max_workgroup_size=(256, 256, 64),
                            max_workgroup_count=(65535,) * 3, max_shared_memory=49152,
                            max_storage_buffer_range=1 << 27, subgroup_size=32)
    result = engine.run_case(case, "small-gpu", SimpleNamespace(info=small))
    assert result.status is Status.UNSUPPORTED
    assert result.message == ("block [512, 1, 1] exceeds the device's limits "
                              "(256 invocations, [256, 256, 64] per dimension)")


# ================================================================ 8. report --against and bad results files
def test_a_vanished_device_or_cell_is_a_regression(results, baseline, tmp_path, capsys):
    current = dict(results, devices=results["devices"][:1],
                   results=[r for r in results["results"]
                            if r["device"] == "lavapipe-w4" and r["case"] != "truth/a"])
    paths = []
    for name, doc in (("new", current), ("old", baseline)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(doc))
    code = run_cli("report", paths[0], "--against", paths[1], "--fail-on", "regressions")
    out = capsys.readouterr().out
    assert code == 1
    assert "Regressions: 0" not in out
    assert "truth/a on lavapipe-w4: FAIL -> —" in out          # the cell is gone
    assert "truth/evil on lavapipe-w8: PASS -> —" in out       # its device is gone
    assert "Devices gone: 1\n  lavapipe-w8" in out


MALFORMED = {
    "not_utf8": b"\xff\xfe{}",
    "deep": b"[" * 100000 + b"]" * 100000,
    "results_not_objects": json.dumps({"version": 1, "results": [1, 2]}).encode(),
    "missing_status": json.dumps({"version": 1, "results": [{"case": "a", "device": "d"}]}).encode(),
    "status_not_text": json.dumps({"version": 1, "results": [{"case": "a", "device": "d",
                                                              "status": 3}]}).encode(),
    "device_without_id": json.dumps({"version": 1, "devices": [{"name": "x"}]}).encode(),
    "case_id_list": json.dumps({"version": 1, "cases": [{"id": ["a"]}]}).encode(),
    "mismatch_text": json.dumps({"version": 1, "results": [{"case": "a", "device": "d", "status": "FAIL",
                                                            "mismatches": ["x"]}]}).encode(),
    "message_number": json.dumps({"version": 1, "results": [{"case": "a", "device": "d", "status": "FAIL",
                                                             "message": 5}]}).encode(),
    "notes_object": json.dumps({"version": 1, "notes": {"a": 1}}).encode(),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
@pytest.mark.parametrize("argv", [["report"], ["report", "--format", "html"], ["merge", "-o", "m.json"],
                                  ["report", "GOOD", "--against"]])
def test_a_malformed_results_file_is_one_line(name, argv, results, tmp_path, capsys):
    bad, good = tmp_path / f"{name}.json", tmp_path / "good.json"
    bad.write_bytes(MALFORMED[name])
    good.write_text(json.dumps(results))
    argv = [str(good) if a == "GOOD" else str(tmp_path / a) if a.endswith(".json") else a for a in argv]
    assert run_cli(*argv[:1], *argv[1:], bad) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err and "Traceback" not in err, err


# ================================================================ 9. the command line
@pytest.mark.parametrize("argv, message", [
    (["run", "--device", "nvidia*", "basic/*"], "warpboard run: error: device pattern 'nvidia*' matches no device"),
    (["run", "--root", "no/such/folder"], "warpboard run: error: no/such/folder: no such cases directory"),
    (["run", "--device", "none", "--expectations", "no/such.txt", "basic/*"],
     "warpboard run: error: no/such.txt: cannot read the expectations: No such file or directory"),
    (["run", "--device", "none", "nomatch/*"], "warpboard run: error: no case in cases matches nomatch/*"),
    (["translate", "missing.sass"], "warpboard translate: error: missing.sass: cannot read"),
    (["translate", "LISTING", "--kernel", "nope"], "warpboard translate: error: "),
    (["translate", "LISTING", "--block", "0", "0", "0"], "warpboard translate: error: --block '0,0,0': give 1-3 "
                                                          "positive integers"),
    (["translate", "LISTING", "--block", "2048", "1", "1"], "warpboard translate: error: --block 2048 1 1: at most"),
    (["translate", "LISTING", "--block", "64", "32", "1"], "warpboard translate: error: --block 64 32 1: at most"),
    (["translate", "LISTING", "--shared-bytes", "-1"], "warpboard translate: error: argument --shared-bytes"),
])
def test_command_line_mistakes_are_one_line_and_status_2(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    listing = tmp_path / "k.sass"
    listing.write_text("        /*0000*/                   EXIT ;\n")
    argv = [str(listing) if a == "LISTING" else a for a in argv]
    monkeypatch.setattr(engine, "run_matrix", lambda *a, **k: pytest.fail("a cell ran"))
    monkeypatch.setattr(devices, "discover", lambda *a, **k: [])
    assert run_cli(*argv, "-o", tmp_path / "out.bin") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(message), err
    assert not (tmp_path / "out.bin").exists()


# ================================================================ 10. devices told apart by their UUIDs
def _lavapipe(index: int, mesa: str, width: int):
    return DeviceInfo(
        index=index, name=f"llvmpipe (LLVM 15.0.6, {width * 32} bits)", vendor_id=0x10005, device_id=0,
        device_type="cpu", driver_name="llvmpipe", driver_info=f"Mesa {mesa} (LLVM 15.0.6)",
        driver_version="0.0.1", driver_version_raw=1, api_version="1.3.230", subgroup_size=width,
        subgroup_stages=("compute",), subgroup_operations=("basic",), min_subgroup_size=width,
        max_subgroup_size=width, max_workgroup_size=(1024, 1024, 1024), max_workgroup_invocations=1024,
        max_workgroup_count=(65535, 65535, 65535), max_shared_memory=32768,
        max_storage_buffer_range=1 << 31, shader_int64=True, features=(),
        device_uuid=f"mesa{mesa}".encode().hex().ljust(32, "0"), driver_uuid="6c6c766d70697065")


def _probe_with(drivers: list[str]):
    widths = {"128": 4, "256": 8, "512": 16}

    def probe(env, timeout_s):
        width = widths.get(env.get("LP_NATIVE_VECTOR_WIDTH"), 8)
        # the second probe process may list the drivers in the other order
        order = drivers if width != 8 else drivers[::-1]
        return [_lavapipe(i, mesa, width) for i, mesa in enumerate(order)]
    return probe


def test_two_lavapipe_builds_are_two_sets_of_columns(monkeypatch):
    monkeypatch.setattr(devices, "_probe", _probe_with(["22.3.6", "25.0.1"]))
    found = {c.id: c for c in devices.discover()}
    assert sorted(found) == sorted(f"lavapipe-{v}-w{w}" for v in ("22.3.6", "25.0.1") for w in (4, 8, 16))
    for cid, config in found.items():
        mesa = cid.split("-")[1]
        assert config.info.driver_info.startswith(f"Mesa {mesa} ")
        assert config.info.subgroup_size == int(cid.rsplit("-w", 1)[1])


def test_a_lone_lavapipe_keeps_its_short_ids(monkeypatch):
    monkeypatch.setattr(devices, "_probe", _probe_with(["22.3.6"]))
    assert [c.id for c in devices.discover()] == ["lavapipe-w4", "lavapipe-w8", "lavapipe-w16"]


def test_devices_report_their_uuids(vulkan_infos):
    for info in vulkan_infos:
        assert len(info.device_uuid) == 32 and len(info.driver_uuid) == 32
        assert info.identity == (info.device_uuid, info.driver_uuid)


# ================================================================ 11. CI can go red
def test_ci_runs_the_tests_and_a_scoreboard_that_can_fail():
    workflow = (ROOT / "ci" / "scoreboard.yml").read_text()
    assert (ROOT / ".github" / "workflows" / "scoreboard.yml").read_text() == workflow
    runs = [line.split("run:", 1)[1].strip() for line in workflow.splitlines()
            if line.strip().startswith("run:") and not line.strip().startswith("#")]
    assert "make test" in runs and "make scoreboard" in runs
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nscoreboard:", 1)[1].split("\n\n", 1)[0]
    assert "warpboard run " in recipe and "--exit-zero" not in recipe
    assert "always()" not in workflow.replace("`always()`", "")     # !cancelled(): a cancelled run stops



def test_the_fuzz_shards_cover_every_program_and_are_merged():
    """The matrix's shards are 1..N of the N each leg passes, and fuzz-merge reads them all."""
    workflow = (ROOT / "ci" / "scoreboard.yml").read_text()
    fuzz = workflow.split("\n  fuzz:\n", 1)[1].split("\n  fuzz-merge:\n", 1)
    shards = [int(k) for k in re.search(r"shard: \[([0-9, ]+)\]", fuzz[0]).group(1).split(",")]
    n = int(re.search(r"--shard \$\{\{ matrix.shard \}\}/([0-9]+)", fuzz[0]).group(1))
    assert shards == list(range(1, n + 1))
    assert "needs: [fuzz]" in fuzz[1] and "warpboard fuzz-merge shards/fuzz-$seed-*/" in fuzz[1]

def test_run_fails_on_a_cell_that_is_neither_pass_nor_expected(make_case, tmp_path):
    make_case.write("basic/wrong", buffers=[{"name": "out", "words": 1, "init": 0, "expected": [1]}])
    expectations = tmp_path / "expectations.txt"
    expectations.write_text("")
    argv = ["run", "--device", "none", "--root", make_case.root, "--expectations", expectations]
    assert run_cli(*argv) == 1 and run_cli(*argv, "--exit-zero") == 0
    expectations.write_text("interp basic/wrong FAIL\n")
    assert run_cli(*argv) == 0
