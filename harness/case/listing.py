"""The SASS listing of a case: its kernels, one kernel's part of it, and the keys naming them.

A case's listing is a file beside it (``listing = "x.sass"``) or inline (a ``sass`` string)
and may hold several kernels, of which ``kernel`` names the one to run. The kernel helpers
(:func:`listing_kernels`, :func:`has_kernel`, :func:`kernel_section`) find kernels as the
translator's parser does, so the loader and the translator agree on what a listing holds;
:func:`load_listing` and :func:`kernel_name` are the loader's checks of those keys.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from warpboard.translator import ANONYMOUS, parse_listing

from .fields import CaseError, Checker, Locator, file_beside, read_text

_BANNER = re.compile(r"^\s*//-{5,}")      # nvdisasm's "//---- .text.NAME ----" above a section


@lru_cache(maxsize=32)
def _parsed(text: str):
    """The translator's parse of a listing, read only here: the cases of one listing file
    (a capture's, a chapter's) and the three helpers below parse it once."""
    return parse_listing(text)


def listing_kernels(text: str) -> list[str]:
    """The kernels of a SASS listing in order, as the translator's parser finds them: nvdisasm's
    ``.section .text.NAME`` (or a ``.text.NAME:`` label without it), cuobjdump's ``Function :
    NAME``; empty for a bare hand-written listing (then the whole text is the kernel)."""
    return [name for name in _parsed(text) if name != ANONYMOUS]


def has_kernel(text: str, kernel: str) -> bool:
    """Whether the listing has a kernel called ``kernel`` (see :func:`listing_kernels`)."""
    return kernel != ANONYMOUS and kernel in _parsed(text)


def kernel_section(text: str, kernel: str | None) -> str:
    """The part of a listing that belongs to ``kernel``: from its header (and the ``//----``
    banner above it) to the next kernel's banner, trailing blank lines dropped (nvdisasm puts
    each kernel and its internal subroutines in one ``.text.NAME`` section, cuobjdump in one
    ``Function :`` block). The whole text when no kernel is named or the listing lacks it."""
    listing = _parsed(text)
    if kernel is None or kernel == ANONYMOUS or kernel not in listing:
        return text
    lines = text.splitlines(keepends=True)
    start, end = listing.span(kernel)
    while start > 0 and _BANNER.match(lines[start - 1]):
        start -= 1
    while end > start + 1 and (not lines[end - 1].strip() or _BANNER.match(lines[end - 1])):
        end -= 1
    return "".join(lines[start:end])


# ---------------------------------------------------------------- the loader's checks

def load_listing(top: Checker, path: Path, text: str, confine: Path) -> tuple[str, Path, int]:
    """(listing text, file it is in, 1-based line where it starts) from listing or sass."""
    has_file, has_inline = "listing" in top.data, "sass" in top.data
    if has_file and has_inline:
        raise top.err("sass", "give either 'listing' (a SASS file) or 'sass' "
                              "(the listing inline), not both")
    if not has_file and not has_inline:
        raise top.err(None, "missing 'listing' (a SASS file beside the case) "
                            "or 'sass' (the listing inline)")
    if has_inline:
        return top.string("sass"), path, _inline_start(top.loc, text)
    target = file_beside(top, path, "listing", confine)
    try:
        return read_text(target, "listing"), target, 1
    except CaseError as e:
        raise top.err("listing", f"listing: {e}") from None


def _inline_start(loc: Locator, text: str) -> int:
    """The line where an inline ``sass = \"\"\"...`` string's text starts: the next line
    when the opening quotes end their line (TOML drops that newline), else the same."""
    line = loc.line("sass") or 1
    rest = loc.lines[line - 1].split("=", 1)[-1].strip()
    for quotes in ('"""', "'''"):
        if rest.startswith(quotes):
            return line + 1 if rest == quotes else line
    return line


def kernel_name(top: Checker, listing: str) -> str | None:
    """The kernel name, checked against the listing's labels."""
    kernel = top.string("kernel", required=False)
    found = listing_kernels(listing)
    if kernel is None:
        if len(found) > 1:
            raise top.err("listing" if "listing" in top.data else "sass",
                          f"kernel: the listing has {len(found)} kernels "
                          f"({', '.join(found)}); name one with kernel = \"...\"")
        return None
    if not has_kernel(listing, kernel):
        known = f"kernels: {', '.join(found)}" if found else "no kernel labels found"
        raise top.err("kernel", f"kernel: '{kernel}' is not in the listing ({known})")
    return kernel

