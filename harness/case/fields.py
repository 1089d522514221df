"""Reading a case file and checking its fields, with the file and line in every error.

Everything here is about TOML, not about what a case means: the size and UTF-8 checks of
:func:`read_text`, :func:`parse_toml` (tomllib's complaint at its line), :class:`Locator`
(the line of a key in the raw text) and :class:`Checker` (typed access to one table that
raises ``path:line: ...`` errors). :mod:`harness.case.model` builds the case model on top of it;
:mod:`harness.case.printf` and :mod:`harness.case.listing` check their tables with it. Line
numbers for semantic errors come from a plain text search of the file: good enough for
hand-written files, and kept deliberately simple.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

from .toml_text import tomllib

MAX_FILE_BYTES = 16 << 20        # a case file or a listing

_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-]+)\s*\]")
_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


class CaseError(ValueError):
    """A case file that cannot be used; the message starts with ``path:line: `` where known."""


# ---------------------------------------------------------------- reading

def read_text(path: Path, what: str = "case file") -> str:
    """A UTF-8 text file of at most MAX_FILE_BYTES, or a CaseError naming it (and the line
    of the first byte that is not UTF-8)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise CaseError(f"{path}: {what} larger than {MAX_FILE_BYTES >> 20} MiB")
        raw = path.read_bytes()
    except OSError as e:
        raise CaseError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise CaseError(f"{path}:{line}: {what} is not UTF-8 (byte {raw[e.start]:#04x} "
                        f"at offset {e.start})") from None


def parse_toml(path: Path, text: str) -> dict:
    """The parsed TOML, or a CaseError at the line tomllib complains about."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise located_error(path, None, "invalid TOML: values nested too deeply") from None
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POS.search(msg)
        line = int(m.group(1)) if m else None
        raise located_error(path, line, f"invalid TOML: {_TOML_POS.sub('', msg)}") from None


# ---------------------------------------------------------------- error locations

class Locator:
    """Finds the line of a key in the raw file text, to put line numbers on semantic errors."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = text.splitlines()
        self.headers = [(i, m.group(1)) for i, m in
                        ((i, _HEADER.match(line)) for i, line in enumerate(self.lines)) if m]

    def _span(self, table: str | None, index: int) -> tuple[int, int, int | None]:
        """Line range (start, end, header line) of the top level or of a (nth array) table."""
        if table is None:
            return 0, self.headers[0][0] if self.headers else len(self.lines), None
        found = [h for h in self.headers if h[1] == table]
        if index >= len(found):
            return 0, 0, None
        head = found[index][0]
        nxt = [h[0] for h in self.headers if h[0] > head]
        return head + 1, nxt[0] if nxt else len(self.lines), head

    def line(self, key: str | None = None, table: str | None = None, index: int = 0) -> int | None:
        """1-based line of ``key`` (in ``table``, its ``index``-th if an array of tables),
        falling back to the table's header line; None when not found."""
        start, end, head = self._span(table, index)
        if key is not None:
            pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
            for i in range(start, end):
                if pat.match(self.lines[i]):
                    return i + 1
        return None if head is None else head + 1

    def error(self, msg: str, key: str | None = None, table: str | None = None,
              index: int = 0) -> CaseError:
        """A CaseError for ``msg``, prefixed with ``path:line:`` (or ``path:``)."""
        return located_error(self.path, self.line(key, table, index), msg)


def located_error(path: Path, line: int | None, msg: str) -> CaseError:
    """A CaseError for ``msg`` prefixed with ``path:line:`` (``path:`` when the line is unknown)."""
    where = f"{path}:{line}" if line else f"{path}"
    return CaseError(f"{where}: {msg}")


def toml_type_name(v: Any) -> str:
    """TOML's name for the type of a parsed value, for messages."""
    if isinstance(v, bool):
        return "boolean"
    return {str: "string", int: "integer", float: "float", list: "array",
            dict: "table"}.get(type(v), type(v).__name__)


def short_repr(v: Any, limit: int = 60) -> str:
    """``repr(v)`` cut to ``limit`` characters, for quoting a bad value in a message."""
    text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_int(v: Any) -> bool:
    """Whether ``v`` is a TOML integer (bool is an int to Python, not to TOML)."""
    return isinstance(v, int) and not isinstance(v, bool)


# ---------------------------------------------------------------- field checks

class Checker:
    """Typed access to one table of the parsed file, raising located CaseErrors."""

    def __init__(self, loc: Locator, data: dict, label: str, table: str | None = None,
                 index: int = 0):
        self.loc, self.data, self.label = loc, data, label
        self.table, self.index = table, index

    def err(self, key: str | None, msg: str) -> CaseError:
        return self.loc.error(msg, key, self.table, self.index)

    def name(self, key: str) -> str:
        """The dotted label of ``key`` used in messages, e.g. ``buffers[0].init``."""
        return f"{self.label}.{key}" if self.label else key

    def only(self, allowed: Iterable[str]) -> None:
        allowed = tuple(allowed)
        for key in self.data:
            if key not in allowed:
                raise self.err(key, f"unknown key '{self.name(key)}' "
                                    f"(allowed: {', '.join(allowed)})")

    def required(self, key: str) -> Any:
        if key not in self.data:
            raise self.err(None, f"missing required key '{self.name(key)}'")
        return self.data[key]

    def string(self, key: str, required: bool = True) -> str | None:
        v = self.required(key) if required else self.data.get(key)
        if v is not None and not isinstance(v, str):
            raise self.err(key, f"{self.name(key)}: must be a string, not {toml_type_name(v)}")
        return v

    def integer(self, key: str, lo: int, hi: int, required: bool = True) -> int | None:
        v = self.required(key) if required else self.data.get(key)
        if v is None:
            return None
        if not is_int(v):
            raise self.err(key, f"{self.name(key)}: must be an integer, not {toml_type_name(v)}")
        if not lo <= v <= hi:
            raise self.err(key, f"{self.name(key)}: {v} is outside {lo}..{hi}")
        return v

    def words(self, key: str, count: int, fill_ok: bool) -> tuple[int, ...]:
        """A list of ``count`` u32 words (or, if ``fill_ok``, one word repeated)."""
        v = self.data[key]
        if fill_ok and is_int(v):
            self.uint(key, v, self.name(key))
            return (v,) * count
        if not isinstance(v, list):
            what = "a u32 or an array of u32" if fill_ok else "an array of u32"
            raise self.err(key, f"{self.name(key)}: must be {what}, not {toml_type_name(v)}")
        if len(v) != count:
            raise self.err(key, f"{self.name(key)}: {len(v)} word{'s' * (len(v) != 1)}, "
                                f"but words = {count}")
        for i, w in enumerate(v):
            self.uint(key, w, f"{self.name(key)}[{i}]")
        return tuple(v)

    def uint(self, key: str, v: Any, label: str, bits: int = 32) -> int:
        """``v`` checked to be a u32 (or u64) integer; ``label`` names it in messages."""
        if not is_int(v):
            raise self.err(key, f"{label}: must be an integer, not {toml_type_name(v)}")
        if not 0 <= v < 1 << bits:
            raise self.err(key, f"{label}: {v} is not a u{bits} (0..{(1 << bits) - 1:#x})")
        return v

    def dims(self, key: str, limits: tuple[int, int, int]) -> tuple[int, int, int]:
        """A launch dimension: an int or a list of 1-3 positive ints, padded with 1s, each
        at most its entry of ``limits``."""
        v = self.required(key)
        dims = [v] if is_int(v) else v
        if (not isinstance(dims, list) or not 1 <= len(dims) <= 3
                or not all(is_int(d) and d >= 1 for d in dims)):
            raise self.err(key, f"{self.name(key)}: must be a positive integer or an array "
                                f"of 1-3 positive integers, got {short_repr(v)}")
        dims = dims + [1] * (3 - len(dims))
        for axis, d, most in zip("xyz", dims, limits):
            if d > most:
                raise self.err(key, f"{self.name(key)}: {axis} = {d}, at most {most}")
        return dims[0], dims[1], dims[2]

    def table_(self, key: str, required: bool = True) -> dict | None:
        v = self.required(key) if required else self.data.get(key)
        if v is not None and not isinstance(v, dict):
            raise self.err(key, f"{self.name(key)}: must be a table, not {toml_type_name(v)}")
        return v

    def tables(self, key: str, required: bool = True) -> list[dict]:
        v = self.required(key) if required else self.data.get(key, [])
        if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
            raise self.err(key, f"{self.name(key)}: must be an array of tables ([[{key}]])")
        return v


def file_beside(top: Checker, path: Path, key: str, confine: Path) -> Path | None:
    """A file named by ``key`` relative to the case file, which must exist inside the case
    root ``confine`` (no absolute paths, no ``..`` or links out of the library)."""
    name = top.string(key, required=False)
    if name is None:
        return None
    target = path.parent / name
    inside = Path(os.path.realpath(confine))
    if Path(name).is_absolute() or not Path(os.path.realpath(target)).is_relative_to(inside):
        raise top.err(key, f"{key}: {name!r} is outside the case root {confine}")
    if not target.is_file():
        raise top.err(key, f"{key}: no such file: {target}")
    return target
