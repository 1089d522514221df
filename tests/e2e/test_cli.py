"""The status table, the one function that decides a cell's status, and the ``warpboard``
command line as a composition root above ``harness`` and ``reports``."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from warpboard import cli
from warpboard.harness.run.results import CaseResult, Outcome, Run, Status, decide
from warpboard.reports import page, render
from warpboard.translator import abi

from support.paths import ROOT

EVERY_STATUS = {"PASS", "FAIL", "XFAIL", "XPASS", "FLAKY", "LIVELOCK", "FAULT", "TIMEOUT", "DEVICE_LOST", "CRASH",
                "UNSUPPORTED", "ERROR", "PENDING"}
GREEN = {Status.PASS, Status.XFAIL, Status.UNSUPPORTED, Status.PENDING, Status.FLAKY}  # FLAKY: listed
SUBCOMMANDS = ["run", "devices", "translate", "report", "merge", "bench", "new-case", "words", "record-truth", "fuzz",
               "fuzz-merge", "reduce", "capture", "corpus", "assemble", "mufu-rates"]


# ------------------------------------------------------------------ the status table
def test_the_status_set_is_closed_and_complete():
    assert {s.value for s in Status} == EVERY_STATUS
    assert {s for s in Status if not s.is_failure} == GREEN
    colours = [page.COLOURS[s] for s in Status]
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours), colours
    assert len(set(colours)) == len(colours), "two statuses share a colour"
    assert all(s.meaning and s.meaning == s.meaning.strip() for s in Status)
    assert Status("XPASS") is Status.XPASS and str(Status.XPASS) == "XPASS"


def test_every_outcome_names_a_status_and_every_shader_code_an_outcome():
    assert all(o.status in Status for o in Outcome if o is not Outcome.OK)
    assert Outcome.OK.status is None
    shader = {o.shader_code: o for o in Outcome if o.shader_code is not None}
    assert shader == {abi.OK: Outcome.OK, abi.FAULT: Outcome.FAULT, abi.LIVELOCK: Outcome.LIVELOCK,
                      abi.BAD_PC: Outcome.BAD_PC, abi.NOT_WARPS: Outcome.NOT_WARPS}
    assert all(Outcome.from_shader(code) is o for code, o in shader.items())
    assert Outcome.from_shader(99) is Outcome.ERROR


def test_the_reports_colour_every_status_from_the_table(results):
    for s in Status:
        assert page.STATUS_COLOURS[s.value] == page.COLOURS[s]
        assert page.STATUS_MEANING[s.value] == s.meaning
    html = render.html(results)
    legend = html[html.index('<ul class="status-legend">'):]
    legend = legend[:legend.index("</ul>")]
    assert [m for m in re.findall(r"<b>([A-Z_]+)</b>", legend)] == [s.value for s in Status]


# ------------------------------------------------------------------ decide
OK, BAD = Run(Outcome.OK), Run(Outcome.OK, 2, (("out", 3, 7),))


@pytest.mark.parametrize("runs, expected, status", [
    (OK, None, Status.PASS),
    (BAD, None, Status.FAIL),
    (Run(Outcome.OK, 40), None, Status.FAIL),                 # differing words beyond those listed
    (Run(Outcome.FAULT), None, Status.FAULT),
    (Run(Outcome.LIVELOCK), None, Status.LIVELOCK),
    (Run(Outcome.BAD_PC), None, Status.ERROR),
    (Run(Outcome.NOT_WARPS), None, Status.ERROR),
    (Run(Outcome.UNSUPPORTED), None, Status.UNSUPPORTED),
    (Run(Outcome.TIMEOUT), None, Status.TIMEOUT),
    (Run(Outcome.CRASH), None, Status.CRASH),
    (Run(Outcome.ERROR), None, Status.ERROR),
    ([OK, OK, OK], None, Status.PASS),
    ([BAD, BAD], None, Status.FAIL),
    ([OK, BAD, OK], None, Status.FLAKY),
    ([BAD, Run(Outcome.OK, 2, (("out", 3, 8),))], None, Status.FLAKY),   # same count, other words
    ([Run(Outcome.FAULT), Run(Outcome.TIMEOUT)], None, Status.FLAKY),
    (BAD, True, Status.XFAIL),
    (OK, True, Status.XPASS),
    (Run(Outcome.LIVELOCK), Status.LIVELOCK, Status.XFAIL),
    (Run(Outcome.LIVELOCK), True, Status.LIVELOCK),           # expected FAIL, ended otherwise
    (BAD, False, Status.FAIL),
    ([OK, BAD], True, Status.FLAKY),
])
def test_decide(runs, expected, status):
    assert decide(runs, expected) is status


def test_decide_needs_a_run():
    with pytest.raises(ValueError, match="at least one run"):
        decide([])


def test_a_cell_read_back_from_json_is_the_same_run():
    cell = CaseResult("c", "d", Status.FAULT, message="m", outcome=Outcome.FAULT.value)
    again = CaseResult.from_json(json.loads(json.dumps(cell.to_json())))
    assert again.run == Run(Outcome.FAULT) and decide(again.run) is Status.FAULT


# ------------------------------------------------------------------ the command line
def test_help_lists_every_subcommand(capsys):
    assert cli.main(["--help"]) == 0
    listed = re.findall(r"^    (\S+)", capsys.readouterr().out, re.M)
    assert listed == SUBCOMMANDS
    assert [c.name for c in cli.COMMANDS] == SUBCOMMANDS


def test_readme_shows_every_subcommand():
    shown = set(re.findall(r"\.venv/bin/warpboard ([a-z][a-z-]*)", (ROOT / "README.md").read_text()))
    assert shown == set(SUBCOMMANDS)


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_has_help(name, capsys):
    assert cli.main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: warpboard {name} ")
    assert "-h, --help" in out


@pytest.mark.parametrize("argv, where", [
    ([], "warpboard: error: the following arguments are required: COMMAND"),
    (["frobnicate"], "warpboard: error: argument COMMAND: invalid choice: 'frobnicate'"),
    (["run", "--timeout", "soon"], "warpboard run: error: argument --timeout: invalid float value: 'soon'"),
    (["merge", "a.json"], "warpboard merge: error: the following arguments are required: -o/--output"),
    (["record-truth", "--repeat", "0"], "warpboard record-truth: error: argument --repeat: must be at least 1"),
])
def test_a_usage_error_is_one_line_and_status_2(argv, where, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(where), err


def test_report_through_the_command_line(tmp_path, capsys):
    missing = tmp_path / "none.json"
    assert cli.main(["report", str(missing)]) == 2
    assert capsys.readouterr().err.startswith(f"warpboard report: {missing}: cannot read results file")
    doc = {"version": 1, "devices": [{"id": "d"}], "cases": [{"id": "c"}],
           "results": [CaseResult("c", "d", Status.FAIL, outcome="ok").to_json()]}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    assert cli.main(["report", str(tmp_path / "r.json"), "--fail-on", "failures"]) == 1
    assert "0/1 pass (FAIL 1)" in capsys.readouterr().out


def test_python_m_warpboard_is_the_command():
    proc = subprocess.run([sys.executable, "-m", "warpboard", "devices", "--bogus"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == "warpboard devices: error: unrecognized arguments: --bogus (see warpboard devices --help)\n"


@pytest.mark.parametrize("block", [["64"], ["64,1,1"], ["64", "1", "1"], ["8x8"]])
def test_translate_takes_the_block_as_new_case_does(block, tmp_path, capsys):
    out = tmp_path / "k.spv"
    argv = ["translate", str(ROOT / "cases" / "truth" / "kernels.sm_86.sass"), "--kernel", "loop_ballot",
            "--block", *block, "-o", str(out)]
    assert cli.main(argv) == 0 and out.stat().st_size > 0
    assert cli.main(argv[:-4] + ["--block", "0", "-o", str(out)]) == 2
    assert "--block '0': give 1-3 positive integers" in capsys.readouterr().err


def test_translate_takes_a_strategy(tmp_path, capsys):
    """loop_ballot votes: structured needs a device whose subgroups are warps, and says so."""
    out = tmp_path / "k.spv"
    argv = ["translate", str(ROOT / "cases" / "truth" / "kernels.sm_86.sass"), "--kernel", "loop_ballot",
            "--translator", "structured", "-o", str(out)]
    assert cli.main(argv) == 2
    assert "collectives need a warp to be a subgroup" in capsys.readouterr().err
    assert cli.main(argv + ["--warps"]) == 0 and out.stat().st_size > 0
    assert "loop_ballot: " in capsys.readouterr().out
    assert cli.main(argv + ["--warps", "--mode", "free"]) == 2
    assert "--mode is turns's; structured has no modes" in capsys.readouterr().err


def test_run_takes_case_files_as_pytest_and_lit_do(tmp_path, capsys):
    path = ROOT / "cases" / "truth" / "loop_ballot.toml"
    out = tmp_path / "r.json"
    assert cli.main(["run", str(path), "--device", "none", "-o", str(out)]) == 0
    assert [(r["case"], r["status"]) for r in json.loads(out.read_text())["results"]] == [("truth/loop_ballot", "PASS")]
    outside = tmp_path / "x.toml"
    outside.write_text("")
    assert cli.main(["run", str(outside), "--device", "none"]) == 2
    assert "is not inside the case library cases" in capsys.readouterr().err
