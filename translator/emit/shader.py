"""What a translation produces: the module and the facts the dispatcher needs to run it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shader:
    """A translated kernel: SPIR-V words and what the dispatcher needs to know about them."""
    spirv: bytes
    mode: str
    block: tuple[int, int, int]
    shared_bytes: int
    kernel: str
    instructions: int
    cached: bool = False        # came from the SPIR-V cache, not from translation
    warp_subgroups: bool = False  # collectives as subgroup operations: the device's subgroups must be warps
    subgroup_size: int | None = None  # the subgroup size to ask the pipeline for where the device can (subgroup-native)
    entry: str = "main"
    bindings: tuple[str, ...] = ("ctrl", "heap", "printf")   # the ABI's buffers by binding (translator.abi)
    scratch_words: int = 0      # heap words each workgroup's bookkeeping takes after the buffers (ctrl[abi.SCRATCH])


def warp_subgroups_used(mode: str, subgroup_vote: bool, warp_subgroups: bool) -> bool:
    """Whether a shader of this mode takes collectives to subgroup operations when asked:
    only in turns mode, and only with the vote reduced in the subgroup."""
    return warp_subgroups and subgroup_vote and mode == "turns"
