"""The mutation fuzzer: seeded mutants of the library's listings (see ``mutate.py``) run
through load, the interpreter, translation, spirv-val and lavapipe (see ``mutant_checks.py``).

For every mutant: no Python exception other than the translator's own errors escapes, nothing
runs past its timeout or crashes the worker, every module the translator emits passes
spirv-val, and where the interpreter and lavapipe both end OK they hold the same words,
unless the mutant is order-dependent (two threads race on a word), which is counted. A
mutant with a MUFU may leave its approximation unrefined (a Newton step moved or deleted),
and each back end's MUFU is its own by design: its words may differ by 4 f32 ulps.

One gap is known and counted rather than failed: the opcode table states no operand layouts,
so an instruction form no library listing has (``SEL R0, R1, R2, 0x1``: an immediate where the
predicate goes) decodes, and the semantics then index past the operands or read a register as a
predicate. An escaped exception or a spirv-val complaint on a mutant with such a form is listed
under "failed on an untested instruction form"; the same failure on library forms fails the test.

The normal run takes ``MUTANTS`` mutants, every one on the interpreter and a lavapipe batch
of ``LAVAPIPE_SHARE`` of them (a lavapipe pipeline build costs more than the rest together);
``-m mutants_long`` (or ``WARPBOARD_MUTANTS=5000``) runs many more, every one on both:

    .venv/bin/python -m pytest -q -s -m mutants_long tests/studies/fuzz/test_mutants.py

Each run prints its counts (translated, interp ok, lavapipe ok, agree, disagree, ...).
"""
from __future__ import annotations

import os
import random
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from warpboard.harness.run.worker import Worker

from support.mutate import EDITS, Corpus, Mutant
from support.paths import library_cases

SEED = int(os.environ.get("WARPBOARD_MUTANT_SEED", "14"))
MUTANTS = 300
LONG_MUTANTS = int(os.environ.get("WARPBOARD_MUTANTS", "5000"))
LONG_JOBS = int(os.environ.get("WARPBOARD_MUTANT_JOBS", "2"))   # worker processes of the long run
LAVAPIPE_SHARE = 0.25          # of the normal run's mutants, also dispatched on lavapipe
BUDGET = 400                   # steps (free) or turns (turns mode): enough for most library cases
TIMEOUT_S = 60.0               # a mutant's whole evaluation in its worker (past it: a hang, failed);
                               # the lavapipe dispatch gets half (past it: a TIMEOUT, counted), as
                               # a large turns-mode shader takes 4 s to build on one idle core
WIDTH = 8                      # lavapipe-w8


@dataclass
class Tally:
    """Counts of one fuzzing run, the failures, and the disagreements explained by races."""
    counts: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    racy: list[str] = field(default_factory=list)
    outcome_pairs: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    untested_forms: list[str] = field(default_factory=list)
    corpus: Corpus | None = None

    def note(self, mutant: Mutant, verdict) -> None:
        c = self.counts
        c["mutants"] += 1
        if verdict.rejected:
            c["rejected"] += 1
            c["rejected " + verdict.rejected.split(":", 1)[0]] += 1
            if "\n" in verdict.rejected:
                self.failures.append(f"{mutant.describe()}: message of more than one line: {verdict.rejected}")
            return
        c["decoded"] += 1
        c["interp " + verdict.interp.split(":", 1)[0]] += 1
        if verdict.translated != "ok":
            c["translation refused"] += 1
            return
        c["translated"] += 1
        if verdict.spirv_error:
            self._fail(mutant, f"spirv-val: {verdict.spirv_error}", excusable=True)
            return
        c["spirv-val ok"] += 1
        if verdict.lavapipe:
            self._both(mutant, verdict)

    def _both(self, mutant: Mutant, verdict) -> None:
        c = self.counts
        c["lavapipe " + verdict.lavapipe] += 1
        self.outcome_pairs[(verdict.interp.split(":", 1)[0], verdict.lavapipe)] += 1
        if verdict.interp.split(":", 1)[0] != verdict.lavapipe:
            self.examples.setdefault(f"{verdict.interp.split(':', 1)[0]} / {verdict.lavapipe}",
                                     mutant.describe())
        if not verdict.both_ok:
            return
        c["both ok"] += 1
        if verdict.agree:
            c["agree"] += 1
        elif verdict.racy:
            c["disagree, order-dependent"] += 1
            self.racy.append(f"{mutant.describe()}: {verdict.racy}")
        else:
            c["disagree"] += 1
            self.failures.append(f"{mutant.describe()}: interpreter and lavapipe end OK with different words")

    def merge(self, other: "Tally") -> None:
        self.counts.update(other.counts)
        self.outcome_pairs.update(other.outcome_pairs)
        self.failures += other.failures
        self.racy += other.racy
        self.untested_forms += other.untested_forms
        for k, v in other.examples.items():
            self.examples.setdefault(k, v)

    def failure(self, mutant: Mutant, reply) -> None:
        """A reply without a verdict: an exception escaped (kind "error"), or the worker
        timed out or crashed."""
        self.counts["escaped: " + reply.kind] += 1
        detail = reply.traceback or reply.describe()
        self._fail(mutant, f"{reply.describe()}\n{detail}", excusable=reply.kind == "error")

    def _fail(self, mutant: Mutant, what: str, excusable: bool) -> None:
        """A failure, set apart where the mutant uses an instruction form (opcode, modifiers and
        operand kinds) that no library listing has: the opcode table states no operand layouts,
        so the decoder lets such forms through and the semantics meet operands they do not expect."""
        novel = self.corpus.novel_forms(mutant.case) if excusable and self.corpus else []
        if novel:
            self.counts["failed on an untested instruction form"] += 1
            self.untested_forms.append(f"{mutant.describe()}: [{'; '.join(novel)}] {what.splitlines()[-1]}")
        else:
            self.failures.append(f"{mutant.describe()}: {what}")

    def report(self) -> str:
        lines = [f"{k}: {v}" for k, v in sorted(self.counts.items())]
        lines += [f"interp/lavapipe {a} / {b}: {n}" for (a, b), n in sorted(self.outcome_pairs.items())]
        lines += [f"example {k}: {v}" for k, v in sorted(self.examples.items())]
        lines += [f"order-dependent: {r}" for r in self.racy[:5]]
        lines += [f"untested form: {r}" for r in self.untested_forms[:5]]
        return "\n".join(lines)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus(library_cases())


def fuzz(corpus: Corpus, count: int, lavapipe_share: float, config, jobs: int = 1) -> Tally:
    """Evaluate mutants 0..count-1 of series SEED, a share of them on lavapipe too, in ``jobs``
    worker processes (mutant k in worker k % jobs)."""
    pick = random.Random(SEED)
    on_device = [config is not None and pick.random() < lavapipe_share for _ in range(count)]
    tally = Tally()
    with ThreadPoolExecutor(jobs) as pool:
        for part in pool.map(lambda j: _fuzz_part(corpus, range(j, count, jobs), on_device, config), range(jobs)):
            tally.merge(part)
    return tally


def _fuzz_part(corpus: Corpus, indices: range, on_device: list[bool], config) -> Tally:
    tally = Tally(corpus=corpus)
    with Worker(config.env if config is not None else {}, "mutants") as worker:
        for index in indices:
            mutant = corpus.mutant(SEED, index)
            device = config.index if on_device[index] else None
            reply = worker.call("support.mutant_checks:evaluate", mutant.case, BUDGET, device, TIMEOUT_S / 2,
                                timeout_s=TIMEOUT_S)
            if not reply.ok:
                tally.failure(mutant, reply)
                continue
            tally.note(mutant, reply.value)
            if index % 500 < indices.step and index >= 500:
                print(f"mutants: {index} evaluated", file=sys.stderr, flush=True)
            if reply.value.lavapipe == "TIMEOUT":
                worker.close()          # the device is unusable after a timeout: a fresh worker
    return tally


def _lavapipe(device_configs):
    return next((c for c in device_configs if c.id == f"lavapipe-w{WIDTH}"), None)


def _check(tally: Tally, count: int) -> None:
    print(f"\n{count} mutants of series {SEED}\n{tally.report()}")
    log = os.environ.get("WARPBOARD_MUTANT_LOG")
    if log:                     # every failure and order-dependent mutant, for reading later
        Path(log).write_text("\n\n".join(tally.failures + ["order-dependent: " + r for r in tally.racy]
                                        + ["untested form: " + r for r in tally.untested_forms]) + "\n")
    assert tally.counts["mutants"] + sum(v for k, v in tally.counts.items() if k.startswith("escaped")) == count
    assert tally.counts["translated"] > count // 4, "most mutants should still translate"
    assert not tally.failures, "\n\n".join(tally.failures[:10])


@pytest.mark.xdist_group("mutants")
@pytest.mark.campaign
def test_mutants(corpus, device_configs):
    """MUTANTS mutants: all through the interpreter and spirv-val, a share on lavapipe."""
    config = _lavapipe(device_configs)
    tally = fuzz(corpus, MUTANTS, LAVAPIPE_SHARE, config)
    _check(tally, MUTANTS)
    if config is not None:
        assert tally.counts["both ok"] > 0, "no mutant ended OK on both back ends"


@pytest.mark.mutants_long
def test_many_mutants(corpus, device_configs, request):
    """LONG_MUTANTS mutants (default 5,000), every one on both back ends; only when asked for."""
    if "mutants_long" not in (request.config.getoption("markexpr") or "") and "WARPBOARD_MUTANTS" not in os.environ:
        pytest.skip("opt-in: -m mutants_long or WARPBOARD_MUTANTS=<count>")
    tally = fuzz(corpus, LONG_MUTANTS, 1.0, _lavapipe(device_configs), jobs=LONG_JOBS)
    _check(tally, LONG_MUTANTS)


def test_mutants_are_reproducible(corpus):
    a, b = corpus.mutant(SEED, 7), corpus.mutant(SEED, 7)
    assert a.case.listing_text == b.case.listing_text and a.edits == b.edits
    assert corpus.mutant(SEED, 8).case.listing_text != a.case.listing_text


def test_every_kind_of_edit_happens(corpus):
    kinds = Counter(edit.split(": ")[1] for index in range(400) for edit in corpus.mutant(SEED, index).edits)
    assert set(kinds) == set(EDITS), kinds
