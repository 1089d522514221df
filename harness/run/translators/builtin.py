"""The translator of this project, in each strategy it has registered
(``translator.STRATEGIES``): what a strategy's record says decides how it is asked."""
from __future__ import annotations

from warpboard.translator import STRATEGIES, UnsupportedInstruction

from ..dispatch import device_target, translate_case
from ...vk.probe import real_subgroup


class Builtin:
    """A registered strategy: translator.translate with it, for the device's
    :func:`~harness.run.dispatch.device_target`."""

    def __init__(self, name: str):
        self.name = name
        self.strategy = STRATEGIES[name]

    def translate(self, prep, info, mode: str | None = None):
        strategy, program = self.strategy, prep.program
        if strategy.needs_warps and program.collectives:
            real = real_subgroup(info)
            if real is None or real % 32:
                raise UnsupportedInstruction(
                    f"{program.name}: {self.name} makes a warp of 32 subgroup lanes, and this device's "
                    f"subgroups are {real or 'of unknown size'} wide (probed; it reports {info.subgroup_size})",
                    "subgroups")
        return translate_case(prep, None if strategy.mode else mode,
                              device_target(info, prep.launch.block, self.name), self.name)[0]
