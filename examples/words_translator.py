#!/usr/bin/env python3
"""An external translator that reads only machine code: the request's ``code.words`` (protocol
2, harness/run/translators/external.py), never its listing. It stands where a translator that
decodes SM86 instructions itself (an emulator's recompiler) would plug in: here the words are
decoded by NVIDIA's own disassembler (``nvdisasm --binary SM86``) and the result handed to
warpboard's translator in the strategy named on the command line (default turns), so that the
board can check the interface end to end: this translator must score what ``turns`` scores.

    warpboard run --translator words="python3 examples/words_translator.py" vote/vote_uni

A case without words is answered as unsupported.
"""
from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import tempfile

from warpboard.harness.case.words import find_nvdisasm
from warpboard.translator import ANONYMOUS, Target, UnsupportedInstruction, load_program, translate


def decode(words: bytes, tables: dict[str, list[int]]) -> str:
    """The words as a listing: nvdisasm's raw-binary disassembly (branch targets as addresses),
    each indirect branch annotated with the targets its table gives, as nvdisasm does for a cubin."""
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        raise UnsupportedInstruction("nvdisasm is not installed here", "decoder")
    with tempfile.NamedTemporaryFile(suffix=".sm86") as f:
        f.write(words)
        f.flush()
        text = subprocess.run([nvdisasm, "--binary", "SM86", f.name], capture_output=True, text=True,
                              check=True).stdout
    lines = []
    for line in text.splitlines():
        at = re.match(r"\s*/\*([0-9a-f]{4,})\*/", line)
        targets = tables.get(f"{int(at.group(1), 16):#x}") if at else None
        if targets and line.rstrip().endswith(";"):
            line = line.rstrip()[:-1] + ' (*"BRANCH_TARGETS ' + ",".join(f"{t:#x}" for t in targets) + '"*) ;'
        lines.append(line)
    return "\n".join(lines) + "\n"


def translate_words(request: dict, strategy: str) -> dict:
    code = request.get("code")
    if not code:
        return {"unsupported": "the case carries no machine code"}
    launch = request["launch"]
    block = tuple(launch["block"])
    program = load_program(decode(base64.b64decode(code["words"]), code.get("branch_targets", {})), ANONYMOUS,
                           block=block)
    device = request["device"]
    target = Target(features=frozenset(device["features"]), workgroup_limit=device.get("max_shared_memory"))
    shader = translate(program, block, launch["shared_bytes"], target=target, strategy=strategy)
    bindings = request["abi"]["bindings"]     # the board's own layout
    return {"spirv": base64.b64encode(shader.spirv).decode(), "entry": shader.entry,
            "bindings": {name: bindings[name] for name in shader.bindings if name in bindings},
            "mode": f"words/{shader.mode}", "scratch_words": shader.scratch_words}


def main(argv: list[str]) -> int:
    strategy = argv[0] if argv else "turns"
    request = json.load(sys.stdin)
    if request.get("protocol", 1) < 2:
        print(f"protocol {request.get('protocol')!r}: this translator needs 2 (machine code)", file=sys.stderr)
        return 2
    try:
        answer = translate_words(request, strategy)
    except UnsupportedInstruction as exc:
        answer = {"unsupported": str(exc)}
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
