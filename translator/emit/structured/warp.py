"""The `structured` strategy's warp state: each thread on its own structured code, lanes that
never wait for each other (BSSY/BSYNC, WARPSYNC, YIELD and lane-order points do nothing: the
structured merges are where a device reconverges), and the shader body emitted by
:class:`.main.StructuredBody` instead of a pc loop (``owns_main``)."""
from __future__ import annotations

from ...errors import UnsupportedInstruction
from ..lanes import NoWaits
from .main import StructuredBody


class StructuredWarp(NoWaits):
    """Collective-free programs: the collectives and barriers are UNSUPPORTED here."""

    owns_main = True                 # the emitter calls emit_main, whatever the mode
    region_masks_shared = False      # Bx masks live in each thread's own variable

    def __init__(self, e):
        self.e = e
        program = e.program
        for i in (i for b in program.reachable.values() for i in b.insts):
            if i.exchanges and not i.spec.region or i.spec.waits == "bar":
                raise UnsupportedInstruction(
                    f"structured: {i.where}: '{i.text}' at {i.pc:#06x}: collectives and block barriers are "
                    "not translated by this strategy yet", i.opcode)
        if program.order.points:
            pc = min(program.order.points)
            raise UnsupportedInstruction(
                f"structured: {program.name}: the lanes of a warp share memory in instruction order "
                f"(an ordering point at {pc:#06x}), which threads that run on their own do not keep", "order")
        self.body = StructuredBody(e)

    def order_point(self, inst): pass

    def emit_main(self) -> None:
        self.body.emit()

    def _none(self, x, *args):
        raise UnsupportedInstruction(f"structured: {x.inst.where}: '{x.inst.text}': a collective", x.inst.opcode)

    active = ballot = shfl = match_any = match_all = redux = bar = _none
