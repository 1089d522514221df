"""The targets a ``warpboard bench`` run is held to, each with the run's figure and whether
it meets it (``summary["checks"]``, per device). A figure the run did not measure (no full
grid, no run after the library, no collective-free case) is ``None`` and so is ``met``.

- ``vote_loop_over_native``: ``bench_vote_loop`` in turns over native CUDA (stretch: 2);
- ``plain_loop_over_native``: ``bench_plain_loop``, the slower of free mode and turns;
- ``free_over_turns``: free mode's time over that in turns, the largest over the
  collective-free cases: free mode is no slower than taking turns;
- ``after_library_over_alone``: a bench kernel run after the library on the same VkDevice
  over its time alone, the largest;
- ``vote_loop_barriers_per_warp``: workgroup barriers ``bench_vote_loop`` passes, per warp:
  the set-up's one, as the kernel has no BAR (where the device's subgroups are warps; elsewhere
  the workgroup takes the turns, each with its barriers, and the figure is ``None``);
- ``structured_vote_loop_over_native``, ``structured_plain_loop_over_native``,
  ``structured_warp_trips_over_native``: the bench kernels in the ``structured`` strategy over
  native CUDA (None where it does not translate them for the device: the vote loop's
  collectives need subgroups that are warps);
- ``structured_over_free``: the ``structured`` strategy's time over free mode's, the geometric
  mean over the collective-free library cases, and met only where no case is slower beyond
  the spread of its dispatches (``studies.bench_summary.beside_free``): structured code is no
  slower than a pc loop;
- ``warp_trips_per_warp_over_workgroup_turns``: ``bench_warp_trips``, whose warps run different
  trip counts: the interpreter's turns when each warp takes its own over the workgroup's turns
  times its warps.
"""
from __future__ import annotations

LIMITS = {"vote_loop_over_native": 4.0, "plain_loop_over_native": 1.5, "free_over_turns": 1.0,
          "after_library_over_alone": 1.25, "vote_loop_barriers_per_warp": 1.0,
          "warp_trips_per_warp_over_workgroup_turns": 0.25, "structured_vote_loop_over_native": 1.25,
          "structured_plain_loop_over_native": 1.1, "structured_warp_trips_over_native": 1.25,
          "structured_over_free": 1.0}
OTHER_STRATEGIES = ("(subgroup-native)", "(structured)")     # rows of the strategies that do not take turns
STRETCH = {"vote_loop_over_native": 2.0}


def _check(name: str, value: float | None, where: str | None = None) -> dict:
    limit = LIMITS[name]
    out = {"value": value, "limit": limit, "met": None if value is None else value <= limit}
    if name in STRETCH:
        out["stretch"] = STRETCH[name]
        out["stretch_met"] = None if value is None else value <= STRETCH[name]
    if where:
        out["where"] = where
    return out


def _beside_free(found: dict | None) -> dict:
    if not found:
        return _check("structured_over_free", None)
    slower = found["slower"]
    out = _check("structured_over_free", found["geomean"],
                 f"geometric mean of {len(found['cases'])} cases; " +
                 (f"slower beyond the spread: {', '.join(slower)}" if slower else "none slower beyond the spread"))
    out["met"] = out["met"] and not slower
    return out


def _largest(found: dict[str, float]) -> tuple[float | None, str | None]:
    if not found:
        return None, None
    where = max(found, key=found.get)
    return found[where], where


def checks(rows: list[dict], summary: dict) -> dict:
    """Per device: each target's figure from this run, its limit and whether it is met."""
    out = {}
    devices = sorted({r["device"] for r in rows})
    trips = (summary.get("interpreter_turns") or {}).get("bench/bench_warp_trips")
    warp_turns = trips and trips["per_warp_over_workgroup_warp_turns"]
    for device in devices:
        native = summary.get("over_native", {}).get(device, {})
        vote = native.get("bench_vote_loop (turns)")
        plain = _largest({k: v["ratio"] for k, v in native.items() if k.startswith("bench_plain_loop (")
                          and not k.endswith(OTHER_STRATEGIES)})
        free = _largest({case: 1 / ratio for case, ratio in
                         summary.get("turns_over_free", {}).get(device, {}).get("cases", {}).items()})
        after = _largest({k: v["ratio"] for k, v in summary.get("after_library", {}).get(device, {}).items()
                          if not k.endswith(OTHER_STRATEGIES)})
        vote_rows = [r for r in rows if r["device"] == device and r["case"] == "bench/bench_vote_loop"
                     and r["mode"] == "turns" and "error" not in r and not r.get("after_library") and r.get("warps")]
        barriers = vote_rows[0]["barriers"] / vote_rows[0]["warps"] if vote_rows else None
        why = None
        if vote_rows and vote_rows[0].get("warp_subgroups") is False:   # the workgroup's turns: a barrier each
            barriers, why = None, "not for this device: its subgroups are not warps"
        out[device] = {
            "vote_loop_over_native": _check("vote_loop_over_native", vote and vote["ratio"]),
            "plain_loop_over_native": _check("plain_loop_over_native", *plain),
            "free_over_turns": _check("free_over_turns", *free),
            "after_library_over_alone": _check("after_library_over_alone", *after),
            "vote_loop_barriers_per_warp": _check("vote_loop_barriers_per_warp", barriers, why),
            "warp_trips_per_warp_over_workgroup_turns": _check("warp_trips_per_warp_over_workgroup_turns", warp_turns),
            **{f"structured_{name}_over_native": _check(f"structured_{name}_over_native",
                                                         (native.get(f"bench_{name} (structured)") or {}).get("ratio"))
               for name in ("vote_loop", "plain_loop", "warp_trips")},
            "structured_over_free": _beside_free(summary.get("structured_over_free", {}).get(device)),
        }
    return out
