"""Generic addressing (LD/ST/ATOM): a 64-bit address in the shared window (``c[0x0][0x18]``)
is shared memory, one in the local window (``c[0x0][0x20]``, plus a local address such as R1's)
is the thread's own local memory, any other is global memory, on both back ends (the CPU
reference interpreter and the SPIR-V translation on lavapipe, see the ``backend`` fixture).
The lanes of one instruction take different windows: each thread picks its pointer from an
input word, as a C++ pointer that reaches a __noinline__ function does. Expected words are
computed here in plain Python, never with the translator's helpers.
"""
from __future__ import annotations

import random
import struct

import pytest
from warpboard.translator import abi
from warpboard.translator.errors import UnsupportedInstruction

from support.listing_kit import (
    HEAD,
    M32,
    SENTINEL,
    assert_rows,
    load_inputs,
    rows_of,
    store_outputs,
)

SHARED, LOCAL, GLOBAL = 0, 1, 2          # the window thread t takes: t % 3 (its input word R15)


def sext(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return (v - (1 << bits)) & M32 if v >> (bits - 1) else v


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def test_bank_0_holds_the_windows_apart_from_every_buffer():
    """ptxas reads the windows' bases as 64-bit pairs at 0x18 and 0x20 (cvta.shared, cvta.local):
    4 GiB windows whose high words no buffer and no function address has."""
    bank = abi.constant_bank(abi.Launch((1, 1, 1), (32, 1, 1)), [])
    assert struct.unpack_from("<QQI", bank, 0x18) == (abi.SHARED_WINDOW, abi.LOCAL_WINDOW, abi.STACK_TOP)
    highs = {abi.buffer_address(k) >> 32 for k in range(abi.MAX_BUFFERS)} | {a >> 32 for a in abi.FUNCTIONS.values()}
    assert abi.SHARED_WINDOW >> 32 not in highs and abi.LOCAL_WINDOW >> 32 not in highs
    assert abi.SHARED_WINDOW & M32 == abi.LOCAL_WINDOW & M32 == 0
    assert abi.generic_target(abi.SHARED_WINDOW + 0x44) == ("shared", 0x44)
    assert abi.generic_target(abi.LOCAL_WINDOW + abi.STACK_TOP - 8) == ("local", abi.STACK_TOP - 8)
    assert abi.generic_target(abi.buffer_address(3) + 8) == ("global", abi.buffer_address(3) + 8)


def pointer(frame: int = 0x20, own: bool = True) -> list[str]:
    """The thread's generic pointer R8:R9, as R15 (t % 3) says: to shared memory at R7 (32 t,
    or 0 where not ``own``), to its local frame of ``frame`` bytes at R1, or to buffer 2 at
    R4:R5 (32 t bytes in, or its start)."""
    tid = "R0" if own else "RZ"
    return [
        f"IADD3 R1, R1, -{frame:#x}, RZ", f"IMAD.SHL.U32 R7, {tid}, 0x20, RZ",
        "IADD3 R8, P0, R7, c[0x0][0x18], RZ", "IADD3.X R9, RZ, c[0x0][0x1c], RZ, P0, !PT",
        "IADD3 R2, P0, R1, c[0x0][0x20], RZ", "IMAD.X R3, RZ, RZ, c[0x0][0x24], P0",
        f"IMAD.WIDE.U32 R4, {tid}, 0x20, c[0x0][0x170]",
        "ISETP.EQ.U32.AND P1, PT, R15, 0x1, PT", "ISETP.EQ.U32.AND P2, PT, R15, 0x2, PT",
        "SEL R8, R2, R8, P1", "SEL R9, R3, R9, P1", "SEL R8, R4, R8, P2", "SEL R9, R5, R9, P2",
    ]


def test_generic_loads_and_stores_every_width(backend):
    """ST.E of quads, pairs, bytes, halfwords and words through the thread's pointer, LD.E back
    with sign and zero extension, and the same word read by LDS, LDL and LDG: only the memory
    of the thread's window holds it."""
    threads, n_in = 64, 6
    rng = random.Random(86)
    words = [rng.getrandbits(32) for _ in range(threads * n_in)]
    for t in range(threads):
        words[t * n_in + 5] = t % 3
    body = HEAD + load_inputs(n_in) + pointer() + [
        "STS [R7+0x1c], RZ", "STL [R1+0x1c], RZ",
        "ST.E.128 [R8.64], R10", "ST.E.64 [R8.64+0x10], R10", "ST.E.U8 [R8.64+0x18], R11",
        "ST.E.U16 [R8.64+0x1a], R12", "ST.E [R8.64+0x1c], R13",
        "LD.E.U8 R20, [R8.64+0x18]", "LD.E.S8 R21, [R8.64+0x1]", "LD.E.U16 R22, [R8.64+0x1a]",
        "LD.E.S16 R23, [R8.64+0x2]", "LD.E.64 R24, [R8.64+0x10]", "LD.E R26, [R8.64+0x1c]",
        "LD.E.128 R28, [R8.64]",
        "LDS R32, [R7+0x1c]", "LDL R33, [R1+0x1c]", "LDG.E R34, [R4.64+0x1c]",
    ] + store_outputs(15)
    run = backend.run(body, [words, [SENTINEL] * (threads * 15), [SENTINEL] * (threads * 8)],
                      threads=threads, shared=4096, name="generic_widths")
    assert run.outcome == "ok", run.detail

    def expect(r):
        a, b, c, d, _, window = r
        return [b & 0xFF, sext(a >> 8, 8), c & 0xFFFF, sext(a >> 16, 16), a, b, d, 0, a, b, c, d,
                d if window == SHARED else 0, d if window == LOCAL else 0, d if window == GLOBAL else SENTINEL]
    got = rows_of(run.buffers[1], 15)
    for row in got:
        row[7] = 0                       # R27 is not an output
    assert_rows(backend, got, [expect(r) for r in rows_of(words, n_in)])


ATOMIC_OPS = [   # (instruction on word k of the area R8:R9 points to, the word's initial value)
    ("ATOM.E.ADD.STRONG.GPU PT, R20, [R8.64], R16", 0),                   # R16 = 1: a ticket
    ("ATOM.E.MIN.S32.STRONG.GPU PT, RZ, [R8.64+0x4], R11", 0x7FFFFFFF),
    ("ATOM.E.MAX.S32.STRONG.GPU PT, RZ, [R8.64+0x8], R11", 0x80000000),
    ("ATOM.E.AND.STRONG.GPU PT, RZ, [R8.64+0xc], R12", 0xFFFFFFFF),
    ("ATOM.E.OR.STRONG.GPU PT, RZ, [R8.64+0x10], R12", 0),
    ("ATOM.E.XOR.STRONG.GPU PT, RZ, [R8.64+0x14], R12", 0),
    ("ATOM.E.CAS.STRONG.GPU PT, RZ, [R8.64+0x18], R0, R17", None),       # compare t, store t + 0x100
    ("ATOM.E.INC.STRONG.GPU PT, RZ, [R8.64+0x1c], R18", 0),              # R18 = 1000: no wrap
    ("ATOM.E.DEC.STRONG.GPU PT, RZ, [R8.64+0x20], R18", 1000),
    ("ATOM.E.ADD.F32.FTZ.RN.STRONG.GPU PT, RZ, [R8.64+0x24], R19", 0),   # R19 = 1.0
]


def test_generic_atomics_in_each_window(backend):
    """Every integer ATOM and the float add through the thread's pointer: the threads of the
    shared and the global window contend for one word each (word 0 hands out tickets; one
    thread's CAS matches), those of the local window each update their own frame (PTX leaves an
    atomic on local memory undefined; here it is the read-modify-write of the thread's own word)."""
    threads, n_in = 64, 6
    rng = random.Random(87)
    words = [rng.getrandbits(32) for _ in range(threads * n_in)]
    for t in range(threads):
        words[t * n_in + 5] = t % 3
    n = len(ATOMIC_OPS)
    first = {SHARED: 0, GLOBAL: 2}                      # the thread whose CAS matches
    init = [w for _, w in ATOMIC_OPS]
    setup = [   # the initial words: thread 0 writes the shared ones, each thread its local ones
        "ISETP.NE.U32.AND P3, PT, R0, RZ, PT",
        *(f"@!P3 STS [{4 * k:#x}], R{50 + k}" for k in range(n)),
        *(f"STL [R1+{4 * k:#x}], R{50 + k}" for k in range(n)),
        "STL [R1+0x18], R0",
        "BAR.SYNC.DEFER_BLOCKING 0x0",
    ]
    consts = [f"MOV R{50 + k}, {(w if w is not None else first[SHARED]):#x}" for k, w in enumerate(init)]
    # one area of shared memory and of buffer 2 for all threads, a frame of each thread's own
    body = HEAD + load_inputs(n_in) + pointer(0x30, own=False) + consts + setup + [
        "MOV R16, 0x1", "IADD3 R17, R0, 0x100, RZ", "MOV R18, 0x3e8", f"MOV R19, {f32(1.0):#x}",
        *(op for op, _ in ATOMIC_OPS),
        "BAR.SYNC.DEFER_BLOCKING 0x0",
        *(f"LDS R{21 + k}, [{4 * k:#x}]" for k in range(n)),
        *(f"LDL R{21 + n + k}, [R1+{4 * k:#x}]" for k in range(n)),
    ] + store_outputs(1 + 2 * n)
    global_init = [w if w is not None else first[GLOBAL] for w in init]
    run = backend.run(body, [words, [SENTINEL] * (threads * (1 + 2 * n)), global_init + [0] * 6],
                      threads=threads, name="generic_atomics")
    assert run.outcome == "ok", run.detail
    rows_in = rows_of(words, n_in)

    def final(start, group, cas):
        vals = [rows_in[t][1] for t in group]
        signed = [v - (1 << 32) if v >> 31 else v for v in vals]
        ands, ors, xors = 0xFFFFFFFF, 0, 0
        for t in group:
            c = rows_in[t][2]
            ands, ors, xors = ands & c, ors | c, xors ^ c
        return [start[0] + len(group), min(signed + [0x7FFFFFFF]) & M32,
                max(signed + [-0x80000000]) & M32, ands, ors, xors, cas + 0x100 if cas in group else cas,
                len(group), 1000 - len(group), f32(float(len(group)))]

    groups = {w: [t for t in range(threads) if t % 3 == w] for w in (SHARED, LOCAL, GLOBAL)}
    shared = final([0], groups[SHARED], first[SHARED])
    rows = rows_of(run.buffers[1], 1 + 2 * n)
    assert_rows(backend, [r[1:1 + n] for r in rows], [shared] * threads)
    assert_rows(backend, [r[1 + n:] for r in rows],
                [final([0], [t], t) if t % 3 == LOCAL else init[:6] + [t] + init[7:] for t in range(threads)])
    assert run.buffers[2][:n] == final([0], groups[GLOBAL], first[GLOBAL]), backend.name
    for window in (SHARED, GLOBAL):       # tickets: each of 0..n-1 once
        assert sorted(rows[t][0] for t in groups[window]) == list(range(len(groups[window]))), (backend.name, window)
    assert all(rows[t][0] == 0 for t in groups[LOCAL]), backend.name


def test_generic_64_bit_atomics_on_the_stack_and_global_memory(backend):
    """ATOM.E .64 at R1 + c[0x0][0x20] (known to be the thread's own frame: an update in place,
    no atomic in the shader) and at a pointer parameter (the global compare-and-swap loop)."""
    threads = 32
    M64 = (1 << 64) - 1
    body = HEAD + ["IADD3 R1, R1, -0x10, RZ", "IADD3 R8, P0, R1, c[0x0][0x20], RZ",
                   "IMAD.X R9, RZ, RZ, c[0x0][0x24], P0", "MOV R4, c[0x0][0x170]", "MOV R5, c[0x0][0x174]"] + \
        load_inputs(2) + [
        "MOV R12, 0xffffffff", "MOV R13, 0x7fffffff", "STL.64 [R1], R12", "STL.64 [R1+0x8], R12",
        "ATOM.E.ADD.64.STRONG.GPU PT, R20, [R8.64], R10",
        "ATOM.E.MAX.S64.STRONG.GPU PT, R22, [R8.64+0x8], R10",
        "ATOM.E.ADD.64.STRONG.GPU PT, RZ, [R4.64], R10",
        "LDL.64 R24, [R1]", "LDL.64 R26, [R1+0x8]",
    ] + store_outputs(8)
    rng = random.Random(88)
    vals = [rng.getrandbits(64) for _ in range(threads)]
    run = backend.run(body, [[w for v in vals for w in (v & M32, v >> 32)], [SENTINEL] * (threads * 8), [0, 0]],
                      threads=threads, name="generic_atomics64")
    assert run.outcome == "ok", run.detail
    start = 0x7FFFFFFFFFFFFFFF

    def s64(v):
        return v - (1 << 64) if v >> 63 else v
    want = []
    for v in vals:
        added, most = (start + v) & M64, max(s64(start), s64(v)) & M64
        want.append([start & M32, start >> 32, start & M32, start >> 32, added & M32, added >> 32, most & M32, most >> 32])
    assert_rows(backend, rows_of(run.buffers[1], 8), want)
    assert run.buffers[2][0] | run.buffers[2][1] << 32 == sum(vals) & M64, backend.name


def test_a_generic_64_bit_atomic_that_may_be_shared_is_unsupported_on_devices(backend):
    """The shader's shared memory is 32-bit words: a 64-bit atomic whose address may lie in the
    shared window is refused with where and why; the interpreter runs it."""
    body = HEAD + load_inputs(6) + pointer() + ["MOV R16, RZ", "MOV R17, RZ", "STS.64 [R7], R16", "STL.64 [R1], R16",
                                                "ATOM.E.ADD.64.STRONG.GPU PT, R20, [R8.64], R10"] + store_outputs(2)
    words = [t % 3 if k == 5 else 7 for t in range(32) for k in range(6)]
    if backend.name == "interp":
        run = backend.run(body, [words, [SENTINEL] * 64, [0] * 256], shared=4096, name="generic_atom64_shared")
        assert run.outcome == "ok", run.detail
        assert rows_of(run.buffers[1], 2) == [[0, 0]] * 32
        assert [run.buffers[2][8 * t] for t in range(32)] == [7 if t % 3 == GLOBAL else 0 for t in range(32)]
    else:
        with pytest.raises(UnsupportedInstruction, match=r"generic_atom64_shared\.sass:\d+: a 64-bit atomic "
                                                         r"through a generic address that may lie in shared memory"):
            backend.run(body, [words, [SENTINEL] * 64, [0] * 256], shared=4096, name="generic_atom64_shared")


@pytest.mark.parametrize("where, address", [
    ("past shared memory", ["IADD3 R8, P0, RZ, c[0x0][0x18], RZ", "IADD3.X R9, RZ, c[0x0][0x1c], RZ, P0, !PT",
                            "IADD3 R8, R8, 0x400, RZ"]),
    ("below the frame", ["IADD3 R8, P0, R1, c[0x0][0x20], RZ", "IMAD.X R9, RZ, RZ, c[0x0][0x24], P0",
                         "IADD3 R8, R8, -0x4, RZ"]),
    ("in no window and no buffer", ["MOV R8, 0x40", "MOV R9, RZ"]),
])
def test_a_generic_access_outside_its_window_faults(backend, where, address):
    """A generic address in the shared window past the case's shared memory (1024 bytes), in the
    local window outside the frame, or in neither window and no buffer: a FAULT naming it."""
    body = HEAD + ["IADD3 R1, R1, -0x10, RZ"] + address + ["LD.E R20, [R8.64]"] + store_outputs(1)
    run = backend.run(body, [[0], [SENTINEL] * 32], name="generic_fault")
    assert run.outcome == "fault", (where, run.outcome, run.detail)
    assert "LD.E R20, [R8.64]" in run.detail or "generic load" in run.detail, run.detail

