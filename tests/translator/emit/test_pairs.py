"""64-bit values as pairs of 32-bit words (translator.emit.pairs), for devices without
shaderInt64: the library's 64-bit kernels (division, the binary64 soft float, conversions,
64-bit shuffles) pass on lavapipe told it has no shaderInt64, and on SwiftShader, which has none."""
import dataclasses
from pathlib import Path

import pytest
from warpboard.harness.run import devices, engine
from warpboard.harness.run.dispatch import prepare, translate_case
from warpboard.harness.run.results import Status
from warpboard.translator.errors import UnsupportedInstruction
from warpboard.translator import Target

from support.paths import library_case

# kernels whose 64-bit values are most of what they compute
WIDE_CASES = ("basic/divmod64", "basic/divconst64", "float/f64_div", "float/f64_axpy", "float/f64_horner",
              "float/int_to_f64", "float/f32_to_i64", "float/i64_to_f32", "float/f64_to_int")


class WithoutInt64:
    """An open device that says it has no 64-bit integers (the rest as it is)."""

    def __init__(self, device):
        self._device = device
        features = tuple(f for f in device.info.features if "Int64" not in f)
        self.info = dataclasses.replace(device.info, features=features, shader_int64=False)

    def __getattr__(self, name):
        return getattr(self._device, name)


@pytest.mark.xdist_group("lavapipe-in-process")
@pytest.mark.parametrize("case_id", WIDE_CASES)
def test_a_64_bit_kernel_passes_on_pairs_of_words(lavapipe, case_id):
    cell = engine.run_case(library_case(case_id), "lavapipe-no-int64", WithoutInt64(lavapipe))
    assert cell.status is Status.PASS, f"{case_id}: {cell.status.value}: {cell.message}"


def test_a_64_bit_atomic_without_int64_is_unsupported_naming_the_features():
    prep = prepare(library_case("atomics/atomics64_global"))
    with pytest.raises(UnsupportedInstruction, match=r"RED\.E\.ADD\.64.*needs shaderInt64 and shaderBufferInt64Atomics"):
        translate_case(prep, target=Target(features=frozenset({"shaderFloat64"})), use_cache=False)


def test_pairs_change_the_module_and_a_device_with_int64_keeps_64_bit_values():
    prep = prepare(library_case("basic/divmod64"))
    native = translate_case(prep, use_cache=False)[0].spirv
    assert translate_case(prep, target=Target(features=frozenset({"shaderInt64", "shaderBufferInt64Atomics"})),
                          use_cache=False)[0].spirv == native
    assert translate_case(prep, target=Target(features=frozenset()), use_cache=False)[0].spirv != native


@pytest.mark.skipif(not Path(devices.SWIFTSHADER_ICD).is_file(), reason="no SwiftShader (Debian's chromium-common)")
def test_the_64_bit_kernels_pass_on_swiftshader():
    [config] = [c for c in devices.discover(icds=[devices.SWIFTSHADER_ICD]) if "swiftshader" in c.id]
    assert "shaderInt64" not in config.info.features
    cases = [library_case(c) for c in WIDE_CASES + ("atomics/atomics64_global",)]
    cells = {c["case"]: c for c in engine.run_matrix(cases, [config], interp=False, jobs=1)["results"]}
    assert cells.pop("atomics/atomics64_global")["status"] == Status.UNSUPPORTED.value
    bad = {k: f"{c['status']}: {c.get('message')}" for k, c in cells.items() if c["status"] != Status.PASS.value}
    assert not bad, bad
