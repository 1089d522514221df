"""F2IP, the packing float-to-byte conversion: the interpreter and lavapipe, word for word,
against values worked out here with exact fractions (support.float32.ref_to_int) over edge
inputs: the byte's bounds and the ties around them, signed zeros, denormals, infinities,
NaNs, and random words. The forms are the ones nvcc emits (``F2IP.U8.F32[.TRUNC].NTZ Rd,
RZ, Ra, RZ``) and the S8 and no-.NTZ encodings nvdisasm decodes; a non-zero Rb or Rc is
refused (see sem_float.f2ip)."""
from __future__ import annotations

import random
import shutil
import subprocess

import pytest
from warpboard.harness.run.dispatch import prepare, translate_case
from warpboard.translator.emit.emitter import translate
from warpboard.translator.errors import UnsupportedInstruction
from warpboard.translator.ir.program import load_program

from support.float32 import (
    F32_EDGES,
    diffs_of,
    float_case,
    kernel,
    ref_to_int,
    run_ops,
    word,
)
from support.listing_kit import listing

NEG = 0x80000000
BYTE_EDGES = [word(v) for v in (0.5, 1.5, 2.5, -0.5, -1.5, 127.5, 128.5, -127.5, -128.5, -129.0, 254.5,
                                255.4999847, 255.5, 256.0, 1e9, -1e9, 3.99999976, 0.49999997)]


def _f2ip(sass: str, signed: bool, mode: str, source: int = 0, pre=lambda w: w):
    """An op and its reference on the thread's inputs (R4, R5): ``source`` picks the input,
    ``pre`` applies the operand's sign decorations to it."""
    return sass, lambda *inputs: ref_to_int(pre(inputs[source]), "f32", 8, signed, mode, ntz=True)


OPS = [
    _f2ip("F2IP.U8.F32.NTZ {d}, RZ, R4, RZ", False, "rn"),
    _f2ip("F2IP.U8.F32.TRUNC.NTZ {d}, RZ, R4, RZ", False, "rz"),
    _f2ip("F2IP.S8.F32.NTZ {d}, RZ, R4, RZ", True, "rn"),
    _f2ip("F2IP.S8.F32.TRUNC.NTZ {d}, RZ, R5, RZ", True, "rz", source=1),
    _f2ip("F2IP.U8.F32 {d}, RZ, -R4, RZ", False, "rn", pre=lambda w: w ^ NEG),
    _f2ip("F2IP.S8.F32.NTZ {d}, RZ, -|R4|, RZ", True, "rn", pre=lambda w: w | NEG),
]


def vectors() -> list[tuple[int, int]]:
    rng = random.Random(86)
    words = F32_EDGES + BYTE_EDGES + [w | NEG for w in BYTE_EDGES]
    words += [rng.getrandbits(32) for _ in range(20)]
    words += [word(rng.uniform(-300, 300)) for _ in range(30)]
    return [(w, words[(k * 5 + 3) % len(words)]) for k, w in enumerate(words)]


def test_f2ip_to_a_byte_in_every_form(backend):
    """Rounded to nearest even or toward zero, saturated at 0..255 or -128..127 (the byte's
    pattern in bits 7:0, the rest 0), NaN to 0, a negated or absolute operand applied first."""
    inputs = vectors()
    got = run_ops(backend, OPS, inputs, [], "f2ip")
    ds = diffs_of(backend, OPS, inputs, got, lambda t, k, v: OPS[k][1](*v))
    assert not ds, ds


def test_f2ip_reference_spot_checks():
    """The reference itself on a few words whose bytes are known by heart."""
    assert [ref_to_int(word(v), "f32", 8, False, "rn") for v in (2.5, 3.5, 255.5, -3.0, 300.0)] == [2, 4, 255, 0, 255]
    assert [ref_to_int(word(v), "f32", 8, True, "rz") for v in (-1.9, -200.0, 127.9)] == [0xFF, 0x80, 0x7F]
    assert ref_to_int(0x7FC00000, "f32", 8, False, "rn", ntz=True) == 0


@pytest.mark.parametrize("line", ["F2IP.U8.F32.NTZ R7, R3, R2, RZ", "F2IP.U8.F32.NTZ R7, RZ, R2, R5",
                                  "F2IP.U8.F32.NTZ R7, RZ, R2, RZ.H1"])
def test_a_second_source_or_merge_operand_is_unsupported(line):
    program = load_program(listing(["S2R R0, SR_TID.X", line, "EXIT"]), None, "f.sass")
    with pytest.raises(UnsupportedInstruction) as err:
        translate(program, (32, 1, 1))
    assert str(err.value) == ("f.sass:2: unsupported F2IP.U8.F32.NTZ: only the form nvcc emits, F2IP Rd, RZ, "
                              f"Ra, RZ: what Rb and Rc add is unconfirmed in '{line}'")


def test_rounding_modes_f2ip_lacks_are_unsupported_modifiers():
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(listing(["F2IP.U8.F32.FLOOR.NTZ R7, RZ, R2, RZ", "EXIT"]), None, "f.sass")
    assert str(err.value) == ("f.sass:1: unsupported modifier .FLOOR of F2IP in "
                              "'F2IP.U8.F32.FLOOR.NTZ R7, RZ, R2, RZ'")


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="no spirv-val on this machine")
def test_f2ip_module_is_valid_spirv():
    prep = prepare(float_case(kernel(OPS, 2, len(OPS))))
    for mode in ("free", "turns"):
        shader = translate_case(prep, mode, use_cache=False)[0]
        proc = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", "-"], input=shader.spirv,
                              capture_output=True, check=False)
        assert proc.returncode == 0, f"{mode}: {(proc.stderr or proc.stdout).decode()[:2000]}"
