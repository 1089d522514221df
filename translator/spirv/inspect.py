"""What a finished SPIR-V module asks of a device, read from its words (any translator's
module, not only this project's): how much workgroup memory its variables take.

A compute shader whose workgroup variables exceed the device's
``maxComputeSharedMemorySize`` is invalid, and drivers do not all refuse it: NVIDIA's
driver builds the pipeline and loses the device at the dispatch. The harness checks this
figure against the device's limit before dispatching.
"""
from __future__ import annotations

import struct

MAGIC = 0x07230203
WORKGROUP = 4                     # StorageClass Workgroup
_BOOL, _INT, _FLOAT, _VECTOR, _MATRIX, _ARRAY, _STRUCT, _POINTER = 20, 21, 22, 23, 24, 28, 30, 32
_CONSTANT, _VARIABLE = 43, 59


def _words(module: bytes) -> tuple[int, ...]:
    if len(module) % 4 or len(module) < 20:
        raise ValueError(f"a SPIR-V module is whole words after a 5-word header; got {len(module)} bytes")
    words = struct.unpack(f"<{len(module) // 4}I", module)
    if words[0] != MAGIC:
        raise ValueError(f"not a little-endian SPIR-V module (first word {words[0]:#010x})")
    return words


def workgroup_bytes(module: bytes) -> int:
    """The bytes of every Workgroup-storage variable of ``module``, each type at its packed
    size (booleans as 4 bytes, struct members without padding): a lower bound of what the
    driver allocates."""
    words = _words(module)
    sizes: dict[int, int] = {}       # type id -> bytes
    constants: dict[int, int] = {}   # 32-bit integer constant id -> value (array lengths)
    pointees: dict[int, int] = {}    # Workgroup pointer type id -> pointee type id
    total, at = 0, 5
    while at < len(words):
        count, op = words[at] >> 16, words[at] & 0xFFFF
        if count == 0:
            raise ValueError(f"instruction of 0 words at word {at}")
        a = words[at + 1:at + count]
        if op == _BOOL:
            sizes[a[0]] = 4
        elif op in (_INT, _FLOAT):
            sizes[a[0]] = a[1] // 8
        elif op in (_VECTOR, _MATRIX):
            sizes[a[0]] = sizes.get(a[1], 0) * a[2]
        elif op == _ARRAY:
            sizes[a[0]] = sizes.get(a[1], 0) * constants.get(a[2], 0)
        elif op == _STRUCT:
            sizes[a[0]] = sum(sizes.get(m, 0) for m in a[1:])
        elif op == _CONSTANT and len(a) == 3:
            constants[a[1]] = a[2]
        elif op == _POINTER and a[1] == WORKGROUP:
            pointees[a[0]] = a[2]
        elif op == _VARIABLE and a[2] == WORKGROUP:
            total += sizes.get(pointees.get(a[0], -1), 0)
        at += count
    return total
