"""Protocol 2: a translator that reads only the request's machine code
(examples/words_translator.py: the words decoded by nvdisasm, then warpboard's own translator)
scores what ``turns`` scores, case by case; where a case has no words it is UNSUPPORTED."""
import sys
from types import SimpleNamespace

import pytest
from warpboard.harness.case.words import find_nvdisasm
from warpboard.harness.run import engine
from warpboard.harness.run.dispatch import prepare
from warpboard.harness.run.translators import external

from support.paths import ROOT, library_case, library_cases

WORDS = ROOT / "examples" / "words_translator.py"
needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="needs nvdisasm (pip install .[test])")
# a collective, a jump table, printf, a BAR
SAMPLE = ["vote/vote_uni", "realkernels/switch_table", "printf/odd_lanes", "barrier/syncthreads_count_and_or"]


def test_the_request_carries_the_words_the_parameters_and_the_banks():
    prep = prepare(library_case("realkernels/switch_table"))
    request = external.request(prep, _info())
    assert request["protocol"] == 2 and request["compatible"] == 1 and request["listing"]
    code = request["code"]
    assert code["arch"] == "SM86" and code["instructions"] * 16 == len(prep.case.words)
    assert code["branch_targets"] and all(isinstance(t, int) for ts in code["branch_targets"].values() for t in ts)
    assert request["params"][0]["offset"] == 0x160 and request["params"][0]["kind"] == "u64"
    assert "0" in request["constant_banks"]


def _statuses(doc, translator):
    return {r["case"]: r["status"] for r in doc["results"] if r.get("translator") == translator}


def _score(config, cases):
    command = {"name": "words", "command": f"{sys.executable} {WORDS}"}
    options = engine.Options(timeout_s=120, translators=({"name": "turns"}, command))
    doc = engine.run_matrix(cases, [config], interp=False, options=options, jobs=1)
    return _statuses(doc, "turns"), _statuses(doc, "words")


@needs_nvdisasm
@pytest.mark.xdist_group("lavapipe-in-process")
def test_a_words_only_translator_scores_what_turns_scores(lavapipe_config):
    turns, words = _score(lavapipe_config(8), [library_case(c) for c in SAMPLE])
    assert words == turns == {c: "PASS" for c in SAMPLE}


@needs_nvdisasm
@pytest.mark.campaign
@pytest.mark.xdist_group("lavapipe-in-process")
def test_on_the_whole_library_the_words_only_translator_scores_what_turns_scores(lavapipe_config):
    cases = [c for c in library_cases() if c.words is not None]
    turns, words = _score(lavapipe_config(8), cases)
    differ = {c: (turns[c], words[c]) for c in turns if turns[c] != words[c]}
    assert not differ, differ


def _info():
    return SimpleNamespace(id="x", name="x", driver_name="x", driver_info="x", subgroup_size=32, features=set(),
                           subgroup_operations=set(), probe=None)
