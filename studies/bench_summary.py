"""The figures of a ``warpboard bench`` run (:mod:`studies.bench`) that its targets speak of:
translated time over native CUDA per bench kernel and mode, turns over free mode and the
`structured` strategy over free mode per case, the bench kernels after the library over
alone, the driver's compile times, and the rows whose words or clock are not to be trusted."""
from __future__ import annotations

import math
import statistics

TARGETS = {"turns_over_free": 1.5, "barriers_per_instruction": 0.25, "library_wall_s": 60.0,
           "translate_instructions_per_s": 50000.0, "parse_listing_s": 5.0, "per_warp_over_workgroup_warp_turns": 0.25}


def _time(row: dict) -> float:
    """A row's median dispatch time: on the device's own clock where it has one."""
    return (row.get("gpu_s") or row["dispatch_s"])["median"]


def native_ratios(rows: list[dict], native: dict | None) -> dict:
    """Translated dispatch time over native CUDA time for the bench kernels, per device and
    mode. ``native`` is what ``bench/divergent_loops.cu`` prints (``<kernel>_ms`` keys), measured
    in the same session; without it the times recorded in ``bench/kernels.toml`` are used."""
    out = {}
    for r in rows:
        if not r["case"].startswith("bench/") or "error" in r or r["outcome"] != "ok" or r.get("after_library"):
            continue
        kernel = r["case"].split("/", 1)[1]
        if not r.get("native_h200_ms"):       # shrunk grid: nothing native to compare with
            continue
        native_ms = (native or {}).get(f"{kernel}_ms") or r["native_h200_ms"]
        if native_ms:       # the device's own clock where it has one, as CUDA events are
            out.setdefault(r["device"], {})[f"{kernel} ({r['mode']})"] = {
                "translated_ms": _time(r) * 1000, "native_ms": native_ms,
                "ratio": _time(r) * 1000 / native_ms,
                "clock": "device timestamps" if r.get("gpu_s") else "host wall clock",
                "native_source": "this run" if native else "bench/kernels.toml (recorded)"}
    return out


def _spread(row: dict) -> dict:
    return row.get("gpu_s") or row["dispatch_s"]


def beside_free(found: list[tuple[str, float, dict, dict]]) -> dict:
    """The `structured` strategy over turns' free mode on one device, from (case, ratio of
    median times, structured row, free row): the median, largest and geometric mean of the
    ratios, and the cases slower beyond the spread of their dispatches (structured's fastest
    dispatch slower than free mode's slowest). A library case dispatches for tens of
    microseconds on lavapipe, where one dispatch differs from the next by half: the largest
    ratio of medians over ninety cases says more of that spread than of the code."""
    ratios = [v for _, v, _, _ in found]
    return {"median": statistics.median(ratios), "max": max(ratios),
            "geomean": math.exp(sum(math.log(v) for v in ratios) / len(ratios)),
            "cases": {case: v for case, v, _, _ in found},
            "slower": sorted(case for case, _, mine, free in found if _spread(mine)["min"] > _spread(free)["max"])}


def summarise(rows: list[dict], walls: dict[str, float], native: dict | None = None,
              parse: dict | None = None) -> dict:
    """The figures the targets speak of, over the library rows (and :func:`parse_rate`'s)."""
    after = [r for r in rows if r.get("after_library") and "error" not in r and r["outcome"] == "ok"]
    ok = [r for r in rows if "error" not in r and r["outcome"] == "ok" and not r.get("after_library")]
    library = [r for r in ok if not r["case"].startswith("bench/")]
    after_library = {}
    for r in after:
        alone = next((a for a in ok if (a["case"], a["device"], a["mode"]) == (r["case"], r["device"], r["mode"])), None)
        if alone:
            after_library.setdefault(r["device"], {})[f"{r['case']} ({r['mode']})"] = {
                "alone_ms": _time(alone) * 1000, "after_library_ms": _time(r) * 1000,
                "ratio": _time(r) / max(1e-12, _time(alone))}
    ratios, wall, structured = {}, {}, {}
    for r in ok:
        if r["mode"] == "structured" and not r["case"].startswith("bench/"):
            free = next((f for f in ok if f["case"] == r["case"] and f["device"] == r["device"] and f["mode"] == "free"), None)
            if free:
                structured.setdefault(r["device"], []).append((r["case"], _time(r) / max(1e-9, _time(free)), r, free))
        if r["mode"] == "turns":
            free = next((f for f in ok if f["case"] == r["case"] and f["device"] == r["device"] and f["mode"] == "free"), None)
            if free:
                ratios.setdefault(r["device"], []).append(
                    (r["case"], _time(r) / max(1e-9, _time(free))))
                wall.setdefault(r["device"], []).append(
                    (r["case"], r["dispatch_s"]["median"] / max(1e-9, free["dispatch_s"]["median"])))
    compile_s = {}
    for r in library:
        if r.get("driver_compile_s") is not None:
            compile_s.setdefault(r["device"], []).append((r["case"], r["driver_compile_s"], r["sass_instructions"]))
    turns_rows = [r for r in library if r["mode"] == "turns"]
    instr = sum(r["instructions_per_thread"] * r["blocks"] for r in turns_rows)
    warp_instr = sum(r["warp_instructions"] for r in turns_rows)
    translated = sum(r["sass_instructions"] for r in library)
    seconds = sum(r["translate_s"]["median"] for r in library)
    def by_device(found):
        return {d: {"median": statistics.median(v for _, v in vs), "max": max(v for _, v in vs),
                    "cases": dict(vs)} for d, vs in found.items()}
    return {
        "turns_over_free": by_device(ratios),              # the device's clock where it has one
        "turns_over_free_wall_clock": by_device(wall),     # what a run waits for, submission included
        "structured_over_free": {d: beside_free(vs) for d, vs in structured.items()},
        "barriers_per_instruction": sum(r["barriers"] for r in turns_rows) / max(1e-9, instr),
        "barriers_per_warp_instruction": sum(r["barriers"] for r in turns_rows) / max(1e-9, warp_instr),
        "translate_instructions_per_s": translated / max(1e-9, seconds),
        "device_wall_s": walls,
        "after_library": after_library,     # the bench kernels on the library's VkDevice over alone
        "driver_compile_s": {d: {"median": statistics.median(t for _, t, _ in vs), "max": max(t for _, t, _ in vs),
                                 "slowest": max(vs, key=lambda v: v[1])[0], "total": sum(t for _, t, _ in vs),
                                 "per_1000_sass_instructions": 1000 * sum(t for _, t, _ in vs) / max(1, sum(n for _, _, n in vs))}
                             for d, vs in compile_s.items()},
        "over_native": native_ratios(rows, native),
        "wrong_words": [f"{r['case']} ({r['mode']}) on {r['device']}" for r in wrong_words(rows)],
        "unsettled_clock": [f"{r['case']} ({r['mode']}) on {r['device']}" for r in unsettled(rows)],
        "parse": parse and {"lines": parse["lines"], "seconds": parse["seconds"]["median"],
                            "lines_per_s": parse["lines_per_s"]},
        "targets": TARGETS,
    }


def wrong_words(rows: list[dict]) -> list[dict]:
    """The rows of bench kernels whose words' checksum is not the one the chip gave."""
    return [r for r in rows if r.get("checksum_ok") is False]


def unsettled(rows: list[dict]) -> list[dict]:
    """The rows of bench kernels whose warm-up ended before the device's clock settled."""
    return [r for r in rows if r.get("warm_up") and not r["warm_up"]["settled"]]


__all__ = ["TARGETS", "summarise", "native_ratios", "wrong_words", "unsettled"]
