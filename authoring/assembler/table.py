"""The learned encoding tables: one model per form, read from and written to
``sm86_forms.json``, and the arithmetic that turns a form's fields into operation bits.

A form's model is its *fixed* bits (every operation bit, 0-104, outside its fields, as nvcc
set them) and its fields. A field maps bits of a number to bits of the word: segments
``W:V:L`` put value bits V..V+L-1 at word bits W..W+L-1 (a constant bank offset is ``40:2:14``:
its byte offset over four; a branch offset ``34:2:48``). A signed field takes negative numbers
in two's complement; every field also takes an unsigned spelling of the same bits
(``0xffffffff`` for ``-0x1``). Value bits below the top that the field has no place for must
hold what the samples held (``rest``: the low two bits of a word-aligned offset). A field with
no bits was never seen to vary: the number must be the one value the samples held (``=V``);
a field the model does not name must be 0 (an undecorated operand). A field nvdisasm does not
print (``~``) takes its samples' usual value (``dV``) where the listing does not say.

The JSON file holds one form per line, sorted, so that a regeneration's diff is readable:
``"IADD3 R, R, I, R": {"fixed": "0x...", "layout": "5f3a09c1", "n": 412}``, where ``n`` is how
many instructions of nvcc's code had the form (0: a form nvcc did not emit, found by
:mod:`.explore`) and ``layout`` names one of the field layouts listed after the forms (forms
share them): ``"0=int 16:0:8;1=int 24:0:8;1.neg=int 72:0:1;2=int 32:0:32 s;..."``.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .forms import IMPLICIT, Number
from .words import OPERATION_MASK

TABLE_PATH = Path(__file__).with_name("sm86_forms.json")


class FieldError(ValueError):
    """A number that the learned field cannot hold; the message says why."""


@dataclass(frozen=True)
class Field:
    """Where one field's number goes: ``transform`` (how the number is read, see
    :class:`forms.Number`), ``segments`` (word bit, value bit, length), ``signed``, ``rest``
    (value bits without a place), ``const`` (for a field with no segments)."""
    transform: str
    segments: tuple[tuple[int, int, int], ...] = ()
    signed: bool = False
    rest: int = 0
    const: int = 0

    @property
    def top(self) -> int:
        """The highest value bit the field holds (its sign bit when signed)."""
        return max(v + n - 1 for _, v, n in self.segments)

    @property
    def word_mask(self) -> int:
        return sum(((1 << n) - 1) << w for w, _, n in self.segments)

    def place(self, number: Number, pc: int) -> int:
        """The word bits that hold ``number`` (FieldError if they cannot)."""
        raw = number.raw(self.transform, pc)
        if raw is None:
            raise FieldError(f"a {number.kind} where the form has a {self.transform} number")
        if not self.segments:
            if raw != self.const:
                raise FieldError(f"{_show(raw)} where every sample held {_show(self.const)}")
            return 0
        width = self.top + 1
        if not -(1 << self.top) <= raw < 1 << width:
            raise FieldError(f"{_show(raw)} does not fit {'a signed' if self.signed else 'an unsigned'} "
                             f"{width}-bit field")
        u = raw % (1 << width)
        held = sum(((1 << n) - 1) << v for _, v, n in self.segments)
        if u & ~held != self.rest:
            raise FieldError(f"{_show(raw)}: bits {_show(~held & ((1 << width) - 1))} must be "
                             f"{_show(self.rest)}")
        return sum(((u >> v) & ((1 << n) - 1)) << w for w, v, n in self.segments)

    def spec(self) -> str:
        """``int 16:0:8``, ``int 32:0:32 s``, ``int 40:2:14``, ``int =1``."""
        if not self.segments:
            return f"{self.transform} ={self.const:#x}"
        text = " ".join([self.transform, *(f"{w}:{v}:{n}" for w, v, n in self.segments)])
        return (text + (" s" if self.signed else "") + (f" r{self.rest:#x}" if self.rest else "")
                + (f" d{self.const:#x}" if self.const else ""))

    @classmethod
    def from_spec(cls, text: str) -> "Field":
        transform, *parts = text.split()
        if parts and parts[0].startswith("="):
            return cls(transform, const=int(parts[0][1:], 0))
        segments = tuple(tuple(int(x) for x in p.split(":")) for p in parts if ":" in p)
        rest = next((int(p[1:], 0) for p in parts if p.startswith("r")), 0)
        default = next((int(p[1:], 0) for p in parts if p.startswith("d")), 0)
        return cls(transform, segments, "s" in parts, rest, default)


def _show(value: int) -> str:
    return f"-{-value:#x}" if value < 0 else f"{value:#x}"


@dataclass
class FormModel:
    """One form's encoding: fixed bits, fields, and how many training samples it reproduces."""
    key: str
    fixed: int
    fields: dict[str, Field]
    samples: int = 0
    misses: int = 0             # training samples whose unprinted bits it gives otherwise (not kept)

    def encode(self, fields: dict[str, Number], pc: int) -> int:
        """The operation bits (0-104) of an instruction of this form; FieldError names the
        field that cannot hold its number."""
        word = self.fixed
        for name, learned in self.fields.items():
            if name.startswith(IMPLICIT) and name not in fields:
                word |= learned.place(Number("int", learned.const), pc)      # the samples' usual value
        for name, number in fields.items():
            learned = self.fields.get(name)
            if learned is None and name.startswith(IMPLICIT):
                continue
            try:
                if learned is None:
                    if number.value != 0 or number.kind not in ("int", "imm"):
                        raise FieldError(f"{_show(number.value)} where every sample held 0")
                    continue
                word |= learned.place(number, pc)
            except FieldError as e:
                raise FieldError(f"field {name}: {e}") from None
        return word & OPERATION_MASK

    def layout(self) -> str:
        """The fields as one line (``0=int 16:0:8;g=int 12:0:3;...``): forms share layouts."""
        return ";".join(f"{n}={f.spec()}" for n, f in sorted(self.fields.items()))

    @staticmethod
    def parse_layout(text: str) -> dict[str, Field]:
        return {n: Field.from_spec(spec) for n, spec in (part.split("=", 1) for part in text.split(";") if part)}


@dataclass
class Table:
    """Every learned form, the control bits to give each opcode when a listing gives none, and
    where the table came from (the tool versions, the training sets)."""
    forms: dict[str, FormModel]
    control: dict[str, int] = field(default_factory=dict)     # opcode (no modifiers) -> control bits
    default_control: int = 0
    about: dict = field(default_factory=dict)

    def control_for(self, opcode: str) -> int:
        return self.control.get(opcode.split(".", 1)[0], self.default_control)

    def dumps(self) -> str:
        """The JSON text: metadata, the control bits per opcode, one line per form and one per
        field layout, each sorted; a layout is named by a hash of its text, so that a form's
        line changes only where the form does."""
        texts = sorted({m.layout() for m in self.forms.values()})
        names = _layout_names(texts)
        forms = {k: {"fixed": f"{m.fixed:#x}", "layout": names[m.layout()], "n": m.samples}
                 for k, m in sorted(self.forms.items())}
        return "\n".join(["{", f'  "about": {json.dumps(self.about, sort_keys=True)},',
                          f'  "control": {_lines({k: f"{v:#x}" for k, v in sorted(self.control.items())})},',
                          f'  "default_control": "{self.default_control:#x}",',
                          f'  "forms": {_lines(forms)},',
                          f'  "layouts": {_lines(dict(sorted((names[t], t) for t in texts)))}', "}"]) + "\n"

    @classmethod
    def loads(cls, text: str) -> "Table":
        data = json.loads(text)
        layouts = {name: FormModel.parse_layout(t) for name, t in data["layouts"].items()}
        forms = {k: FormModel(k, int(v["fixed"], 16), dict(layouts[v["layout"]]), v.get("n", 0))
                 for k, v in data["forms"].items()}
        return cls(forms, {k: int(v, 16) for k, v in data["control"].items()},
                   int(data["default_control"], 16), data.get("about", {}))


def _layout_names(texts: list[str]) -> dict[str, str]:
    """A short name for each layout: the start of its text's SHA-256, as long as they differ."""
    for size in range(8, 65, 4):
        names = {t: hashlib.sha256(t.encode()).hexdigest()[:size] for t in texts}
        if len(set(names.values())) == len(texts):
            return names
    raise ValueError("two layouts with the same SHA-256")


def _lines(items: dict) -> str:
    """A JSON object with one item a line."""
    rows = [f"{json.dumps(str(k))}: {json.dumps(v, sort_keys=True)}" for k, v in items.items()]
    return "{" + "".join(f"\n    {r}" + ("," if i < len(rows) - 1 else "") for i, r in enumerate(rows)) + "\n  }"


_CACHE: dict[Path, tuple[float, Table]] = {}


def load_table(path: Path | None = None) -> Table:
    """The tables in ``path`` (default: the ones beside this module), read once per change."""
    path = Path(path or TABLE_PATH)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        raise FileNotFoundError(f"{path}: no encoding tables (warpboard assemble --learn writes them)") from None
    cached = _CACHE.get(path)
    if cached is None or cached[0] != mtime:
        cached = _CACHE[path] = (mtime, Table.loads(path.read_text(encoding="utf-8")))
    return cached[1]


__all__ = ["Field", "FieldError", "FormModel", "TABLE_PATH", "Table", "load_table"]
