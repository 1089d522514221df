"""Whose failure is it: each failing device cell attributed to the driver or to the translator.

For one case and one translator, compare the devices that ran it (UNSUPPORTED and missing
cells ran nothing):

- some fail and at least one passes: the failing ones are **driver** findings: the same
  shader is right elsewhere, so the device's compiler or its subgroups differ;
- all of at least two fail: each is a **translator** finding: no driver runs it right.

A case whose interpreter cell fails too is left unattributed (the reference itself disagrees
with the expected words), as is a failure seen on a single device. XFAIL cells count as
failing: an expectation says a failure is known, not whose it is.
"""
from __future__ import annotations

from collections import defaultdict

from .results import Status

INTERP = "interp"
_RAN_NOTHING = {Status.UNSUPPORTED.value}
_FAILING = {s.value for s in Status if s.is_failure} | {Status.XFAIL.value}


def attribute(results: list[dict]) -> dict[str, list[str]]:
    """Set ``finding`` ("driver" or "translator") on each failing device cell that has one
    (and remove a stale one); returns the cells of each kind as ``case on device (translator)``."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    reference_fails = {r["case"] for r in results if r["device"] == INTERP and r["status"] in _FAILING}
    for r in results:
        r.pop("finding", None)
        if r["device"] != INTERP and r["status"] not in _RAN_NOTHING:
            groups[(r["case"], r.get("translator") or "turns")].append(r)
    found: dict[str, list[str]] = {"driver": [], "translator": []}
    for (case, translator), cells in groups.items():
        failing = [r for r in cells if r["status"] in _FAILING]
        if not failing or case in reference_fails or len(cells) < 2:
            continue
        passing = any(r["status"] == Status.PASS.value for r in cells)
        kind = "driver" if passing else "translator" if len(failing) == len(cells) else None
        if kind is None:
            continue
        for r in failing:
            r["finding"] = kind
            found[kind].append(f"{case} on {r['device']} ({translator})")
    return found
