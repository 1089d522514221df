"""Writing result and report files so that a failure never costs the previous file.

Every file the harness and the reports write goes through :func:`write_atomic`: the new
contents go to a temporary file in the same folder, which replaces the target with one
``os.replace`` only once it is complete, so a full disk, a killed process or an
unwritable folder leaves the old file as it was (and no temporary file behind).
:func:`output_problem` checks a target before any work is done, so a run never spends
its time on cells it cannot save. :func:`cache_dir` is where the files kept between runs lie
(every cache reads it there).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_dir() -> Path | None:
    """The folder kept between runs (SPIR-V, pipelines, words verdicts): ``WARPBOARD_CACHE``,
    ``.warpboard-cache`` when unset, None when it is ``off``, ``0`` or empty."""
    setting = os.environ.get("WARPBOARD_CACHE", ".warpboard-cache")
    return None if setting.lower() in ("off", "0", "") else Path(setting)


class OutputError(OSError):
    """A file that could not be written; the message names it and says why."""


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` all at once or not at all."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise


def _mode_for(path: Path) -> int:
    """The permissions the file would have had if written in place: the old file's, else
    the usual ones under this process's umask (mkstemp makes its files 0600)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def output_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot become an output file (it is a folder, or a file stands where
    its folder should be); None when it can."""
    path = Path(path)
    if path.is_dir():
        return f"{path} is a directory, not a file"
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else f"{parent} is a file, not a directory"
    return None
