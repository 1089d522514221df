"""SPIR-V enumerants by name (SPIR-V 1.3 unified spec, §3): the emitter says
``Scope.Subgroup``, never ``3``.
"""
from __future__ import annotations

from enum import IntEnum, IntFlag


class Scope(IntEnum):
    """Which invocations an atomic, barrier or group operation is about (§3.27)."""
    Device = 1
    Workgroup = 2
    Subgroup = 3


class MemorySemantics(IntFlag):
    """Ordering of an atomic or barrier (§3.25); Relaxed orders nothing."""
    Relaxed = 0
    AcquireRelease = 0x8
    UniformMemory = 0x40
    WorkgroupMemory = 0x100


class GroupOperation(IntEnum):
    """What a subgroup arithmetic instruction returns (§3.28)."""
    Reduce = 0


# one enumerant each is all the emitter needs of these
AddressingModel = IntEnum("AddressingModel", {"Logical": 0})
MemoryModel = IntEnum("MemoryModel", {"GLSL450": 1})
ExecutionModel = IntEnum("ExecutionModel", {"GLCompute": 5})
ExecutionMode = IntEnum("ExecutionMode", {"LocalSize": 17, "MaximallyReconvergesKHR": 6023})
Control = IntEnum("Control", {"NONE": 0})     # selection, loop and function control: no hints
LoopControl = IntEnum("LoopControl", {"DONT_UNROLL": 0x2})
