"""Fitting a form's encoding model to its samples, with nvdisasm as the judge.

The samples of a form (its instructions in nvcc's code, each with the word nvcc gave it) say
which values its fields held, but rarely enough of them to pin every field down: a register
that was always R2 could sit anywhere the word has ``00000010``. So each field's bits are found
by asking nvdisasm: for up to three samples of the form (the most different ones), every
operation bit (0-104) is flipped in turn and the 105 words are disassembled. A flip that
leaves the form as it was and changes one field's number by 2^j (read under each of the
field's ways, :class:`forms.Number`) puts value bit j of that field at that word bit; a flip
that lowers the number when it sets the bit finds a sign bit. A flip that changes the opcode,
a modifier or an operand's shape, changes two numbers, or makes the word illegal is a bit of
the form itself. A gap inside a field whose neighbours sit the same distance from their word
bits is filled where the sample agrees (a flip there changed the operand's shape: a barrier's
thread count flipped to 0 is printed as no count). What is left of the sample's word outside
the fields is the fixed part.

A field no flip moved (its flips were all illegal, say) is fitted from the samples alone: the
one run of free word bits that holds its value in every sample. A field nvdisasm does not
print (``~``, :class:`forms.Context`) can only be among the bits whose flips it does not show;
it is the run of those that holds its inferred value in nearly every sample, and a form with no
such run does not have the field. Then the model must reproduce the operation bits of every
sample of the form exactly (bar the unprinted bits, which the text does not determine); a form
it does not reproduce is left out of the tables, with the reason.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace

from .forms import IMPLICIT, Shape, label_slots, parse_texts, shape
from .table import Field, FieldError, FormModel
from .words import CONTROL_SHIFT, OPERATION_MASK, disassemble_words

REPRESENTATIVES = 3
SILENT = ""                 # obs[SILENT]: the bits whose flip nvdisasm does not show at all
IMPLICIT_WIDTH = 6          # an unprinted field is a uniform register number (UR0-UR62, URZ)
INFERRED_SHARE = 0.9        # ... found where at least this share of its samples hold its inferred value
BATCH_WORDS = 120_000


@dataclass
class Sample:
    """One instruction of nvcc's code: its form and fields, its word, its pc, where it is."""
    shape: Shape
    word: int
    pc: int
    where: str = ""
    parent: str = ""            # for a word one flip away from a form's sample: that form


@dataclass
class FitResult:
    models: dict[str, FormModel] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)      # form -> why it has no model
    neighbours: dict[str, list[Sample]] = field(default_factory=dict)   # forms one flip away
    words: dict[str, int] = field(default_factory=dict)      # form -> the word of its first sample


def representatives(samples: list[Sample], count: int = REPRESENTATIVES) -> list[Sample]:
    """Up to ``count`` samples with different words, each the one whose fields differ most from
    those already chosen (more bits to see moving, fewer coincidences)."""
    firsts: dict[int, Sample] = {}
    for s in samples[:400]:
        firsts.setdefault(s.word & OPERATION_MASK, s)
    pool = list(firsts.values())
    chosen = [pool.pop(0)]
    while pool and len(chosen) < count:
        def distance(s: Sample) -> int:
            return min(sum(s.shape.fields[n] != c.shape.fields.get(n) for n in s.shape.fields) for c in chosen)
        best = max(pool, key=distance)
        pool.remove(best)
        chosen.append(best)
    return chosen


def _power(delta: int) -> tuple[int, bool] | None:
    """(j, up) when ``delta`` (mod 2^64) is +2^j or -2^j."""
    d = delta % (1 << 64)
    if d and d & (d - 1) == 0:
        return d.bit_length() - 1, True
    n = -delta % (1 << 64)
    if n and n & (n - 1) == 0:
        return n.bit_length() - 1, False
    return None


def _changed(a, b, pc_a: int, pc_b: int) -> bool:
    """Whether two numbers differ: a branch target when it differs both as an offset and as
    an address (an unchanged offset moves the address with the pc), another number when any
    reading of it differs."""
    ways = [t for t in a.transforms() if t in b.transforms()]
    if not ways:
        return a != b
    differ = [a.raw(t, pc_a) != b.raw(t, pc_b) for t in ways]
    return all(differ) if a.kind == "target" else any(differ)


def observe(key: str, ref, ref_pc: int, flips: list, flip_pcs: list[int], word: int, obs: dict,
            neighbours: dict | None = None) -> bool:
    """Add what each flip of ``word`` showed to ``obs`` (field -> transform -> [(bit, j, sign)]),
    and each flip that nvdisasm reads as another form of the same opcode to ``neighbours``
    (form -> samples); False when nvdisasm does not read the unflipped word as the form."""
    slots = label_slots(key)
    if ref is None:
        return False
    base = shape(ref, label_slots=slots)
    if base.key != key:
        return False
    for bit, (var, pc) in enumerate(zip(flips, flip_pcs)):
        if var is None:
            continue
        seen = shape(var, label_slots=slots)
        if seen.key != key and neighbours is not None and opcode_of(seen.key) == opcode_of(key):
            neighbours[seen.key].append(Sample(seen, word ^ 1 << bit, pc, f"{key} with bit {bit} flipped", key))
        if seen.key != key or seen.fields.keys() != base.fields.keys():
            continue
        moved = [n for n, v in base.fields.items() if _changed(v, seen.fields[n], ref_pc, pc)]
        if not moved:
            obs[SILENT][""].append((bit, 0, False))
        if len(moved) != 1:
            continue
        name = moved[0]
        was_set = word >> bit & 1
        for t in base.fields[name].transforms():
            a, b = base.fields[name].raw(t, ref_pc), seen.fields[name].raw(t, pc)
            step = _power(b - a) if a is not None and b is not None else None
            if step is not None:
                j, up = step
                obs[name][t].append((bit, j, up == bool(was_set)))
    return True


def _segments(pairs: dict[int, int]) -> tuple[tuple[int, int, int], ...]:
    """value bit -> word bit, as runs (word bit, value bit, length)."""
    out: list[list[int]] = []
    for j in sorted(pairs):
        b = pairs[j]
        if out and out[-1][0] + out[-1][2] == b and out[-1][1] + out[-1][2] == j:
            out[-1][2] += 1
        else:
            out.append([b, j, 1])
    return tuple(tuple(s) for s in out)


def field_from(observations: dict[str, list], taken: set[int]) -> tuple[str, dict[int, int], bool] | None:
    """The transform the flips agree on best, its value-bit -> word-bit map and its sign."""
    best = None
    for t, found in observations.items():
        votes: dict[int, Counter] = defaultdict(Counter)
        signs: dict[int, Counter] = defaultdict(Counter)
        for bit, j, sign in found:
            if bit not in taken:
                votes[j][bit] += 1
                signs[j][sign] += 1
        pairs, used = {}, set()
        for j in sorted(votes):
            bit = votes[j].most_common(1)[0][0]
            if bit not in used:
                pairs[j], used = bit, used | {bit}
        if pairs and (best is None or len(pairs) > len(best[1])):
            top = max(pairs)
            best = (t, pairs, signs[top][True] > signs[top][False])
    return best


def _first_way(samples: list[Sample], name: str) -> str:
    return samples[0].shape.fields[name].transforms()[0]


def _fit_from_samples(samples: list[Sample], name: str, t: str, free: set[int],
                      width: int = 0, share: float = 1.0) -> dict[int, int] | None:
    """value bit -> word bit for a field no flip located, from the samples that have it: the
    one run of free word bits, ``width`` long (default: as wide as the largest value), that
    holds the value in every sample (in ``share`` of them and more than any other run, for an
    unprinted field whose value is inferred); None when there is no such run or more than
    one."""
    samples = [s for s in samples if name in s.shape.fields]
    raws = [s.shape.fields[name].raw(t, s.pc) for s in samples]
    if not raws or any(r is None or r < 0 for r in raws):
        return None
    width = width or max(r.bit_length() for r in raws)
    if not width:
        return None
    mask = (1 << width) - 1
    score = {at: sum((s.word >> at) & mask == r for s, r in zip(samples, raws))
             for at in range(CONTROL_SHIFT - width + 1) if all(b in free for b in range(at, at + width))}
    best = max(score.values(), default=0)
    places = [at for at, n in score.items() if n == best]
    if len(places) != 1 or best < share * len(samples):
        return None
    free -= set(range(places[0], places[0] + width))
    return {j: places[0] + j for j in range(width)}


def _fill_holes(pairs: dict[int, int], raw: int, word: int, taken: set[int]) -> None:
    """Value bits between two located ones that sit the same distance from their word bits
    are taken to lie in between too, where the sample's word agrees: a flip there changed
    the operand's shape (a barrier's thread count of 0x80 flipped to 0 is printed as no count),
    so nvdisasm could not show it."""
    found = sorted(pairs.items())
    for (j1, b1), (j2, b2) in zip(found, found[1:]):
        if j2 - j1 > 1 and b2 - j2 == b1 - j1:
            run = {j: b1 + j - j1 for j in range(j1 + 1, j2)}
            if all(b not in taken and (word >> b) & 1 == (raw >> j) & 1 for j, b in run.items()):
                pairs.update(run)


def build_model(key: str, samples: list[Sample], obs: dict) -> FormModel:
    """A form's model from its flips' observations and its samples (FieldError if it cannot
    reproduce them)."""
    rep = samples[0]
    fields: dict[str, Field] = {}
    taken: set[int] = set()
    for name in sorted(rep.shape.fields, key=lambda n: -sum(len(v) for v in obs.get(n, {}).values())):
        if name.startswith(IMPLICIT):
            continue
        got = field_from(obs.get(name, {}), taken)
        if got is None:
            continue
        t, pairs, signed = got
        raw = rep.shape.fields[name].raw(t, rep.pc)
        if raw is None:
            continue
        _fill_holes(pairs, raw, rep.word, taken)
        segments = _segments(pairs)
        width = Field(t, segments, signed).top + 1
        held = sum(((1 << n) - 1) << v for _, v, n in segments)
        fields[name] = Field(t, segments, signed, raw % (1 << width) & ~held)
        taken |= {w + k for w, _, n in segments for k in range(n)}
    free = set(range(CONTROL_SHIFT)) - taken
    silent = silent_bits(obs) - taken
    for name in sorted({n for s in samples for n in s.shape.fields if n.startswith(IMPLICIT)}):
        values = Counter(s.shape.fields[name].value for s in samples if name in s.shape.fields)
        pairs = (_fit_from_samples(samples, name, "int", silent, IMPLICIT_WIDTH, INFERRED_SHARE)
                 if len(values) > 1 else None)
        free -= set(pairs.values()) if pairs else set()
        if pairs:
            fields[name] = Field("int", _segments(pairs), const=values.most_common(1)[0][0])
    for name in rep.shape.fields:
        if name in fields or name.startswith(IMPLICIT):
            continue
        t = _first_way(samples, name)
        values = {s.shape.fields[name].raw(t, s.pc) for s in samples}
        if len(values) == 1:
            value = values.pop()
            if value is None:
                raise FieldError(f"field {name}: a number the form cannot read")
            if value != 0 or t != "int" or rep.shape.fields[name].kind not in ("int", "imm"):
                fields[name] = Field(t, const=value)
            continue
        pairs = _fit_from_samples(samples, name, t, free)
        if not pairs:
            raise FieldError(f"field {name}: its values vary but no bits of the word follow them")
        fields[name] = Field(t, _segments(pairs))
    mask = sum(f.word_mask for f in fields.values())
    model = FormModel(key, rep.word & OPERATION_MASK & ~mask, fields)
    bad, model.misses = check(model, samples)
    if bad is not None:
        raise FieldError(bad)
    model.samples = len(samples)
    return model


def silent_bits(obs: dict) -> set[int]:
    """The bits whose flip no representative's disassembly showed: where an unprinted field
    can be (a field nvdisasm does not print is one whose flips it does not show)."""
    return {bit for bit, _, _ in obs.get(SILENT, {}).get("", [])}


def determined(sample: Sample) -> bool:
    """Whether the text says all of a sample's word: not a NaN immediate (nvdisasm prints every
    NaN as QNAN, whatever its other bits)."""
    return not any(n.kind == "fimm" and n.fvalue != n.fvalue for n in sample.shape.fields.values())


def check(model: FormModel, samples: list[Sample]) -> tuple[str | None, int]:
    """(the first sample whose operation bits the model does not give, how many samples
    differ only in unprinted fields). Those bits the text does not show: the descriptor
    register is inferred from the last ``ULDC.64 c[0x0][0x118]``, which is not always the
    one nvcc meant."""
    unprinted = sum(f.word_mask for n, f in model.fields.items() if n.startswith(IMPLICIT))
    misses = 0
    for s in samples:
        if not determined(s):
            continue
        try:
            diff = model.encode(s.shape.fields, s.pc) ^ (s.word & OPERATION_MASK)
        except FieldError as e:
            return f"{s.where}: {e}", misses
        if diff & ~unprinted:
            return f"{s.where}: the model gives bits {diff & ~unprinted:#x} otherwise than nvcc", misses
        misses += bool(diff)
    return None, misses


def probe(jobs: list[tuple[str, int]], nvdisasm: str | None, obs: dict,
          neighbours: dict | None = None, progress=None) -> Counter:
    """Flip every operation bit of each (form, word) of ``jobs``, disassemble them in batches
    and :func:`observe` what changed; how many words of each form nvdisasm read as that form."""
    seen: Counter = Counter()
    per_batch = max(1, BATCH_WORDS // (CONTROL_SHIFT + 1))
    for start in range(0, len(jobs), per_batch):
        batch = jobs[start:start + per_batch]
        words = [w for _, word in batch for w in [word] + [word ^ (1 << b) for b in range(CONTROL_SHIFT)]]
        parsed = parse_texts(disassemble_words(words, nvdisasm))
        for k, (key, word) in enumerate(batch):
            at = k * (CONTROL_SHIFT + 1)
            pcs = [16 * (at + 1 + b) for b in range(CONTROL_SHIFT)]
            if observe(key, parsed[at], 16 * at, parsed[at + 1:at + 1 + CONTROL_SHIFT], pcs, word, obs[key],
                       neighbours):
                seen[key] += 1
        if progress:
            progress(min(start + per_batch, len(jobs)), len(jobs))
    return seen


def new_observations() -> dict:
    """form -> field -> transform -> [(bit, j, sign)]"""
    return defaultdict(lambda: defaultdict(lambda: defaultdict(list)))


def fit_forms(groups: dict[str, list[Sample]], nvdisasm: str | None = None,
              progress=None, explore: bool = False) -> FitResult:
    """A model for every form of ``groups`` (form -> its samples) that its samples bear out;
    with ``explore``, also the words one flip away that are other forms of the same opcode
    (``neighbours``: forms nvcc did not emit but nvdisasm reads, each with its words)."""
    for samples in groups.values():
        samples.sort(key=lambda s: not determined(s))         # a NaN sample last: its word is not its text
    jobs = [(key, rep.word) for key in sorted(groups) for rep in representatives(groups[key])]
    obs = new_observations()
    neighbours: dict[str, list[Sample]] = defaultdict(list)
    seen = probe(jobs, nvdisasm, obs, neighbours if explore else None, progress)
    result = FitResult(neighbours={k: v for k, v in sorted(neighbours.items()) if k not in groups})
    for key in sorted(groups):
        if not seen[key]:
            result.failed[key] = "nvdisasm reads nvcc's own word as another form"
            continue
        result.words[key] = groups[key][0].word
        try:
            result.models[key] = build_model(key, groups[key], obs[key])
        except FieldError as e:
            result.failed[key] = str(e)
    share_implicit(result.models, groups, obs)
    return result


def _reproduces(model: FormModel, samples: list[Sample]) -> bool:
    return check(model, samples) == (None, 0)


def share_implicit(models: dict[str, FormModel], groups: dict[str, list[Sample]], obs: dict) -> None:
    """An unprinted field that a form's samples never varied is placed where another form of
    the same opcode holds it, if the form's samples hold their value there and the form
    still reproduces them all (a form whose loads all used UR4 learns where UR6 would go).
    Where a listing does not say (no descriptor load before it), such a field takes the value
    the training code used most."""
    known: dict[tuple[str, str], list[Field]] = defaultdict(list)
    for key, model in sorted(models.items()):
        for name, f in model.fields.items():
            if name.startswith(IMPLICIT) and f.segments and f not in known[opcode_of(key), name]:
                known[opcode_of(key), name].append(f)
    for key, model in sorted(models.items()):
        samples = groups[key]
        wanted = {n for s in samples for n in s.shape.fields if n.startswith(IMPLICIT)} - set(model.fields)
        for name in sorted(wanted):
            used = sum(f.word_mask for f in model.fields.values())
            values = Counter(s.shape.fields[name].value for s in samples if name in s.shape.fields)
            silent = sum(1 << b for b in silent_bits(obs[key]))
            for f in known.get((opcode_of(key), name), []):
                if f.word_mask & used or f.word_mask & ~silent:
                    continue
                trial = FormModel(key, model.fixed & ~f.word_mask,
                                  {**model.fields, name: Field(f.transform, f.segments, const=values.most_common(1)[0][0])},
                                  model.samples)
                if _reproduces(trial, samples):
                    model.fixed, model.fields = trial.fixed, trial.fields
                    break
    usual = Counter(s.shape.fields[n].value for ss in groups.values() for s in ss for n in s.shape.fields
                    if n.startswith(IMPLICIT))
    if usual:
        value = usual.most_common(1)[0][0]
        for key, model in models.items():
            for name, f in list(model.fields.items()):
                if name.startswith(IMPLICIT) and f.const != value:
                    trial = FormModel(key, model.fixed, {**model.fields, name: replace(f, const=value)})
                    if _reproduces(trial, groups[key]):
                        model.fields = trial.fields


def opcode_of(key: str) -> str:
    return key.removeprefix("@UP ").split(".", 1)[0].split(" ", 1)[0]


__all__ = ["FitResult", "Sample", "build_model", "check", "determined", "fit_forms", "new_observations", "observe",
           "opcode_of", "probe", "representatives"]
