"""Every case under cases/ translates to a module that ``spirv-val --target-env vulkan1.1``
accepts: in turns mode always (with collectives in workgroup memory and through subgroup
operations), in free mode too where the program needs no turns, and with 64-bit values as
pairs of words (for a device without shaderInt64: no Int64 capability then). Cases
whose translation raises UnsupportedInstruction are skipped, but counted: the test asserts a
minimum number of validated modules, so it cannot pass vacuously."""
from __future__ import annotations

import shutil
import struct
import subprocess

import pytest
from warpboard.harness.case.model import CaseError, discover_cases
from warpboard.harness.run.dispatch import prepare, translate_case
from warpboard.translator.errors import UnsupportedInstruction
from warpboard.translator.spirv.builder import CAPABILITY, OP
from warpboard.translator import Target

from support.paths import ROOT, library_cases

TARGET_ENV = "vulkan1.1"
MIN_VALIDATED = 16          # modules; the 17 shipped cases gave 19 (16 turns, 3 free) when written
# the module's tests share one translation of every case (``results``): on one worker, so it is made once
pytestmark = pytest.mark.xdist_group("spirv-valid")


def _discover() -> tuple[list, list[str]]:
    """All cases; when some case file is broken, the others one by one, and the errors."""
    try:
        return library_cases(), []
    except CaseError:
        cases, errors = [], []
        for path in sorted((ROOT / "cases").rglob("*.toml")):
            try:
                cases += discover_cases(ROOT / "cases", [path.relative_to(ROOT / "cases").with_suffix("").as_posix()])
            except CaseError as exc:
                errors.append(str(exc))
        return cases, errors


CASES, CASE_ERRORS = _discover()


def spirv_val(code: bytes) -> str | None:
    """spirv-val's complaint about a module, or None when it is valid."""
    proc = subprocess.run(["spirv-val", "--target-env", TARGET_ENV, "-"], input=code,
                          capture_output=True, check=False)
    if proc.returncode == 0:
        return None
    return (proc.stderr or proc.stdout).decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"


def translate_and_validate(case) -> dict:
    """{'unsupported': message} or {'modes': {mode: None or spirv-val's complaint}}."""
    try:
        prep = prepare(case)
        modes = ["turns"] + ([] if prep.program.turns else ["free"])
        shaders = {mode: translate_case(prep, mode)[0] for mode in modes}
        # as a GPU whose subgroups are warps gets them: collectives through subgroup operations,
        # loops inside the cases of a switch
        shaders["turns, warp subgroups"] = translate_case(prep, "turns", Target(warp_subgroups=True, tight_loops=True))[0]
        if "free" in modes:
            shaders["free, tight loops"] = translate_case(prep, "free", Target(tight_loops=True))[0]
    except UnsupportedInstruction as exc:
        return {"unsupported": str(exc)}
    modes = {mode: spirv_val(s.spirv) for mode, s in shaders.items()}
    # for a device without shaderInt64: 64-bit values as pairs of words, no Int64 capability
    try:
        pairs = translate_case(prep, None, Target(features=frozenset()))[0].spirv
    except UnsupportedInstruction as exc:
        if "shaderInt64" not in str(exc):
            raise
    else:
        modes["32-bit pairs"] = "declares the Int64 capability" if int64_declared(pairs) else spirv_val(pairs)
    return {"modes": modes}


def int64_declared(spirv: bytes) -> bool:
    """Whether a module declares the Int64 capability (OpCapability Int64)."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    at = 5
    while at < len(words) and words[at] & 0xFFFF == OP["Capability"]:
        if words[at + 1] == CAPABILITY["Int64"]:
            return True
        at += words[at] >> 16
    return False


@pytest.fixture(scope="module")
def results() -> dict:
    if shutil.which("spirv-val") is None:
        pytest.skip("spirv-val (SPIRV-Tools) not installed")
    return {case.id: translate_and_validate(case) for case in CASES}


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_case_translates_to_valid_spirv(results, case_id):
    result = results[case_id]
    if "unsupported" in result:
        pytest.skip(f"UNSUPPORTED: {result['unsupported']}")
    bad = {mode: why for mode, why in result["modes"].items() if why}
    assert not bad, "\n".join(f"{case_id} ({mode} mode): {why}" for mode, why in bad.items())


def test_every_case_file_loads():
    assert not CASE_ERRORS, "\n".join(CASE_ERRORS)


def test_enough_modules_were_validated(results):
    valid = sum(1 for r in results.values() for why in r.get("modes", {}).values() if why is None)
    free = sum(1 for r in results.values() if "free" in r.get("modes", {}))
    unsupported = sorted(k for k, r in results.items() if "unsupported" in r)
    assert valid >= MIN_VALIDATED, (f"only {valid} modules validated ({free} in free mode); "
                                    f"unsupported: {', '.join(unsupported) or 'none'}")
    assert free >= 3, f"only {free} cases were translated in free mode too"
    pairs = sum(1 for r in results.values() if r.get("modes", {}).get("32-bit pairs", "absent") is None)
    assert pairs >= MIN_VALIDATED, f"only {pairs} modules validated with 64-bit values as pairs of words"
