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


class AddressingModel(IntEnum):
    Logical = 0


class MemoryModel(IntEnum):
    GLSL450 = 1


class ExecutionModel(IntEnum):
    GLCompute = 5


class ExecutionMode(IntEnum):
    LocalSize = 17


class Control(IntEnum):
    """Selection, loop and function control masks: no hints."""
    NONE = 0
