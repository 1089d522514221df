"""Subgroup-native warp state: :class:`translator.emit.subgroups.SubgroupWarp` inside each
thread's pc loop (the emitter's free loop)."""
from __future__ import annotations

from ..subgroups import SubgroupWarp


class NativeWarp(SubgroupWarp):
    """Collectives on the device's subgroups where each thread's pc loop meets them."""
