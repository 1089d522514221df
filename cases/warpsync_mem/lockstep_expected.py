"""The words the kernels of kernels.cu must leave, worked out from the CUDA source on the CPU
with every warp in lockstep (one statement of every lane before the next statement), which is
what the chip does for these converged warps. Independent of the translator and interpreter.

Usage: ``python cases/warpsync_mem/lockstep_expected.py OUT_DIR`` copies the case files into
OUT_DIR/warpsync_mem with these words as ``expected`` (provenance "derived"), so that
``warpboard run --root OUT_DIR 'warpsync_mem/*'`` checks every device against them. Once the
chip's words are recorded, the same copy shows whether they agree.
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from warpboard.harness.case.model import load_case  # noqa: E402
from warpboard.authoring.newcase import toml_words  # noqa: E402

M = 0xFFFFFFFF


def warp_width(t: int, block: int) -> int:
    return min(32, block - (t & ~31))


def lane_above(l: int, k: int, n: int) -> int:
    return l + k if l + k < n else l + k - n


def cub_exchange_b2s(inp):
    out = [0] * 384
    for t in range(96):
        w, l = divmod(t, 32)
        for i in range(4):
            out[4 * t + i] = (inp[128 * w + 32 * i + l] + i) & M
    return {"out": out}


def cub_exchange_s2b(inp):
    out = [0] * 96
    for t in range(48):
        w, l = divmod(t, 16)
        for i in range(2):
            out[2 * t + i] = inp[32 * w + 2 * l + i] ^ (t << 24 & M)
    return {"out": out}


def cub_warp_load_store(inp):
    out = [0] * 128
    for l in range(32):
        items = inp[4 * l:4 * l + 4]
        for i in range(4):
            out[4 * l + i] = (items[i] + (items[(i + 1) & 3] >> 3) + i * l) & M
    return {"out": out}


def cub_block_store_warp_transpose(inp):
    out = [0] * 512
    for t, x in enumerate(inp):
        for i in range(4):
            out[4 * t + i] = (x * (i + 1) + (x >> (8 * i))) & M
    return {"out": out}


def smem_transpose(inp, block: int = 80):
    tile = [[0] * 128 for _ in range(3)]
    for t in range(block):
        x = inp[t]
        for i in range(4):
            tile[t // 32][4 * (t % 32) + i] = (x + (x >> (8 * i)) * (i + 1)) & M
    out = [0] * block
    for t in range(block):
        acc = 0
        for i in range(4):
            acc = (acc * 31 + tile[t // 32][warp_width(t, block) * i + t % 32]) & M
        out[t] = acc
    return {"out": out}


def volatile_reduce_tail(inp):
    out = [0] * 64
    for b in range(2):
        v = [(inp[b * 256 + t] + inp[b * 256 + t + 128]) & M for t in range(128)]
        for t in range(64):
            v[t] = (v[t] + v[t + 64]) & M
        for s in (32, 16, 8, 4, 2, 1):          # lanes 0..31 in lockstep: all read, then all write
            v[:32] = [(v[l] + v[l + s]) & M for l in range(32)]
        out[b * 32:b * 32 + 32] = v[:32]
    return {"out": out}


def global_handoff(inp):
    total, n = 192, 32
    scratch = list(inp) + [0] * total
    ys = []
    for g in range(total):
        l, base = g % 32, g - g % 32
        ys.append((scratch[base + lane_above(l, 1, n)] * 5 + inp[g]) & M)
    scratch[total:] = ys
    out = [scratch[total + g - g % 32 + lane_above(g % 32, 3, n)] ^ ys[g] for g in range(total)]
    return {"out": out, "scratch": scratch}


def war_global(buf):
    old = list(buf)
    return {"buf": [(old[t - t % 32 + lane_above(t % 32, 1, warp_width(t, 48))] * 3 + t % 32) & M
                    for t in range(48)]}


def war_shared(inp):
    s = list(inp)
    ys = [s[t - t % 32 + ((t % 32 + 1) & 31)] for t in range(96)]
    s = [(ys[t] + inp[t] * 7) & M for t in range(96)]
    return {"out": [(s[t - t % 32 + ((t % 32 + 5) & 31)] - t % 32) & M for t in range(96)]}


KERNELS = {f.__name__: f for f in (cub_exchange_b2s, cub_exchange_s2b, cub_warp_load_store,
                                   cub_block_store_warp_transpose, smem_transpose, volatile_reduce_tail,
                                   global_handoff, war_global, war_shared)}


def expected(case) -> dict[str, list[int]]:
    """Every buffer's final words for a case of this directory (inputs that stay: their init)."""
    inputs = [list(b.init) for b in case.buffers]
    words = KERNELS[case.kernel](inputs[-1])
    return {b.name: words.get(b.name, list(b.init)) for b in case.buffers}


def write_checked_copy(out_root: Path) -> None:
    """Copy every case with the lockstep words as ``expected``."""
    dest = out_root / "warpsync_mem"
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("kernels.cu", "kernels.sm_86.sass"):
        shutil.copy(HERE / name, dest / name)
    for path in sorted(HERE.glob("*.toml")):
        case = load_case(path, HERE.parent)
        text = path.read_text().replace('expected = "pending"', 'expected = "derived"\n'
                                        'derivation = "cases/warpsync_mem/lockstep_expected.py"')
        for name, words in expected(case).items():
            text = re.sub(rf'(name = "{name}"\nwords = \d+\ninit = (?:\[[^\]]*\]|\S+)\n)',
                          lambda m: m.group(1) + toml_words("expected", words) + "\n", text)
        (dest / path.name).write_text(text)


if __name__ == "__main__":
    write_checked_copy(Path(sys.argv[1]))
