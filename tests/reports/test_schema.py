"""The results document's published JSON Schema (reports/results.schema.json): a valid schema,
met by what the engine and merge write and by the reference runs kept in runs/, and the one
check the reports run on what they read, naming where a document breaks it."""
import json

import jsonschema
import pytest
from support.paths import ROOT

from warpboard.harness.run import engine
from warpboard.harness.run.results import CaseResult, Mismatch, Status
from warpboard.reports import collect
from warpboard.reports.merge import merge


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(collect.SCHEMA)


def test_what_the_engine_writes_meets_it(results, baseline):
    cell = CaseResult("c", "d", Status.FAIL, message="m", mismatches=[Mismatch("out", 3, 5, 7, 3, 0, 3)],
                      mismatch_count=1, outcome="ok")
    doc = engine.document([], [], [cell], partial=True)
    doc["run"] = {"root": "cases", "mode": None, "budget": None, "timeout_s": 60.0, "retries": 1, "repeat": 1}
    doc["stale_expectations"] = [{"where": "ci/expectations.txt:3", "rule": "* x", "cells": ["x on d"]}]
    for d in (doc, results, baseline, merge([results, baseline])):
        jsonschema.validate(d, collect.SCHEMA)


def _results_documents() -> list[str]:
    """The runs/*.json that are scoreboards (others are fuzz summaries, benchmarks, ...)."""
    docs = {p.name: json.loads(p.read_text()) for p in sorted((ROOT / "runs").glob("*.json"))}
    return [name for name, d in docs.items() if isinstance(d, dict) and "version" in d and "results" in d
            and d["results"] and "device" in d["results"][0]]


@pytest.mark.parametrize("name", _results_documents())
def test_the_reference_runs_meet_it(name):
    jsonschema.validate(json.loads((ROOT / "runs" / name).read_text()), collect.SCHEMA)


@pytest.mark.parametrize("doc, message", [
    ({"version": 1, "results": [{"case": "a", "device": "d", "status": 3}]},
     "results[0].status: 3 is not of type 'string'"),
    ({"version": 1, "results": [{"case": "a", "device": "d"}]}, "results[0]: 'status' is a required property"),
    ({"version": 1, "devices": [{"name": "x"}]}, "devices[0]: 'id' is a required property"),
    ({"version": 1, "results": [{"case": "a", "device": "d", "status": "FAIL", "mismatches": ["x"]}]},
     "results[0].mismatches[0]: 'x' is not of type 'object'"),
    ({"version": 1, "notes": {"a": 1}}, "notes: {'a': 1} is not of type 'array'"),
])
def test_the_reports_name_where_a_document_breaks_it(doc, message):
    with pytest.raises(collect.ResultsError) as info:
        collect.check(doc, "r.json")
    assert str(info.value) == f"r.json: {message}"
