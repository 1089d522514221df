"""The `structured` strategy: the listing's jumps rebuilt as SPIR-V structured control flow
(``OpSelectionMerge`` / ``OpLoopMerge`` constructs over the dominator tree and the loop
forest of :mod:`translator.ir.structure`, as console-emulator shader recompilers do), one
invocation per SASS thread, each on its own code, no ``switch (pc)`` loop. Collectives are
subgroup operations where the structure brings a warp's lanes together (:mod:`.warp`).
Programs whose control flow has no such form (irreducible cycles, recursion) are
UNSUPPORTED, with the construct and its pc; so are programs with collectives where the
device's subgroups cannot hold warps. There, lane-order points inside branches and loops are
walked by every invocation (:mod:`.uniform`)."""
from ..strategy import Strategy
from .warp import StructuredWarp


def warp_for(emitter):
    """The warp state of a structured shader (it emits the shader's body)."""
    return StructuredWarp(emitter)


STRATEGY = Strategy(
    "structured", "structured", flow="structured control flow per thread",
    warp_model="a warp is a subgroup; collectives are subgroup operations at the construct where its lanes meet, "
               "with maximal reconvergence where the device offers it", make=warp_for, mode="structured",
    warp_subgroups=True, needs_warps=StructuredWarp.needs_warps)
