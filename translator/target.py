"""What a shader is translated for: the device's side of :func:`translator.translate`.

A :class:`Target` says which features and limits the shader may count on and which of the
device's behaviours it may use. The harness works one out per device and launch
(``harness.run.dispatch.device_target``); ``Target()`` is a device with every feature, no
limit, and subgroups that are not warps.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """The device a shader is for.

    - ``features``: the Vulkan feature names the device has (None: all). Without
      ``shaderInt64`` 64-bit values are pairs of words (:mod:`translator.emit.pairs`); 64-bit
      atomics need it and ``shaderBufferInt64Atomics``, and are UNSUPPORTED without them.
    - ``warp_subgroups``: the device's subgroups are warps (32 invocations in invocation
      order), so collectives may swap values with subgroup operations instead of workgroup
      memory and barriers; the shader checks, and reports NOT_WARPS where they are not.
    - ``subgroup_vote``: the turn vote may be reduced in the subgroup (subgroup arithmetic).
    - ``tight_loops``: a block that branches to itself may loop in its own case where threads
      step alone (not on drivers that stop a shader's loops after a shared count of
      iterations, as lavapipe does).
    - ``pass_runs``: structured code's self-loops make their passes in runs of copies of the
      block, the budget tested once a run (:mod:`translator.emit.tight`): for a GPU's compiler,
      not for the CPU implementations, which gain nothing from them (lavapipe) or run them
      slower (SwiftShader; docs/measurements.md).
    - ``workgroup_limit``: the device's maxComputeSharedMemorySize (None: no limit), past
      which turns mode keeps its bookkeeping in the heap (:mod:`translator.emit.turns.storage`).
    """
    features: frozenset[str] | None = None
    warp_subgroups: bool = False
    subgroup_vote: bool = True
    tight_loops: bool = False
    pass_runs: bool = False
    workgroup_limit: int | None = None

    def key(self) -> tuple[str, ...]:
        """The target as strings, for a cache key."""
        features = None if self.features is None else ",".join(sorted(self.features))
        return (str(self.subgroup_vote), str(self.warp_subgroups), str(features), str(self.tight_loops),
                str(self.workgroup_limit), str(self.pass_runs))


__all__ = ["Target"]
