"""``warpboard fuzz``: random divergent kernels, their expected words, and per-device agreement.

    warpboard fuzz [--seed S] [--count N] [--shard K/N] [--knobs FILE] [--out DIR]
                   [--device PATTERN]... [--no-interp] [--jobs J] [--json FILE]
                   [--build-only | --reuse] [--record FILE.json [--repeat R]] [--strict]

builds the campaign (generate, run on the CPU model, compile with nvcc for sm_86, write
cases; see studies/fuzz/README.md) into DIR (default ``build/fuzz/seed<S>-n<N>``), runs
every case on the interpreter and the devices named, and prints per-device agreement
with the expected words and the failing cases by status. ``--reuse`` runs the cases
already built in DIR. ``--record`` (on a machine with an NVIDIA GPU and CuPy) first records
every case's words on the GPU in one record-truth batch: the case files get the chip's
words and FILE gets record-truth's JSON, which ``warpboard record-truth --root DIR --force
--from-json FILE 'fz*'`` applies to the same campaign built elsewhere; the summary then
also says where the CPU model and the chip differ.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from . import campaign
from warpboard.harness.case.model import CaseError, load_cases
from warpboard.harness.case.toml_text import tomllib
from warpboard.harness.run.engine import Options
from warpboard.authoring import truth
from warpboard.authoring.toolchain import ToolMissing
from .build import Built
from .generate import generate
from .knobs import KnobError, load



def parse_shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: give K/N, e.g. 2/8") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: K must be in 1..N")
    return k, n


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=1, help="campaign seed: program i has seed S + i (default 1)")
    p.add_argument("--count", type=int, default=200, help="programs in the whole campaign (default 200)")
    p.add_argument("--shard", type=parse_shard, default=(1, 1), help="K/N: only programs i with i %% N == K-1")
    p.add_argument("--knobs", help="knob file (TOML) over studies/fuzz/default.toml")
    p.add_argument("--out", help="campaign directory (default build/fuzz/seed<S>-n<N>[-shardKofN])")
    p.add_argument("--device", action="append", help="device id or pattern (repeatable; default: none)")
    p.add_argument("--no-interp", action="store_true", help="leave out the CPU reference interpreter")
    p.add_argument("--jobs", type=int, default=0, help="parallel processes (default: CPU count)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per case before the worker is killed")
    p.add_argument("--budget", type=int, help="step budget override")
    p.add_argument("--json", help="write the summary as JSON")
    p.add_argument("--stop-after", type=float, metavar="S",
                   help="start no cell after S seconds; the summary counts the cells that ran")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--build-only", action="store_true", help="build the cases, run nothing")
    mode.add_argument("--reuse", action="store_true", help="run the cases already built in the directory")
    p.add_argument("--record", metavar="FILE", help="record every case on the NVIDIA GPU first (JSON to FILE)")
    p.add_argument("--repeat", type=int, default=3, help="--record: GPU runs per case that must agree")
    p.add_argument("--strict", action="store_true", help="exit 1 when any cell is not PASS")
    p.add_argument("-v", "--verbose", action="store_true", help="print every cell as it finishes")


def reload_built(plan: campaign.Plan) -> list[Built]:
    """The programs of a campaign built earlier, from its campaign.json; a ``--shard`` other
    than the one it was built with takes that share of it (program i with i % N == K - 1)."""
    out = plan.directory()
    doc = json.loads((out / "campaign.json").read_text())
    knobs = load(doc.get("knobs"))
    k, n = plan.shard
    resharded = (k, n) != tuple(doc.get("shard", (1, 1)))
    built = []
    for name, entry in doc["programs"].items():
        if resharded and (entry["seed"] - doc["seed"]) % n != k - 1:
            continue
        path = out / f"{name}.toml" if entry["status"] == "case" else None
        words = None
        if path is not None:          # the CPU model's words, while the case still has them
            case = tomllib.loads(path.read_text())
            if case["provenance"]["expected"] == "derived":
                words = case["buffers"][0].get("expected")
        built.append(Built(generate(entry["seed"], knobs), entry["status"], entry["message"], path, words))
    return built


def record(cases, built: list[Built], args) -> dict:
    """Record the cases on the GPU (one record-truth batch); compare with the CPU model."""
    runner = truth.make_runner("auto", args.timeout)
    results: dict = {}
    outcomes = truth.record(cases, runner, force=True, repeat=args.repeat, results=results,
                            report=lambda o: print(f"{o.status:9s} {o.case} {o.message[:100]}", file=sys.stderr))
    Path(args.record).write_text(json.dumps(results, indent=1))
    model = {b.program.name: b.words for b in built if b.words is not None}
    differ = [o.case for o in outcomes if o.buffers and model.get(o.case) not in (None, o.buffers["out"])]
    return {"recorded_on": results.get("recorded_on"), "recorded": sum(o.status == "recorded" for o in outcomes),
            "not_recorded": [o.case for o in outcomes if o.status != "recorded"], "model_differs": differ}


def main(args: argparse.Namespace) -> int:
    plan = campaign.Plan(args.seed, args.count, args.shard, args.knobs, Path(args.out) if args.out else None)
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    try:
        if args.reuse:      # the campaign is the one in the directory: its seed and count
            built = reload_built(plan)
            doc = json.loads((plan.directory() / "campaign.json").read_text())
            plan = dataclasses.replace(plan, seed=doc["seed"], count=doc["count"], shard=tuple(doc.get("shard", plan.shard))
                                       if plan.shard == (1, 1) else plan.shard)
        else:
            built = campaign.build(plan, args.jobs, say)
    except (KnobError, ToolMissing, OSError) as e:
        print(f"warpboard fuzz: {e}", file=sys.stderr)
        return 2
    try:
        cases = load_cases([b.case_path for b in built if b.status == "case"], plan.directory())
    except CaseError as e:
        print(f"warpboard fuzz: a generated case does not load: {e}", file=sys.stderr)
        return 2
    chip = None
    if args.record:
        chip = record(cases, built, args)
        cases = load_cases([c.path for c in cases], plan.directory())
    results = []
    if not args.build_only:
        done = [0]

        def progress(r):
            done[0] += 1
            if args.verbose:
                say(f"{r.device:14s} {r.status.value:11s} {r.case}  {r.message[:100]}")
            elif done[0] % 25 == 0:
                say(f"{done[0]} cells run")
        options = Options(timeout_s=args.timeout, budget=args.budget)
        results = campaign.run(cases, campaign.columns_for(args.device, not args.no_interp),
                               options, args.jobs, progress, args.stop_after)
    doc = campaign.summarise(built, results, plan)
    if chip is not None:
        doc["chip"] = chip
    print(campaign.table(doc))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1))
    generator_bugs = doc["rejected_by_model"] or doc["build_errors"]
    disagree = any(d["counts"].get("PASS", 0) != d["total"] for d in doc["devices"].values())
    return 1 if generator_bugs or (args.strict and disagree) else 0


run = main                      # the (add_arguments, run, DESCRIPTION) triple of a subcommand
DESCRIPTION = __doc__


def run_argv(argv: list[str]) -> int:
    """``warpboard fuzz ARGS`` as a standalone command line."""
    p = argparse.ArgumentParser(prog="warpboard fuzz", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return main(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(run_argv(sys.argv[1:]))
