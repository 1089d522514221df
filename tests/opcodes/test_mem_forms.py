"""Differential tests of the memory forms beyond global and shared memory: local memory
(LDL/STL), constant banks 1-4, sub-word constant loads, and the small ALU forms around them.

Each test is a hand-written listing run on both back ends (the CPU reference interpreter and
the SPIR-V translation on lavapipe, see the ``backend`` fixture); the expected words are
computed here in plain Python, never with the translator's helpers.
"""
from __future__ import annotations

import random

import pytest
from warpboard.harness.case.model import CaseError, Param
from warpboard.authoring import newcase, toolchain
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


def sext(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return (v - (1 << bits)) & M32 if v >> (bits - 1) else v


# ================================================================ local memory
def test_local_memory_every_width(backend):
    """STL/LDL of bytes, halfwords, words, pairs and quads in a 0x40-byte frame, read back
    with sign and zero extension and through a per-thread index register."""
    threads, n_in = 64, 6
    rng = random.Random(15)
    words = [rng.getrandbits(32) for _ in range(threads * n_in)]
    for t in range(threads):
        words[t * n_in + 5] = t % 8               # the index word: which word to read back
    body = HEAD + ["IADD3 R1, R1, -0x40, RZ"] + load_inputs(n_in) + [
        "STL.128 [R1], R10", "STL.64 [R1+0x10], R14",
        "STL.U8 [R1+0x18], R10", "STL.U8 [R1+0x19], R11", "STL.U16 [R1+0x1a], R12",
        "STL [R1+0x1c], R13", "STL.64 [R1+0x20], R10", "STL.128 [R1+0x30], R12",
        "LDL.U8 R20, [R1+0x18]", "LDL.S8 R21, [R1+0x19]", "LDL.U16 R22, [R1+0x1a]",
        "LDL.S16 R23, [R1+0x1a]", "LDL.S8 R24, [R1+0x3]", "LDL.U16 R25, [R1+0x6]",
        "LDL.64 R26, [R1+0x8]", "LDL.128 R28, [R1+0x30]",
        "IMAD R8, R15, 0x4, R1", "LDL R32, [R8]",      # word R15 of the frame, by address
        "LDL R33, [R1+0x1c]",
    ] + store_outputs(14)
    run = backend.run(body, [words, [SENTINEL] * (threads * 14)], threads=threads, name="local_widths")
    assert run.outcome == "ok", run.detail

    def expect(r):
        a, b, c, d, e, idx = r
        frame = [a, b, c, d, e, idx, (a & 0xFF) | (b & 0xFF) << 8 | (c & 0xFFFF) << 16, d, a, b, 0, 0, c, d, e, idx]
        return [a & 0xFF, sext(b, 8), c & 0xFFFF, sext(c, 16), sext(a >> 24, 8), b >> 16,
                c, d, c, d, e, idx, frame[idx], d]
    assert_rows(backend, rows_of(run.buffers[1], 14), [expect(r) for r in rows_of(words, n_in)])


def test_local_memory_outside_the_frame_faults(backend):
    """An access beyond the frame the prologue took is a FAULT, as outside any buffer."""
    body = HEAD + ["IADD3 R1, R1, -0x10, RZ", "STL [R1+0x10], R0", "EXIT"]
    run = backend.run(body, [[0], [0]], threads=32, name="local_fault")
    assert run.outcome == "fault", (run.outcome, run.detail)
    assert run.detail


def test_local_memory_is_per_thread(backend):
    """Every thread writes the same local address; each reads back its own value."""
    body = HEAD + ["IADD3 R1, R1, -0x20, RZ", "STL [R1+0x8], R0", "IMAD R9, R0, 0x3, RZ",
                   "STL.U16 [R1+0xe], R9", "LDL R20, [R1+0x8]", "LDL R21, [R1+0xc]"] + store_outputs(2)
    run = backend.run(body, [[0], [SENTINEL] * 128], threads=64, name="local_own")
    assert run.outcome == "ok", run.detail
    assert_rows(backend, rows_of(run.buffers[1], 2), [[t, (3 * t & 0xFFFF) << 16] for t in range(64)])


# ================================================================ constant banks
BANK3 = [0x11111111 * (k + 1) & M32 for k in range(16)]
BANK2 = [0xC0DE0000 + k for k in range(8)]


def test_constant_banks_as_operands_and_in_ldc(backend):
    """Banks 2 and 3 as operands, through LDC/ULDC (also .64 and with an index register)
    and past the end of the bank (0, as the chip's out-of-bank reads give no fault)."""
    body = HEAD + [
        "MOV R20, c[0x3][0x4]", "IADD3 R21, R0, c[0x3][0x3c], RZ", "ULDC UR4, c[0x2][0x8]", "MOV R22, UR4",
        "LOP3.LUT R8, R0, 0xf, RZ, 0xc0, !PT", "IMAD.SHL.U32 R8, R8, 0x4, RZ",
        "LDC R23, c[0x3][R8]", "LDC.64 R24, c[0x2][0x10]", "ULDC.64 UR6, c[0x3][0x20]", "MOV R26, UR7",
        "LDC R27, c[0x2][R8+0x10]",                    # past the 8 words given: zeros, in the bank
        "MOV R9, 0xffc", "LDC R28, c[0x3][R9+0x4]",       # past the bank's end: 0
        "S2UR UR5, SR_TID.X", "ULOP3.LUT UR5, UR5, 0x7, URZ, 0xc0, !UPT", "USHF.L.U32 UR5, UR5, 0x2, URZ",
        "LDC R29, c[0x2][UR5]",
    ] + store_outputs(10)
    constants = ((3, 0, tuple(BANK3)), (2, 0, tuple(BANK2)))
    run = backend.run(body, [[0], [SENTINEL] * 320], threads=32, name="cbanks", constants=constants)
    assert run.outcome == "ok", run.detail
    bank2 = BANK2 + [0] * 16

    def expect(t):
        return [BANK3[1], t + BANK3[15], BANK2[2], BANK3[t % 16], BANK2[4], BANK2[5], BANK3[9],
                bank2[t % 16 + 4], 0, BANK2[t % 8]]
    assert_rows(backend, rows_of(run.buffers[1], 10), [expect(t) for t in range(32)])


def test_constants_in_the_case_file(make_case, interp):
    """A [[constants]] table in a case file reaches the kernel; a bad one is refused."""
    sass = "".join(f"        /*{16 * k:04x}*/                   {line} ;\n" for k, line in enumerate(
        ["MOV R2, c[0x0][0x160]", "MOV R3, c[0x0][0x164]", "MOV R4, c[0x3][0x8]", "STG.E [R2.64], R4", "EXIT"]))
    case = make_case("const3", sass=sass, block=1, buffers=[{"name": "out", "words": 1, "init": 0, "expected": [7]}])
    text = case.path.read_text() + "\n[[constants]]\nbank = 3\noffset = 0x8\nwords = [7, 8]\n"
    case.path.write_text(text)
    loaded = make_case.load("const3")
    assert loaded.constants == ((3, 8, (7, 8)),)
    assert interp.run_case(loaded).buffers[0] == [7]
    case.path.write_text(text.replace("offset = 0x8", "offset = 0x6"))
    with pytest.raises(CaseError, match="not a multiple of 4"):
        make_case.load("const3")


# ================================================================ sub-word constant loads
def test_subword_parameter_loads(backend):
    """LDC/ULDC .U8/.S8/.U16/.S16 of char, bool and short parameters at every byte position."""
    params = [Param("buffer", "in"), Param("u8", 0xFB), Param("u8", 0x01), Param("u16", 0x8123),
              Param("u8", 0xC8), Param("u8", 0x7F), Param("u16", 0x7FFE)]   # 0x168 0x169 0x16a 0x16c 0x16d 0x16e
    body = HEAD + ["LDC.U8 R20, c[0x0][0x168]", "LDC.S8 R21, c[0x0][0x168]", "ULDC.U8 UR4, c[0x0][0x169]",
                   "MOV R22, UR4", "LDC.U16 R23, c[0x0][0x16a]", "ULDC.S16 UR5, c[0x0][0x16a]", "MOV R24, UR5",
                   "LDC.S8 R25, c[0x0][0x16c]", "LDC.U8 R26, c[0x0][0x16d]", "LDC.S16 R27, c[0x0][0x16e]",
                   "LDC.S8 R28, c[0x0][0x16d]"] + [
        "IMAD.WIDE.U32 R6, R0, 0x24, c[0x0][0x160]", *(f"STG.E [R6.64+{4 * k:#x}], R{20 + k}" for k in range(9)), "EXIT"]
    run = backend.run(body, [[SENTINEL] * 9 * 32], threads=32, name="subword", params=params)
    assert run.outcome == "ok", run.detail
    want = [0xFB, 0xFFFFFFFB, 1, 0x8123, 0xFFFF8123, 0xFFFFFFC8, 0x7F, 0x7FFE, 0x7F]
    assert_rows(backend, rows_of(run.buffers[0], 9), [want] * 32)


def test_subword_table_loads_at_a_register_index(backend):
    """LDC.U8/.S8/.U16/.S16 of a __constant__ table at a per-thread index (``c[0x3][R8]``): the
    byte or halfword at that address, whatever its place in the word; 0 past the bank's end."""
    table = [0x8001FF7F, 0x12345678, 0xFEDCBA98, 0x00C0FFEE]        # bytes 0..15 of bank 3
    body = HEAD + [
        "LOP3.LUT R8, R0, 0xf, RZ, 0xc0, !PT", "LDC.U8 R20, c[0x3][R8]", "LDC.S8 R21, c[0x3][R8]",
        "LOP3.LUT R9, R0, 0x7, RZ, 0xc0, !PT", "IMAD.SHL.U32 R9, R9, 0x2, RZ",
        "LDC.U16 R22, c[0x3][R9]", "LDC.S16 R23, c[0x3][R9]", "LDC.U8 R24, c[0x3][R8+0x1]",
        "MOV R10, 0xffe", "LDC.U16 R25, c[0x3][R10+0x4]",          # past the bank's end: 0
    ] + store_outputs(6)
    run = backend.run(body, [[0], [SENTINEL] * 6 * 32], threads=32, name="subword_table",
                      constants=((3, 0, tuple(table)),))
    assert run.outcome == "ok", run.detail
    data = b"".join(w.to_bytes(4, "little") for w in table) + bytes(16)

    def expect(t):
        b, h = t % 16, 2 * (t % 8)
        half = int.from_bytes(data[h:h + 2], "little")
        return [data[b], data[b] - 256 & M32 if data[b] > 127 else data[b], half,
                half - 65536 & M32 if half > 32767 else half, data[b + 1], 0]
    assert_rows(backend, rows_of(run.buffers[1], 6), [expect(t) for t in range(32)])


# ================================================================ constants from the cubin
def test_new_case_reads_constant_data_from_the_cubin(tmp_path):
    """new-case puts a kernel's __constant__ data (bank 3) into [[constants]] tables, leaving
    long zero stretches out; the words are the initializer's."""
    try:
        toolchain.find_nvcc(), toolchain.find_nvdisasm()
    except toolchain.ToolMissing as e:
        pytest.skip(str(e))
    src = tmp_path / "k.cu"
    src.write_text("__constant__ unsigned tab[40] = {7, 8, 9, [39] = 0xabcdef};\n"
                   'extern "C" __global__ void k(unsigned *out) { out[threadIdx.x] = tab[threadIdx.x % 40]; }\n')
    case = newcase.new_case(src, "k", tmp_path / "cases" / "k.toml", buffers=[newcase.BufferArg("out", 32, 0)])
    assert case.constants == ((3, 0, (7, 8, 9)), (3, 39 * 4, (0xABCDEF,)))


# ================================================================ shared memory, uniform index
def test_shared_address_with_a_uniform_index_register(backend):
    """``[R.X4+UR+imm]`` in shared memory: the lane's register scaled, the uniform register
    added unscaled (nvcc keeps a uniform loop's row offset there: ``LDS R3, [R7.X4+UR4]``)."""
    threads = 64
    body = HEAD + load_inputs(1) + [
        "UMOV UR4, 0x200", "UMOV UR5, 0x24",
        "STS [R0.X4+UR4], R10",                 # word t + 0x80
        "IMAD.SHL.U32 R8, R0, 0x4, RZ",
        "STS [R8+UR5+0x1c], R0",                # byte 4t + 0x40: word t + 0x10
        "BAR.SYNC.DEFER_BLOCKING 0x0",
        "LOP3.LUT R9, R0, 0x3f, RZ, 0xc0, !PT",
        "IADD3 R9, R9, 0x1, RZ", "LOP3.LUT R9, R9, 0x3f, RZ, 0xc0, !PT",
        "LDS R20, [R9.X4+UR4]",                 # the next thread's input
        "LDS R21, [R8+UR5+0x1c]",               # its own index back
        "LDS.U16 R22, [R9.X4+UR4+0x2]",         # the next thread's input, high half
    ] + store_outputs(3)
    rng = random.Random(21)
    words = [rng.getrandbits(32) for _ in range(threads)]
    run = backend.run(body, [words, [SENTINEL] * (threads * 3)], threads=threads, shared=0x300, name="sts_ur")
    assert run.outcome == "ok", run.detail
    want = [[words[(t + 1) % 64], t, words[(t + 1) % 64] >> 16] for t in range(threads)]
    assert_rows(backend, rows_of(run.buffers[1], 3), want)


def test_global_address_with_an_index_register_stays_unsupported(interp):
    """Only shared memory takes the index form here; a global one says so by name."""
    body = HEAD + ["UMOV UR4, 0x8", "IMAD.WIDE.U32 R2, R0, 0x4, c[0x0][0x160]", "LDG.E R4, [R2.64+UR4]", "EXIT"]
    with pytest.raises(UnsupportedInstruction, match=r"ldg_ur.sass:5: unsupported LDG.E: address with an index "
                                                     r"register \[R2.64\+UR4\]"):
        interp.run(body, [[0] * 32, [0] * 32], name="ldg_ur")


# ================================================================ 64-bit atomics
def test_global_64_bit_atomics(backend):
    """RED/ATOMG .64 and .S64 on pairs of a shared accumulator buffer (parameter 2): add with a
    carry out of the low word, unsigned and signed min and max (values that differ in the sign
    of the high word, or only in the low word), and/or/xor, a returning add and a CAS that only
    thread 5's compare pair matches. Expected words computed here, in Python."""
    threads = 40
    rng = random.Random(64)
    vals = [rng.getrandbits(64) for _ in range(threads)]
    vals[3] = 0xFFFFFFFF                      # carries into the high word
    vals[7] = 0x8000000000000001              # negative as .S64, large as .64
    vals[8] = vals[9] & ~0xFFFFFFFF | 0x1     # the same high word as thread 9, a smaller low word
    M64 = (1 << 64) - 1
    body = HEAD + load_inputs(2) + [
        "MOV R4, c[0x0][0x170]", "MOV R5, c[0x0][0x174]",
        "RED.E.ADD.64.STRONG.GPU [R4.64], R10",
        "RED.E.MIN.64.STRONG.GPU [R4.64+0x8], R10",
        "RED.E.MAX.64.STRONG.GPU [R4.64+0x10], R10",
        "RED.E.MIN.S64.STRONG.GPU [R4.64+0x18], R10",
        "RED.E.MAX.S64.STRONG.GPU [R4.64+0x20], R10",
        "RED.E.XOR.64.STRONG.GPU [R4.64+0x28], R10",
        "RED.E.OR.64.STRONG.GPU [R4.64+0x30], R10",
        "RED.E.AND.64.STRONG.GPU [R4.64+0x38], R10",
        "IMAD.MOV.U32 R12, RZ, RZ, 0x1", "IMAD.MOV.U32 R13, RZ, RZ, 0x0",
        "ATOMG.E.ADD.64.STRONG.GPU PT, R20, [R4.64+0x40], R12",     # a ticket, 0..39 once each
        "IMAD.MOV.U32 R14, RZ, RZ, 0x5", "IMAD.MOV.U32 R15, RZ, RZ, 0x0",
        "IMAD.MOV.U32 R16, RZ, RZ, R0", "IMAD.MOV.U32 R17, RZ, RZ, 0x77",
        "ATOMG.E.CAS.64.STRONG.GPU PT, R22, [R4.64+0x48], R16, R14",
    ] + store_outputs(4)
    acc0 = [0, M64, 0, (1 << 63) - 1, 1 << 63, 0, 0, M64, 0, 0x77 << 32 | 5]
    acc = [w for v in acc0 for w in (v & M32, v >> 32)]
    run = backend.run(body, [[w for v in vals for w in (v & M32, v >> 32)], [SENTINEL] * (threads * 4), acc],
                      threads=threads, name="atomics64")
    assert run.outcome.value == "ok", run.detail
    signed = [v - (1 << 64) if v >> 63 else v for v in vals]
    xor = 0
    for v in vals:
        xor ^= v
    orv, andv = 0, M64
    for v in vals:
        orv, andv = orv | v, andv & v
    # the CAS compares (tid, 0x77) with the memory's (5, 0x77): only thread 5 matches, and it
    # stores (5, 0); the others see (5, 0x77) or (5, 0), as they come before or after it
    want = [sum(vals) & M64, min(vals), max(vals), min(signed) & M64, max(signed) & M64, xor, orv, andv,
            threads, 5]
    got = [run.buffers[2][2 * k] | run.buffers[2][2 * k + 1] << 32 for k in range(10)]
    assert got == want, f"{backend.name}: " + ", ".join(f"acc[{k}] {w:#x} != {g:#x}" for k, (w, g) in enumerate(zip(want, got)) if w != g)
    rows = rows_of(run.buffers[1], 4)
    assert sorted(r[0] | r[1] << 32 for r in rows) == list(range(threads))          # tickets
    seen = [r[2] | r[3] << 32 for r in rows]
    assert seen[5] == 0x77 << 32 | 5 and set(seen) <= {0x77 << 32 | 5, 5}, [hex(v) for v in seen]


def test_shared_64_bit_atomics_are_unsupported_on_devices(backend):
    """Shared memory is 32-bit words in the shader: a 64-bit atomic there is refused with where
    and why, and the interpreter runs it."""
    body = HEAD + ["IMAD.MOV.U32 R4, RZ, RZ, 0x1", "IMAD.MOV.U32 R5, RZ, RZ, 0x0",
                   "ATOMS.EXCH.64 RZ, [0x8], R4", "BAR.SYNC.DEFER_BLOCKING 0x0",
                   "LDS.64 R20, [0x8]"] + store_outputs(2)
    if backend.name == "interp":
        run = backend.run(body, [[0], [SENTINEL] * 64], name="atoms64")
        assert rows_of(run.buffers[1], 2) == [[1, 0]] * 32
    else:
        with pytest.raises(UnsupportedInstruction, match=r"atoms64\.sass:\d+: a 64-bit atomic on shared memory"):
            backend.run(body, [[0], [SENTINEL] * 64], name="atoms64")
