"""TOML for case files: the one reader (``tomllib``, or ``tomli`` on Python 3.10, imported
here once for every module that reads TOML) and the one writer that new-case, record-truth,
the fuzzer and the tests use, so every case file spells strings, words and tables the same
way. Writing by hand keeps the layout a reviewer reads: eight words a line, hex where the
words are bit patterns, comments and order as written."""
from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

WORDS_PER_LINE = 8


def toml_string(s: str) -> str:
    """A TOML basic string for ``s``."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value) -> str:
    """``value`` (a string, int, bool or list of them) as TOML source text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def toml_words(key: str, words, hex_words: bool = False, indent: str = "    ") -> str:
    """``key = [...]`` for a list of u32 words, WORDS_PER_LINE a line (no trailing newline)."""
    fmt = (lambda w: f"0x{w:08x}") if hex_words else str
    rows = [", ".join(fmt(w) for w in words[i:i + WORDS_PER_LINE]) + ","
            for i in range(0, len(words), WORDS_PER_LINE)]
    return f"{key} = [\n" + "".join(f"{indent}{r}\n" for r in rows) + "]"


def toml_lines(lines: list[str]) -> str:
    """A TOML array of strings, one a line."""
    return "[\n" + "".join(f"    {toml_string(line)},\n" for line in lines) + "]" if lines else "[]"


def toml_table(header: str, items: dict) -> str:
    """``[header]`` and one ``key = value`` line per item."""
    return f"[{header}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in items.items())
