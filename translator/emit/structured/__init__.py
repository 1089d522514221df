"""The `structured` strategy: the listing's jumps rebuilt as SPIR-V structured control flow
(``OpSelectionMerge`` / ``OpLoopMerge`` constructs over the dominator tree and the loop
forest of :mod:`translator.ir.structure`, as console-emulator shader recompilers do), one
invocation per SASS thread, each on its own code, no ``switch (pc)`` loop. Programs whose
control flow has no such form (irreducible cycles, CALL/RET, BRX) and programs with
collectives or block barriers are UNSUPPORTED, with the construct and its pc."""
from ..strategy import Strategy
from .warp import StructuredWarp


def warp_for(emitter):
    """The warp state of a structured shader (it emits the shader's body)."""
    return StructuredWarp(emitter)


STRATEGY = Strategy(
    "structured", "structured", flow="structured control flow per thread",
    warp_model="lanes never meet: collective-free programs only; reconvergence at the structured merges is "
               "the device's", make=warp_for, mode="structured")
