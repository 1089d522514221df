"""Fixtures shared by the test modules: a case builder, the back ends, and result documents.

Test modules take what they share from here as fixtures, or from ``tests/support/`` (on the
path through pytest's ``pythonpath``), and never import one another. What a worker subprocess
runs by name lives in ``support/worker_targets.py``, since a child process cannot reach a
fixture.

- ``make_case``: writes small cases (listing, buffers, launch) under a ``cases/`` folder
  and loads them; it can also copy a library case there, with its listing and source.
- ``backend`` (the interpreter, then lavapipe), ``interp``, ``lavapipe``,
  ``lavapipe_config(width)``, ``vulkan_infos``, ``vulkan_device``: every Vulkan fixture
  skips, saying why, where this machine has no such device.
- ``results``, ``baseline``, ``result_rows``: scoreboard documents for the report tests.
- ``pytester`` (pytest's own plugin): runs the warpboard plugin in-process.

The suite's ``xdist_group`` marks hold under ``--dist loadgroup`` on pytest 9.2 too
(``harness/xdist_groups.py``).
"""
from __future__ import annotations

import os

# The suite's devices are the loader's own (lavapipe here); the drivers beside them (SwiftShader,
# a private Mesa: harness.run.devices.default_icds) join only the tests that name them.
os.environ.setdefault("WARPBOARD_ICDS", "none")

import copy
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from warpboard.harness.case.model import BufferSpec, Case, Param, load_case, scan_cases
from warpboard.harness.case.toml_text import toml_table, toml_value
from warpboard.harness.run import devices
from warpboard.harness.run.dispatch import (
    prepare,
    run_interpreter,
    run_vulkan,
    translate_case,
)
from warpboard.harness.run.results import RESULTS_VERSION, CaseResult, Mismatch, Status
from warpboard.harness.xdist_groups import group_of, keep_groups

from support.listing_kit import listing

pytest_plugins = ["pytester"]

from warpboard.harness import vk

from support.paths import ROOT

LIBRARY = ROOT / "cases"
M32 = 0xFFFFFFFF


# ================================================================ the case builder
EXIT_ONLY = "        /*0000*/                   EXIT ;\n"


class CaseBuilder:
    """Writes case files under ``root`` (a folder called ``cases``) and loads them.

    ``write`` composes a case from its parts, with defaults for what a test does not care
    about; ``write_text`` takes the TOML as it is (for the loader's error messages, which
    name lines); ``copy`` brings a case of the library over, listing and source included.
    """

    def __init__(self, root: Path):
        self.root = root

    def path(self, case_id: str) -> Path:
        return self.root / f"{case_id}.toml"

    def write_text(self, case_id: str, text: str, files: dict[str, str] | None = None) -> Path:
        """The case file ``<case_id>.toml`` as given, and ``files`` (name: text) beside it."""
        path = self.path(case_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        for name, content in (files or {}).items():
            (path.parent / name).write_text(content, encoding="utf-8")
        path.write_text(text, encoding="utf-8")
        return path

    def write(self, case_id: str, *, sass: str = EXIT_ONLY, listing_file: str | None = None,
              buffers: list[dict] | None = None, grid=1, block=32, params: list[dict] | None = None,
              provenance: dict | None = None, constants: list[dict] = (), **top) -> Path:
        """A case from its parts. The listing goes inline unless ``listing_file`` names a
        file to write it to; buffers default to one ``out`` word expected to stay 0; params
        default to each buffer in order; ``top`` adds top-level keys (kernel, step_budget...)."""
        name = case_id.rsplit("/", 1)[-1]
        head = {"name": name, "summary": f"test case {name}", "tags": ["hand-written"], **top}
        if buffers is None:
            buffers = [{"name": "out", "words": 1, "init": 0, "expected": [0]}]
        params = params if params is not None else [{"buffer": b["name"]} for b in buffers]
        provenance = provenance or {"expected": "derived", "derivation": "written by the test",
                                    "listing": "hand-written"}
        files = {}
        if listing_file:
            head["listing"], files[listing_file] = listing_file, sass
        text = "".join(f"{k} = {toml_value(v)}\n" for k, v in head.items())
        if not listing_file:
            text += f"sass = '''\n{sass}'''\n"
        text += "\n" + toml_table("provenance", provenance)
        text += "\n" + toml_table("launch", {"grid": grid, "block": block})
        text += "".join("\n" + toml_table("[buffers]", b) for b in buffers)
        text += "".join("\n" + toml_table("[params]", p) for p in params)
        text += "".join("\n" + toml_table("[constants]", c) for c in constants)
        return self.write_text(case_id, text, files)

    def copy(self, case_id: str, as_id: str | None = None, edit=None) -> Path:
        """Library case ``case_id`` as ``as_id`` (default the same id), its text passed
        through ``edit``; its listing, CUDA source and data files are copied beside it."""
        case = load_case(LIBRARY / f"{case_id}.toml", LIBRARY)
        target = self.path(as_id or case_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        for file in (case.listing_path, case.source):
            if file is not None and file != case.path:
                shutil.copy(file, target.parent / file.name)
        if (case.path.parent / "data").is_dir():          # its words and data files
            shutil.copytree(case.path.parent / "data", target.parent / "data", dirs_exist_ok=True)
        text = case.path.read_text(encoding="utf-8")
        return self.write_text(as_id or case_id, edit(text) if edit else text)

    def load(self, case_id: str) -> Case:
        return load_case(self.path(case_id), self.root)

    def __call__(self, case_id: str = "tiny", **parts) -> Case:
        """Write a case from ``parts`` (as ``write``) and load it."""
        self.write(case_id, **parts)
        return self.load(case_id)


def pytest_sessionstart(session):
    """Every library case's words checked against its listing in one nvdisasm run, so that
    the tests loading cases one at a time find the verdicts in the warpboard cache."""
    if not hasattr(session.config, "workerinput"):       # the controller (or a run without xdist)
        scan_cases(ROOT / "cases")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Grouped items first (the groups are the suite's long runs on one device: started
    first, they do not leave a worker idle at the end), then each group kept on one worker."""
    items.sort(key=lambda item: group_of(item) is None)
    keep_groups(config, items)


@pytest.fixture
def case_root(tmp_path) -> Path:
    """Where ``make_case`` writes: a ``cases`` folder in the test's temporary directory."""
    return tmp_path / "cases"


@pytest.fixture
def make_case(case_root) -> CaseBuilder:
    """A ``CaseBuilder`` on ``case_root`` (made, empty)."""
    case_root.mkdir(parents=True, exist_ok=True)
    return CaseBuilder(case_root)


# ================================================================ the back ends
@dataclass
class Run:
    outcome: str
    detail: str
    buffers: list[list[int]]
    mode: str


class Backend:
    """Runs a case on the interpreter (device None) or on an open Vulkan device."""

    def __init__(self, name: str, device=None):
        self.name, self.device = name, device

    def run_case(self, case: Case, mode: str | None = None) -> Run:
        """The raw run (no comparison): outcome, detail, every buffer's words, mode (on a
        device, ``mode`` forces free or turns)."""
        prep = prepare(case)
        if self.device is None:
            raw = run_interpreter(prep)
        else:
            shader, _ = translate_case(prep, mode)
            raw = run_vulkan(self.device, prep, shader, timeout_s=30)
        words = [list(struct.unpack(f"<{len(b) // 4}I", b)) for b in raw.buffers]
        return Run(raw.outcome, raw.detail, words, raw.mode)

    def run(self, lines: list[str], buffers: list[list[int]], *, threads: int = 32, grid: int = 1,
            block: tuple[int, int, int] | None = None, shared: int = 1024, name: str = "kernel",
            params: list[Param] | None = None, constants: tuple = (), mode: str | None = None) -> Run:
        """Instruction lines as a one-kernel case whose buffers (``in``, ``out``, ``buf2``...)
        start as ``buffers`` and are, unless ``params`` says otherwise, its parameters."""
        specs = tuple(BufferSpec(n, len(words), tuple(w & M32 for w in words), None)
                      for n, words in zip(["in", "out"] + [f"buf{k}" for k in range(2, 8)], buffers))
        case = Case(id=f"semantics/{name}", path=Path(f"{name}.sass"), name=name, summary="", tags=(),
                    kernel=None, listing_text=listing(lines), listing_path=Path(f"{name}.sass"),
                    listing_line=1, source=None, grid=(grid, 1, 1), block=block or (threads, 1, 1),
                    shared_bytes=shared, step_budget=None, buffers=specs,
                    params=tuple(params if params is not None else (Param("buffer", s.name) for s in specs)),
                    provenance={}, constants=constants)
        return self.run_case(case, mode)


@pytest.fixture(scope="module")
def vulkan_infos():
    """Every Vulkan physical device, in order; skips where there is none."""
    try:
        found = vk.list_devices()
    except Exception as exc:  # noqa: BLE001 - no loader, no binding: no device
        pytest.skip(f"no Vulkan: {exc}")
    if not found:
        pytest.skip("no Vulkan device (no loader, no ICD, or no physical device)")
    return found


@pytest.fixture(scope="module")
def vulkan_device(vulkan_infos):
    """Vulkan device 0, open for the module."""
    with vk.Device(0) as dev:
        yield dev


@pytest.fixture(scope="module")
def lavapipe(vulkan_infos):
    """The lavapipe (Mesa llvmpipe) device at this process's vector width, open for the module."""
    index = next((i.index for i in vulkan_infos if i.driver_name == "llvmpipe"), None)
    if index is None:
        pytest.skip("no lavapipe (Mesa llvmpipe Vulkan) device")
    with vk.Device(index) as dev:
        yield dev


@pytest.fixture
def interp() -> Backend:
    return Backend("interp")


@pytest.fixture(params=["interp",
                        pytest.param("lavapipe", marks=pytest.mark.xdist_group("lavapipe-in-process"))])
def backend(request) -> Backend:
    """Each test runs on the CPU reference interpreter, then on lavapipe."""
    if request.param == "interp":
        return Backend("interp")
    return Backend("lavapipe", request.getfixturevalue("lavapipe"))


@pytest.fixture(scope="session")
def device_configs() -> list:
    """The device configurations ``warpboard run`` would use here (probed once per process)."""
    return devices.discover()


@pytest.fixture(scope="session")
def lavapipe_config(device_configs):
    """``lavapipe_config(width)``: the configuration ``lavapipe-w<width>``, for the engine and
    its worker processes; skips where lavapipe offers no such width."""
    def at_width(width: int):
        found = [c for c in device_configs if c.id == f"lavapipe-w{width}"]
        if not found:
            pytest.skip(f"no lavapipe-w{width} device (install mesa-vulkan-drivers)")
        return found[0]
    return at_width


# ================================================================ result documents
EVIL = "<script>document.title='pwned'</script>"


def _device(dev_id: str, sg: int) -> dict:
    return {"id": dev_id, "name": "llvmpipe (LLVM 15.0.6, 128 bits)", "driver_name": "llvmpipe",
            "driver_info": "Mesa 22.3.6 (LLVM 15.0.6)", "api_version": "1.3.230",
            "subgroup_size": sg}


def _case(case_id: str, summary: str = "a case") -> dict:
    return {"id": case_id, "path": f"cases/{case_id}.toml", "tags": ["vote"],
            "summary": summary, "provenance": {"expected": "chip"}, "threads": 64,
            "warp_size": 32}


def _fail(case: str, device: str) -> dict:
    """A FAIL cell with mismatches on warp 1 lanes 3 and 4 (threads 35, 36)."""
    mism = [Mismatch("out", t, expected=0xFFFFFFFF, actual=t, thread=t, warp=1, lane=t - 32)
            for t in (35, 36)]
    return CaseResult(case, device, Status.FAIL, message=f"2 words differ {EVIL}",
                      mismatches=mism, mismatch_count=2, turns=3, time_s=0.5,
                      subgroup_size=8).to_json()


def _ok(case: str, device: str, status: Status = Status.PASS) -> dict:
    return CaseResult(case, device, status, time_s=0.1).to_json()


@pytest.fixture
def result_rows() -> SimpleNamespace:
    """Makers of the parts of a results document: ``device(id, subgroup_size)``,
    ``case(id, summary)``, ``ok(case, device, status)``, ``fail(case, device)`` (its message
    carries ``evil``, a script tag that rendering must escape)."""
    return SimpleNamespace(device=_device, case=_case, ok=_ok, fail=_fail, evil=EVIL)


@pytest.fixture
def results() -> dict:
    """2 devices x 3 cases; truth/evil FAILs on lavapipe-w8 and has a hostile summary."""
    return {
        "version": RESULTS_VERSION, "created": "2026-12-01T20:00:00Z", "warpboard": "0.1.0",
        "host": "ci-host",
        "devices": [_device("lavapipe-w4", 4), _device("lavapipe-w8", 8)],
        "cases": [_case("truth/a"), _case("truth/evil", summary=f"summary {EVIL}"),
                  _case("truth/c")],
        "results": [_ok("truth/a", "lavapipe-w4"), _ok("truth/a", "lavapipe-w8"),
                    _ok("truth/evil", "lavapipe-w4"), _fail("truth/evil", "lavapipe-w8"),
                    _ok("truth/c", "lavapipe-w4", Status.UNSUPPORTED),
                    _fail("truth/c", "lavapipe-w8")],
    }


@pytest.fixture
def baseline(results) -> dict:
    """An older run: truth/a failed on w4 (now fixed), truth/evil passed on w8 (now a
    regression), truth/c did not exist."""
    old = copy.deepcopy(results)
    old["created"] = "2026-11-30T20:00:00Z"
    old["cases"] = old["cases"][:2]
    old["results"] = [_fail("truth/a", "lavapipe-w4"), _ok("truth/a", "lavapipe-w8"),
                      _ok("truth/evil", "lavapipe-w4"), _ok("truth/evil", "lavapipe-w8")]
    return old
