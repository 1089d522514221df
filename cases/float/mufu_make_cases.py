"""Write the MUFU sweep cases of this directory from mufu_sweep.cu, with ``warpboard new-case``.

    .venv/bin/python cases/float/mufu_make_cases.py [CASE...]

One case per sweep of :mod:`studies.mufu_sweep` (``mufu_<func>_sweep.toml``): blocks of 256
threads, one input word per thread in buffer ``in``, the raw result bits in ``out``. The
expected words are the CPU's best guess (``expected = "derived"``, :func:`studies.mufu_sweep.reference`),
for ``warpboard record-truth --force`` to replace with the chip's; ``out`` keeps whatever
``compare`` its case file already declares (``warpboard mufu-rates --write-tolerances`` sets it
from measured rates).
"""
from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from warpboard.authoring import newcase  # noqa: E402
from warpboard.studies.mufu_sweep import BLOCK, SWEEPS, Sweep, derived_words, inputs  # noqa: E402
from warpboard.authoring.newcase import BufferArg, new_case, toml_string, toml_words  # noqa: E402

# one compile of mufu_sweep.cu serves every case
newcase.compile_listing = functools.lru_cache(newcase.compile_listing)

DERIVATION = (
    "The CPU's best guess at the chip's words, until they are recorded on the chip "
    "(warpboard record-truth --force): {how} Computed by:\n"
    "from studies.mufu_sweep import derived_words, sweep_named\n"
    "expected = {{\"out\": derived_words(sweep_named(\"{case}\"))}}")
HOW = {
    "f32": "the function's binary64 value rounded once to binary32{ftz}, PTX's special values, "
           "NaN as 0x7fffffff{extra}.",
    "f64h": "the high word of the exact 1/x or 1/sqrt(x) of the binary64 whose high word is the "
            "input (low word 0), truncated; zeros and denormals count as zeros, NaN gives 0x7fffffff.",
}
EXTRA = {"sin": "; the argument first multiplied by 0.15915494f (1/(2 pi)) rounded toward zero, "
                "as FMUL.RZ does, then taken in turns",
         "cos": "; the argument first multiplied by 0.15915494f (1/(2 pi)) rounded toward zero, "
                "as FMUL.RZ does, then taken in turns"}


def derivation(sweep: Sweep) -> str:
    ftz = ", denormal arguments and results flushed" if sweep.ftz else (
        ", denormals kept" if sweep.func == "tanh" else
        ", with ptxas's scaling steps around the flushing MUFU (FMUL, FADD) rounded to nearest")
    how = HOW[sweep.fmt].format(ftz=ftz, extra=EXTRA.get(sweep.func, ""))
    return DERIVATION.format(how=how, case=sweep.case)


def declared_compare(path: Path) -> str | None:
    """The ``compare`` line of buffer ``out`` in an existing case file, kept across rewrites."""
    if not path.is_file():
        return None
    found = re.search(r'\[\[buffers\]\]\nname = "out"\nwords = \d+\n(compare = "[^"]*"\n)',
                      path.read_text(encoding="utf-8"))
    return found.group(1) if found else None


def write_case(sweep: Sweep) -> None:
    """new-case for one sweep, then the derived words and provenance."""
    out = HERE / f"{sweep.case}.toml"
    keep = declared_compare(out)
    words = inputs(sweep)
    summary = (f"{sweep.ptx} ({sweep.label}) on a sweep of {sweep.words} inputs: special values, "
               f"powers of two and neighbours, the function's hard points, every exponent.")
    new_case(HERE / "mufu_sweep.cu", sweep.kernel, out, grid=(sweep.words // BLOCK,), block=(BLOCK,),
             buffers=[BufferArg("in", sweep.words, words), BufferArg("out", sweep.words, 0)],
             tags=["float", "mufu", "mufu-sweep"], summary=summary, force=True)
    text = out.read_text(encoding="utf-8")
    text = text.replace('expected = "pending"\n',
                        f'expected = "derived"\nderivation = {toml_string(derivation(sweep))}\n', 1)
    head = f'[[buffers]]\nname = "out"\nwords = {sweep.words}\n'
    assert head + "init = 0\n" in text, f"{out}: no output buffer"
    body = head + (keep or "") + "init = 0\n" + toml_words("expected", derived_words(sweep)) + "\n"
    out.write_text(text.replace(head + "init = 0\n", body, 1), encoding="utf-8")
    print(f"wrote {out.relative_to(HERE.parent.parent)}")


def main(argv: list[str]) -> int:
    chosen = [s for s in SWEEPS if not argv or s.case in argv]
    for sweep in chosen:
        write_case(sweep)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
