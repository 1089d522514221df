"""A translation strategy, declared: its name, its control-flow shape, its warp model, and the
warp state it makes for an emitter; and the protocol that warp state implements.

Two axes make a strategy. The *control-flow shape* is how a thread's pc loop is arranged:
``free or turns`` (the `turns` strategy: a program without collectives runs free, each thread
on its own ``switch (pc)`` loop, any other in turns over the workgroup, the lowest waiting pc
stepping while the rest sit out) or ``pc loop per thread`` (every program on the free loop).
The *warp model* is how lanes meet: through workgroup memory at one exchange site, or as
subgroup operations. The emitter asks the record, never a strategy's name, and the harness
lists the strategies it can score from :data:`STRATEGIES`: a new strategy is a sub-package of
``translator/emit/`` and one :func:`register` line (translator/README.md, "Adding a
strategy").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..isa.ctx import B, V


class WarpModel(Protocol):
    """What the emitter drives, per program and block shape: the collectives and waiting
    instructions of ``translator.isa.ctx.Ctx`` (each takes the instruction's ``SpirvCtx`` as
    ``x``; collectives return SSA values for the lanes of the turn), a thread leaving its warp,
    and the main loop. Optional members, read where present: ``execution_modes`` (SPIR-V
    execution modes the shader declares), ``subgroup_size`` (the subgroup size the pipeline
    must ask for), ``scratch_words`` (heap words each workgroup's bookkeeping takes),
    ``converge`` (free mode: a warp's lanes meet at the lowest pc), ``region_masks_shared``
    (convergence-barrier masks in workgroup memory), ``order_point(inst, active)`` (lanes
    see each other's memory before an instruction; ``active``: the block's threads),
    ``spin_reads_write`` (a load a loop may wait on is a read-modify-write)."""

    def active(self, x) -> V: ...
    def ballot(self, x, p: B) -> V: ...
    def shfl(self, x, mode: str, value: V, b: V, c: V) -> tuple[V, B]: ...
    def match_any(self, x, value: V) -> V: ...
    def match_all(self, x, value: V) -> tuple[V, B]: ...
    def redux(self, x, op: str, value: V, signed: bool) -> V: ...
    def bssy(self, x, barrier: int) -> None: ...
    def bsync(self, x, barrier: int) -> None: ...
    def brk(self, x, barrier: int, cond: B | None = None) -> None: ...
    def warpsync(self, x, mask: V) -> None: ...
    def bar(self, x, kind: str, barrier: V, count: V | None, pred: B | None) -> None: ...
    def yield_(self, x) -> None: ...
    def on_exit(self, cond: B) -> None: ...
    def emit_main(self) -> None: ...


@dataclass(frozen=True)
class Strategy:
    """One way to translate; see the module's docstring for the two axes."""
    name: str                         # what ``--translator`` and ``translate(strategy=)`` call it
    package: str                      # its sub-package of translator/emit/
    flow: str                         # the control-flow shape: "free or turns", "pc loop per thread"
    warp_model: str                   # how lanes meet, in a phrase
    make: Callable[[Any], WarpModel]  # the warp state for an emitter
    mode: str | None = None           # every program in this mode (None: free where it can, else turns)
    warp_subgroups: bool = False      # collectives as subgroup operations where the device's subgroups are warps
    tight_loops: bool = False         # a block that loops on itself may loop in its own case, where the driver allows
    # what in a program needs its warps on the device's subgroups (None: nothing; where it needs
    # them and the device's subgroups cannot hold warps, the program is UNSUPPORTED there)
    needs_warps: Callable[[Any], str | None] | None = None


STRATEGIES: dict[str, Strategy] = {}
"""The strategies by name, in the order they were registered; the first is the default."""


def register(strategy: Strategy) -> Strategy:
    """Add ``strategy`` to :data:`STRATEGIES` (a name registered twice is an error)."""
    if strategy.name in STRATEGIES:
        raise ValueError(f"translation strategy {strategy.name!r} is registered twice")
    STRATEGIES[strategy.name] = strategy
    return strategy


__all__ = ["Strategy", "WarpModel", "STRATEGIES", "register"]
