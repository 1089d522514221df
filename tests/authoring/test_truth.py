"""``warpboard record-truth`` (authoring/truth.py, truth_gpu.py, truth_write.py) without a GPU:
the runner is replaced by a fake, so what is tested is the selection, the refusal rule, the
choice of buffers and the rewriting of the case files (only the expected words and the
provenance may change)."""
from __future__ import annotations

import builtins
import difflib
import json
import shutil

import pytest
from warpboard.harness.case.model import discover_cases, load_case
from warpboard.authoring import truth, truth_write

try:
    import tomllib
except ModuleNotFoundError:  # python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

LISTING = ".text.k:\n        /*0000*/                   EXIT ;\n"

PENDING = '''\
name = "pend"   # a comment that must survive
summary = "A case awaiting its words [with brackets] and # a hash."
tags = ["loop"]
kernel = "k"
listing = "k.sass"
source = "k.cu"

[provenance]
expected = "pending"
listing = "nvcc -cubin -arch=sm_86 -o k.cubin k.cu && nvdisasm -c k.cubin > k.sass"

[launch]
grid = [1, 1, 1]
block = [4, 1, 1]

[[buffers]]
name = "out"
words = 4
init = 0

# the input stays as it is
[[buffers]]
name = "in"
words = 4
init = [
    1, 2,  # two
    3, 4,
]

[[params]]
buffer = "out"

[[params]]
buffer = "in"
'''

DERIVED = PENDING.replace('name = "pend"', 'name = "der"').replace(
    'expected = "pending"', 'expected = "derived"\nderivation = "by hand"').replace(
    "init = 0\n", "init = 0\nexpected = [9, 9, 9, 9]\n")

INLINE = '''\
name = "inl"
summary = "Inline listing with tricky text."
kernel = "k"
source = "k.cu"
sass = """
.text.k:
        /*0000*/                   STG.E [R2.64], R5 ;   # not a comment: inside the string
[[buffers]]
        /*0010*/                   EXIT ;
"""

[provenance]
expected = "chip"
recorded_on = "an older GPU"
listing = "hand-written"

[launch]
grid = 1
block = 4

[[buffers]]
name = "out"
words = 4
init = 7
expected = [
    0, 0,
    0, 0,
]
'''


class FakeRunner:
    def __init__(self, words=lambda case, run: None):
        self.runs = 0
        self.words = words

    def info(self):
        return truth.GpuInfo("Fake GPU", (9, 0), "13.0", "580.1", "nvcc")

    def run(self, case):
        self.runs += 1
        out = []
        for b in case.buffers:
            w = self.words(case, self.runs)
            out.append(list(w) if w is not None and b.name == "out"
                       else [i * 3 + 1 for i in range(b.words)] if b.name == "out" else list(b.init))
        return out


@pytest.fixture
def lib(make_case):
    """A cases folder with cat/pend, cat/der and cat/inl, their listing and CUDA source."""
    files = {"k.sass": LISTING, "k.cu": 'extern "C" __global__ void k(unsigned *o, unsigned *i) {}\n'}
    for name, text in (("pend", PENDING), ("der", DERIVED), ("inl", INLINE)):
        make_case.write_text(f"cat/{name}", text, files)
    assert [c.id for c in discover_cases(make_case.root)] == ["cat/der", "cat/inl", "cat/pend"]
    return make_case.root


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    removed, added = [], []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


RECORDED_ON = "Fake GPU (compute capability 9.0), CUDA 13.0 (nvcc -arch=sm_90), driver 580.1, identical over 3 runs"


# ---------------------------------------------------------------- rewriting

def test_pending_case_gets_expected_and_provenance_only(lib):
    path = lib / "cat" / "pend.toml"
    outcomes = truth.record([load_case(path, lib)], FakeRunner())
    assert [(o.case, o.status) for o in outcomes] == [("cat/pend", "recorded")]
    after = path.read_text()
    removed, added = _changed_lines(PENDING, after)
    assert removed == ['expected = "pending"']
    assert added == ['expected = "chip"', f'recorded_on = "{RECORDED_ON}"',
                     "expected = [", "    1, 4, 7, 10,", "]"]
    # the words go right after the output buffer's init; the input buffer gets none
    assert "init = 0\nexpected = [\n    1, 4, 7, 10,\n]\n\n# the input stays" in after
    case = load_case(path, lib)
    assert case.provenance == {"expected": "chip", "recorded_on": RECORDED_ON,
                               "listing": load_case(path, lib).provenance["listing"]}
    assert case.buffer("out").expected == (1, 4, 7, 10) and case.buffer("in").expected is None


def test_rewrite_replaces_existing_words_and_drops_the_derivation():
    new = truth.rewrite_case_text(DERIVED, "GPU X", {0: [5, 6, 7, 8]})
    removed, added = _changed_lines(DERIVED, new)
    assert removed == ['expected = "derived"', 'derivation = "by hand"', "expected = [9, 9, 9, 9]"]
    assert added == ['expected = "chip"', 'recorded_on = "GPU X"', "expected = [", "    5, 6, 7, 8,", "]"]


def test_rewrite_keeps_inline_listings_and_multiline_arrays():
    new = truth.rewrite_case_text(INLINE, 'GPU "quoted" \\ name', {0: list(range(20))})
    data = tomllib.loads(new)
    assert data["sass"] == tomllib.loads(INLINE)["sass"]
    assert data["provenance"]["recorded_on"] == 'GPU "quoted" \\ name'
    assert data["buffers"][0]["expected"] == list(range(20))
    # everything up to the provenance (the listing, with its "[[buffers]]" line) as it was,
    # and from [launch] to the old words too
    assert new.split("[provenance]")[0] == INLINE.split("[provenance]")[0]
    assert new.split("[launch]")[1].split("expected")[0] == INLINE.split("[launch]")[1].split("expected")[0]
    assert 'recorded_on = "GPU \\"quoted\\" \\\\ name"\n' in new
    assert new.endswith("init = 7\nexpected = [\n    0, 1, 2, 3, 4, 5, 6, 7,\n"
                        "    8, 9, 10, 11, 12, 13, 14, 15,\n    16, 17, 18, 19,\n]\n")


def test_rewrite_checks_its_own_work(monkeypatch):
    monkeypatch.setattr(truth_write._Editor, "text", lambda self: "name = 'broken'\n")
    with pytest.raises(truth.TruthError, match="change more than"):
        truth.rewrite_case_text(PENDING, "GPU", {0: [1, 2, 3, 4]})


# ---------------------------------------------------------------- the rules

def test_derived_cases_are_refused_unless_forced(lib):
    path = lib / "cat" / "der.toml"
    runner = FakeRunner()
    [o] = truth.record([load_case(path, lib)], runner)
    assert o.status == "refused" and "--force" in o.message and '"derived"' in o.message
    assert runner.runs == 0 and path.read_text() == DERIVED
    [o] = truth.record([load_case(path, lib)], runner, force=True)
    assert o.status == "recorded"
    assert "the chip differs from the derivation (out[0]: derived 0x9, chip 0x1): derivation dropped" in o.message
    case = load_case(path, lib)
    assert case.provenance["expected"] == "chip" and "derivation" not in case.provenance
    assert case.buffer("out").expected == (1, 4, 7, 10)


def test_a_derivation_the_chip_confirms_is_kept(lib):
    path = lib / "cat" / "der.toml"
    path.write_text(DERIVED.replace("expected = [9, 9, 9, 9]", "expected = [1, 4, 7, 10]"))
    [o] = truth.record([load_case(path, lib)], FakeRunner(), force=True)
    assert o.status == "recorded" and "derivation kept" in o.message
    case = load_case(path, lib)
    assert case.provenance["expected"] == "chip" and case.provenance["derivation"] == "by hand"
    assert case.provenance["recorded_on"].startswith("Fake GPU")
    assert "expected = [1, 4, 7, 10]\n" in path.read_text()     # the same words, their line kept
    # one word off: dropped, and the message says where
    path.write_text(DERIVED.replace("expected = [9, 9, 9, 9]", "expected = [1, 4, 7, 11]"))
    [o] = truth.record([load_case(path, lib)], FakeRunner(), force=True)
    assert "(out[3]: derived 0xb, chip 0xa): derivation dropped" in o.message
    assert "derivation" not in load_case(path, lib).provenance


def test_runs_that_disagree_are_not_recorded(lib):
    path = lib / "cat" / "pend.toml"
    runner = FakeRunner(lambda case, run: [run] * 4)
    [o] = truth.record([load_case(path, lib)], runner, repeat=3)
    assert o.status == "failed" and "not deterministic" in o.message
    assert runner.runs == 3 and path.read_text() == PENDING


def test_a_kernel_that_changes_nothing_is_reported(lib):
    path = lib / "cat" / "pend.toml"
    [o] = truth.record([load_case(path, lib)], FakeRunner(lambda case, run: [0, 0, 0, 0]))
    assert o.status == "failed" and "changed no buffer" in o.message
    assert path.read_text() == PENDING
    [o] = truth.record([load_case(path, lib)], FakeRunner(lambda case, run: [0, 0, 0, 0]),
                       all_buffers=True)
    assert o.status == "recorded"
    assert load_case(path, lib).buffer("in").expected == (1, 2, 3, 4)


def test_a_case_without_source_is_refused(lib):
    path = lib / "cat" / "inl.toml"
    path.write_text(INLINE.replace('source = "k.cu"\n', ""))
    [o] = truth.record([load_case(path, lib)], FakeRunner())
    assert o.status == "refused" and "no CUDA `source`" in o.message


def test_no_write_leaves_files_alone(lib):
    path = lib / "cat" / "pend.toml"
    [o] = truth.record([load_case(path, lib)], FakeRunner(), write=False)
    assert o.status == "recorded" and "--no-write" in o.message
    assert path.read_text() == PENDING


def test_gpu_failure_stops_the_run(lib):
    class Hangs(FakeRunner):
        def run(self, case):
            raise truth.GpuFailure("the kernel did not finish in 1 s")
    cases = discover_cases(lib)
    seen = []
    with pytest.raises(truth.GpuFailure):
        truth.record(cases, Hangs(), force=True, report=seen.append)
    assert [o.status for o in seen] == ["failed"]


# ---------------------------------------------------------------- the command

def test_main_records_pending_cases_by_default(lib, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(truth, "make_runner", lambda *a, **k: FakeRunner())
    out = tmp_path / "t.json"
    assert truth.main(["--root", str(lib), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "recorded  cat/pend: expected words for out" in text and "cat/der" not in text
    doc = json.loads(out.read_text())
    assert doc["recorded_on"] == RECORDED_ON and doc["gpu"] == "Fake GPU"
    assert doc["cases"]["cat/pend"]["buffers"] == {"out": [1, 4, 7, 10], "in": [1, 2, 3, 4]}
    assert (lib / "cat" / "der.toml").read_text() == DERIVED
    # nothing pending any more
    assert truth.main(["--root", str(lib)]) == 0
    assert "no case selected" in capsys.readouterr().err


def test_main_named_cases_and_refusal_exit_status(lib, monkeypatch, capsys):
    monkeypatch.setattr(truth, "make_runner", lambda *a, **k: FakeRunner())
    assert truth.main(["--root", str(lib), "cat/*", "--exclude", "cat/pend"]) == 1
    text = capsys.readouterr().out
    assert "refused   cat/der" in text and "recorded  cat/inl" in text and "cat/pend" not in text
    assert "1 recorded, 1 not" in text
    assert truth.main(["--root", str(lib), "cat/der", "--force"]) == 0


def test_main_without_a_gpu_says_why(lib, monkeypatch, capsys):
    def no_gpu(*a, **k):
        raise truth.NoGpu("record-truth needs CuPy and an NVIDIA GPU")
    monkeypatch.setattr(truth, "make_runner", no_gpu)
    assert truth.main(["--root", str(lib)]) == 2
    assert "needs CuPy and an NVIDIA GPU" in capsys.readouterr().err
    assert (lib / "cat" / "pend.toml").read_text() == PENDING


def test_cupy_runner_explains_a_missing_cupy(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *a, **k):
        if name == "cupy":
            raise ImportError("No module named 'cupy'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(truth.NoGpu, match="CuPy is not importable here.*cupy-cuda13x.*--from-json"):
        truth.CupyRunner()


def test_main_stops_with_status_3_when_the_gpu_fails(lib, monkeypatch, capsys):
    class Broken(FakeRunner):
        def run(self, case):
            raise truth.GpuFailure("the launch failed: an illegal address")
    monkeypatch.setattr(truth, "make_runner", lambda *a, **k: Broken())
    assert truth.main(["--root", str(lib)]) == 3
    assert "stopped: the launch failed" in capsys.readouterr().err


def test_json_recorded_elsewhere_applies_identically(lib, monkeypatch, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(lib, other)
    monkeypatch.setattr(truth, "make_runner", lambda *a, **k: FakeRunner())
    out = tmp_path / "t.json"
    assert truth.main(["--root", str(lib), "cat/pend", "cat/inl", "--json", str(out)]) == 0
    assert truth.main(["--root", str(other), "cat/*", "--from-json", str(out)]) == 1   # der: not in it
    for name in ("pend", "inl", "der"):
        assert (other / "cat" / f"{name}.toml").read_text() == (lib / "cat" / f"{name}.toml").read_text()
