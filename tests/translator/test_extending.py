"""What translator/README.md promises about extending the translator, done here: an opcode in
the existing vocabulary is an entry in the table and a semantics function, and both back ends
run it; a strategy is a sub-package and one registration line."""
import pytest

from warpboard.translator import STRATEGIES, load_program, translate
from warpboard.translator.emit import turns
from warpboard.translator.isa import ops
from warpboard.translator.isa.ctx import Ctx
from support.listing_kit import listing

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


def test_a_new_strategy_is_one_registration_line(monkeypatch):
    made = []

    def warp_for(emitter):
        made.append(emitter.mode)
        return turns.warp_for(emitter)

    monkeypatch.setitem(STRATEGIES, "mine", warp_for)
    program = load_program("k:\n.text.k:\n" + listing(ADDS[:3] + ["IADD3 R2, R2, R0, RZ"] + ADDS[4:]), "k")
    mine = translate(program, (32, 1, 1), strategy="mine")
    assert made == ["free"] and mine.spirv == translate(program, (32, 1, 1)).spirv
