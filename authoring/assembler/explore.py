"""Forms nvcc did not emit, found one bit away from those it did.

Flipping a bit of a sample's word (:func:`fit.probe`) sometimes gives another form of the same
opcode that nvdisasm reads: another modifier (``LDS.64`` beside ``LDS.128``, ``ISETP.GE.AND``
beside ``ISETP.GT.AND``, ``STG.E.STRONG.GPU`` beside ``STG.E.STRONG.SYS``) or an operand more or
less (a carry-out predicate). Each such word is a sample of its form, which is fitted like any
other (its bits found by flipping it in turn); its count of nvcc instructions is 0. Paired
registers must be aligned (``LDS.128 R5`` is illegal), so each nvcc form is also flipped with
its general registers rounded down to a multiple of four. Words nvdisasm calls ``INVALID`` are
not forms.
"""
from __future__ import annotations

import re
from collections import defaultdict

from .fit import FitResult, Sample, fit_forms, new_observations, opcode_of, probe
from .forms import IMPLICIT, Number, key_tokens, label_slots, parse_texts, shape
from .table import FieldError, FormModel
from .words import OPERATION_MASK, disassemble_words

_REGISTER_BASE = re.compile(r"(?:desc\[UR\])?\[R|c\[I\]\[R")


def register_fields(key: str) -> list[str]:
    """The fields of a form that hold general registers: operands ``R``, address bases ``[R``."""
    out = []
    for k, token in enumerate(key_tokens(key)[2]):
        if token == "R" or token.startswith("R."):
            out.append(str(k))
        elif _REGISTER_BASE.match(token):
            out.append(f"{k}.base")
    return out


def aligned_word(model: FormModel, sample: Sample) -> int | None:
    """The sample's word with every general register (but RZ) a multiple of four, or None when
    it already is one (or the model cannot encode it so)."""
    fields = dict(sample.shape.fields)
    changed = False
    for name in register_fields(model.key):
        number = fields.get(name)
        if number is not None and number.value != 255 and number.value % 4:
            fields[name] = Number("int", number.value & ~3)
            changed = True
    if not changed:
        return None
    try:
        return model.encode(fields, sample.pc) | (sample.word & ~OPERATION_MASK)
    except FieldError:
        return None


def inherit_unprinted(models: dict[str, FormModel], parents: dict[str, str]) -> None:
    """A form found one flip away from another takes the other's unprinted fields, where its
    own fields leave their bits free and its fixed bits hold the other's usual value there."""
    for key, parent in parents.items():
        model, origin = models.get(key), models.get(parent)
        if model is None or origin is None:
            continue
        used = sum(f.word_mask for f in model.fields.values())
        for name, f in origin.fields.items():
            if name.startswith(IMPLICIT) and name not in model.fields and not f.word_mask & used \
                    and f.place(Number("int", f.const), 0) == model.fixed & f.word_mask:
                model.fields[name] = f
                model.fixed &= ~f.word_mask
                used |= f.word_mask


def modifier_deltas(models: dict[str, FormModel]) -> dict[tuple, set[int]]:
    """What changing one modifier does to the fixed bits, from pairs of forms with the same
    operands and field layout whose opcodes differ in that one modifier: (modifier before,
    modifier after; None where it is added or dropped) -> the bits that change."""
    by_shape: dict[tuple, list[tuple[list[str], FormModel]]] = defaultdict(list)
    for key, model in models.items():
        prefix, opcode, tokens = key_tokens(key)
        by_shape[prefix, tuple(tokens), model.layout()].append((opcode.split("."), model))
    deltas: dict[tuple, set[int]] = defaultdict(set)
    for forms in by_shape.values():
        for k, (a, x) in enumerate(forms):
            for b, y in forms[k + 1:]:
                change = _one_change(a, b)
                if change is not None and x.fixed != y.fixed:
                    deltas[change].add(x.fixed ^ y.fixed)
                    deltas[change[::-1]].add(x.fixed ^ y.fixed)
    return deltas


def _one_change(a: list[str], b: list[str]) -> tuple | None:
    """(token of a, token of b) when two opcodes (as token lists) differ in one token: one
    replaced, or one added (None, token) or dropped (token, None)."""
    if a[0] != b[0]:
        return None
    only_a, only_b = [t for t in a if t not in b], [t for t in b if t not in a]
    if len(only_a) + len(only_b) == 1 or (len(only_a) == 1 and len(only_b) == 1):
        return (only_a[0] if only_a else None, only_b[0] if only_b else None)
    return None


def analogies(fit: FitResult, nvdisasm: str | None = None) -> dict[str, list[Sample]]:
    """Words made by applying a known modifier change to a form that has the modifier to
    change (``STRONG.SYS`` -> ``STRONG.GPU``, learned from ``LD.E.STRONG.*``, applied to
    ``LDG.E.STRONG.SYS``): those nvdisasm reads as a form of the same opcode that the tables
    lack, by form."""
    deltas = modifier_deltas(fit.models)
    candidates: dict[int, str] = {}
    for key, model in sorted(fit.models.items()):
        if not model.samples:
            continue                    # applied to nvcc's forms only: the tables stay small
        tokens = key_tokens(key)[1].split(".")
        used = sum(f.word_mask for f in model.fields.values())
        word = fit.words[key]
        for (before, after), changes in deltas.items():
            if (before is not None and before not in tokens) or (after is not None and after in tokens):
                continue
            for delta in changes:
                if not delta & used:
                    candidates.setdefault(word ^ delta, key)
    words = sorted(candidates)
    found: dict[str, list[Sample]] = defaultdict(list)
    for k, back in enumerate(parse_texts(disassemble_words(words, nvdisasm))):
        parent = candidates[words[k]]
        if back is None:
            continue
        seen = shape(back, label_slots=label_slots(parent))
        if opcode_of(seen.key) == opcode_of(parent) and seen.key not in fit.models and "INVALID" not in seen.key:
            if len(found[seen.key]) < 3:
                found[seen.key].append(Sample(seen, words[k], 16 * k, f"{parent} changed by analogy", parent))
    return found


def explore(fit: FitResult, groups: dict[str, list[Sample]], nvdisasm: str | None = None, log=print) -> None:
    """Add to ``fit`` the forms one flip away from those of ``groups`` (whose models it has,
    and whose flips it collected when fitted with ``explore``)."""
    neighbours: dict[str, list[Sample]] = defaultdict(list, {k: list(v) for k, v in fit.neighbours.items()})
    jobs = [(key, word) for key, model in sorted(fit.models.items()) if key in groups
            for word in [aligned_word(model, groups[key][0])] if word is not None]
    probe(jobs, nvdisasm, new_observations(), neighbours)
    wanted = {k: v for k, v in sorted(neighbours.items())
              if "INVALID" not in k and k not in fit.models and k not in groups}
    _adopt(fit, wanted, nvdisasm, log, "neighbours", "one flip away from nvcc's")
    _adopt(fit, analogies(fit, nvdisasm), nvdisasm, log, "analogies", "one modifier away by analogy")


def _adopt(fit, wanted, nvdisasm, log, what: str, how: str) -> None:
    """Fit the ``wanted`` forms and add them to ``fit`` as learned without nvcc's samples."""
    more = fit_forms(wanted, nvdisasm, progress_every(log, f"probing {what}"))
    inherit_unprinted({**fit.models, **more.models}, {k: v[0].parent for k, v in wanted.items()})
    for key, model in more.models.items():
        model.samples = 0
        fit.models[key] = model
        fit.words[key] = more.words[key]
    log(f"{len(more.models)} forms {how} ({len(more.failed)} more not fitted)")


def progress_every(log, what: str):
    """A progress callback that logs now and then."""
    return lambda k, n: log(f"{what} {k}/{n} samples") if k == n or k % 20000 < 1100 else None


__all__ = ["aligned_word", "explore", "inherit_unprinted", "progress_every", "register_fields"]
