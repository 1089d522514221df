"""A recorded capture, as the interposer (``interposer.c``) leaves it in a run folder.

``launches.jsonl`` holds one JSON object a line, in the order things happened: a header
(``interposer``), allocations (``alloc``/``managed``: base, size), frees (``free``: base)
and launches (``launch``: index, kernel, grid, block, dynamic shared bytes, stream number,
the parameter bytes and layout, the memory regions the parameters point into or that hold
module variables, whether their contents were copied to ``L<index>.r<k>.before`` /
``.after``, and its guards: the first bytes of the allocation after a region's end when the
launch was not given it, with the first byte the launch changed there; older captures have
none). :func:`read_run` turns that into :class:`Launch` records, each knowing the
allocations live when it ran.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

MEMTYPE_HOST, MEMTYPE_DEVICE = 1, 2          # CUmemorytype


class CaptureError(Exception):
    """A capture folder that cannot be read (missing, or a line that is not the interposer's)."""


@dataclass(frozen=True)
class Region:
    """A device memory range a launch touches: an allocation a parameter points into, or a
    module variable (``name``) the interposer looked up."""
    base: int
    size: int
    memtype: int
    managed: bool
    name: str | None

    def holds(self, address: int) -> bool:
        """Whether ``address`` points into the range or one past its end."""
        return self.base <= address <= self.base + self.size


@dataclass(frozen=True)
class Guard:
    """Bytes the launch was not given, watched around it: the first ``size`` bytes of the live
    allocation at ``base``, the next one after region ``region``'s end. ``changed``: the first
    of them the launch changed (a store past the region's end lands there), -1 if none."""
    base: int
    size: int
    region: int
    changed: int


@dataclass
class Launch:
    """One kernel launch of a run."""
    index: int
    kernel: str
    api: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    stream: int
    cooperative: bool
    cluster: bool
    copied: bool
    skip: str | None
    params: list[tuple[int, int]]              # (offset, size) of each parameter
    param_bytes: bytes
    regions: list[Region]
    live: list[tuple[int, int]] = field(default_factory=list)   # (base, size) allocated then
    guards: list[Guard] = field(default_factory=list)
    folder: Path = Path(".")
    device_ns: int | None = None               # the kernel's time on the chip (CUPTI's activity record)

    def memory(self, k: int, side: str) -> bytes:
        """Region ``k``'s bytes ``side`` ("before" or "after") the launch."""
        path = self.folder / f"L{self.index:06d}.r{k}.{side}"
        try:
            data = path.read_bytes()
        except OSError as e:
            raise CaptureError(f"{path}: {e.strerror or e}") from None
        if len(data) != self.regions[k].size:
            raise CaptureError(f"{path}: {len(data)} bytes, the region has {self.regions[k].size}")
        return data


def read_run(folder: str | Path) -> tuple[dict, list[Launch]]:
    """The header and the launches of one run folder."""
    folder = Path(folder)
    path = folder / "launches.jsonl"
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise CaptureError(f"{path}: {e.strerror or e}") from None
    header, launches, live = {}, [], {}
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as e:
            raise CaptureError(f"{path}:{number}: not JSON ({e.msg})") from None
        if "interposer" in entry:
            header = entry
        elif "alloc" in entry or "managed" in entry:
            live[entry.get("alloc", entry.get("managed"))] = entry["size"]
        elif "free" in entry:
            live.pop(entry["free"], None)
        elif "launch" in entry:
            launches.append(_launch(entry, sorted(live.items()), folder, f"{path}:{number}"))
        else:
            raise CaptureError(f"{path}:{number}: not a line of the interposer's")
    if not header:
        raise CaptureError(f"{path}: no header line: not written by warpboard's interposer")
    return header, launches


def _launch(e: dict, live: list[tuple[int, int]], folder: Path, where: str) -> Launch:
    try:
        return Launch(index=e["launch"], kernel=e["kernel"], api=e["api"], grid=tuple(e["grid"]),
                      block=tuple(e["block"]), shared=e["shared"], stream=e["stream"],
                      cooperative=bool(e["cooperative"]), cluster=bool(e["cluster"]), copied=bool(e["copied"]),
                      skip=e["skip"], params=[tuple(p) for p in e["params"]],
                      param_bytes=bytes.fromhex(e["param_bytes"]),
                      regions=[Region(r["base"], r["size"], r["memtype"], bool(r["managed"]), r["name"])
                               for r in e["regions"]],
                      live=live, folder=folder,
                      guards=[Guard(g["base"], g["size"], g["region"], g["changed"]) for g in e.get("guards", [])],
                      device_ns=e.get("device_ns"))
    except (KeyError, TypeError, ValueError) as err:
        raise CaptureError(f"{where}: a launch line without {err}") from None
