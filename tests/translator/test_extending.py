"""What translator/README.md promises about extending the translator, done here: an opcode in
the existing vocabulary is an entry in the table and a semantics function, and both back ends
run it; a strategy is a sub-package and one registration line."""
import dataclasses

import pytest

from warpboard.harness.run import engine, translators
from warpboard.translator import STRATEGIES, Strategy, load_program, register, translate
from warpboard.translator.emit import turns
from warpboard.translator.isa import ops
from warpboard.translator.isa.ctx import Ctx
from support.listing_kit import listing
from support.paths import library_case

ADDS = ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R4, R0, 0x4, c[0x0][0x160]", "LDG.E R2, [R4.64]",
        "XADD2 R2, R2, R0", "STG.E [R4.64], R2", "EXIT"]


def xadd2(x: Ctx, i):
    """XADD2 Rd, Ra, Rb: Ra + 2 * Rb, written once in the vocabulary."""
    d, a, b = i.ops
    x.write(d, x.add(x.read(a), x.add(x.read(b), x.read(b))))


@pytest.fixture
def with_xadd2(monkeypatch):
    monkeypatch.setitem(ops.TABLE, "XADD2", ops.OpSpec("XADD2", xadd2))


def test_an_opcode_is_unsupported_until_the_table_has_it():
    with pytest.raises(Exception, match="XADD2"):
        load_program("k:\n.text.k:\n" + listing(ADDS), "k")


def test_a_new_opcode_is_an_entry_and_a_function(with_xadd2, backend):
    words = [7 * t for t in range(32)]
    run = backend.run(ADDS, [words], threads=32, name="xadd2")
    assert run.outcome == "ok", run.detail
    assert run.buffers[0] == [w + 2 * t for t, w in enumerate(words)]


MINE = Strategy("mine", "turns", flow="free or turns", warp_model="the turns strategy's, counted",
                make=turns.warp_for, warp_subgroups=True, tight_loops=True)


def test_a_new_strategy_is_one_registration_line(monkeypatch):
    made = []

    def warp_for(emitter):
        made.append(emitter.mode)
        return turns.warp_for(emitter)

    monkeypatch.setitem(STRATEGIES, "mine", dataclasses.replace(MINE, make=warp_for))
    program = load_program("k:\n.text.k:\n" + listing(ADDS[:3] + ["IADD3 R2, R2, R0, RZ"] + ADDS[4:]), "k")
    mine = translate(program, (32, 1, 1), strategy="mine")
    assert made == ["free"] and mine.spirv == translate(program, (32, 1, 1)).spirv
    with pytest.raises(ValueError, match="registered twice"):
        register(MINE)


def test_a_registered_strategy_is_on_the_board(monkeypatch, lavapipe_config):
    """Registered in the parent (what ``warpboard run --translator mine`` checks the name
    against) and in the worker (``support.worker_targets:with_mine``, as an import of the
    strategy's package would), with no file of the harness touched: its cells are scored
    under its own name, beside the default's."""
    monkeypatch.setitem(STRATEGIES, "mine", MINE)
    assert "mine" in translators.builtin() and translators.parse("mine") == {"name": "mine"}
    cases = [library_case("truth/loop_ballot"), library_case("vote/vote_uni")]
    options = engine.Options(target="support.worker_targets:with_mine", retries=0,
                             translators=({"name": "turns"}, {"name": "mine"}))
    doc = engine.run_matrix(cases, [lavapipe_config(4)], interp=False, options=options, jobs=1)
    cells = {(r["case"], r["translator"]): r["status"] for r in doc["results"]}
    assert cells == {(c.id, t): "PASS" for c in cases for t in ("turns", "mine")}
    assert doc["translators"] == ["turns", "mine"]
