#!/usr/bin/env python3
"""A second Mesa beside the system's, for the scoreboard to compare lavapipe with lavapipe:
Debian bookworm-backports' ``mesa-vulkan-drivers`` (Mesa 25.0) and the libdrm it needs,
unpacked under ``.vk-drivers/mesa-<version>/`` of the project, the system left as it is.

    ci/private_drivers.py          # what make setup runs (idempotent)

It writes ``icd.json`` (the package's lavapipe ICD, its library path made absolute) and
``warpboard-env.json`` (``LD_LIBRARY_PATH`` for the private libdrm) there; discovery
(harness.run.devices.default_icds) finds them. The packages are taken from the index of
bookworm-backports as it is today and checked against its SHA-256 sums. Where they cannot be
had (no network, another architecture), one line says so and the exit status is still 0.
Standard library only: it runs before the project's venv exists.
"""
from __future__ import annotations

import hashlib
import json
import lzma
import subprocess
import sys
import urllib.request
from pathlib import Path

MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm-backports"
PACKAGES = ("mesa-vulkan-drivers", "libdrm2", "libdrm-amdgpu1")
ROOT = Path(__file__).resolve().parents[1] / ".vk-drivers"
TIMEOUT_S = 120


def index(arch: str) -> dict[str, dict[str, str]]:
    """Package name -> its stanza (Version, Filename, SHA256) in the suite's index."""
    url = f"{MIRROR}/dists/{SUITE}/main/binary-{arch}/Packages.xz"
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as reply:
        text = lzma.decompress(reply.read()).decode("utf-8", "replace")
    found = {}
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
        if fields.get("Package") in PACKAGES:
            found[fields["Package"]] = fields
    return found


def fetch(entry: dict[str, str], into: Path) -> Path:
    """The package's .deb, downloaded once and checked against the index's SHA-256."""
    deb = into / Path(entry["Filename"]).name
    if not deb.is_file():
        with urllib.request.urlopen(f"{MIRROR}/{entry['Filename']}", timeout=TIMEOUT_S) as reply:
            data = reply.read()
        if hashlib.sha256(data).hexdigest() != entry["SHA256"]:
            raise RuntimeError(f"{deb.name}: SHA-256 differs from the index")
        deb.write_bytes(data)
    return deb


def install(arch: str) -> Path:
    entries = index(arch)
    missing = [p for p in PACKAGES if p not in entries]
    if missing:
        raise RuntimeError(f"{SUITE} has no {', '.join(missing)} for {arch}")
    version = entries["mesa-vulkan-drivers"]["Version"].split("-")[0]
    home = ROOT / f"mesa-{version}"
    if (home / "icd.json").is_file():
        return home
    debs, root = ROOT / "debs", home / "root"
    debs.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        subprocess.run(["dpkg-deb", "-x", str(fetch(entries[name], debs)), str(root)], check=True)
    [shipped] = sorted(root.glob("usr/share/vulkan/icd.d/lvp_icd*.json"))
    icd = json.loads(shipped.read_text())
    named = Path(icd["ICD"]["library_path"])      # absolute, or a bare name the loader looks up
    library = root / named.relative_to("/") if named.is_absolute() else root / "usr/lib" / _triplet(root) / named
    if not library.is_file():
        raise RuntimeError(f"the package's ICD names {library}, which it does not hold")
    icd["ICD"]["library_path"] = str(library)
    (home / "warpboard-env.json").write_text(json.dumps({"LD_LIBRARY_PATH": str(library.parent)}) + "\n")
    (home / "icd.json").write_text(json.dumps(icd, indent=1) + "\n")
    return home


def _triplet(root: Path) -> str:
    """The multiarch folder the package's libraries are in (x86_64-linux-gnu, ...)."""
    [lib] = sorted(root.glob("usr/lib/*/libvulkan_lvp.so"))
    return lib.parent.name


def main() -> int:
    try:
        arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                              check=True).stdout.strip()
        home = install(arch)
    except (OSError, RuntimeError, ValueError, subprocess.CalledProcessError, lzma.LZMAError) as exc:
        print(f"setup: no second lavapipe ({SUITE}'s Mesa) beside the system's: {exc}")
        return 0
    print(f"setup: lavapipe of {home.name} in {home.relative_to(ROOT.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
