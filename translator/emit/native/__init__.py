"""The `subgroup-native` strategy: the mapping a straightforward port makes. One SASS thread
per invocation, each on its own pc loop (the emitter's free loop) whatever the program does;
a warp is a subgroup, or a 32-lane part of a wider one; VOTE, SHFL, MATCH and REDUX are
subgroup operations where the thread meets them, and which lanes meet there is the device's
reconvergence, not the warp's (translator/README.md, "The subgroup-native strategy")."""
from ..strategy import Strategy
from .warp import NativeWarp


def warp_for(emitter):
    """The warp state of a subgroup-native shader."""
    return NativeWarp(emitter)


STRATEGY = Strategy(
    "subgroup-native", "native", flow="pc loop per thread",
    warp_model="a warp is a subgroup of 32 lanes; collectives are subgroup operations where each thread "
               "meets them", make=warp_for, mode="native", needs_warps=NativeWarp.needs_warps)
