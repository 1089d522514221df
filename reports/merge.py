"""Merge results documents from several runs into one scoreboard document.

CI runs each device family on its own machine (lavapipe on a hosted runner, NVIDIA on
a self-hosted GPU runner); each leg writes its own results JSON and this module joins
them. Policy when two runs report the same device: the run with the later ``created``
timestamp wins (ties: the one given later), cell by cell, and the merged document says
so in ``notes``. Cells only the earlier run has are kept.

The merged document is an ordinary version-1 results document with two extra keys,
``merged_from`` (one entry per input run) and ``notes`` (plain sentences); readers that
do not know them ignore them.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from warpboard.harness.run import findings
from warpboard.harness.run.results import RESULTS_VERSION

from . import collect
from .collect import check

_EPOCH = datetime.min.replace(tzinfo=timezone.utc)


def _created(doc: dict[str, Any]) -> datetime:
    """The run's ``created`` time; unparsable or missing sorts first."""
    text = str(doc.get("created") or "")
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return _EPOCH
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _run_label(doc: dict[str, Any]) -> str:
    """A short human name for one input run: host and time."""
    return f"{doc.get('host') or 'unknown host'} at {doc.get('created') or 'unknown time'}"


def _origin(doc: dict[str, Any]) -> dict[str, Any]:
    """The ``merged_from`` entry describing one input run (flattening earlier merges)."""
    return {
        "created": doc.get("created"),
        "host": doc.get("host"),
        "warpboard": doc.get("warpboard"),
        "devices": [d["id"] for d in doc.get("devices", [])],
    }


def _overlap_note(device: str, earlier: dict[str, Any], later: dict[str, Any]) -> str:
    """The sentence recorded when a later run replaces a device's earlier results."""
    return (f"device {device!r} was in two runs; results from {_run_label(later)} "
            f"replace those from {_run_label(earlier)} where both have a cell")


def merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Join several results documents: union of devices, cases and (case, device) cells.

    Inputs are checked (version) and not modified. Later runs (by ``created``) win for
    device records, case records and cells they share with earlier ones.
    """
    if not runs:
        raise ValueError("merge needs at least one results document")
    for i, doc in enumerate(runs):
        check(doc, source=f"input {i + 1}")
    ordered = sorted(runs, key=_created)          # stable: ties keep argument order

    devices: dict[str, dict[str, Any]] = {}
    device_run: dict[str, dict[str, Any]] = {}
    cases: dict[str, dict[str, Any]] = {}
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    notes: list[str] = []
    origins: list[dict[str, Any]] = []

    for doc in ordered:
        notes.extend(doc.get("notes", []))
        origins.extend(doc.get("merged_from") or [_origin(doc)])
        for dev in doc.get("devices", []):
            if dev["id"] in device_run:
                notes.append(_overlap_note(dev["id"], device_run[dev["id"]], doc))
            devices[dev["id"]] = dev
            device_run[dev["id"]] = doc
        for case in doc.get("cases", []):
            cases[case["id"]] = case
        for r in doc.get("results", []):
            r = dict(r)
            if r["device"] != collect.INTERP:
                r["translator"] = collect.translator_of(r)      # version 1: the default's
            cells[(r["case"], collect.column_of(r))] = r

    latest = ordered[-1]
    results = list(cells.values())
    found = findings.attribute(results)     # across the merged devices
    return {
        "version": RESULTS_VERSION,
        "created": latest.get("created"),
        "warpboard": latest.get("warpboard"),
        "host": ", ".join(dict.fromkeys(str(o.get("host")) for o in origins if o.get("host"))),
        "devices": _in_first_seen_order(runs, "devices", devices),
        "cases": _in_first_seen_order(runs, "cases", cases),
        "translators": list(dict.fromkeys(t for doc in runs for t in collect.translator_ids(doc))),
        "results": results,
        "findings": found,
        "merged_from": origins,
        "notes": notes,
    }


def _in_first_seen_order(runs: list[dict[str, Any]], key: str,
                         chosen: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The chosen records ordered as the inputs first list them (argument order), so
    the scoreboard's columns and rows follow the order the user gave the files in."""
    order = dict.fromkeys(rec["id"] for doc in runs for rec in doc.get(key, []))
    return [chosen[i] for i in order]
