#!/usr/bin/env python3
"""An external translator for `warpboard run --translator NAME=COMMAND`: one request (JSON) on
standard input, one answer (JSON) on standard output, as harness/run/translators/external.py
documents. This one hands the listing to warpboard's own translator in the strategy named on
its command line (default subgroup-native), so it is also the smallest template for wrapping
another translator: replace `translate_listing` with a call into yours.

    warpboard run --translator mine="python3 examples/external_translator.py turns" vote/vote_uni
"""
from __future__ import annotations

import base64
import json
import sys

from warpboard.translator import Target, UnsupportedInstruction, load_program, translate


def translate_listing(request: dict, strategy: str) -> dict:
    launch = request["launch"]
    block = tuple(launch["block"])
    program = load_program(request["listing"], request["kernel"], block=block)
    features = frozenset(request["device"]["features"])
    real = request["device"].get("real_subgroup")
    if strategy == "subgroup-native" and program.collectives and (not real or real % 32):
        return {"unsupported": f"subgroups of {real} lanes cannot hold a warp of 32"}
    target = Target(features=features, workgroup_limit=request["device"].get("max_shared_memory"))
    shader = translate(program, block, launch["shared_bytes"], target=target, strategy=strategy)
    bindings = request["abi"]["bindings"]     # this translator keeps the board's own layout
    return {"spirv": base64.b64encode(shader.spirv).decode(), "entry": shader.entry,
            "bindings": {name: bindings[name] for name in shader.bindings if name in bindings},
            "mode": f"{strategy}/{shader.mode}", "scratch_words": shader.scratch_words}


def main(argv: list[str]) -> int:
    strategy = argv[0] if argv else "subgroup-native"
    request = json.load(sys.stdin)
    if request.get("compatible", request.get("protocol")) != 1:
        print(f"protocol {request.get('protocol')!r}: this translator speaks 1", file=sys.stderr)
        return 2
    try:
        answer = translate_listing(request, strategy)
    except UnsupportedInstruction as exc:
        answer = {"unsupported": str(exc)}
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
