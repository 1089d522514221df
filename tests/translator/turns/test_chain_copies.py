"""What chains copy into a per-warp shader: only blocks on the listing's loops, and no more
instructions than the shader's budget (translator/emit/turns/loop.py: TurnLoop._copy)."""
from warpboard.translator.emit.emitter import translate
from warpboard.translator.emit.turns import loop
from warpboard.translator.ir.program import load_program
from warpboard.translator import Target

from support.paths import ROOT

LISTING = (ROOT / "bench" / "divergent_loops.sm_86.sass").read_text()


def test_the_cyclic_blocks_are_the_loops_of_the_listing():
    plain = load_program(LISTING, "bench_plain_loop", "x")
    # the unrolled loop (0xe0..0x1e0, @P0 BRA to itself) and the remainder loop (0x260..0x2c0)
    assert plain.cyclic == {0x0E0, 0x260}
    vote = load_program(LISTING, "bench_vote_loop", "x")
    assert vote.entry not in vote.cyclic and vote.cyclic <= set(vote.reachable)
    vote_pc = next(i.pc for i in vote.insts if i.opcode.startswith("VOTE"))       # in the loop body
    assert any(b.pc <= vote_pc < b.end_pc for pc, b in vote.reachable.items() if pc in vote.cyclic)


def _copies(monkeypatch, floor):
    monkeypatch.setattr(loop, "INLINE_FLOOR", floor)
    monkeypatch.setattr(loop, "INLINE_SHARE", 0.0)
    copied = []
    real = loop.TurnLoop._copy

    def spy(self, block, inline):
        ok = real(self, block, inline)
        if ok:
            assert block.pc in self.e.program.cyclic and inline.pc in self.e.program.cyclic
            copied.append(len(inline.insts))
        return ok
    monkeypatch.setattr(loop.TurnLoop, "_copy", spy)
    program = load_program(LISTING, "bench_vote_loop", "x")
    shader = translate(program, (256, 1, 1), mode="turns", target=Target(warp_subgroups=True))
    return sum(copied), len(shader.spirv)


def test_chains_copy_loop_blocks_within_the_budget_and_a_smaller_budget_a_smaller_shader(monkeypatch):
    full, full_words = _copies(monkeypatch, 100_000)
    some, some_words = _copies(monkeypatch, 40)
    none, none_words = _copies(monkeypatch, 0)
    assert full > 40 and 0 < some <= 40 and none == 0
    assert none_words < some_words < full_words

