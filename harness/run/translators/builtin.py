"""The translator of this project in each of its strategies (translator.STRATEGIES)."""
from __future__ import annotations

from warpboard.translator import UnsupportedInstruction

from ..dispatch import tight_loops_allowed, translate_case, warps_are_subgroups
from ...vk.probe import real_subgroup


class Builtin:
    """``turns`` or ``subgroup-native``: translator.translate with that strategy, for the
    device's features and, in turns, with collectives on subgroups where they are warps."""

    def __init__(self, name: str):
        self.name = name

    def translate(self, prep, info, mode: str | None = None):
        features = frozenset(info.features)
        if self.name == "turns":
            return translate_case(prep, mode, warp_subgroups=warps_are_subgroups(info, prep.launch.block),
                                  features=features, tight_loops=tight_loops_allowed(info),
                                  workgroup_limit=info.max_shared_memory)[0]
        program = prep.program
        if program.collectives:
            real = real_subgroup(info)
            if real is None or real % 32:
                raise UnsupportedInstruction(
                    f"{program.name}: subgroup-native makes a warp of 32 subgroup lanes, and this device's "
                    f"subgroups are {real or 'of unknown size'} wide (probed; it reports {info.subgroup_size})",
                    "subgroups")
        return translate_case(prep, None, features=features, strategy=self.name)[0]
