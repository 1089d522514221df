"""The SPIR-V cache: same inputs give the cached module, any change to them a new key."""

import dataclasses

import pytest
from warpboard.harness import vk
from warpboard.harness.case.model import load_case
from warpboard.harness.case.words import words_cache
from warpboard.harness.run import cache
from warpboard.harness.run.dispatch import prepare, run_vulkan, translate_case
from warpboard.translator import Target

from support.paths import CASES

CASE = CASES / "truth" / "loop_ballot.toml"


def test_second_translation_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPBOARD_CACHE", str(tmp_path))
    prep = prepare(load_case(CASE))
    first, _ = translate_case(prep)
    again, _ = translate_case(prep)
    assert not first.cached and again.cached
    assert again.spirv == first.spirv and again.mode == first.mode == "turns"
    [entry] = (tmp_path / "spirv").rglob("*.spv")
    assert entry.parent.name == entry.name[:2]          # a key's entries in its own folder


def test_a_keys_entries_lie_in_the_folder_of_its_first_two_digits(tmp_path, monkeypatch):
    """Finding a key's entries lists only its folder: keys apart lie in folders apart, and each
    comes back from its own."""
    monkeypatch.setenv("WARPBOARD_CACHE", str(tmp_path))
    modules = {cache.spirv_key(f"listing {k}", "k", (32, 1, 1), 0, None): cache.SPIRV_MAGIC + bytes([k]) * 20
               for k in range(40)}
    for key, spirv in modules.items():
        cache.store_spirv(key, spirv)
    for key, spirv in modules.items():
        assert cache.load_spirv(key) == spirv
        assert all(p.name.startswith(key[:2]) for p in (tmp_path / "spirv" / key[:2]).iterdir())
    assert len({key[:2] for key in modules}) == len(list((tmp_path / "spirv").iterdir())) > 1


def test_keys_cover_what_translation_reads():
    base = cache.spirv_key("listing", "k", (64, 1, 1), 16384, None)
    assert base == cache.spirv_key("listing", "k", (64, 1, 1), 16384, None, Target())
    others = [cache.spirv_key("listing2", "k", (64, 1, 1), 16384, None),
              cache.spirv_key("listing", "k", (32, 1, 1), 16384, None),
              cache.spirv_key("listing", "k", (64, 1, 1), 0, None),
              cache.spirv_key("listing", "k", (64, 1, 1), 16384, "turns"),
              cache.spirv_key("listing", "k", (64, 1, 1), 16384, None, strategy="subgroup-native")]
    others += [cache.spirv_key("listing", "k", (64, 1, 1), 16384, None, Target(**{field.name: value}))
               for field, value in zip(dataclasses.fields(Target), (frozenset(), True, False, True, 32768))]
    assert len(set(others)) == len(others) and base not in others


@pytest.mark.parametrize("setting", ["off", "0", "", "OFF"])
def test_one_setting_turns_every_cache_off(setting, monkeypatch):
    monkeypatch.setenv("WARPBOARD_CACHE", setting)
    for var in ("MESA_SHADER_CACHE_DIR", "MESA_SHADER_CACHE_DISABLE"):
        monkeypatch.delenv(var, raising=False)
    assert cache.cache_dir() is None and words_cache() is None
    assert cache.driver_cache_env({})["MESA_SHADER_CACHE_DISABLE"] == "true"


def test_every_cache_lies_under_one_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPBOARD_CACHE", str(tmp_path / "c"))
    assert cache.cache_dir() == tmp_path / "c" and words_cache() == tmp_path / "c" / "words"


def test_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPBOARD_CACHE", "off")
    prep = prepare(load_case(CASE))
    assert not translate_case(prep)[0].cached and not translate_case(prep)[0].cached


def test_pipeline_cache_is_kept_between_devices(tmp_path):
    if not vk.list_devices():
        pytest.skip("no Vulkan device")
    prep = prepare(load_case(CASE))
    shader, _ = translate_case(prep, use_cache=False)
    with vk.Device(0, cache_dir=tmp_path) as dev:
        assert run_vulkan(dev, prep, shader).outcome == "ok"
    saved = list(tmp_path.glob("*.bin"))
    assert len(saved) == 1 and saved[0].stat().st_size >= 16       # at least the cache header
    with vk.Device(0, cache_dir=tmp_path) as dev:                   # seeded from the file
        assert run_vulkan(dev, prep, shader).outcome == "ok"
