#!/usr/bin/env bash
# run_on_cpu.sh: derive a collective-free case's expected words by running its CUDA
# source on the CPU, thread after thread (cpu_shim.h), and print them as TOML.
#
#   cases/tools/run_on_cpu.sh CASE.toml           # print `expected = [...]` per buffer
#   cases/tools/run_on_cpu.sh --check CASE.toml   # compare with the case's expected
#
# The case file supplies everything: source (its kernel must be extern "C"), kernel,
# [launch], [[buffers]] init and [[params]]. A host main() is generated, compiled with
#   g++ -std=c++17 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
# (out-of-bounds accesses and signed overflow, where CPU and GPU could differ, abort the
# run) and executed. Buffers with no `expected` in the case are printed too.
set -euo pipefail
TOOLS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export WB_TOOLS="$TOOLS"
exec python3 - "$@" <<'PY'
import os, subprocess, sys, tempfile
from pathlib import Path
try:
    import tomllib
except ModuleNotFoundError:
    import tomli as tomllib

args = sys.argv[1:]
check = "--check" in args
args = [a for a in args if a != "--check"]
if len(args) != 1:
    sys.exit("usage: run_on_cpu.sh [--check] CASE.toml")
case_path = Path(args[0])
case = tomllib.loads(case_path.read_text())
if "source" not in case:
    sys.exit(f"{case_path}: no `source` to run")
source = (case_path.parent / case["source"]).resolve()
kernel = case.get("kernel") or sys.exit(f"{case_path}: name the `kernel`")

def dim(v):
    v = [v] if isinstance(v, int) else list(v)
    return "dim3{%s}" % ", ".join(str(d) for d in v + [1] * (3 - len(v)))

bufs = case["buffers"]
lines = ['#include "cpu_shim.h"', f'#include "{source}"', "#include <cstdio>"]
for i, b in enumerate(bufs):
    init = b["init"] if isinstance(b["init"], list) else [b["init"]] * b["words"]
    lines.append(f"static uint32_t b{i}[{b['words']}] = {{{', '.join(f'{w}u' for w in init)}}};")
names = [b["name"] for b in bufs]
call = []
for p in case.get("params", []):
    if "buffer" in p:
        call.append(f"wb_ptr{{b{names.index(p['buffer'])}}}")
    elif "u32" in p:
        call.append(f"{p['u32']}u")
    else:
        call.append(f"{p['u64']}ull")
launch = case["launch"]
lines.append("int main() {")
lines.append(f"    wb_launch({dim(launch['grid'])}, {dim(launch['block'])}, "
             f"[] {{ {kernel}({', '.join(call)}); }});")
for i, b in enumerate(bufs):
    lines.append(f'    for (unsigned w = 0; w < {b["words"]}; w++) printf("%u ", b{i}[w]);')
    lines.append('    printf("\\n");')
lines.append("    return 0;\n}")

with tempfile.TemporaryDirectory() as tmp:
    main = Path(tmp, "main.cpp")
    main.write_text("\n".join(lines) + "\n")
    exe = Path(tmp, "main")
    subprocess.run(["g++", "-std=c++17", "-O1", "-g", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", "-I", os.environ["WB_TOOLS"],
                    "-o", str(exe), str(main)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout

results = [[int(w) for w in line.split()] for line in out.splitlines()]
bad = 0
for b, words in zip(bufs, results):
    if check:
        want = b.get("expected")
        if want is None:
            continue
        diff = [i for i, (x, y) in enumerate(zip(words, want)) if x != y]
        if diff or len(words) != len(want):
            bad += 1
            print(f"{case_path}: buffer {b['name']}: {len(diff)} words differ, first at "
                  f"[{diff[0] if diff else len(want)}]")
        continue
    print(f"# buffer {b['name']} ({len(words)} words)")
    rows = ",\n".join("    " + ", ".join(map(str, words[i:i + 8])) for i in range(0, len(words), 8))
    print(f"expected = [\n{rows},\n]")
if check:
    print(f"{case_path}: {'MISMATCH' if bad else 'OK'}")
sys.exit(1 if bad else 0)
PY
