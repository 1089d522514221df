#!/usr/bin/env python3
"""The SPIR-V of every library case, as SHA-256 digests: a refactoring that must not change
what the translator emits is checked by comparing two runs.

    ci/spirv_digest.py -o before.json          # on the commit before
    ci/spirv_digest.py --against before.json   # after: lists every case whose SPIR-V changed

Each case is translated in every configuration the harness uses: turns with the vote reduced
in the subgroup or not, collectives in workgroup memory or as subgroup operations, and, where
the program has no collective, free mode and forced turns.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from warpboard.harness.case.model import discover_cases
from warpboard.harness.run.dispatch import prepare
from warpboard.translator import Target, TranslatorError, translate

ROOT = Path(__file__).resolve().parents[1]


def digests(root: Path) -> dict[str, str]:
    """Configuration name -> digest of its SPIR-V (or the error it raised)."""
    out: dict[str, str] = {}

    def one(key: str, *args) -> None:
        try:
            out[key] = hashlib.sha256(translate(*args).spirv).hexdigest()
        except (TranslatorError, ValueError) as e:
            out[key] = f"error: {type(e).__name__}: {e}"

    for case in discover_cases(root):
        prep = prepare(case)
        program, block, shared = prep.program, prep.launch.block, case.shared_bytes
        if not program.turns:
            one(f"{case.id} free", program, block, shared, "free")
            one(f"{case.id} turns", program, block, shared, "turns")
        for warp_subgroups in (False, True):
            for subgroup_vote in (True, False):
                one(f"{case.id} warp_subgroups={warp_subgroups} subgroup_vote={subgroup_vote}",
                    program, block, shared, None, Target(warp_subgroups=warp_subgroups, subgroup_vote=subgroup_vote))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=str(ROOT / "cases"), help="the case library (default: cases/)")
    ap.add_argument("-o", "--output", help="write the digests here (JSON)")
    ap.add_argument("--against", help="compare with digests written earlier; exit 1 on any difference")
    args = ap.parse_args(argv)
    now = digests(Path(args.cases))
    if args.output:
        Path(args.output).write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    if not args.against:
        print(f"{len(now)} configurations")
        return 0
    before = json.loads(Path(args.against).read_text())
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for key in changed:
        print(f"{key}: {before.get(key, 'absent')} -> {now.get(key, 'absent')}")
    print(f"{len(now)} configurations, {len(changed)} differ")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
