"""pytest plugin: ``pytest --wb-cases cases`` runs every case of the library on every device.

Installed with warpboard (entry point ``pytest11``) but **off until asked for**: it collects
nothing and changes nothing unless the case root is named, by ``--wb-cases ROOT`` or the ini
key ``warpboard_cases = ROOT``; then only ``*.toml`` files under that root are cases. Its
options all start with ``--wb-``, so they cannot clash with another project's, and
``-p no:warpboard`` removes it altogether.

Each case file becomes one item per device configuration (and one for the CPU reference
interpreter), named ``cases/vote/x.toml::lavapipe-w8``. Items of a device carry the
``xdist_group`` mark of that device (registered here), so ``-n auto --dist loadgroup`` keeps
a device's items in one worker process, which keeps that device open (on pytest 9.2 too:
``harness/xdist_groups.py``). Statuses map to pytest
outcomes: PASS passes, XFAIL xfails, UNSUPPORTED and PENDING skip (reported at the case
file), everything else fails with the engine's message
(``thread 17 (warp 0 lane 17) out[17]: expected 0x5, got 0x7``).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from .run.expectations import load_expectations
from .case.model import CaseError, load_case
from .run import devices, engine
from .run.results import Status, apply_expectation
from .run.worker import Worker
from .xdist_groups import keep_groups

INI_ROOT = "warpboard_cases"
_STATE: dict = {}


def pytest_addoption(parser):
    group = parser.getgroup("warpboard", "warpboard case library (off unless --wb-cases or warpboard_cases)")
    group.addoption("--wb-cases", dest="wb_cases", metavar="ROOT",
                    help="collect the warpboard cases under ROOT (turns the plugin on)")
    group.addoption("--wb-device", action="append", dest="wb_device", metavar="PATTERN",
                    help="device id or pattern to run cases on (repeatable; default: all; none: interpreter only)")
    group.addoption("--wb-no-interp", action="store_true", dest="wb_no_interp",
                    help="do not run cases on the CPU reference interpreter")
    group.addoption("--wb-timeout", type=float, default=60.0, dest="wb_timeout",
                    help="seconds per case before its worker is killed")
    group.addoption("--wb-expectations", dest="wb_expectations",
                    help="expected-failures file (XFAIL); default ci/expectations.txt under the rootdir")
    parser.addini(INI_ROOT, "collect the warpboard cases under this folder (relative to the rootdir)")


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): keep the items of one warpboard device in one "
                                       "pytest-xdist worker (with --dist loadgroup)")


def case_root(config) -> Path | None:
    """The case root the plugin collects from (``--wb-cases``, from where pytest was started;
    else the ini key, from the rootdir), or None when it is off."""
    option, ini = config.getoption("wb_cases"), config.getini(INI_ROOT)
    if option:
        return (Path(str(config.invocation_params.dir)) / option).resolve()
    if ini:
        return (Path(str(config.rootpath)) / ini).resolve()
    return None


def _configs(config):
    if "configs" not in _STATE:
        patterns = config.getoption("wb_device")
        found = devices.discover()
        _STATE["configs"] = devices.select(found, patterns) if patterns and patterns != ["none"] else (
            [] if patterns == ["none"] else found)
    return _STATE["configs"]


def _expectations(config):
    """The expected-failures list, read once per session (``--expectations`` or ci/expectations.txt)."""
    if "expectations" not in _STATE:
        default = Path(str(config.rootpath)) / "ci" / "expectations.txt"
        path = config.getoption("wb_expectations") or (str(default) if default.is_file() else None)
        _STATE["expectations"] = load_expectations(path) if path else None
    return _STATE["expectations"]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    keep_groups(config, [item for item in items if isinstance(item, CaseItem)])


def pytest_collect_file(parent, file_path: Path):
    root = case_root(parent.config)
    if root is not None and file_path.suffix == ".toml" and file_path.resolve().is_relative_to(root):
        return CaseFile.from_parent(parent, path=file_path)
    return None


class CaseFile(pytest.File):
    def collect(self):
        try:
            case = load_case(self.path, case_root(self.config))
        except CaseError as exc:
            raise self.CollectError(str(exc)) from None
        columns = [(c.id, c) for c in _configs(self.config)]
        if not self.config.getoption("wb_no_interp"):
            columns.append(("interp", None))
        for device_id, cfg in columns:
            item = CaseItem.from_parent(self, name=device_id, case=case, device=cfg, device_id=device_id)
            item.add_marker(pytest.mark.xdist_group(device_id))
            yield item


class CaseItem(pytest.Item):
    def __init__(self, *, case, device, device_id, **kwargs):
        super().__init__(**kwargs)
        self.case, self.device, self.device_id = case, device, device_id

    def runtest(self):
        workers = _STATE.setdefault("workers", {})
        if self.device_id not in workers:
            workers[self.device_id] = Worker(self.device.env if self.device else {}, self.device_id)
        options = engine.Options(timeout_s=self.config.getoption("wb_timeout"))
        result = engine.run_in_worker(workers[self.device_id], self.case, self.device_id,
                                      self.device.index if self.device else None, options)
        rules = _expectations(self.config)
        expected = rules.expected(self.case.id, self.device_id) if rules else None
        status = apply_expectation(result.status, expected)
        self.user_properties.append(("status", status.value))
        if status is Status.PASS:
            return
        if status is Status.XFAIL:
            pytest.xfail(result.message)
        if status in (Status.UNSUPPORTED, Status.PENDING):
            # reported at the case file (reportinfo), not at this line of the plugin
            raise pytest.skip.Exception(f"{status.value}: {result.message}", _use_item_location=True)
        raise CaseFailure(status, result.message)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, CaseFailure):
            status, message = excinfo.value.args
            return f"{status.value}: {self.case.id} on {self.device_id}\n{message}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, f"{self.case.id}::{self.device_id}"    # the case file, from its top


class CaseFailure(Exception):
    """A cell that is not PASS: its status and the engine's message."""


def pytest_sessionfinish(session):
    """Close the workers and forget the session's devices and expectations (a process may
    run several sessions, as pytest's own ``pytester`` does)."""
    for worker in _STATE.pop("workers", {}).values():
        worker.close()
    _STATE.clear()

