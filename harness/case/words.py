"""A case's machine code: its kernel's SM86 instruction words, beside the listing people read.

Translators that decode machine code (emulators' recompilers, a ``translate_program`` over a
cubin's ``.text.<kernel>``) need the words, not nvdisasm's text. A case gives them as

    words = { file = "data/<sha256[:32]>.sm86", sha256 = "...", offset = 0, size = 640 }

``file`` holds the raw words of one or more kernels (16 bytes per instruction: the low 64-bit
word, then the high one with the control bits, little-endian, as in a cubin's text section);
the kernel's are ``size`` bytes from ``offset``. The file is named by the hash of its bytes, as
captured buffers are (cases/README.md).

The words must be what the listing says: :func:`check_words` runs ``nvdisasm --binary SM86``
over them and compares its instructions with the listing's, one by one (branch targets as
addresses); the first that differs is an error naming it. The check needs nvdisasm (on the
PATH, or the ``nvidia-cuda-nvdisasm`` wheel that ``pip install .[test]`` brings); a verdict is
kept in the warpboard cache under the hash of the words and the listing's kernel.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from warpboard.translator import SassSyntaxError, parse_listing, spell_instructions

from ..files import cache_dir
from .fields import Checker, Locator, file_beside, read_text

WORDS_KEYS = ("file", "sha256", "offset", "size")
INSTRUCTION_BYTES = 16
MAX_WORDS_BYTES = 16 << 20
CHECK_VERSION = "1"              # bump when the comparison changes: older verdicts are not reused


def load_words(top: Checker, path: Path, confine: Path) -> bytes | None:
    """The kernel's words from the case's ``words`` table (None where it has none), the file's
    hash checked and the slice inside it."""
    if "words" not in top.data:
        return None
    table = top.table_("words")
    sub = Checker(top.loc, table, "words")
    sub.only(WORDS_KEYS)
    target = file_beside(sub, path, "file", confine)
    digest = sub.string("sha256").lower()
    offset = sub.integer("offset", 0, MAX_WORDS_BYTES)
    size = sub.integer("size", INSTRUCTION_BYTES, MAX_WORDS_BYTES)
    raw = target.read_bytes()
    if hashlib.sha256(raw).hexdigest() != digest:
        raise sub.err("file", f"words.file: {target}'s bytes have sha256 {hashlib.sha256(raw).hexdigest()}, "
                              f"not {digest}")
    if offset % INSTRUCTION_BYTES or size % INSTRUCTION_BYTES:
        raise sub.err("offset", f"words: offset {offset} and size {size} must be whole instructions "
                                f"({INSTRUCTION_BYTES} bytes each)")
    if offset + size > len(raw):
        raise sub.err("size", f"words: offset {offset} + size {size} is past the end of {target} "
                              f"({len(raw)} bytes)")
    return raw[offset:offset + size]


def find_nvdisasm() -> str | None:
    """nvdisasm from the PATH, else from the nvidia-cuda-nvdisasm wheel, else None."""
    return shutil.which("nvdisasm") or wheel_nvdisasm()


def wheel_nvdisasm() -> str | None:
    """nvdisasm inside the nvidia-cuda-nvdisasm wheel (nvidia/cu13/bin or nvidia/cu12/bin)."""
    try:
        import nvidia  # namespace package of NVIDIA's pip wheels, there or not
    except ImportError:
        return None
    for base in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cu12", "cuda_nvdisasm"):
            path = Path(base) / sub / "bin" / "nvdisasm"
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def disassemble(words: bytes, nvdisasm: str) -> str:
    """``nvdisasm --binary SM86`` over raw words: its listing text."""
    with tempfile.NamedTemporaryFile(suffix=".sm86") as f:
        f.write(words)
        f.flush()
        done = subprocess.run([nvdisasm, "--binary", "SM86", f.name], capture_output=True, text=True, timeout=60)
    if done.returncode:
        raise ValueError(f"nvdisasm --binary SM86 fails on the words: {done.stderr.strip()[:300]}")
    return done.stdout


def spellings(listing_text: str, kernel: str | None) -> list[tuple[int, str]]:
    """(pc, instruction as nvdisasm spells it) for each instruction of ``kernel`` (None: the
    listing's first kernel), branch targets spelled as addresses."""
    return spell_instructions(_section(listing_text, kernel))


def _section(listing_text: str, kernel: str | None):
    listing = parse_listing(listing_text)
    section = listing[kernel] if kernel in listing else listing[next(iter(listing.keys()))]
    if section.error:
        raise SassSyntaxError(str(section.error))
    return section


def _compare(said: list[tuple[int, str]], meant: list[tuple[int, str]]) -> str | None:
    for (pc, a), (_, b) in zip(said, meant):
        if a != b:
            return f"instruction {pc:#06x}: words say '{a}', listing says '{b}'"
    if len(said) != len(meant):
        return (f"the words hold {len(said)} instructions, the listing {len(meant)}"
                + (f" (the first extra at {said[len(meant)][0]:#06x}: '{said[len(meant)][1]}')"
                   if len(said) > len(meant) else f" (the first missing at {meant[len(said)][0]:#06x}: "
                                                   f"'{meant[len(said)][1]}')"))
    return None


def first_difference(words: bytes, listing_text: str, kernel: str | None, nvdisasm: str) -> str | None:
    """Where the words and the listing first disagree, in words (None: they agree)."""
    return _compare(spell_instructions(_section(disassemble(words, nvdisasm), None)), spellings(listing_text, kernel))


def check_many(items: list[tuple[bytes, str, str | None]], cache: Path | None = None) -> list[str | None]:
    """:func:`first_difference` of each (words, listing text, kernel), with one nvdisasm run
    for all those the ``cache`` folder has no verdict for; all None where nvdisasm is not there."""
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        return [None] * len(items)
    keys = [hashlib.sha256(b"\0".join([CHECK_VERSION.encode(), w, t.encode(), (k or "").encode()])).hexdigest()
            for w, t, k in items]
    kept = [cache / key[:2] / key if cache is not None else None for key in keys]
    verdicts: list[str | None] = [None] * len(items)
    todo = []
    for i, path in enumerate(kept):
        if path is not None and path.is_file():
            verdicts[i] = path.read_text() or None
        else:
            todo.append(i)
    if todo:
        starts, blob = [], b""
        for i in todo:
            starts.append(len(blob))
            blob += items[i][0]
        try:
            raw = _section(disassemble(blob, nvdisasm), None)
        except (SassSyntaxError, ValueError, OSError, subprocess.SubprocessError):
            raw = None                  # one of them is not SM86 code: each on its own, to say which
        for i, base in zip(todo, starts):
            words, text, kernel = items[i]
            try:
                said = spell_instructions(raw, base, base + len(words)) if raw is not None else \
                    spell_instructions(_section(disassemble(words, nvdisasm), None))
                verdicts[i] = _compare(said, spellings(text, kernel))
            except (SassSyntaxError, ValueError, OSError, subprocess.SubprocessError) as e:
                verdicts[i] = f"the words cannot be checked against the listing: {e}"
            if kept[i] is not None:
                _write(kept[i], verdicts[i] or "")
    return verdicts


def check_words(words: bytes, listing_text: str, kernel: str | None, cache: Path | None = None) -> str | None:
    """:func:`check_many` for one kernel."""
    return check_many([(words, listing_text, kernel)], cache)[0]


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (several processes may keep the same verdict at once);
    a cache that cannot be written is no cache."""
    name = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as f:
            name = f.name
            f.write(text)
        os.replace(name, path)
    except OSError:
        if name is not None:
            Path(name).unlink(missing_ok=True)


def words_problems(cases) -> dict[str, str]:
    """case id -> ``file:line: instruction ...: words say ..., listing says ...`` for each case
    whose words nvdisasm does not print back as its listing's instructions (one nvdisasm run
    for all those not already in the warpboard cache; none where nvdisasm is not there)."""
    given = [c for c in cases if c.words is not None]
    verdicts = check_many([(c.words, c.kernel_listing, c.kernel) for c in given], words_cache())
    return {c.id: str(Locator(c.path, read_text(c.path)).error(v, "words")) for c, v in zip(given, verdicts) if v}


def words_cache() -> Path | None:
    """Where verdicts are kept: ``<WARPBOARD_CACHE>/words`` (None with the cache off)."""
    root = cache_dir()
    return None if root is None else root / "words"


__all__ = ["load_words", "check_words", "check_many", "words_problems", "first_difference", "disassemble", "spellings", "find_nvdisasm", "wheel_nvdisasm",
           "words_cache", "INSTRUCTION_BYTES"]
