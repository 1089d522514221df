"""Each device configuration compiles its own code: lavapipe at one width never runs what
Mesa's shader cache kept from another width (harness.run.cache.driver_cache_env)."""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from warpboard.harness.run import devices
from warpboard.harness.run.cache import driver_cache_env

# Every invocation stores its index into the workgroup word at zero[0], then reads the word
# at zero[1] (both indices 0, read from a buffer so that no compiler forwards the store to
# the load), with no barrier. Which store a load sees is the schedule's choice, and
# lavapipe's is its vector width: it runs a workgroup one vector of lanes at a time, each
# instruction for every lane of the vector, so out[i] reads i | (width - 1). That shows
# which width's code ran, with nothing in the shader (no SubgroupSize, no subgroup
# operation) that lavapipe would compile differently per width before its shader cache.
SCHEDULE = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %lid
               OpExecutionMode %main LocalSize 64 1 1
               OpDecorate %lid BuiltIn LocalInvocationIndex
               OpDecorate %arr ArrayStride 4
               OpMemberDecorate %block 0 Offset 0
               OpDecorate %block Block
               OpDecorate %out DescriptorSet 0
               OpDecorate %out Binding 0
               OpDecorate %zero DescriptorSet 0
               OpDecorate %zero Binding 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
      %pin_u = OpTypePointer Input %uint
        %lid = OpVariable %pin_u Input
        %arr = OpTypeRuntimeArray %uint
      %block = OpTypeStruct %arr
    %psb_blk = OpTypePointer StorageBuffer %block
      %psb_u = OpTypePointer StorageBuffer %uint
     %uint_0 = OpConstant %uint 0
     %uint_1 = OpConstant %uint 1
     %uint_4 = OpConstant %uint 4
      %words = OpTypeArray %uint %uint_4
    %pwg_arr = OpTypePointer Workgroup %words
      %pwg_u = OpTypePointer Workgroup %uint
        %out = OpVariable %psb_blk StorageBuffer
       %zero = OpVariable %psb_blk StorageBuffer
     %shared = OpVariable %pwg_arr Workgroup
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %i = OpLoad %uint %lid
         %p0 = OpAccessChain %psb_u %zero %uint_0 %uint_0
         %z0 = OpLoad %uint %p0
         %p1 = OpAccessChain %psb_u %zero %uint_0 %uint_1
         %z1 = OpLoad %uint %p1
         %ws = OpAccessChain %pwg_u %shared %z0
               OpStore %ws %i
         %wl = OpAccessChain %pwg_u %shared %z1
          %w = OpLoad %uint %wl
       %pout = OpAccessChain %psb_u %out %uint_0 %i
               OpStore %pout %w
               OpReturn
               OpFunctionEnd
"""


@pytest.fixture
def fresh_caches(tmp_path, monkeypatch):
    """An empty warpboard cache, and no Mesa cache setting inherited from the caller."""
    monkeypatch.setenv("WARPBOARD_CACHE", str(tmp_path / "cache"))
    for var in ("MESA_SHADER_CACHE_DIR", "MESA_SHADER_CACHE_DISABLE"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "cache"


def test_each_configuration_gets_a_mesa_cache_of_its_own(fresh_caches, monkeypatch):
    w4, w16 = {"LP_NATIVE_VECTOR_WIDTH": "128"}, {"LP_NATIVE_VECTOR_WIDTH": "512"}
    folders = {driver_cache_env(env)["MESA_SHADER_CACHE_DIR"] for env in (w4, w16, {})}
    assert len(folders) == 3
    assert all(folder.startswith(str(fresh_caches.absolute() / "mesa")) for folder in folders)
    assert driver_cache_env({**w4, "MESA_SHADER_CACHE_DISABLE": "true"}) == {}   # the config chose
    assert all(Path(folder).is_dir() for folder in folders)          # Mesa makes no missing parent
    elsewhere = fresh_caches.parent / "elsewhere"
    monkeypatch.setenv("MESA_SHADER_CACHE_DIR", str(elsewhere))                   # the caller chose a base
    assert driver_cache_env(w4)["MESA_SHADER_CACHE_DIR"] == str(elsewhere / "LP_NATIVE_VECTOR_WIDTH=128")
    monkeypatch.delenv("MESA_SHADER_CACHE_DIR")
    monkeypatch.setenv("WARPBOARD_CACHE", "off")
    assert driver_cache_env(w4) == {"MESA_SHADER_CACHE_DISABLE": "true"}


@pytest.mark.xdist_group("lavapipe-widths")
def test_every_lavapipe_width_runs_code_compiled_for_it(fresh_caches, tmp_path):
    """The widths run one shader in turn, the narrowest first, on one (empty) warpboard
    cache: each must schedule the lanes by its own width. With one Mesa cache for all
    widths, w8 and w16 ran 4 lanes at a time: they ran the code compiled at w4."""
    if shutil.which("spirv-as") is None:
        pytest.skip("SPIRV-Tools (spirv-as) not installed")
    widths = sorted((c for c in devices.discover() if devices.is_lavapipe(c.info)),
                    key=lambda c: c.info.subgroup_size)
    if len(widths) < 2:
        pytest.skip("fewer than two lavapipe widths on this machine")
    src, spv = tmp_path / "size.spvasm", tmp_path / "size.spv"
    src.write_text(SCHEDULE)
    subprocess.run(["spirv-as", "--target-env", "vulkan1.1", str(src), "-o", str(spv)],
                   check=True, capture_output=True, text=True)
    for attempt in ("compiled", "from each width's own cache"):
        stored = {}
        for config in widths:
            with config.worker() as worker:
                reply = worker.call("support.worker_targets:run_spirv", config.index, spv.read_bytes(),
                                    [bytes(4 * 64), bytes(8)], (1, 1, 1), 60.0, timeout_s=120)
            assert reply.ok, reply.describe()
            (out, _zero), _ = reply.value
            stored[config.id] = list(struct.unpack("<64I", out))
        assert stored == {c.id: [i | (c.info.subgroup_size - 1) for i in range(64)] for c in widths}, attempt
    assert len(list((fresh_caches / "mesa").glob("*/mesa_shader_cache*"))) == len(widths)
