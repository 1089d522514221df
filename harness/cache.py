"""Content-addressed caches that outlive a run: translated SPIR-V, and (through
:mod:`harness.vk`) the Vulkan pipeline cache of each device.

The SPIR-V key covers everything translation reads: the kernel's listing text, the block
shape, shared memory size, mode, and the translator's own source, so editing the translator
invalidates every entry. ``WARPBOARD_CACHE`` sets the folder (default ``.warpboard-cache``);
``WARPBOARD_CACHE=off`` turns caching off.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

import translator


def cache_dir() -> Path | None:
    setting = os.environ.get("WARPBOARD_CACHE", ".warpboard-cache")
    return None if setting.lower() in ("off", "0", "") else Path(setting)


@lru_cache(maxsize=1)
def translator_digest() -> str:
    """A hash of the translator's source files: a new translator means new keys."""
    h = hashlib.sha256()
    for path in sorted(Path(translator.__file__).parent.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def spirv_key(listing: str, kernel: str, block, shared_bytes: int, mode: str | None, subgroup_vote: bool,
              warp_subgroups: bool = False) -> str:
    h = hashlib.sha256(translator_digest().encode())
    for part in (listing, kernel, repr(tuple(block)), str(shared_bytes), str(mode), str(subgroup_vote),
                 str(warp_subgroups)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load_spirv(key: str) -> bytes | None:
    root = cache_dir()
    path = root / "spirv" / f"{key}.spv" if root else None
    return path.read_bytes() if path and path.is_file() else None


def store_spirv(key: str, spirv: bytes) -> None:
    root = cache_dir()
    if root is None:
        return
    folder = root / "spirv"
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    tmp.write_bytes(spirv)
    tmp.replace(folder / f"{key}.spv")      # atomic: concurrent workers never see half a file
