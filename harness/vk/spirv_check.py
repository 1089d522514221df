"""Checks a SPIR-V module passes before it reaches a driver (some abort on malformed input)."""
from __future__ import annotations

import shutil
import subprocess

from ._base import _SPIRV_MAGIC, SpirvError


def check_spirv(code: bytes, entry: str = "main",
                max_version: tuple[int, int] = (1, 6)) -> tuple[int, int]:
    """Check framing, magic, version and the GLCompute entry point; return the version.

    Drivers are not required to validate SPIR-V and some abort on malformed modules,
    so the cheap structural checks happen here, where they raise :class:`SpirvError`.
    """
    if len(code) % 4 or len(code) < 20:
        raise SpirvError(f"SPIR-V must be whole 32-bit words with a 5-word header; "
                         f"got {len(code)} bytes")
    words = memoryview(bytes(code)).cast("I")
    if words[0] != _SPIRV_MAGIC:
        swapped = words[0] == 0x03022307
        raise SpirvError(f"bad SPIR-V magic {words[0]:#010x}"
                         + (" (byte-swapped module)" if swapped else ""))
    version = (words[1] >> 16 & 0xFF, words[1] >> 8 & 0xFF)
    if version > max_version:
        raise SpirvError(f"module is SPIR-V {version[0]}.{version[1]}; the device accepts "
                         f"up to {max_version[0]}.{max_version[1]}")
    entries = _entry_points(words)
    if entry not in entries:
        raise SpirvError(f"no GLCompute entry point {entry!r}; module has {entries}")
    return version


def _entry_points(words) -> list[str]:
    """Names of the GLCompute OpEntryPoints, checking every instruction's word count."""
    i, names = 5, []
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > len(words):
            raise SpirvError(f"instruction at word {i} (opcode {opcode}) has word count "
                             f"{count}; the module has {len(words)} words")
        if opcode == 15 and count >= 4 and words[i + 1] == 5:  # OpEntryPoint GLCompute
            raw = words[i + 3:i + count].tobytes()
            names.append(raw.split(b"\0", 1)[0].decode("utf-8", "replace"))
        i += count
    return names


def validate_spirv(code: bytes, target_env: str = "vulkan1.1") -> None:
    """Run ``spirv-val``; raise SpirvError with its message if the module is invalid.

    Drivers need not survive invalid SPIR-V (NVIDIA's segfaults in pipeline creation on
    a type used as an operand), so ``Device(validate=True)`` checks before creating.
    """
    tool = shutil.which("spirv-val")
    if tool is None:
        raise SpirvError("SPIR-V validation needs spirv-val (SPIRV-Tools) on PATH")
    proc = subprocess.run([tool, "--target-env", target_env, "-"], input=bytes(code),
                          capture_output=True, check=False)
    if proc.returncode:
        message = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
        raise SpirvError(f"spirv-val --target-env {target_env} rejected the module: "
                         f"{message}")
