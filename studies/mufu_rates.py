"""``warpboard mufu-rates``: how many of the chip's MUFU words each device gives bit for bit.

    warpboard mufu-rates [CASES...] [--device PATTERN]... [--no-interp] [--json OUT] [--markdown OUT]
    warpboard mufu-rates --from-json A.json [--from-json B.json]... [--markdown OUT] [--write-tolerances]

Runs the MUFU sweep cases (every case tagged ``mufu-sweep``, see :mod:`studies.mufu_sweep`) on
the CPU reference interpreter and every selected Vulkan device (lavapipe at each subgroup
width, as the scoreboard has them), each device in its own worker process, and holds the
words each leaves in buffer ``out`` against the case's expected words: the chip's once
``warpboard record-truth`` has recorded them, else the CPU's best guess (the report says
which). Per device and function it counts the inputs, the words equal bit for bit, and the
largest distance in units in the last place.

How words are counted (:func:`judge`): *exact* means the same 32 bits, NaNs included (a NaN
with another payload than the chip's is not exact: it is counted as ``nan_payload``). Two
non-NaN, finite words are some ULPs apart: the distance of their values as sign-magnitude
integers, so -0 and +0 are 0 apart (and not exact) and a step across zero counts the steps on
either side. A NaN against a number, or an infinity against anything else, is ``mismatched``
(no tolerance passes it). ``within N`` counts what ``compare = "f32-ulp:N"`` lets pass (exact,
at most N ulp, or a NaN for a NaN). RCP64H/RSQ64H words are the high words of binary64s: their
ULPs are steps of the high word (2^20 steps per binade).

``--from-json`` merges rates files written by ``--json`` (say one from the NVIDIA machine, one
from lavapipe here) instead of running anything; files measured against different expected
words are refused. ``--write-tolerances`` sets each float sweep case's ``compare`` to the
largest ULP distance any device of the report showed (none when every word is exact).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import re
import struct
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tabulate import tabulate

from warpboard.translator import TranslatorError, UnsupportedInstruction

from warpboard.harness.case.model import CaseError, discover_cases, load_case
from warpboard.harness.files import write_atomic
from warpboard.harness.run import devices
from warpboard.harness.run.dispatch import device_target, prepare, run_interpreter, run_vulkan, translate_case
from warpboard.harness.run.engine import device_limit
from warpboard.harness.run.worker import Worker, cached_device
from .mufu_sweep import BY_KERNEL

VERSION = 1
TAG = "mufu-sweep"
WITHIN = (1, 2, 4, 16)              # the tolerances whose pass counts the report gives
EXAMPLES = 6                        # worst words kept per device and function
INTERP = {"id": "interp", "name": "CPU reference interpreter", "driver_info": "translator.interp",
          "subgroup_size": 32}
FORMATS = {"f32": (0x7F800000, 0x007FFFFF), "f64h": (0x7FF00000, 0x000FFFFF)}   # exponent, fraction


# ---------------------------------------------------------------- one word against the chip's
def _ordered(w: int) -> int:
    """A sign-magnitude word as an integer in the order of its value (both zeros give 0)."""
    return -(w & 0x7FFFFFFF) if w >> 31 else w


def judge(fmt: str, want: int, have: int) -> tuple[str, int | None]:
    """How ``have`` stands against the chip's ``want``: ("exact", 0), ("ulp", distance),
    ("nan_payload", None) for two different NaNs, ("mismatched", None) otherwise."""
    if want == have:
        return "exact", 0
    exp, frac = FORMATS[fmt]
    special = [(w & exp) == exp for w in (want, have)]
    nan = [s and bool(w & frac) for s, w in zip(special, (want, have))]
    if nan[0] and nan[1]:
        return "nan_payload", None
    if special[0] or special[1]:
        return "mismatched", None
    return "ulp", abs(_ordered(want) - _ordered(have))


def word_value(fmt: str, w: int) -> float:
    """The value of a word: a binary32, or the binary64 whose high word it is (low word 0)."""
    return struct.unpack("<d", struct.pack("<Q", w << 32))[0] if fmt == "f64h" else \
        struct.unpack("<f", struct.pack("<I", w))[0]


def tally(fmt: str, inputs, expected, got) -> dict:
    """The rates of one device on one sweep: counts, the largest ULP distance and absolute
    difference, the ULP histogram of the inexact words and the worst examples (input, chip's
    word, device's). The absolute difference matters where PTX bounds the absolute error (sin,
    cos, lg2 near 1), where a result near zero may be many ULPs off."""
    kinds, histogram, worst, largest = Counter(), Counter(), [], 0.0
    for index, (x, want, have) in enumerate(zip(inputs, expected, got)):
        kind, ulp = judge(fmt, want, have)
        kinds[kind] += 1
        if kind == "exact":
            continue
        if kind == "ulp":
            histogram[ulp] += 1
            largest = max(largest, abs(word_value(fmt, want) - word_value(fmt, have)))
        rank = {"mismatched": math.inf, "nan_payload": -1}.get(kind, ulp)     # the worst first
        worst.append((rank, index, {"index": index, "input": f"{x:#010x}", "expected": f"{want:#010x}",
                                    "got": f"{have:#010x}", "kind": kind, "ulp": ulp}))
    n = len(expected)
    worst.sort(key=lambda r: (-r[0], r[1]))
    return {"inputs": n, "exact": kinds["exact"], "exact_pct": 100.0 * kinds["exact"] / n if n else 0.0,
            "max_ulp": max(histogram, default=0), "max_abs": largest, "ulp_words": sum(histogram.values()),
            "nan_payload": kinds["nan_payload"], "mismatched": kinds["mismatched"],
            "within": {str(t): kinds["exact"] + kinds["nan_payload"]
                       + sum(c for u, c in histogram.items() if u <= t) for t in WITHIN},
            "ulp_histogram": {str(u): histogram[u] for u in sorted(histogram)},
            "examples": [w[2] for w in worst[:EXAMPLES]]}


# ---------------------------------------------------------------- the sweeps and their words
def digest(words) -> str:
    """A short fingerprint of a word list (rates files measured against the same words agree)."""
    return hashlib.sha256(struct.pack(f"<{len(words)}I", *words)).hexdigest()[:16]


def sweep_entry(case) -> dict:
    """What the report says of a sweep case: its function, input count, tolerance and where
    its expected words come from. Raises ValueError for a case that is no sweep."""
    names = [b.name for b in case.buffers]
    if "in" not in names or "out" not in names:
        raise ValueError(f"{case.path}: a MUFU sweep case has buffers 'in' and 'out' (it has {', '.join(names)})")
    out = case.buffer("out")
    if out.expected is None:
        raise ValueError(f"{case.path}: buffer 'out' has no expected words to measure against "
                         f"(record them: warpboard record-truth {case.id})")
    sweep = BY_KERNEL.get(case.kernel)
    prov = case.provenance
    return {"case": case.id, "kernel": case.kernel, "label": sweep.label if sweep else case.kernel,
            "ptx": sweep.ptx if sweep else "", "fmt": sweep.fmt if sweep else "f32", "inputs": out.words,
            "compare": out.compare, "expected": prov.get("expected"),
            "recorded_on": prov.get("recorded_on", ""),
            "expected_digest": digest(out.expected)}


def case_words(case_path: str, root: str | None, device_index: int | None, timeout_s: float) -> dict:
    """Worker target: run one case on this process's device (None: the interpreter) and return
    {"outcome", "message", "words" (buffer out, when it ran to the end)}."""
    case = load_case(case_path, root)
    try:
        prep = prepare(case)
        if device_index is None:
            raw = run_interpreter(prep)
        else:
            device = cached_device(device_index)
            if beyond := device_limit(case, device.info):
                return {"outcome": "unsupported", "message": beyond}
            shader, _ = translate_case(prep, None, device_target(device.info, prep.launch.block))
            raw = run_vulkan(device, prep, shader, timeout_s=timeout_s)
    except UnsupportedInstruction as exc:
        return {"outcome": "unsupported", "message": str(exc)}
    except TranslatorError as exc:
        return {"outcome": "error", "message": str(exc)}
    if raw.outcome.value != "ok":
        return {"outcome": raw.outcome.value, "message": raw.detail}
    data = raw.buffers[[b.name for b in case.buffers].index("out")]
    return {"outcome": "ok", "message": "", "words": list(struct.unpack(f"<{len(data) // 4}I", data))}


def device_rates(cases, column: tuple, root: str | None, timeout_s: float) -> list[dict]:
    """Every sweep case on one column (device id, index or None, env): a rates row each."""
    device_id, index, env = column
    rows = []
    with Worker(env, device_id) as worker:
        for case in cases:
            reply = worker.call("warpboard.studies.mufu_rates:case_words", str(case.path), root, index, timeout_s,
                                timeout_s=timeout_s + 30)
            got = reply.value if reply.ok else {"outcome": reply.kind, "message": reply.describe()}
            row = {"device": device_id, "case": case.id, "outcome": got["outcome"], "message": got["message"]}
            if got["outcome"] == "ok":
                fmt = sweep_entry(case)["fmt"]
                row.update(tally(fmt, case.buffer("in").init, case.buffer("out").expected, got["words"]))
            elif not reply.ok:
                worker.close()
            rows.append(row)
    return rows


def measure(cases, configs, interp: bool = True, root: str | None = None, timeout_s: float = 120.0) -> dict:
    """The rates document of ``cases`` on the device configurations (and the interpreter)."""
    columns = [(c.id, c.index, c.env) for c in configs] + ([(INTERP["id"], None, {})] if interp else [])
    sweeps = [sweep_entry(c) for c in cases]
    with ThreadPoolExecutor(max(1, min(len(columns), os.cpu_count() or 1))) as pool:
        per_column = list(pool.map(lambda col: device_rates(cases, col, root, timeout_s), columns))
    devices = [{"id": c.id, "name": c.info.name, "driver_info": c.info.driver_info,
                "subgroup_size": c.info.subgroup_size} for c in configs] + ([dict(INTERP)] if interp else [])
    return {"version": VERSION, "created": _now(), "devices": devices, "sweeps": sweeps,
            "rates": [row for rows in per_column for row in rows]}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge(docs: list[dict]) -> dict:
    """One rates document from several (a later file's row for a device and case replaces an
    earlier one). Raises ValueError when two files measured one case against different words."""
    sweeps, devices, rows = {}, {}, {}
    for doc in docs:
        if doc.get("version") != VERSION:
            raise ValueError(f"a rates file of version {doc.get('version')!r}; this reads version {VERSION}")
        for s in doc["sweeps"]:
            known = sweeps.setdefault(s["case"], s)
            if known["expected_digest"] != s["expected_digest"]:
                raise ValueError(f"{s['case']}: the rates files were measured against different expected words "
                                 f"({known['expected']} vs {s['expected']}); measure both against the same case files")
        devices.update({d["id"]: d for d in doc["devices"]})
        rows.update({(r["device"], r["case"]): r for r in doc["rates"]})
    return {"version": VERSION, "created": _now(), "devices": list(devices.values()),
            "sweeps": sorted(sweeps.values(), key=lambda s: s["case"]), "rates": list(rows.values())}


# ---------------------------------------------------------------- the report
HOW_COUNTED = (
    "*Bit-exact*: the same 32 bits as the expected word, NaNs included: a NaN with another "
    "payload than the expected one is not exact (column *NaN payload*). Other words are some ULPs "
    "apart: the distance between the values as sign-magnitude integers, so +0 against -0 is 0 ulp "
    "(yet not exact) and a step across zero counts the steps on both sides. A NaN against a number, "
    "or an infinity against anything else, is *mismatched*: no ULP tolerance passes it. *Max ulp* is "
    "the largest distance among the words that are neither, *max abs* the largest difference of their values "
    "(PTX bounds the absolute error of sin, cos and lg2: near their zeros a small absolute error is many ULPs). "
    "*Within N* counts the words "
    "`compare = \"f32-ulp:N\"` lets pass (exact, at most N ulp apart, or any NaN for a NaN). "
    "MUFU.RCP64H/RSQ64H words are binary64 high words: their ULPs are steps of the high word.")


def _order(doc: dict) -> list[dict]:
    """The sweeps in the order of studies.mufu_sweep.SWEEPS (unknown ones after, by name)."""
    rank = {s.kernel: k for k, s in enumerate(BY_KERNEL.values())}
    return sorted(doc["sweeps"], key=lambda s: (rank.get(s["kernel"], len(rank)), s["case"]))


def _rows(doc: dict) -> dict[tuple[str, str], dict]:
    return {(r["device"], r["case"]): r for r in doc["rates"]}


def suggested_ulp(doc: dict, case: str) -> int | None:
    """The largest ULP distance any device showed on ``case`` (None: no device ran it)."""
    ran = [r["max_ulp"] for r in doc["rates"] if r["case"] == case and r["outcome"] == "ok"]
    return max(ran) if ran else None


def _cell(row: dict | None) -> str:
    """A summary cell: the exact rate and the largest ULP distance (or why it did not run)."""
    if row is None:
        return "-"
    if row["outcome"] != "ok":
        return row["outcome"].upper()
    text = f"{row['exact_pct']:.2f} % · {row['max_ulp']} ulp"
    extra = [f"{row[k]} {label}" for k, label in (("nan_payload", "NaN payload"), ("mismatched", "mismatched"))
             if row[k]]
    return text + (f" ({', '.join(extra)})" if extra else "")


def detail_rows(doc: dict) -> list[list]:
    """Per device and function: inputs, exact (count and %), max ulp and absolute difference, within 1 and 2 ulp,
    NaN payload and mismatched counts."""
    rows, found = [], _rows(doc)
    for device in doc["devices"]:
        for sweep in _order(doc):
            r = found.get((device["id"], sweep["case"]))
            if r is None:
                continue
            if r["outcome"] != "ok":
                rows.append([device["id"], sweep["label"], sweep["inputs"], r["outcome"].upper(),
                             "", "", "", "", "", "", r["message"][:60]])
                continue
            rows.append([device["id"], sweep["label"], r["inputs"], r["exact"], f"{r['exact_pct']:.2f}",
                         r["max_ulp"], f"{r['max_abs']:.3g}", r["within"]["1"], r["within"]["2"], r["nan_payload"],
                         r["mismatched"]])
    return rows


DETAIL_HEADERS = ["device", "function", "inputs", "bit-exact", "%", "max ulp", "max abs", "within 1",
                  "within 2", "NaN payload", "mismatched"]


def terminal(doc: dict) -> str:
    return tabulate(detail_rows(doc), headers=DETAIL_HEADERS)


def _md_row(cells) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _expected_note(doc: dict) -> str:
    """Where the expected words of the report's sweeps come from."""
    chip = sorted({s["recorded_on"] for s in doc["sweeps"] if s["expected"] == "chip"})
    derived = [s["case"] for s in _order(doc) if s["expected"] != "chip"]
    parts = [f"the chip's, recorded on {r}" for r in chip]
    if derived:
        parts.append("the CPU's best guess (`expected = \"derived\"`, not yet recorded on the chip) for "
                     + ", ".join(f"`{c}`" for c in derived))
    return "Expected words: " + "; ".join(parts) + "."


def markdown(doc: dict) -> str:
    """The rates report: per function and device, the bit-exact rate and largest ULP distance;
    then the details, the counting rules and the worst words."""
    devices = [d["id"] for d in doc["devices"]]
    found = _rows(doc)
    out = ["# MUFU bit-exact rates", "",
           f"Made by `warpboard mufu-rates` ({doc['created']}). " + _expected_note(doc), "",
           "Devices: " + "; ".join(f"`{d['id']}` {d['name']} ({d['driver_info']}, subgroup {d['subgroup_size']})"
                                   for d in doc["devices"]) + ".", "",
           "## Bit-exact rate and largest ULP distance", "",
           _md_row(["function", "PTX", "inputs", "declared", "largest ulp"] + [f"`{d}`" for d in devices]),
           _md_row(["---"] * (5 + len(devices)))]
    for s in _order(doc):
        worst = suggested_ulp(doc, s["case"])
        out.append(_md_row([s["label"], f"`{s['ptx']}`" if s["ptx"] else "", s["inputs"], f"`{s['compare']}`",
                            "-" if worst is None else worst] + [_cell(found.get((d, s["case"]))) for d in devices]))
    out += ["", "## Per device", "", _md_row(DETAIL_HEADERS), _md_row(["---"] * len(DETAIL_HEADERS))]
    out += [_md_row(r) for r in detail_rows(doc)]
    out += ["", "## How words are counted", "", HOW_COUNTED, "", "## Worst words", ""]
    out += _worst_lines(doc) or ["Every word of every sweep is bit-exact on every device."]
    return "\n".join(out) + "\n"


def _worst_lines(doc: dict) -> list[str]:
    """The worst words of each device and function that is not all exact, as a table."""
    lines, found = [], _rows(doc)
    for device in doc["devices"]:
        for s in _order(doc):
            r = found.get((device["id"], s["case"]))
            for e in (r or {}).get("examples", [])[:3]:
                lines.append(_md_row([device["id"], s["label"], e["input"], e["expected"], e["got"],
                                      e["ulp"] if e["ulp"] is not None else e["kind"].replace("_", " ")]))
    if not lines:
        return []
    return [_md_row(["device", "function", "input", "expected", "got", "ulp"]), _md_row(["---"] * 6)] + lines


# ---------------------------------------------------------------- tolerances
_OUT_BUFFER = re.compile(r'(\[\[buffers\]\]\nname = "out"\nwords = \d+\n)(compare = "[^"]*"\n)?')


def write_tolerances(doc: dict, root: str | Path) -> list[str]:
    """Set each sweep case's ``compare`` to the largest ULP distance of the report (none when it
    is 0: exact), in the case file and the report; a line per case saying what was done. RCP64H/RSQ64H high words get the same
    ``f32-ulp:N``: the comparison reads them as binary32 words, which counts high-word steps
    alike, except that it takes every word from 0x7f800000 up (binary64s from 2^1017 in
    magnitude, infinities and NaNs) for a NaN."""
    notes = []
    for s in _order(doc):
        worst = suggested_ulp(doc, s["case"])
        if worst is None:
            notes.append(f"{s['case']}: left as it is (no device ran it)")
            continue
        path = Path(root) / f"{s['case']}.toml"
        declared = load_case(path, root).buffer("out").compare
        if ",abs:" in declared:
            s["compare"] = declared
            notes.append(f"{s['case']}: left as it is (compare = {declared} declares an absolute bound)")
            continue
        text = path.read_text(encoding="utf-8")
        line = f'compare = "f32-ulp:{worst}"\n' if worst else ""
        new, n = _OUT_BUFFER.subn(lambda m: m.group(1) + line, text, count=1)
        if n != 1:
            raise ValueError(f"{path}: no [[buffers]] table named out to set the tolerance on")
        path.write_text(new, encoding="utf-8")
        s["compare"] = load_case(path, root).buffer("out").compare
        caveats = [f"{s['fmt']} words read as binary32"] if s["fmt"] != "f32" else []
        mismatched = sum(r.get("mismatched", 0) for r in doc["rates"] if r["case"] == s["case"])
        if mismatched:
            caveats.append(f"{mismatched} mismatched words, which no tolerance passes")
        notes.append(f"{s['case']}: compare = {'f32-ulp:' + str(worst) if worst else 'exact'}"
                     + (f" ({'; '.join(caveats)})" if caveats else ""))
    return notes


# ---------------------------------------------------------------- the command
DESCRIPTION = ("Run the MUFU sweep cases on the interpreter and the Vulkan devices and report, per "
               "device and function, the words equal to the expected ones bit for bit and the "
               "largest ULP distance (table, JSON, markdown).")


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``warpboard mufu-rates`` options to a parser (a fresh one or a subparser)."""
    p.add_argument("cases", nargs="*", help=f"case ids or patterns (default: every case tagged {TAG})")
    p.add_argument("--root", default="cases", help="the case library (default: cases)")
    p.add_argument("--device", action="append",
                   help="device id or pattern (repeatable; default: all; none: the interpreter only)")
    p.add_argument("--no-interp", action="store_true", help="leave out the CPU reference interpreter")
    p.add_argument("--from-json", action="append", default=[], metavar="FILE",
                   help="merge rates files written by --json instead of running (repeatable)")
    p.add_argument("--json", dest="json_out", metavar="FILE", help="write the rates as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the rates report as markdown")
    p.add_argument("--write-tolerances", action="store_true",
                   help="set each sweep case's compare to the largest ULP distance measured")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per case and device (default 120)")
    return p


def select_cases(root: str, patterns: list[str]) -> list:
    """The named cases, or every case tagged mufu-sweep."""
    cases = discover_cases(root, patterns or None)
    return cases if patterns else [c for c in cases if TAG in c.tags]


def _load(paths: list[str]) -> dict:
    docs = []
    for path in paths:
        try:
            docs.append(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: {e}") from None
    return merge(docs)


def _measure(args: argparse.Namespace) -> dict:
    cases = select_cases(args.root, args.cases)
    if not cases:
        raise ValueError(f"no case in {args.root} matches {' '.join(args.cases) or 'the tag ' + TAG}")
    configs = [] if args.device == ["none"] else devices.select(devices.discover(), args.device)
    return measure(cases, configs, not args.no_interp, args.root, args.timeout)


def run(args: argparse.Namespace) -> int:
    """Carry out ``warpboard mufu-rates``: exit 0, or 2 when it cannot start."""
    try:
        doc = _load(args.from_json) if args.from_json else _measure(args)
    except (ValueError, CaseError) as e:
        print(f"warpboard mufu-rates: {e}", file=sys.stderr)
        return 2
    print(terminal(doc))
    if args.write_tolerances:       # first, so that the reports show the tolerances declared now
        for note in write_tolerances(doc, args.root):
            print(note)
    if args.json_out:
        write_atomic(args.json_out, json.dumps(doc, indent=1))
    if args.markdown:
        write_atomic(args.markdown, markdown(doc))
    return 0
