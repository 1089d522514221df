"""Translators as plug-ins (harness.run.translators): the built-in strategies, entry points and
external commands, scored side by side, each cell naming its translator; and the
subgroup-native strategy's refusal where subgroups cannot hold a warp."""
import json
import sys
from types import SimpleNamespace

import pytest
from warpboard.harness.run import translators
from warpboard.harness.run import engine
from warpboard.reports import collect, render

from support.paths import ROOT, library_case

EXAMPLE = ROOT / "examples" / "external_translator.py"


def test_a_spec_names_a_builtin_an_entry_point_or_a_command():
    assert translators.parse("subgroup-native") == {"name": "subgroup-native"}
    assert translators.parse("mine=python3 t.py --fast") == {"name": "mine", "command": "python3 t.py --fast"}
    with pytest.raises(translators.TranslatorSpecError, match=r"unknown translator 'nope'; known: turns, subgroup-native"):
        translators.parse("nope")
    with pytest.raises(translators.TranslatorSpecError, match="without spaces"):
        translators.parse("a:b=cmd")


def test_an_entry_point_of_the_group_is_a_translator(monkeypatch):
    class Mine:
        def __init__(self, name):
            self.name = name

        def translate(self, prep, info, mode=None):
            raise AssertionError("not called here")
    point = SimpleNamespace(name="mine", load=lambda: Mine)
    monkeypatch.setattr(translators, "_entry_points", lambda: {"mine": point})
    assert translators.parse("mine") == {"name": "mine"}
    made = translators.load({"name": "mine"})
    assert isinstance(made, Mine) and made.name == "mine"


def _column_cells(doc, translator):
    return {r["case"]: r for r in doc["results"] if r.get("translator") == translator}


@pytest.mark.xdist_group("lavapipe-in-process")
def test_an_external_command_is_scored_beside_the_builtins(lavapipe_config):
    config = lavapipe_config(8)
    command = {"name": "example", "command": f"{sys.executable} {EXAMPLE} turns"}
    cases = [library_case("vote/vote_uni"), library_case("basic/bit_ops")]
    options = engine.Options(timeout_s=60, translators=({"name": "turns"}, {"name": "subgroup-native"}, command))
    doc = engine.run_matrix(cases, [config], options=options, jobs=1)
    assert doc["version"] == 2 and doc["translators"] == ["turns", "subgroup-native", "example"]
    mine = _column_cells(doc, "example")
    assert {k: r["status"] for k, r in mine.items()} == {"vote/vote_uni": "PASS", "basic/bit_ops": "PASS"}
    native = _column_cells(doc, "subgroup-native")
    assert native["basic/bit_ops"]["status"] == "PASS"       # no collective: any width runs it
    assert native["vote/vote_uni"]["status"] == "UNSUPPORTED"
    assert "subgroups are 8 wide (probed" in native["vote/vote_uni"]["message"]
    collect.check(json.loads(json.dumps(doc)))
    assert collect.column_ids(doc) == ["lavapipe-w8", "subgroup-native:lavapipe-w8", "example:lavapipe-w8", "interp"]
    text = render.markdown(doc)
    assert "| case | turns | subgroup-native | example | reference |" in " ".join(text.split())
    assert "| *device* | *lavapipe-w8* | *lavapipe-w8* | *lavapipe-w8* | *interp* |" in " ".join(text.split())


@pytest.mark.xdist_group("lavapipe-in-process")
@pytest.mark.parametrize("answer, status, words", [
    ('{"unsupported": "no VOTE here"}', "UNSUPPORTED", "example: no VOTE here"),
    ('not json', "ERROR", "printed no JSON answer"),
    ('{"spirv": "AAAA"}', "ERROR", "the module is not SPIR-V"),
    ('{"spirv": "AwIjBwAAAQAAAAAAAAAAAAAAAAA=", "bindings": {"heap": 0}}', "ERROR", "are not ctrl and heap"),
])
def test_a_command_that_answers_badly_costs_its_cell_and_says_why(lavapipe_config, tmp_path, answer, status, words):
    script = tmp_path / "t.py"
    script.write_text(f"import sys\nsys.stdin.read()\nsys.stdout.write({answer!r})\n")
    options = engine.Options(timeout_s=60, translators=({"name": "example", "command": f"{sys.executable} {script}"},))
    doc = engine.run_matrix([library_case("basic/bit_ops")], [lavapipe_config(8)], interp=False, options=options, jobs=1)
    [cell] = doc["results"]
    assert cell["status"] == status and words in cell["message"], cell["message"]


def test_a_version_1_document_reads_with_turns_columns_named_by_device(results):
    old = {k: v for k, v in results.items() if k != "translators"}
    old["version"] = 1
    for r in old["results"]:
        r.pop("translator", None)
    collect.check(old)
    assert collect.column_ids(old) == [d for d in collect.device_ids(old)]
    assert collect.translator_ids(old) == ["turns"]
