"""Content-addressed caches that outlive a run: translated SPIR-V, (through
:mod:`harness.vk`) the Vulkan pipeline cache of each device, and a Mesa shader cache per
device configuration (:func:`driver_cache_env`).

The SPIR-V key covers everything translation reads: the kernel's listing text, the block
shape, shared memory size, mode, and the translator's own source, so editing the translator
invalidates every entry. ``WARPBOARD_CACHE`` sets the folder (default ``.warpboard-cache``);
``WARPBOARD_CACHE=off`` turns caching off. Entries carry the hash of their content in
their name and are checked on every read; a cache that cannot be read or written is no
cache, never a failed cell. A key's entries lie in a folder named by its first two hex digits
(``spirv/3f/3f….<digest>.spv``), so that finding them lists a 256th of a cache that has grown
over many runs, not all of it.
"""
from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

from warpboard import translator

from ..files import cache_dir, write_atomic

SPIRV_MAGIC = (0x07230203).to_bytes(4, "little")


def driver_cache_env(config_env: dict[str, str]) -> dict[str, str]:
    """What a worker of one device configuration (``config_env``: the variables set before
    its driver loads) adds to its environment so that it never runs code compiled for another.

    Mesa's on-disk shader cache keys compiled code by the shader, the driver build and the
    CPU's features, not by ``LP_NATIVE_VECTOR_WIDTH``. With one cache for every width,
    lavapipe at the second width loads the code compiled at the first, unless the shader
    reads something lavapipe lowers per width before the cache (``SubgroupSize``, subgroup
    operations). On Mesa 22.3.6 a generated kernel compiled at w4 on an empty cache was then
    loaded at w16 and at w8 with no new cache entry, and a shader whose result shows the vector
    width it ran at gave w4's result on the w8 and w16 devices
    (tests/harness/run/test_driver_cache.py).
    So each configuration gets a folder of its own, ``<base>/<env>`` (made here), where the base is
    ``$MESA_SHADER_CACHE_DIR`` when the caller set it and ``<warpboard cache>/mesa`` otherwise;
    with neither (``WARPBOARD_CACHE=off``) Mesa's cache is off. A configuration that sets
    ``MESA_SHADER_CACHE_*`` itself, or a caller that turned Mesa's cache off, gets nothing added.
    """
    if any(var.startswith("MESA_SHADER_CACHE") for var in config_env):
        return {}
    if os.environ.get("MESA_SHADER_CACHE_DISABLE", "").lower() in ("1", "true", "yes"):
        return {}
    root = cache_dir()
    base = os.environ.get("MESA_SHADER_CACHE_DIR") or (root / "mesa" if root else None)
    if base is None:
        return {"MESA_SHADER_CACHE_DISABLE": "true"}
    tag = ",".join(f"{key}={value}" for key, value in sorted(config_env.items())) or "default"
    folder = (Path(base) / "".join(c if c.isalnum() or c in "=,._-" else "_" for c in tag)).absolute()
    try:                          # Mesa makes no missing parent: without the folder it caches nothing
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:               # no cache, still its own: nothing to load from another width
        pass
    return {"MESA_SHADER_CACHE_DIR": str(folder)}


@lru_cache(maxsize=1)
def translator_digest() -> str:
    """A hash of the translator's source files: a new translator means new keys."""
    h = hashlib.sha256()
    root = Path(translator.__file__).parent
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def spirv_key(listing: str, kernel: str, block, shared_bytes: int, mode: str | None,
              target: translator.Target = translator.Target(), strategy: str = translator.DEFAULT_STRATEGY) -> str:
    """The cache key of one translation: the translator's own files, the listing and every
    argument of translator.translate."""
    h = hashlib.sha256(translator_digest().encode())
    for part in (listing, kernel, repr(tuple(block)), str(shared_bytes), str(mode), *target.key(), strategy):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _spirv_folder(key: str) -> Path | None:
    """The folder of ``key``'s entries."""
    root = cache_dir()
    return root / "spirv" / key[:2] if root else None


def _content_digest(spirv: bytes) -> str:
    return hashlib.sha256(spirv).hexdigest()[:32]


def _is_spirv(data: bytes) -> bool:
    return len(data) >= 20 and len(data) % 4 == 0 and data[:4] == SPIRV_MAGIC


def load_spirv(key: str) -> bytes | None:
    """The cached module for ``key``, or None. An entry whose bytes do not hash to the
    digest in its name (truncated, edited, half written) is removed and ignored; any
    error reading the cache means no cache, never a failed cell."""
    folder = _spirv_folder(key)
    if folder is None:
        return None
    try:
        entries = sorted(folder.glob(f"{key}.*.spv"))
    except OSError:
        return None
    for entry in entries:
        digest = entry.name[len(key) + 1:-len(".spv")]
        try:
            data = entry.read_bytes()
        except OSError:
            continue
        if _content_digest(data) == digest and _is_spirv(data):
            return data
        _remove(entry)
    return None


def store_spirv(key: str, spirv: bytes) -> None:
    """Keep ``spirv`` under ``key`` as ``<key>.<content digest>.spv``, written atomically.
    A cache that cannot be written (read-only, full, not a folder) is skipped silently and
    leaves no temporary file."""
    folder = _spirv_folder(key)
    if folder is None:
        return
    try:
        write_atomic(folder / f"{key}.{_content_digest(spirv)}.spv", spirv)
    except OSError:
        pass


def load_shader_facts(key: str) -> dict | None:
    """What was kept beside the module for ``key`` (its mode, subgroup needs), or None."""
    folder = _spirv_folder(key)
    if folder is None:
        return None
    try:
        facts = json.loads((folder / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    return facts if isinstance(facts, dict) else None


def store_shader_facts(key: str, facts: dict) -> None:
    """Keep ``facts`` (JSON) beside the module for ``key``; skipped, as modules are, where the
    cache cannot be written."""
    folder = _spirv_folder(key)
    if folder is None:
        return
    try:
        write_atomic(folder / f"{key}.json", json.dumps(facts, sort_keys=True).encode())
    except OSError:
        pass


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
