"""SM86 listing text -> instruction words, with the learned tables (:mod:`.table`).

:func:`assemble` gives one kernel's words, 16 bytes an instruction (the low 64 bits then the
high 64 bits, each little-endian) in address order, the same bytes as the kernel's ``.text``
section in nvcc's cubin. Labels are resolved to addresses in the kernel (a branch holds the
offset from the next instruction); a call to a symbol outside the kernel (``CALL.ABS.NOINC
`(vprintf)``) holds 0, which the loader's relocation fills in a cubin.

The control bits (bits 105-127) come from the listing where it shows the words
(``nvdisasm -hex``, cuobjdump), else from the tables' safe choice for the opcode (every
scoreboard waited on, stall 15: :mod:`.learn`). ``.reuse`` flags are not set.

An instruction whose form the tables lack, or whose numbers its form's fields cannot hold, is
an :class:`AssemblerError` that names the file, the line and the form.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from warpboard.translator import ANONYMOUS, SassSyntaxError, parse_listing

from .forms import Context, Number, key_tokens, shape
from .table import FieldError, FormModel, Table, load_table
from .words import CONTROL_SHIFT, OPERATION_MASK, listing_words, to_bytes

RZ = 255


class AssemblerError(ValueError):
    """A listing (or one instruction of it) that cannot be assembled; the message says where."""


@dataclass
class Encoded:
    """One instruction of a listing and what became of it: its form and its word, or why it
    has none."""
    raw: object                 # the RawInstruction
    key: str                    # its form as written
    word: int | None = None
    error: str | None = None
    form: str = ""              # the form it was encoded as (another spelling of ``key``, at times)
    fields: dict = None         # and the fields it was encoded with
    written: dict = None        # the fields as the listing writes them (of ``key``)

    @property
    def where(self) -> str:
        return f"{self.raw.file}:{self.raw.line}"


def resolver(section):
    """Label -> address in one kernel (a label after its last instruction: the kernel's end;
    a symbol outside it: 0)."""
    end = 16 * len(section.instructions)

    def target(name: str) -> int:
        pc = section.labels.get(name, 0)
        return end if pc < 0 else pc
    return target


_BARE = (re.compile(r"((?:desc\[UR\])?\[)(I\])"), re.compile(r"(c\[I\]\[)(I\].*)"))
_PAIR = re.compile(r"((?:desc\[UR\])?\[R)\.64([+\]])")


def _alternatives(found):
    """The form as written, then other spellings of the same instruction: an address that
    names no register written with RZ (``[0x40]`` as ``[RZ+0x40]``, ``c[0x3][0x10]`` as
    ``c[0x3][RZ+0x10]``: nvdisasm leaves RZ out where the word has it, not URZ), and an
    address register written as a pair where nvdisasm writes it alone (``[R2.64]`` for
    ``ATOMG.E.CAS``, whose 64-bit address the ``.E`` already says), and a branch target
    written as its address (cuobjdump's ``BRA 0x170``)."""
    yield found.key, found.fields
    prefix, opcode, tokens = key_tokens(found.key)
    paired = [k for k, token in enumerate(tokens) if _PAIR.match(token)]
    if paired:
        alone = [_PAIR.sub(r"\1\2", t, count=1) if k in paired else t for k, t in enumerate(tokens)]
        yield f"{prefix}{opcode} {', '.join(alone)}", found.fields
    for k, token in enumerate(tokens):
        for pattern in _BARE:
            m = pattern.fullmatch(token)
            if m is not None:
                other = tokens[:k] + [m.group(1) + "R+" + m.group(2)] + tokens[k + 1:]
                yield f"{prefix}{opcode} {', '.join(other)}", {**found.fields, f"{k}.base": Number("int", RZ)}
    for k, token in enumerate(tokens):
        number = found.fields.get(str(k))
        flags = [f"{k}.{flag}" for flag in ("neg", "not", "abs")]
        if token == "I" and number is not None and number.kind == "imm" and \
                not any(found.fields[f].value for f in flags if f in found.fields):
            other = tokens[:k] + ["L"] + tokens[k + 1:]
            fields = {n: v for n, v in found.fields.items() if n not in flags}
            yield f"{prefix}{opcode} {', '.join(other)}", {**fields, str(k): Number("target", number.value)}


def encode_instruction(raw, table: Table, targets, context: Context) -> Encoded:
    """One instruction's operation bits (0-104), or the reason there are none."""
    found = shape(raw, targets, context=context)
    model: FormModel | None = None
    fields = found.fields
    for key, fields in _alternatives(found):
        model = table.forms.get(key)
        if model is not None:
            break
    where = f"{raw.file}:{raw.line}"
    if model is None:
        why = table.about.get("unfit", {}).get(found.key)
        note = f" (seen in training but left out: {why})" if why else ""
        return Encoded(raw, found.key, error=f"{where}: no encoding learned for form '{found.key}'{note}")
    try:
        return Encoded(raw, found.key, model.encode(fields, raw.pc), form=model.key, fields=fields,
                       written=found.fields)
    except FieldError as e:
        return Encoded(raw, found.key, error=f"{where}: form '{model.key}': {e}")


def pick_kernel(listing, kernel: str | None, file: str):
    """The section of ``kernel``, or of the listing's only kernel."""
    names = [n for n in listing if n != ANONYMOUS] or list(listing)
    if kernel is None:
        if len(names) != 1:
            raise AssemblerError(f"{file}: {len(names)} kernels ({', '.join(names[:6])}"
                                 f"{', ...' if len(names) > 6 else ''}); name one")
        kernel = names[0]
    if kernel not in listing:
        raise AssemblerError(f"{file}: no kernel {kernel!r} (it has {', '.join(names[:6]) or 'none'})")
    try:
        return listing[kernel]
    except SassSyntaxError as e:
        raise AssemblerError(str(e)) from None


def encode_section(section, table: Table, given: dict[int, int] | None = None) -> list[Encoded]:
    """Every instruction of a kernel, in address order, encoded where it can be: the words
    complete with control bits (from ``given``, pc -> the listing's own word, else the
    tables' safe bits for the opcode)."""
    given = given or {}
    targets, context, out = resolver(section), Context(), []
    for k, raw in enumerate(sorted(section.instructions, key=lambda r: r.pc)):
        if raw.pc != 16 * k:
            raise AssemblerError(f"{raw.file}:{raw.line}: instruction at /*{raw.pc:04x}*/ where "
                                 f"/*{16 * k:04x}*/ comes next (a kernel's instructions start at 0, "
                                 "16 bytes apart)")
        done = encode_instruction(raw, table, targets, context)
        if done.word is not None:
            control = given[raw.pc] >> CONTROL_SHIFT if raw.pc in given else table.control_for(raw.opcode)
            done.word = (done.word & OPERATION_MASK) | control << CONTROL_SHIFT
        out.append(done)
        context.follow(raw)
    return out


def assemble_words(listing_text: str, kernel: str | None = None, file: str = "<listing>",
                   table: Table | None = None, first_line: int = 1) -> list[int]:
    """The kernel's 128-bit words in address order (AssemblerError at the first instruction
    that cannot be encoded)."""
    table = table or load_table()
    listing = parse_listing(listing_text, file, first_line)
    section = pick_kernel(listing, kernel, file)
    given = listing_words(listing_text).get(section.name, {})
    words = []
    for done in encode_section(section, table, given):
        if done.error:
            raise AssemblerError(done.error)
        words.append(done.word)
    return words


def assemble(listing_text: str, kernel: str | None = None, file: str = "<listing>",
             table: Table | None = None, first_line: int = 1) -> bytes:
    """The kernel's instructions as bytes: 16 per instruction, the low 64 bits then the high
    64 bits, little-endian, in address order. ``kernel`` may be left out for a listing of one
    kernel; ``file`` and ``first_line`` place the listing for messages."""
    return to_bytes(assemble_words(listing_text, kernel, file, table, first_line))


__all__ = ["AssemblerError", "Encoded", "assemble", "assemble_words", "encode_instruction",
           "encode_section", "pick_kernel", "resolver"]
