"""``warpboard fuzz-merge``: one summary from the summaries of a campaign's shards.

A campaign split with ``--shard K/N`` (CI matrix jobs, several machines, runs stopped by
``--stop-after`` and resumed) leaves one ``--json`` summary per run. Merging takes every
cell of every summary (``devices.<id>.cells``: case -> status), so shards of different N
may overlap; a case that ran twice on one device with different statuses is listed under
``differs`` and counted by its last run. All summaries must be of the same campaign (seed
and count).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from .campaign import table


class MergeError(Exception):
    """Summaries that cannot be merged (another campaign, no per-cell statuses)."""


def merge(docs: list[tuple[str, dict]]) -> dict:
    """The merged summary of ``(name, summary)`` pairs, in the order given."""
    if not docs:
        raise MergeError("nothing to merge")
    first_name, first = docs[0]
    cells: dict[str, dict[str, str]] = {}
    seen: dict[tuple[str, str], set[str]] = {}
    failures: dict[tuple[str, str], dict] = {}
    not_cases: dict[str, dict] = {}
    programs: set[str] = set()
    for name, doc in docs:
        if (doc["seed"], doc["count"]) != (first["seed"], first["count"]):
            raise MergeError(f"{name}: seed {doc['seed']} count {doc['count']}, but {first_name} has "
                             f"seed {first['seed']} count {first['count']}")
        for key in ("rejected_by_model", "build_errors"):
            for b in doc[key]:
                not_cases[b["case"]] = {**b, "kind": key}
                programs.add(b["case"])
        for device, d in doc["devices"].items():
            if "cells" not in d:
                raise MergeError(f"{name}: device {device} has no per-cell statuses (a summary from "
                                 f"before they were written)")
            for case, status in d["cells"].items():
                cells.setdefault(device, {})[case] = status
                seen.setdefault((device, case), set()).add(status)
                programs.add(case)
            for status, items in d["failures"].items():
                for item in items:
                    failures[(device, item["case"])] = item
    cases = sorted(programs - set(not_cases), key=_seed_order)
    merged = {"seed": first["seed"], "count": first["count"], "shard": [1, 1],
              "merged_from": [name for name, _ in docs], "programs": len(programs), "cases": len(cases),
              "rejected_by_model": [_plain(b) for b in not_cases.values() if b["kind"] == "rejected_by_model"],
              "build_errors": [_plain(b) for b in not_cases.values() if b["kind"] == "build_errors"],
              "devices": {}}
    for device, by_case in cells.items():
        counts = Counter(by_case.values())
        fails: dict[str, list] = {}
        for case in sorted(by_case, key=_seed_order):
            if by_case[case] != "PASS":
                fails.setdefault(by_case[case], []).append(failures.get((device, case), {"case": case, "message": ""}))
        merged["devices"][device] = {
            "total": len(by_case), "not_run": len(cases) - len(by_case),
            "cells": {case: by_case[case] for case in sorted(by_case, key=_seed_order)},
            "counts": dict(sorted(counts.items())),
            "agreement": round(100.0 * counts.get("PASS", 0) / len(by_case), 2) if by_case else 0.0,
            "failures": fails,
            "differs": sorted((case for (dev, case), statuses in seen.items() if dev == device and len(statuses) > 1),
                              key=_seed_order)}
    return merged


def _plain(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k != "kind"}


def _seed_order(case: str):
    digits = case.removeprefix("fz")
    return (0, int(digits)) if digits.isdigit() else (1, case)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("summaries", nargs="+", help="summaries written by warpboard fuzz --json")
    p.add_argument("--json", help="write the merged summary as JSON")
    p.add_argument("--markdown", help="write the table as markdown (a CI comment, a page)")


def run(args: argparse.Namespace) -> int:
    try:
        docs = [(path, json.loads(Path(path).read_text())) for path in args.summaries]
        merged = merge(docs)
    except (OSError, ValueError, KeyError, MergeError) as e:
        print(f"warpboard fuzz-merge: {e}", file=sys.stderr)
        return 2
    print(table(merged))
    for device, d in merged["devices"].items():
        if d["differs"]:
            print(f"{device}: status differs between runs for {', '.join(d['differs'])}")
    for path, text in ((args.json, json.dumps(merged, indent=1)), (args.markdown, table(merged, markdown=True))):
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text + "\n")
    return 0


DESCRIPTION = __doc__
