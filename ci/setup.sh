#!/usr/bin/env bash
# Idempotent set-up for tests and the scoreboard; `make setup` runs it.
#
#  1. Debian packages, installed only when missing (dpkg -s), apt-get update first
#     only when something must be installed, with sudo when not root:
#       libvulkan1 mesa-vulkan-drivers   Vulkan loader + lavapipe (the CPU devices)
#       spirv-tools                      spirv-val / spirv-dis for translator output
#       chromium chromium-driver         the HTML pages checked in a real browser (Selenium)
#     WARPBOARD_APT=0 skips this step (e.g. a self-hosted GPU runner without sudo);
#     WARPBOARD_PACKAGES="..." replaces the list.
#  2. .venv (python3 -m venv) when missing, then `pip install -e '.[test]'` when
#     pyproject.toml is newer than the stamp file .venv/.warpboard-installed.
#  3. a second lavapipe (bookworm-backports' Mesa 25) unpacked under .vk-drivers/ by
#     ci/private_drivers.py, the system untouched; where it cannot be had, one line says
#     so. WARPBOARD_PRIVATE_DRIVERS=0 skips this step.
#
# Environment: PYTHON (default python3), VENV (default .venv).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
STAMP="$VENV/.warpboard-installed"
read -r -a PACKAGES <<< "${WARPBOARD_PACKAGES:-libvulkan1 mesa-vulkan-drivers spirv-tools chromium chromium-driver}"

say() { echo "setup: $*"; }

installed() {   # installed PKG: true when dpkg reports it fully installed
    dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

apt_packages() {
    if [ "${WARPBOARD_APT:-1}" = 0 ]; then
        say "WARPBOARD_APT=0: not checking Debian packages"
        return
    fi
    if ! command -v dpkg >/dev/null; then
        say "no dpkg here: install ${PACKAGES[*]} (or equivalents) yourself"
        return
    fi
    local missing=() p
    for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
    # Debian's python3 needs python3-venv for `python3 -m venv`.
    if ! "$PYTHON" -c 'import ensurepip' 2>/dev/null; then missing+=(python3-venv); fi
    if [ ${#missing[@]} -eq 0 ]; then
        say "Debian packages present: ${PACKAGES[*]}"
        return
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
    say "installing ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}"
}

python_env() {
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating $VENV with $($PYTHON --version 2>&1)"
        "$PYTHON" -m venv "$VENV"
    fi
    if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
        say "installing warpboard into $VENV: pip install -e '.[test]'"
        "$VENV/bin/python" -m pip install -q -e '.[test]'
        touch "$STAMP"
    else
        say "$VENV up to date with pyproject.toml"
    fi
}

private_drivers() {
    if [ "${WARPBOARD_PRIVATE_DRIVERS:-1}" = 0 ]; then
        say "WARPBOARD_PRIVATE_DRIVERS=0: no second lavapipe"
        return
    fi
    "$PYTHON" ci/private_drivers.py
}

apt_packages
python_env
private_drivers
say "done"
