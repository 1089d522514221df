"""The translator of this project, in each strategy it has registered
(``translator.STRATEGIES``): what a strategy's record says decides how it is asked."""
from __future__ import annotations

from warpboard.translator import STRATEGIES, UnsupportedInstruction

from ..dispatch import device_target, translate_case, warps_are_subgroups
from ...vk.probe import real_subgroup


class Builtin:
    """A registered strategy: translator.translate with it, for the device's
    :func:`~harness.run.dispatch.device_target`."""

    def __init__(self, name: str):
        self.name = name
        self.strategy = STRATEGIES[name]

    def translate(self, prep, info, mode: str | None = None):
        strategy, program = self.strategy, prep.program
        why = strategy.needs_warps and strategy.needs_warps(program)
        if why:
            real = real_subgroup(info)
            # a warp of 32 subgroup lanes; with the strategy's own check (warp_subgroups), also a
            # workgroup that fits in one subgroup, lanes in local-index order
            fits = warps_are_subgroups(info, prep.launch.block) if strategy.warp_subgroups else \
                real is not None and real % 32 == 0
            if not fits:
                raise UnsupportedInstruction(
                    f"{program.name}: {self.name} makes a warp of 32 subgroup lanes for its {why}, and this "
                    f"device's subgroups are {real or 'of unknown size'} wide (probed; it reports "
                    f"{info.subgroup_size})", "subgroups")
        return translate_case(prep, None if strategy.mode else mode,
                              device_target(info, prep.launch.block, self.name), self.name)[0]
