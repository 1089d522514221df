"""Writing recorded words into a case file, every other line kept as it was.

``warpboard record-truth`` sets each recorded buffer's ``expected``, the provenance
(``expected = "chip"``, ``recorded_on``) and, where the kernel printed, the ``[printf] expected``
lines. A ``derivation`` stays where the chip left exactly the derived words (two oracles
agreeing, and the derivation's Python is still re-run by the tests) and is dropped where it
left others (the message names the first word that differs).

TOML libraries that write files drop comments and layout, so
:class:`_Editor` edits lines instead: it finds each table and the line span of each ``key =
value`` entry (multi-line strings and arrays understood) and replaces or inserts entries.
:func:`rewrite_case_text` checks its own work by parsing the text before and after; :func:`apply`
also reloads the written case and puts the old text back if it does not load.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from warpboard.harness.case.model import Case, CaseError, load_case
from warpboard.harness.case.toml_text import toml_lines, toml_string, toml_words
from warpboard.harness.case.toml_text import tomllib
from . import toolchain, words
from .truth_gpu import TruthError



@dataclass
class _Entry:
    key: str
    start: int           # first line (0-based)
    end: int             # last line, inclusive


@dataclass
class _Table:
    name: str | None     # None: the top level
    index: int           # n-th table of that name (arrays of tables)
    header: int | None   # its header line
    entries: list[_Entry] = field(default_factory=list)


_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?\s*(#.*)?$")


def _value_end(lines: list[str], line: int, col: int) -> int:
    """The last line of the value that starts at lines[line][col:] (strings, arrays,
    inline tables and comments understood)."""
    depth, i, j = 0, line, col
    while i < len(lines):
        text = lines[i]
        while j < len(text):
            ch = text[j]
            if ch == "#":
                break
            if text.startswith('"""', j) or text.startswith("'''", j):
                quote = text[j:j + 3]
                i, j = _multiline_end(lines, i, j + 3, quote)
                text = lines[i]
                continue
            if ch in "\"'":
                k = j + 1
                while k < len(text) and text[k] != ch:
                    k += 2 if ch == '"' and text[k] == "\\" else 1
                j = k + 1
                continue
            if ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
            j += 1
        if depth <= 0:
            return i
        i, j = i + 1, 0
    return len(lines) - 1


def _multiline_end(lines: list[str], i: int, j: int, quote: str) -> tuple[int, int]:
    """(line, column just after) the closing ``quote`` of a multi-line string."""
    while i < len(lines):
        text = lines[i]
        while j < len(text):
            if quote == '"""' and text[j] == "\\":
                j += 2
                continue
            if text.startswith(quote, j):
                j += 3
                while j < len(text) and text[j] == quote[0]:   # """"" ends with quotes in it
                    j += 1
                return i, j
            j += 1
        i, j = i + 1, 0
    return len(lines) - 1, len(lines[-1]) if lines else 0


def _scan(lines: list[str]) -> list[_Table]:
    """The tables of a TOML file and the line spans of their key = value entries."""
    tables = [_Table(None, 0, None)]
    seen: dict[str, int] = {}
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if not s or s.startswith("#"):
            i += 1
            continue
        m = _HEADER.match(lines[i])
        if m:
            name = m.group(2)
            seen[name] = seen.get(name, -1) + 1
            tables.append(_Table(name, seen[name] if m.group(1) == "[[" else 0, i))
            i += 1
            continue
        eq = lines[i].find("=")
        if eq < 0:
            i += 1
            continue
        key = lines[i][:eq].strip().strip('"\'')
        end = _value_end(lines, i, eq + 1)
        tables[-1].entries.append(_Entry(key, i, end))
        i = end + 1
    return tables


class _Editor:
    """Line edits to a TOML text, located by table and key, applied bottom-up."""

    def __init__(self, text: str):
        self.lines = text.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"
        self.tables = _scan(self.lines)
        self.edits: list[tuple[int, int, list[str]]] = []    # (at, remove, insert)

    def table(self, name: str | None, index: int = 0) -> _Table:
        for t in self.tables:
            if t.name == name and t.index == index:
                return t
        raise TruthError(f"no [{name}] table number {index}")

    def set(self, name: str | None, index: int, key: str, value: str,
            after: tuple[str, ...] = ()) -> None:
        """``key = value`` in the table: replacing the entry, else placed after the first of
        ``after`` that is there, else after the table's last entry."""
        t = self.table(name, index)
        new = [ln + "\n" for ln in f"{key} = {value}".split("\n")]
        for e in t.entries:
            if e.key == key:
                self.edits.append((e.start, e.end - e.start + 1, new))
                return
        anchor = next((e for k in after for e in t.entries if e.key == k), None)
        if anchor is None and t.entries:
            anchor = t.entries[-1]
        at = anchor.end + 1 if anchor else (t.header + 1 if t.header is not None else 0)
        self.edits.append((at, 0, new))

    def has_table(self, name: str) -> bool:
        return any(t.name == name for t in self.tables)

    def add_table(self, name: str, key: str, value: str) -> None:
        """A new ``[name]`` table holding ``key = value``, at the end of the file."""
        self.edits.append((len(self.lines), 0, ["\n", f"[{name}]\n"]
                           + [ln + "\n" for ln in f"{key} = {value}".split("\n")]))

    def delete(self, name: str | None, index: int, key: str) -> None:
        for e in self.table(name, index).entries:
            if e.key == key:
                self.edits.append((e.start, e.end - e.start + 1, []))

    def text(self) -> str:
        lines = list(self.lines)
        # bottom-up; at one line, replacements and deletions before insertions, and later
        # insertions first (so that insertions at one place keep the order they were made)
        order = sorted(enumerate(self.edits), key=lambda ie: (ie[1][0], ie[1][1] > 0, ie[0]),
                       reverse=True)
        for _, (at, remove, insert) in order:
            lines[at:at + remove] = insert
        return "".join(lines)


def rewrite_case_text(text: str, recorded_on: str, expected: dict[int, list[int]],
                      printf: list[str] | None = None, keep_derivation: bool = False) -> str:
    """The case file ``text`` with provenance ``expected = "chip"`` and ``recorded_on``
    (``derivation`` dropped unless ``keep_derivation``), ``expected`` of the buffers given
    (index -> words) and, where ``printf`` is given, ``[printf] expected`` lines; every other
    line as it was. Checked by parsing both texts."""
    before = tomllib.loads(text)
    ed = _Editor(text)
    ed.set("provenance", 0, "expected", '"chip"')
    ed.set("provenance", 0, "recorded_on", toml_string(recorded_on), after=("expected",))
    if not keep_derivation:
        ed.delete("provenance", 0, "derivation")
    for index, words in sorted(expected.items()):
        if before["buffers"][index].get("expected") == list(words):
            continue            # the same words: their lines (hex, comments) stay as written
        ed.set("buffers", index, "expected", toml_words("expected", words)[len("expected = "):],
               after=("init",))
    if printf is not None:
        if ed.has_table("printf"):
            ed.set("printf", 0, "expected", toml_lines(printf))
        else:
            ed.add_table("printf", "expected", toml_lines(printf))
    new = ed.text()
    want = json.loads(json.dumps(before))
    want["provenance"]["expected"] = "chip"
    want["provenance"]["recorded_on"] = recorded_on
    if not keep_derivation:
        want["provenance"].pop("derivation", None)
    for index, words in expected.items():
        want["buffers"][index]["expected"] = list(words)
    if printf is not None:
        want.setdefault("printf", {})["expected"] = list(printf)
    try:
        got = tomllib.loads(new)
    except tomllib.TOMLDecodeError as e:
        raise TruthError(f"rewriting the case file would break it ({e}); left as it was") from None
    if got != want:
        raise TruthError("rewriting the case file would change more than the expected words "
                         "and the provenance; left as it was")
    return new



# ---------------------------------------------------------------- applying a recording

def choose_buffers(case: Case, final: list[list[int]], all_buffers: bool = False) -> dict[int, list[int]]:
    """Buffer index -> words to record: changed buffers and those already checked."""
    return {i: list(words) for i, (b, words) in enumerate(zip(case.buffers, final))
            if all_buffers or b.expected is not None or tuple(words) != b.init}



def apply(case: Case, final: list[list[int]], recorded_on: str, all_buffers: bool = False,
          write: bool = True, printf: list[str] | None = None) -> str:
    """Write ``final`` (every buffer's words after the kernel) and, where given, the lines it
    printed into the case file."""
    chosen = choose_buffers(case, final, all_buffers)
    if not chosen:
        raise TruthError("the kernel changed no buffer: nothing to record "
                         "(give the output buffers an init the kernel overwrites, or --all-buffers)")
    text = case.path.read_text(encoding="utf-8")
    differs = derivation_differs(case, chosen, printf)
    new = rewrite_case_text(text, recorded_on, chosen, printf, keep_derivation=differs is None)
    if write:
        case.path.write_text(new, encoding="utf-8")
        try:
            load_case(case.path)
        except CaseError as e:
            case.path.write_text(text, encoding="utf-8")
            raise TruthError(f"the rewritten case does not load ({e}); left as it was") from None
        if case.words is None and case.source is not None:    # a case from before cases carried words
            try:
                words.give_words([load_case(case.path)])
            except (toolchain.ToolMissing, CaseError):
                pass
    names = ", ".join(case.buffers[i].name for i in sorted(chosen))
    lines = "" if printf is None else f" and {len(printf)} printf line{'s' * (len(printf) != 1)}"
    if "derivation" not in case.provenance:
        verdict = ""
    elif differs is None:
        verdict = "; the chip left the derived words: derivation kept"
    else:
        verdict = f"; the chip differs from the derivation ({differs}): derivation dropped"
    return f"expected words for {names}{lines}{verdict}" + ("" if write else " (not written: --no-write)")


def derivation_differs(case: Case, chosen: dict[int, list[int]], printf: list[str] | None) -> str | None:
    """None where the case has a derivation and the recording matches its words (every buffer
    with derived words recorded, word for word; printed lines as a set); else where they part."""
    if "derivation" not in case.provenance:
        return "no derivation"
    for i, b in enumerate(case.buffers):
        if b.expected is None:
            continue
        got = chosen.get(i)
        if got is None:
            return f"{b.name}: not recorded"
        for w, (want, have) in enumerate(zip(b.expected, got)):
            if want != have:
                return f"{b.name}[{w}]: derived {want:#x}, chip {have:#x}"
        if len(got) != len(b.expected):
            return f"{b.name}: {len(b.expected)} words derived, {len(got)} recorded"
    if printf is not None and case.printf_expected is not None and sorted(printf) != sorted(case.printf_expected):
        return "printed lines"
    return None
