"""The SPIR-V module builder (translator.spirv): types and constants made once, sections in
the order of the SPIR-V specification (§2.4) whatever order they were asked for in, and a
module built with it that spirv-val accepts."""
import shutil
import struct

import pytest
from warpboard.harness.vk import validate_spirv
from warpboard.translator.spirv import Function, Module
from warpboard.translator.spirv.builder import OP
from warpboard.translator.spirv.enums import (
    AddressingModel,
    ExecutionMode,
    ExecutionModel,
    MemoryModel,
)

NAMES = {code: name for name, code in OP.items()}
# The logical layout of a module (SPIR-V 1.6, §2.4), one group per section of Module.SECTIONS.
LAYOUT = [{"Capability"}, {"Extension"}, {"ExtInstImport"}, {"MemoryModel"}, {"EntryPoint"},
          {"ExecutionMode"}, {"Name", "String", "Source"}, {"Decorate", "MemberDecorate"}]


def instructions(code: bytes) -> list[tuple[str, list[int]]]:
    """(opcode name, operand words) of every instruction after the 5-word header."""
    words = struct.unpack(f"<{len(code) // 4}I", code)
    assert words[0] == 0x07230203
    out, at = [], 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        assert count >= 1, f"word {at}: an instruction of {count} words"
        out.append((NAMES.get(opcode, str(opcode)), list(words[at + 1:at + count])))
        at += count
    assert at == len(words), "the last instruction runs past the end"
    return out


def small_module(asked_late: bool) -> bytes:
    """A compute shader that stores 1 or 2 into a buffer by an if; with ``asked_late`` its
    capability, memory model and names are asked for after the code."""
    m = Module()
    if not asked_late:
        m.capability("Shader")
        m.capability("Int64")            # every module declares the 64-bit integer type
        m.emit("model", "MemoryModel", AddressingModel.Logical, MemoryModel.GLSL450)
    u32 = m.u32()
    buf = m.storage_buffer(0, "out")
    f = Function(m)
    ptr = f.op("AccessChain", m.pointer("StorageBuffer", u32), buf, m.const(u32, 0), m.const(u32, 0))
    tid = f.load(u32, m.builtin("LocalInvocationIndex", u32))
    f.if_else(f.op("IEqual", m.bool(), tid, m.const(u32, 0)),
              lambda: f.store(ptr, m.const(u32, 1)), lambda: f.store(ptr, m.const(u32, 2)))
    f.finish()
    if asked_late:
        m.capability("Shader")
        m.capability("Int64")
        m.emit("model", "MemoryModel", AddressingModel.Logical, MemoryModel.GLSL450)
    m.emit_mixed("entry", "EntryPoint", ExecutionModel.GLCompute, f.fid, "main", m.interface)
    m.emit("mode", "ExecutionMode", f.fid, ExecutionMode.LocalSize, 32, 1, 1)
    return m.assemble()


def test_types_and_constants_are_made_once():
    m = Module()
    u32 = m.u32()
    assert m.const(u32, 7) == m.const(u32, 7) != m.const(u32, 8)
    assert m.const(m.u64(), 7) != m.const(u32, 7)            # same value, other type: another id
    assert m.vec(u32, 3) == m.vec(u32, 3) != m.vec(u32, 4)
    assert m.pointer("Function", u32) == m.pointer("Function", u32) != m.pointer("Workgroup", u32)
    assert m.const_bool(True) == m.const_bool(True) != m.const_bool(False)
    assert m.value_of[m.const(u32, 0xFFFFFFFF)] == 0xFFFFFFFF
    m.capability("Int64")
    m.capability("Int64")
    assert [name for name, _ in instructions(m.assemble())].count("Capability") == 1


@pytest.mark.parametrize("asked_late", [False, True])
def test_sections_come_in_the_order_of_the_specification(asked_late):
    seen = [name for name, _ in instructions(small_module(asked_late))]
    rank = [next((k for k, group in enumerate(LAYOUT) if name in group), len(LAYOUT)) for name in seen]
    assert rank == sorted(rank), seen
    assert seen.index("Function") > max(i for i, name in enumerate(seen) if name.startswith("Type"))


def test_the_header_bound_covers_every_id():
    code = small_module(False)
    bound = struct.unpack("<5I", code[:20])[3]
    result_ids = [ops[1] for name, ops in instructions(code) if name in ("Constant", "Variable", "Load", "IEqual")]
    assert result_ids and max(result_ids) < bound


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="needs spirv-val (SPIRV-Tools)")
@pytest.mark.parametrize("asked_late", [False, True])
def test_a_module_built_with_it_is_valid(asked_late):
    validate_spirv(small_module(asked_late))
