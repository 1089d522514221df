"""The control-flow analyses a structured translation builds on (translator.ir.structure,
translator.ir.loops): dominators and post-dominators, the loop forest, reducibility and the
BSSY/BSYNC regions, on small hand-made listings (pcs 16 apart from 0) and over every library
case, in both views of calls ("through": as Program.successors, a RET going back after every
CALL; "over": helpers as functions of their own)."""
from __future__ import annotations

import pytest
from warpboard.translator import load_program
from warpboard.translator.ir.loops import hexpc
from warpboard.translator.ir.structure import (
    EXIT,
    analyse,
    control_flow,
    convergence_regions,
    dominates,
    dominators,
    loop_forest,
    post_dominators,
    reducible,
)

from support.listing_kit import listing
from support.paths import CASES, library_case

# the library tests share one load of every program (``library``): on one worker, loaded once
pytestmark = pytest.mark.xdist_group("ir-library")


def _program(*lines: str):
    """A one-kernel program of ``lines`` (``.L_x:`` labels pass through)."""
    return load_program("Function : k\n.text.k:\n" + listing(list(lines)), block=(64, 1, 1))


TEST = ["S2R R0, SR_TID.X", "ISETP.NE.AND P0, PT, R0, RZ, PT"]


# ---------------------------------------------------------------- dominators, post-dominators
def test_a_diamond_meets_at_its_join():
    p = _program(*TEST, "@P0 BRA `(.L_else)", "IADD3 R1, R0, 0x1, RZ", "BRA `(.L_join)",
                 ".L_else:", "IADD3 R1, R0, 0x2, RZ", ".L_join:", "IADD3 R2, R1, R1, RZ", "EXIT")
    assert control_flow(p).succ == {0x00: (0x50, 0x30), 0x30: (0x60,), 0x50: (0x60,), 0x60: ()}
    assert dominators(p) == {0x00: None, 0x30: 0x00, 0x50: 0x00, 0x60: 0x00}
    assert post_dominators(p) == {0x00: 0x60, 0x30: 0x60, 0x50: 0x60, 0x60: EXIT}
    s = analyse(p)
    assert s.dominates(0x00, 0x60) and not s.dominates(0x30, 0x60) and s.dominates(0x60, 0x60)
    assert s.post_dominates(0x60, 0x00) and s.post_dominates(EXIT, 0x30) and not s.post_dominates(0x50, 0x00)
    assert s.reducible and s.reason == "reducible" and len(s.loops) == 0


LOOP_WITH_BREAK = (*TEST[:1], ".L_head:", "IADD3 R0, R0, 0x1, RZ", "ISETP.GT.AND P0, PT, R0, 0x10, PT",
                   "@P0 BRA `(.L_out)", "ISETP.NE.AND P1, PT, R0, 0x7, PT", "@P1 BRA `(.L_head)",
                   "IADD3 R0, R0, 0x2, RZ", ".L_out:", "EXIT")


def test_a_loop_with_a_break():
    p = _program(*LOOP_WITH_BREAK)
    assert dominators(p) == {0x00: None, 0x10: 0x00, 0x40: 0x10, 0x60: 0x40, 0x70: 0x10}
    assert post_dominators(p) == {0x00: 0x10, 0x10: 0x70, 0x40: 0x70, 0x60: 0x70, 0x70: EXIT}
    forest = loop_forest(p)
    assert list(forest.loops) == [0x10] and forest.roots == (0x10,)
    loop = forest.loops[0x10]
    assert loop.body == {0x10, 0x40} and loop.latches == (0x40,)
    assert loop.exits == ((0x10, 0x70), (0x40, 0x60)) and loop.exit_targets == (0x60, 0x70)
    assert (loop.parent, loop.children, loop.depth, loop.ends) == (None, (), 1, ())
    assert forest.loop_of(0x40) is loop and forest.loop_of(0x60) is None and forest.depth(0x00) == 0


def test_nested_loops_form_a_forest():
    p = _program(*TEST[:1], ".L_outer:", "MOV R1, RZ", ".L_inner:", "IADD3 R1, R1, 0x1, RZ",
                 "ISETP.LT.AND P0, PT, R1, 0x4, PT", "@P0 BRA `(.L_inner)", "IADD3 R0, R0, -0x1, RZ",
                 "ISETP.NE.AND P1, PT, R0, RZ, PT", "@P1 BRA `(.L_outer)", "EXIT")
    assert dominators(p) == {0x00: None, 0x10: 0x00, 0x20: 0x10, 0x50: 0x20, 0x80: 0x50}
    assert post_dominators(p) == {0x00: 0x10, 0x10: 0x20, 0x20: 0x50, 0x50: 0x80, 0x80: EXIT}
    forest = loop_forest(p)
    outer, inner = forest.loops[0x10], forest.loops[0x20]
    assert forest.roots == (0x10,)
    assert (outer.body, outer.latches, outer.exits, outer.children, outer.depth) == \
        ({0x10, 0x20, 0x50}, (0x50,), ((0x50, 0x80),), (0x20,), 1)
    assert (inner.body, inner.latches, inner.exits, inner.parent, inner.depth) == \
        ({0x20}, (0x20,), ((0x20, 0x50),), 0x10, 2)
    assert dict(forest.innermost) == {0x10: 0x10, 0x20: 0x20, 0x50: 0x10}


def test_an_early_exit_leaves_only_the_exit_to_post_dominate_the_branch():
    p = _program(*TEST, "@P0 BRA `(.L_work)", "EXIT", ".L_work:", "IADD3 R1, R0, 0x1, RZ", "EXIT")
    assert dominators(p) == {0x00: None, 0x30: 0x00, 0x40: 0x00}
    assert post_dominators(p) == {0x00: EXIT, 0x30: EXIT, 0x40: EXIT}
    assert control_flow(p).exits == {0x30, 0x40}


def test_a_guarded_exit_is_an_edge_to_the_exit_too():
    p = _program(*TEST, "@P0 EXIT", "IADD3 R1, R0, 0x1, RZ", "EXIT")
    cfg = control_flow(p)
    assert cfg.succ[0x00] == (0x30,) and cfg.exits == {0x00, 0x30}
    assert post_dominators(p)[0x00] == EXIT


def test_an_endless_loop_still_reaches_the_exit():
    p = _program(*TEST, "@P0 EXIT", ".L_spin:", "IADD3 R1, R1, 0x1, RZ", "BRA `(.L_spin)")
    cfg = control_flow(p)
    assert cfg.endless == {0x30} and post_dominators(p) == {0x00: EXIT, 0x30: EXIT}
    assert loop_forest(p).loops[0x30].latches == (0x30,)


def test_dominates_walks_a_tree():
    tree = {1: None, 2: 1, 3: 2}
    assert dominates(tree, 1, 3) and dominates(tree, 3, 3) and not dominates(tree, 3, 1)
    assert dominates({5: EXIT}, EXIT, 5) and not dominates(tree, 9, 3)


# ---------------------------------------------------------------- reducibility
def test_a_loop_with_two_entries_is_irreducible_and_says_where():
    p = _program(*TEST, "@P0 BRA `(.L_b)", ".L_a:", "IADD3 R0, R0, -0x1, RZ", ".L_b:",
                 "ISETP.GT.AND P1, PT, R0, RZ, PT", "@P1 BRA `(.L_a)", "EXIT")
    ok, reason = reducible(p)
    assert not ok
    assert reason == ("irreducible: the edge 0x0030 -> 0x0040 closes a cycle that 0x0040 does not dominate: "
                      "the edge 0x0000 -> 0x0030 enters it without passing 0x0040")
    assert len(loop_forest(p)) == 0           # no natural loop: neither block dominates the other


HELPER_TWICE = ("MOV R10, 0x20", "CALL.REL.NOINC `(.L_f)", "IADD3 R0, R0, 0x1, RZ", "CALL.REL.NOINC `(.L_f)",
                "EXIT", ".L_f:", "IADD3 R1, R1, 0x1, RZ", "RET.REL.NODEC R10 0x0")


def test_a_helper_called_twice_is_irreducible_only_through_its_calls():
    p = _program(*HELPER_TWICE)
    ok, reason = reducible(p)
    assert not ok and reason.startswith("irreducible: the edge 0x0020 -> 0x0050 closes a cycle")
    assert reason.endswith("a RET (0x0050) goes back after every CALL here, which makes cycles no thread "
                           "takes: see calls='over'")
    over = analyse(p, "over")
    assert over.reducible and over.cfg.roots == (0x00, 0x50)
    assert over.cfg.succ == {0x00: (0x20,), 0x20: (0x40,), 0x40: (), 0x50: ()}
    assert over.idom == {0x00: None, 0x20: 0x00, 0x40: 0x20, 0x50: None}
    assert over.ipdom == {0x00: 0x20, 0x20: 0x40, 0x40: EXIT, 0x50: EXIT}


def test_an_unknown_view_of_calls_is_refused():
    with pytest.raises(ValueError, match="calls='inline': one of through, over"):
        control_flow(_program("EXIT"), "inline")


def test_the_analyses_are_made_once_per_program():
    p = _program(*LOOP_WITH_BREAK)
    assert analyse(p) is analyse(p) and analyse(p, "over") is not analyse(p)


# ---------------------------------------------------------------- BSSY / BSYNC regions
def test_a_bssy_pairs_with_the_bsync_before_its_target():
    p = _program(*TEST, "BSSY B0, `(.L_after)", "@P0 BRA `(.L_sync)", "IADD3 R1, R0, 0x1, RZ", ".L_sync:",
                 "BSYNC B0", ".L_after:", "EXIT")
    [r] = convergence_regions(p)
    assert (r.bssy_pc, r.barrier, r.start, r.sync_pc, r.blocks) == (0x20, 0, 0x00, 0x50, {0x00, 0x40})
    assert (r.leaves, r.breaks, r.post_dominated, r.nested, r.problem) == ((), (), True, True, None)


def test_a_bsync_at_the_target_itself_pairs_too():
    p = _program(*TEST, "BSSY B1, `(.L_sync)", "@P0 BRA `(.L_sync)", "IADD3 R1, R0, 0x1, RZ", ".L_sync:",
                 "BSYNC B1", "EXIT")
    [r] = convergence_regions(p)
    assert (r.barrier, r.sync_pc, r.post_dominated, r.problem) == (1, 0x50, True, None)


def test_a_bssy_without_its_bsync_says_so():
    p = _program(*TEST, "BSSY B0, `(.L_after)", "IADD3 R1, R0, 0x1, RZ", ".L_after:", "EXIT")
    [r] = convergence_regions(p)
    assert r.sync_pc is None and not r.post_dominated
    assert r.problem == "0x0020: BSSY B0: no BSYNC B0 before or at its target 0x0040"


def test_an_exit_inside_a_region_leaves_it():
    p = _program(*TEST, "BSSY B0, `(.L_after)", "@P0 EXIT", "IADD3 R1, R0, 0x1, RZ", "BSYNC B0", ".L_after:",
                 "EXIT")
    [r] = convergence_regions(p)
    assert r.leaves == ((0x00, EXIT),) and not r.post_dominated
    assert r.problem == ("0x0020: BSSY B0: the BSYNC at 0x0050 does not post-dominate it, control leaves the "
                         "region along 0x0000 -> the exit")


def test_a_break_leaves_the_inner_region_for_the_outer_bsync():
    p = _program(*TEST, "BSSY B1, `(.L_out)", "BSSY B0, `(.L_in)", "@P0 BREAK B0", "@P0 BRA `(.L_outer_sync)",
                 "IADD3 R1, R0, 0x1, RZ", "BSYNC B0", ".L_in:", "IADD3 R2, R1, 0x1, RZ", ".L_outer_sync:",
                 "BSYNC B1", ".L_out:", "EXIT")
    outer, inner = convergence_regions(p)
    assert (inner.bssy_pc, inner.sync_pc, inner.blocks) == (0x30, 0x70, {0x00, 0x60})
    assert inner.leaves == inner.breaks == ((0x00, 0x90),) and not inner.post_dominated
    assert inner.problem.endswith("control leaves the region along 0x0000 -> 0x0090 (BREAK B0)")
    assert (outer.sync_pc, outer.post_dominated, outer.blocks) == (0x90, True, {0x00, 0x60, 0x70, 0x80})
    assert outer.nested and inner.nested and inner.span <= outer.span


def test_overlapping_regions_are_not_nested():
    p = _program(*TEST, "BSSY B0, `(.L_a)", "@P0 BRA `(.L_x)", "BSSY B1, `(.L_b)", ".L_x:", "BSYNC B0", ".L_a:",
                 "BSYNC B1", ".L_b:", "EXIT")
    first, second = convergence_regions(p)
    assert not first.nested and not second.nested
    assert second.problem.endswith("BSSY B1 overlaps the region of BSSY B0 at 0x0020 without nesting")


# ---------------------------------------------------------------- the library
@pytest.fixture(scope="module")
def library():
    """Every library case's program, by case id."""
    found = {}
    for path in sorted(CASES.rglob("*.toml")):
        case = library_case(path.relative_to(CASES).with_suffix("").as_posix())
        found[case.id] = load_program(case.listing_text, case.kernel, block=case.block)
    return found


@pytest.mark.parametrize("calls", [pytest.param("through", marks=pytest.mark.campaign), "over"])
def test_every_library_program_is_analysed(library, calls):
    assert len(library) >= 200
    for cid, p in library.items():
        s = analyse(p, calls)
        assert set(s.idom) == set(s.ipdom) == set(p.reachable), cid
        for pc, d in s.idom.items():         # an immediate dominator dominates every predecessor
            assert (d is None) == (pc in s.cfg.roots), (cid, hexpc(pc))
            assert d is None or all(s.dominates(d, q) for q in s.cfg.pred[pc]), (cid, hexpc(pc))
            assert all(s.post_dominates(s.ipdom[pc], q) for q in s.cfg.succ[pc]), (cid, hexpc(pc))
            assert pc not in s.cfg.exits or s.ipdom[pc] == EXIT, (cid, hexpc(pc))
        for loop in s.loops.loops.values():
            assert all(s.dominates(loop.header, pc) for pc in loop.body), (cid, hexpc(loop.header))
            assert all(loop.header in s.cfg.succ[t] for t in loop.latches), (cid, hexpc(loop.header))


def test_reducibility_over_the_library(library):
    """When written: 33 of the 238 programs are irreducible through their calls, every one
    because a RET goes back after every CALL (each has two calls or more); as functions (calls
    "over"), every program is reducible."""
    through = {cid: reducible(p)[1] for cid, p in library.items() if not reducible(p)[0]}
    assert all("goes back after every CALL" in why for why in through.values()), through
    assert all(sum(i.spec.flow == "call" for i in library[cid].insts) >= 2 for cid in through)
    assert {"bssy/nested_if4", "repro/rp_4_12", "vote/vote_split_masks"} <= set(through)
    over = {cid: reducible(p, "over")[1] for cid, p in library.items() if not reducible(p, "over")[0]}
    assert not over, "\n".join(f"{cid}: {why}" for cid, why in over.items())


def test_every_library_bssy_pairs_with_a_bsync(library):
    """nvdisasm labels the pc after the BSYNC: every BSSY's target follows its BSYNC Bx."""
    regions = [(cid, r) for cid, p in library.items() for r in convergence_regions(p, "over")]
    assert len(regions) >= 200
    assert all(r.sync_pc is not None and r.sync_pc in library[cid].reachable for cid, r in regions)
    assert all(r.sync_pc + 16 == next(i.target for i in library[cid].insts if i.pc == r.bssy_pc) for cid, r in regions)


def test_library_regions_nest_when_helpers_are_functions(library):
    """When written, through the calls 63 of the 256 regions overlap another (paths leave by a
    helper's RET); as functions, all 256 nest."""
    bad = [f"{cid}: {r.problem}" for cid, p in library.items() for r in convergence_regions(p, "over") if not r.nested]
    assert not bad, "\n".join(bad)
    for cid, p in library.items():
        for r in convergence_regions(p, "over"):
            back_only = all(b in analyse(p, "over").loops.loops for _, b in r.leaves)
            assert r.post_dominated == (not r.leaves or back_only), (cid, r.problem)


@pytest.mark.parametrize("case_id, nesting", [
    ("bssy/nested_if4", [(0x060, 0, 0x550), (0x1d0, 1, 0x4c0), (0x270, 2, 0x430), (0x310, 3, 0x3c0)]),
    ("truth/nested_rejoin_masks", [(0x020, 0, 0x1a0)]),
    ("loops/nested_uneven_loops", [(0x060, 0, 0x290), (0x0b0, 1, 0x250), (0x0f0, 2, 0x230)]),
])
def test_library_bsyncs_post_dominate_their_bssys(library, case_id, nesting):
    regions = convergence_regions(library[case_id], "over")
    assert [(r.bssy_pc, r.barrier) for r in regions] == [(pc, bar) for pc, bar, _ in nesting]
    assert [r.sync_pc for r in regions] == [sync for _, _, sync in nesting]
    assert all(r.post_dominated and r.nested and r.problem is None for r in regions)
    for outer, inner in zip(regions, regions[1:]):
        assert inner.span < outer.span


def test_a_library_loop_nest_and_its_regions(library):
    """nested_uneven_loops: B0 holds the outer loop; the outer loop's header block holds BSSY
    B1, whose region ends before the back edge, and B2's region holds the inner loop."""
    s = analyse(library["loops/nested_uneven_loops"], "over")
    outer, inner = s.loops.loops[0x0a0], s.loops.loops[0x130]
    assert (s.loops.roots, outer.latches, outer.exits, outer.children) == \
        ((0x0a0,), (0x260,), ((0x260, 0x290),), (0x130,))
    assert (inner.latches, inner.exits, inner.parent, inner.depth) == ((0x1b0,), ((0x1b0, 0x230),), 0x0a0, 2)
    b0, b1, b2 = s.regions
    assert outer.body < b0.blocks and inner.body < b2.blocks and 0x260 not in b1.blocks
    assert s.ipdom[0x0a0] == 0x250 and s.post_dominates(0x290, 0x000)


def test_through_the_calls_the_slow_paths_leave_nested_if4s_regions(library):
    """nested_if4's vote slow paths call one helper, whose RET goes back after all 8 calls:
    seen through them, control leaves every region, and no BSYNC post-dominates its BSSY."""
    regions = convergence_regions(library["bssy/nested_if4"])
    assert [r.post_dominated for r in regions] == [False] * 4
    assert all(r.leaves for r in regions)


@pytest.mark.parametrize("case_id, bssy, leaves, breaks", [
    ("bssy/break_from_nested_if", 0x160, ((0x180, 0x760),), ((0x180, 0x760),)),
    ("exit/hand_exit_guarded_midblock", 0x0d0, ((0x0f0, EXIT),), ()),
    ("random/break_to_syncthreads", 0x6c0, ((0x6e0, 0x780),), ()),
])
def test_library_regions_that_control_leaves(library, case_id, bssy, leaves, breaks):
    """Where the BSYNC does not post-dominate its BSSY (calls "over"; 24 of 256 regions when
    written): a BREAK Bx and a branch to an outer BSYNC (18), an EXIT inside the region, or a
    branch out of it without BREAK."""
    [r] = [r for r in convergence_regions(library[case_id], "over") if r.bssy_pc == bssy]
    assert (r.leaves, r.breaks, r.post_dominated) == (leaves, breaks, False)
    assert r.problem.startswith(f"{hexpc(bssy)}: BSSY B{r.barrier}: the BSYNC at {hexpc(r.sync_pc)} does not "
                                "post-dominate it, control leaves the region along")
