"""``warpboard bench``: what taking turns costs, per case and device, as JSON.

For every case of the library (and the divergent-loop kernels of ``bench/kernels.toml``) on
every selected device it measures, over several repetitions (median, min, max): translate
time, pipeline-creation time, dispatch time, and from the shader's own counters the SASS
instructions executed per thread, turns and workgroup barriers. Collective-free programs run
in both free and turns mode, which gives the overhead of taking turns. ``driver_compile_s``
is pipeline creation plus what the first dispatch takes beyond the others (lavapipe compiles
there), with Mesa's shader cache off. Each device runs in
its own worker process, like the scoreboard; a worker translates every case before it
dispatches any, so translation is timed on a quiet processor. Before any worker starts, the
SASS parser is timed on a 100,000-line listing made of the cases' listings (``parse``).
On a device whose subgroups are 32 lanes the bench kernels also run in the ``subgroup-native``
strategy (mode ``subgroup-native``: a warp is a subgroup, no turns): what emulating the loop
body costs without taking turns, beside what the turns add. Every case the ``structured``
strategy translates for the device also runs in it (mode ``structured``: no pc loop at all). The interpreter counts the turns of two bench kernels both ways, over the workgroup and by
each warp on its own with chains (``interpreter_turns``): the shader's counts on a device whose
subgroups are warps are the per-warp ones (translator/README.md, "Per-warp turns").
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import statistics
import struct
import sys
import time
from pathlib import Path


from warpboard.translator import DEFAULT_STRATEGY, STRATEGIES, Target, UnsupportedInstruction, clear_caches, parse_listing

from . import bench_interp, bench_targets
from .bench_summary import TARGETS, native_ratios, summarise, unsettled, wrong_words
from warpboard.harness.case.model import BufferSpec, Case, Param, discover_cases, load_case
from warpboard.harness.case.toml_text import tomllib
from warpboard.harness.run import devices
from warpboard.harness.run.dispatch import device_target, prepare, run_interpreter, run_vulkan, translate_case
from warpboard.harness.run.worker import Worker, cached_device, fresh_device
from warpboard.harness.vk.probe import real_subgroup

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"
if not BENCH_DIR.is_dir():          # an installed package: the checkout's bench/, from where it runs
    BENCH_DIR = Path("bench").resolve()
# the bench kernels whose turns the interpreter counts both ways (bench_vote_loop is left out:
# its trip counts differ by block and lane, and it takes a minute of Python)
TURN_KERNELS = ("bench/bench_warp_trips", "bench/bench_plain_loop")
PARSE_LINES = 100_000       # the size of the listing the parse rate is measured on
NATIVE_MODE = "subgroup-native"     # a bench mode that is the subgroup-native strategy, not a turns mode
STRUCTURED_MODE = "structured"      # a bench mode that is the structured strategy
# bench modes that are strategies of their own (translated with no turns mode), not the default's modes
STRATEGY_MODES = tuple(name for name in STRATEGIES if name != DEFAULT_STRATEGY)
WARM_BATCH_S = 0.25     # the device time of one warm-up submission
WARM_LIMIT_S = 8.0      # the most one kernel's warm-up takes
WARM_SETTLED = 0.01     # three batches in a row within this of each other: the clock has settled


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def big_listing(root: str | Path, lines: int = PARSE_LINES) -> str:
    """The listings of the cases (``root/**/*.sass``) one after another, repeated and cut to
    ``lines`` lines; each copy's kernels are renamed (``NAME_r2``) so that every kernel of the
    result is distinct."""
    templates = []
    for path in sorted(Path(root).rglob("*.sass")):
        text = path.read_text(encoding="utf-8")
        names = sorted(parse_listing(text), key=len, reverse=True)
        pattern = re.compile(r"(?<![\w$])(" + "|".join(map(re.escape, names)) + r")(?![\w$])")
        templates.append(pattern.sub(lambda m: m.group(1) + "\0", text))   # \0 marks a kernel name
    template = "\n".join(templates)
    per_copy = template.count("\n") + 1
    copies = [template.replace("\0", f"_r{k}") for k in range(-(-lines // per_copy))]
    return "\n".join("\n".join(copies).split("\n")[:lines]) + "\n"


def parse_rate(root: str | Path, lines: int = PARSE_LINES, repeat: int = 3) -> dict:
    """Seconds to parse :func:`big_listing` (every kernel's instructions, operand caches
    cleared first) over ``repeat`` runs, and lines per second at the median."""
    text = big_listing(root, lines)
    seconds = []
    for _ in range(repeat):
        clear_caches()
        start = time.perf_counter()
        listing = parse_listing(text, "big.sass")
        instructions = sum(len(listing[name].instructions) for name in listing)
        seconds.append(time.perf_counter() - start)
    count = text.count("\n")
    return {"lines": count, "kernels": len(listing), "instructions": instructions,
            "seconds": spread(seconds), "lines_per_s": count / statistics.median(seconds)}


def bench_cases(blocks: int | None, threads: int | None = None) -> list:
    """The benchmark kernels as cases; ``blocks`` shrinks the grid and ``threads`` sets the
    block's threads (either way the checksum and the native time no longer apply)."""
    manifest = tomllib.loads((BENCH_DIR / "kernels.toml").read_text())
    cases = []
    for k in manifest["kernel"]:
        listing = BENCH_DIR / k["listing"]
        grid, block = blocks or k["grid"], threads or k["block"]
        words = grid * block
        full = grid == k["grid"] and block == k["block"]
        cases.append(Case(
            id=f"bench/{k['name']}", path=BENCH_DIR / "kernels.toml", name=k["name"], summary="", tags=("bench",),
            kernel=k["name"], listing_text=listing.read_text(), listing_path=listing, listing_line=1, source=None,
            grid=(grid, 1, 1), block=(block, 1, 1), shared_bytes=0, step_budget=None,
            buffers=(BufferSpec("out", words, (0,) * words, None),), params=(Param("buffer", "out"),),
            provenance={"checksum": k["checksum"] if full else None,
                        "native_h200_ms": k["native_h200_ms"] if full else None}))
    return cases


def translate_all(case, modes: list[str | None], repeat: int, target_of=lambda strategy: Target(), prep=None):
    """(prepared case, {mode: shader}, {mode: translation times}): each mode translated
    ``repeat`` times, without the SPIR-V cache, for ``target_of(strategy)`` (on a device:
    harness.run.dispatch.device_target); ``prep``: the case already prepared. A mode that is
    a strategy of its own (:data:`STRATEGY_MODES`) and does not translate the case for that
    target is left out of both."""
    prep = prep or prepare(case)
    shaders, translate_s = {}, {}
    for mode in modes:
        strategy = mode if mode in STRATEGY_MODES else DEFAULT_STRATEGY
        target = target_of(strategy)
        times = []
        try:
            for _ in range(repeat):
                shaders[mode], seconds = translate_case(prep, None if mode in STRATEGY_MODES else mode, target,
                                                        strategy, use_cache=False)
                times.append(seconds)
        except UnsupportedInstruction:
            if mode not in STRATEGY_MODES:
                raise
            shaders.pop(mode, None)
            continue
        translate_s[mode] = times
    return prep, shaders, translate_s


def warm_up(device, prep, shader) -> dict | None:
    """Keep the device busy with this kernel until its time per dispatch settles, and say how
    long that took (:func:`settle`). A GPU whose load has been light (compiles, short
    dispatches with host work between) sits at its idle clock, nvidia-smi's clock event reason
    "Idle", and every kernel runs several times slower. Single timed dispatches do not bring
    the clock up, nor do short submissions with host work between; submissions of
    :data:`WARM_BATCH_S` of back-to-back dispatches do, step by step (docs/measurements.md, "The
    GPU's idle clock"). None on a CPU device (its clock is the host's) and on a device without timestamps."""
    if getattr(device.info, "device_type", None) == "cpu":
        return None
    return settle(lambda count: run_vulkan(device, prep, shader, dispatches=count).timings.get("gpu_s"))


def settle(dispatch, batch_s: float = WARM_BATCH_S, limit_s: float = WARM_LIMIT_S) -> dict | None:
    """Call ``dispatch(count)`` (seconds per dispatch of ``count`` back to back, or None: no
    device clock) with counts of about ``batch_s`` of device time until three batches in a row
    agree within :data:`WARM_SETTLED`, or ``limit_s`` has passed: the batches, the seconds, the
    first single dispatch's time, the last batch's time per dispatch, and whether it settled.
    Three, not two: an H100's clock climbs in steps, and two batches sized on the slower step
    before can both fall within one step."""
    first = dispatch(1)
    if not first:
        return None
    start, per_dispatch = time.perf_counter(), [first]
    def settled():
        last = per_dispatch[1:][-3:]     # batches only: a single dispatch carries its own overhead
        return len(last) == 3 and max(last) <= (1 + WARM_SETTLED) * min(last)
    while not settled() and time.perf_counter() - start < limit_s:
        per_dispatch.append(dispatch(max(1, min(4096, math.ceil(batch_s / max(per_dispatch[-1], 1e-7))))))
    return {"batches": len(per_dispatch) - 1, "seconds": time.perf_counter() - start,
            "first_ms": first * 1000, "settled_ms": per_dispatch[-1] * 1000, "settled": settled()}


def measure(device, case, modes: list[str | None], repeat: int, translated=None, warm: bool = False,
            after=None) -> list[dict]:
    """One case in each of ``modes`` on an open device: timings, counters and the output
    checksum, a row per mode. The modes' dispatches alternate, so a slow spell of the machine
    hits them alike and their ratio holds. ``translated`` is :func:`translate_all`'s result
    when the translations were timed before. ``warm``: each mode's kernel first runs until the
    device's clock has settled (:func:`warm_up`), for times that are compared with times
    taken elsewhere (native CUDA, another VkDevice). ``after``: a second open device (the one
    the library ran on), whose dispatches alternate with ``device``'s in the same way; its rows
    have ``after_library``."""
    prep, shaders, translate_s = translated or translate_all(case, modes, repeat)
    modes = [m for m in modes if m in shaders]
    sites = [device] if after is None else [device, after]
    keys = [(site, mode) for site in range(len(sites)) for mode in modes]
    warmed = {k: warm_up(sites[k[0]], prep, shaders[k[1]]) for k in keys} if warm else {}
    dispatch, gpu = {k: [] for k in keys}, {k: [] for k in keys}
    pipeline, last, stats = {}, {}, {}
    for _ in range(repeat + 1):
        for k in keys:
            on, mode = sites[k[0]], k[1]
            last[k] = raw = run_vulkan(on, prep, shaders[mode])
            pipeline.setdefault(k, raw.timings.get("pipeline_s", 0.0))
            stats.setdefault(k, getattr(on, "last_statistics", None))
            dispatch[k].append(raw.timings.get("dispatch_s", raw.timings["run_s"]))
            if "gpu_s" in raw.timings:
                gpu[k].append(raw.timings["gpu_s"])
    rows = []
    for k in keys:
        mode = k[1]
        row = _row(case, prep, shaders[mode], last[k], translate_s[mode], pipeline[k], dispatch[k], gpu[k])
        if mode in STRATEGY_MODES:
            row["mode"] = mode
        if stats[k]:         # the driver's word on the compiled code (registers, spills...)
            row["driver_statistics"] = stats[k]
        if warmed.get(k):
            row["warm_up"] = warmed[k]
        if k[0] == 1:
            row["after_library"] = True
        rows.append(row)
    return rows


def _row(case, prep, shader, raw, translate_s, pipeline_s, dispatch, gpu) -> dict:
    """The figures of one case in one mode."""
    threads = case.total_threads
    c = raw.counters
    per_thread = c["instructions"] / threads
    row = {"case": case.id, "mode": shader.mode, "outcome": raw.outcome, "blocks": case.num_blocks,
           "warps": case.num_blocks * math.ceil(threads / case.num_blocks / 32),
           "sass_instructions": len(prep.program.insts), "translate_s": spread(translate_s),
           "pipeline_s": pipeline_s, "first_dispatch_s": dispatch[0], "dispatch_s": spread(dispatch[1:]),
           # drivers that compile at the first dispatch (lavapipe's LLVM) spend it there
           "driver_compile_s": pipeline_s + max(0.0, dispatch[0] - statistics.median(dispatch[1:])),
           "gpu_s": spread(gpu[1:]) if len(gpu) > 1 else None,
           "instructions_per_thread": per_thread, "turns": c["turns"], "barriers": c["barriers"],
           "barriers_per_instruction": c["barriers"] / max(1e-9, per_thread * case.num_blocks),
           "warp_instructions": c["instructions"] / 32, "warp_subgroups": bool(shader.warp_subgroups),
           "barriers_per_warp_instruction": c["barriers"] / max(1e-9, c["instructions"] / 32),
           "checksum": sum(struct.unpack(f"<{len(raw.buffers[0]) // 4}I", raw.buffers[0])) if raw.buffers else None}
    if case.provenance.get("native_h200_ms"):     # a bench kernel at its full grid
        row["native_h200_ms"] = case.provenance["native_h200_ms"]
    expected = case.provenance.get("checksum")
    if expected is not None:
        row["checksum_ok"] = row["checksum"] == expected
        row["checksum_expected"] = expected
    return row


def device_rows(device_index: int, device_id: str, case_paths: list[str], root: str, repeat: int,
                bench_blocks: int | None, bench_threads: int | None = None) -> dict:
    """Worker target: every case (both modes where it can run free) on this process's device."""
    device = cached_device(device_index)
    cases = [load_case(p, root) for p in case_paths] + bench_cases(bench_blocks, bench_threads)
    rows, start = [], time.perf_counter()
    # every translation first: timed while the device's threads are idle, not between dispatches
    work = []
    for case in cases:
        modes = [None]
        try:
            prep = prepare(case)
            if not prep.program.turns:
                modes = ["free", "turns"]
            if case.id.startswith("bench/") and (real_subgroup(device.info) or 1) % 32 == 0:
                modes = [*modes, NATIVE_MODE]
            modes = [*modes, STRUCTURED_MODE]       # where it translates (translate_all)
            work.append((case, modes, translate_all(
                case, modes, repeat, lambda strategy: device_target(device.info, prep.launch.block, strategy), prep)))
        except Exception as exc:  # noqa: BLE001 - the case's cells say why
            work.append((case, modes, exc))
    def run(on, items, warm=False, after=None):
        for case, modes, translated in items:
            try:
                if isinstance(translated, Exception):
                    raise translated
                rows.extend({"device": device_id, **row}
                            for row in measure(on, case, modes, repeat, translated, warm=warm, after=after))
            except Exception as exc:  # noqa: BLE001
                rows.extend({"device": device_id, "case": case.id, "mode": mode, "error": f"{type(exc).__name__}: {exc}",
                             **({"after_library": True} if site else {})}
                            for site in range(1 if after is None else 2) for mode in modes)
    library = [w for w in work if not w[0].id.startswith("bench/")]
    kernels = [w for w in work if w[0].id.startswith("bench/")]
    run(device, library)
    # the bench kernels alone, on a VkDevice of their own (which keeps the driver's statistics of
    # their code), and after the library on its device, dispatched in turn (measure's ``after``),
    # each at a settled clock (warm_up)
    with fresh_device(device_index, statistics=True) as alone:
        run(alone, kernels, warm=True, after=device if library else None)
    return {"rows": rows, "wall_s": time.perf_counter() - start, "subgroup_size": device.info.subgroup_size}


def interpreter_turns(kernels=TURN_KERNELS, threads: int = 64) -> dict:
    """The interpreter's turns for bench kernels on one block of ``threads`` (64: two warps,
    bench_warp_trips's long one and a short one; seconds, not minutes, of Python), taken over
    the workgroup and by each warp on its own (the shader's rule where a device's subgroups
    are warps, chains included): per block, and the per-warp turns over the warp-turns of the
    workgroup's (each workgroup turn is a turn of every warp)."""
    out = {}
    for case in bench_cases(1):
        if case.id not in kernels:
            continue
        prep = prepare(dataclasses.replace(case, block=(threads, 1, 1)))
        workgroup, per_warp = run_interpreter(prep), run_interpreter(prep, per_warp=True)
        warps = -(-threads // 32)
        wg, pw = workgroup.counters["turns"], per_warp.counters["turns"]
        out[case.id] = {"threads": threads, "warps": warps, "workgroup_turns": wg, "per_warp_turns": pw,
                        "per_warp_over_workgroup_warp_turns": pw / max(1e-9, wg * warps),
                        "same_words": workgroup.buffers == per_warp.buffers}
    return out


DESCRIPTION = __doc__.splitlines()[0]


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``warpboard bench`` options to a parser (a fresh one or a subparser)."""
    p.add_argument("cases", nargs="*", help="case ids or patterns (default: every case)")
    p.add_argument("--root", default="cases")
    p.add_argument("--device", action="append", help="device id or pattern (default: all)")
    p.add_argument("--repeat", type=int, default=7, help="repetitions of each translation and dispatch (default 7)")
    p.add_argument("--bench-blocks", type=int, help="grid of the bench kernels (default: full on GPUs, 16 on CPU devices)")
    p.add_argument("--bench-threads", type=int, help="threads per block of the bench kernels (default 256; 16 on "
                                                     "lavapipe-w16 makes its subgroups the warps: the per-warp shader)")
    p.add_argument("--native", type=Path, help="JSON printed by the native build of bench/divergent_loops.cu "
                                                "(nvcc -o native bench/divergent_loops.cu && ./native > native.json)")
    p.add_argument("--interpreter", action="store_true",
                   help="time only the CPU reference interpreter on big launches (studies/bench_interp.py)")
    p.add_argument("-o", "--output", default="reports/out/bench.json")
    return p


def run_interpreter_speed(output: str) -> int:
    """``warpboard bench --interpreter``: the launches of studies/bench_interp.py on the
    interpreter, one line each with the figure, the limit and met / NOT MET; JSON to ``output``."""
    rows = bench_interp.interpreter_speed()
    doc = {"version": 1, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "interpreter": rows}
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).write_text(json.dumps(doc, indent=1))
    for r in rows:
        print(f"interpreter {r['case']} ({r['threads']} threads, {r['mode']}): {r['cpu_s']:.2f} s cpu, "
              f"limit {r['limit_s']:g} s: {'met' if r['met'] else 'NOT MET'}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Carry out ``warpboard bench`` for parsed arguments; return the exit code."""
    if args.interpreter:
        return run_interpreter_speed(args.output)
    native = json.loads(args.native.read_text()) if args.native else None
    cases = discover_cases(args.root, args.cases or None)
    configs = devices.select(devices.discover(), args.device)
    doc = {"version": 1, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "devices": [{"id": c.id, "name": c.info.name, "driver_info": c.info.driver_info,
                        "subgroup_size": c.info.subgroup_size} for c in configs], "rows": []}
    doc["parse"] = parse_rate(args.root)        # before any worker starts: a quiet processor
    walls = {}
    for config in configs:
        blocks = args.bench_blocks or (16 if config.info.device_type == "cpu" else None)
        # the driver's own shader cache off: the first dispatch compiles, every time
        with Worker({**config.env, "MESA_SHADER_CACHE_DISABLE": "true"}, config.id) as worker:
            reply = worker.call("warpboard.studies.bench:device_rows", config.index, config.id, [str(c.path) for c in cases],
                                args.root, args.repeat, blocks, args.bench_threads, timeout_s=3600)
        if not reply.ok:
            print(f"{config.id}: {reply.describe()}\n{reply.traceback or ''}{reply.stderr_tail}", file=sys.stderr)
            continue
        doc["rows"].extend(reply.value["rows"])
        walls[config.id] = reply.value["wall_s"]
    if native:
        doc["native"] = native
    doc["summary"] = summarise(doc["rows"], walls, native, doc["parse"])
    doc["summary"]["interpreter_turns"] = interpreter_turns()    # the turn rule's counts, without a device
    doc["summary"]["checks"] = bench_targets.checks(doc["rows"], doc["summary"])
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(doc, indent=1))
    print(json.dumps(doc["summary"], indent=1, default=str)[:4000])
    for r in doc["rows"]:
        if not r["case"].startswith("bench/"):
            continue
        if "error" in r:
            print(f"{r['device']:14s} {r['case']:24s} {r['mode']:5s} ERROR {r['error']}")
            continue
        gpu = f" (device {r['gpu_s']['median'] * 1000:.2f} ms)" if r.get("gpu_s") else ""
        checksum = {True: "ok", False: "WRONG", None: "n/a"}[r.get("checksum_ok")]
        print(f"{r['device']:14s} {r['case']:24s} {r['mode']:5s} dispatch {r['dispatch_s']['median'] * 1000:9.2f} ms{gpu}"
              f"  turns {r['turns']:8d}  barriers/instr {r['barriers_per_instruction']:.3f}  checksum {checksum}")
    for device, checks in doc["summary"]["checks"].items():     # the targets, last: where a reader looks
        for name, c in checks.items():
            value = "-" if c["value"] is None else f"{c['value']:.3f}"
            state = {True: "met", False: "NOT MET", None: "not measured"}[c["met"]]
            if c["met"] is None and c.get("where"):
                state += f" ({c['where']})"
            print(f"{device:14s} {name:42s} {value:>8s}  limit {c['limit']:<5}  {state}")
    for r in wrong_words(doc["rows"]):      # timed, but not the chip's words: said where it shows
        print(f"warpboard bench: {r['case']} ({r['mode']}) on {r['device']}: the words' checksum is {r['checksum']}, "
              f"the chip's {r['checksum_expected']} (bench/kernels.toml): its times are of wrong words", file=sys.stderr)
    for r in unsettled(doc["rows"]):        # timed while the GPU's clock still moved: not comparable
        w = r["warm_up"]
        print(f"warpboard bench: {r['case']} ({r['mode']}) on {r['device']}: the clock did not settle in "
              f"{w['seconds']:.1f} s of warm-up ({w['first_ms']:.4f} ms, then {w['settled_ms']:.4f} ms per dispatch): "
              f"its times may not compare with native CUDA's or each other", file=sys.stderr)
    return 0


__all__ = ["run", "add_arguments", "measure", "summarise", "native_ratios", "bench_cases", "big_listing", "parse_rate",
           "TARGETS"]
