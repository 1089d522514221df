#!/usr/bin/env bash
# run_on_cpu.sh: derive a case's expected words by running its CUDA source on the CPU and
# print them as TOML: a collective-free kernel thread after thread (cpu_shim.h), or with
# --collectives one OS thread per CUDA thread with warp collectives and block barriers
# modelled (cpu_collectives.h; a kernel that breaks the *_sync mask rules exits with 3; one
# whose words differ between two orders of the threads, a race, exits with 1).
# What the kernel prints with printf becomes the case's `[printf] expected` lines (--check
# compares them as a multiset: the order between threads is not defined).
#
#   cases/tools/run_on_cpu.sh CASE.toml                 # print `expected = [...]` per buffer
#   cases/tools/run_on_cpu.sh --check CASE.toml         # compare with the case's expected
#   cases/tools/run_on_cpu.sh --collectives CASE.toml   # votes, shuffles, barriers, atomics
#
# The case file supplies everything: source (its kernel must be extern "C"), kernel,
# [launch], [[buffers]] init and [[params]]. A host main() is generated, compiled with
#   g++ -std=c++17 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
# (out-of-bounds accesses and signed overflow, where CPU and GPU could differ, abort the
# run; with --collectives -std=c++20 -pthread and no AddressSanitizer) and executed. Buffers with no `expected` in the case are printed too.
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
threads = "--collectives" in args
args = [a for a in args if a not in ("--check", "--collectives")]
if len(args) != 1:
    sys.exit("usage: run_on_cpu.sh [--check] [--collectives] CASE.toml")
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
header, launcher = ("cpu_collectives.h", "wb_launch_threads") if threads else ("cpu_shim.h", "wb_launch")
lines = [f'#include "{header}"', f'#include "{source}"', "#include <cstdio>"]
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
lines.append(f"    {launcher}({dim(launch['grid'])}, {dim(launch['block'])}, "
             f"[] {{ {kernel}({', '.join(call)}); }});")
lines.append("    std::fflush(stdout);")
lines.append("    FILE *words = std::fopen(WB_WORDS, \"w\");")
for i, b in enumerate(bufs):
    lines.append(f'    for (unsigned w = 0; w < {b["words"]}; w++) std::fprintf(words, "%u ", b{i}[w]);')
    lines.append('    std::fprintf(words, "\\n");')
lines.append("    return std::fclose(words);\n}")

with tempfile.TemporaryDirectory() as tmp:
    main = Path(tmp, "main.cpp")
    main.write_text("\n".join(lines) + "\n")
    exe = Path(tmp, "main")
    flags = (["-std=c++20", "-pthread", "-fsanitize=undefined"] if threads
             else ["-std=c++17", "-fsanitize=address,undefined"])
    words_file = Path(tmp, "words")
    subprocess.run(["g++", *flags, "-O1", "-g", "-fno-sanitize-recover=all", "-I", os.environ["WB_TOOLS"],
                    f"-DWB_WORDS=\"{words_file}\"", "-o", str(exe), str(main)], check=True)
    outs = []
    # --collectives: twice, the threads in two orders (WB_JITTER, cpu_collectives.h): words that
    # differ are a race, e.g. several lanes of one `y[m] = v` storing different values
    for jitter in (["1", "2"] if threads else [None]):
        env = dict(os.environ, **({"WB_JITTER": jitter} if jitter else {}))
        run = subprocess.run([str(exe)], capture_output=True, env=env)
        if run.returncode != 0:
            sys.stderr.write(run.stderr.decode("utf-8", "backslashreplace"))
            sys.exit(f"{case_path}: the kernel failed on the CPU (exit {run.returncode})")
        outs.append(words_file.read_text())
    out = outs[0]
    if any(o != out for o in outs[1:]):
        runs = [[[int(w) for w in line.split()] for line in o.splitlines()] for o in outs]
        for b, first, second in zip(bufs, *runs):
            diff = [i for i, (x, y) in enumerate(zip(first, second)) if x != y]
            if diff:
                print(f"{case_path}: buffer {b['name']}: {len(diff)} words differ between two orders of "
                      f"the threads, first at [{diff[0]}]: {first[diff[0]]:#x} and {second[diff[0]]:#x}",
                      file=sys.stderr)
        sys.exit(f"{case_path}: the words depend on the order the threads ran (a race, which CUDA leaves "
                 f"undefined: lanes storing different values to one word, say): no expected words")
    printed = run.stdout.decode("utf-8", "backslashreplace").split("\n")   # as harness.run.printf decodes
    printed = printed[:-1] if printed[-1] == "" else printed

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
want_lines = case.get("printf", {}).get("expected")
if check and want_lines is not None and sorted(want_lines) != sorted(printed):
    bad += 1
    missing = sorted(set(want_lines) - set(printed))[:3]
    extra = sorted(set(printed) - set(want_lines))[:3]
    print(f"{case_path}: printf lines differ: missing {missing}, extra {extra}")
elif not check and (printed or want_lines is not None):
    import json
    print(f"# printf: {len(printed)} lines\n[printf]\nexpected = [")
    quoted = (json.dumps(line).replace("\x7f", "\\u007f") for line in printed)   # TOML strings
    print("".join(f"    {q},\n" for q in quoted) + "]")
if check:
    print(f"{case_path}: {'MISMATCH' if bad else 'OK'}")
sys.exit(1 if bad else 0)
PY
