"""The `turns` strategy (translator/README.md, "The turn rule"): collective-free programs run
free, every other in turns over the workgroup; warp state (warp), the turn loop (loop), waiting
instructions (waits), the exchange site (exchange), the collectives (collectives) and
whole-warp turns (whole)."""
from ..strategy import Strategy
from .warp import FreeWarp, TurnsWarp


def warp_for(emitter):
    """The warp state the emitter drives: free mode's or the turn loop's."""
    return TurnsWarp(emitter) if emitter.mode == "turns" else FreeWarp(emitter)


STRATEGY = Strategy(
    "turns", "turns", flow="free or turns",
    warp_model="collectives through workgroup memory at one exchange site, or subgroup operations "
               "where the device's subgroups are warps", make=warp_for, warp_subgroups=True, tight_loops=True)
