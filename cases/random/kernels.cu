// Reductions of patterns found by `warpboard fuzz`: one kernel per root cause.

// Lanes leave a loop with per-lane trip counts at once and pass its BSYNC while the others
// still iterate; then all call a full-mask reduction, whose slow path (BRA.DIV) enters a
// new region of the same convergence barrier before WARPSYNC.EXCLUSIVE (the lanes in the
// loop execute YIELD, so those that left pass the loop's BSYNC without them). The lanes still in
// the loop must not wait at the loop's BSYNC for lanes that have left it.
extern "C" __global__ void left_loop_then_reduce(unsigned *out, const unsigned *in, unsigned *cnt) {
    const unsigned t = threadIdx.x, lane = t & 31u;
    unsigned a = in[t];
    unsigned live = 0xffffffffu;
    const unsigned trip = lane % 3u;
    for (unsigned i = 0u; ; ++i) {
        const bool go = i < trip;
        const unsigned mg = __ballot_sync(live, go);
        if (!go) break;
        live = mg;
        atomicAdd(cnt, a);          // an atomic in the loop: ptxas puts YIELD in it
        a = a * 5u + (unsigned)__reduce_add_sync(mg, (int)a);
    }
    a ^= (unsigned)__reduce_add_sync(0xffffffffu, (int)a);
    out[t] = a;
}

// Two collectives with different masks reach the same slow-path helper (one WARPSYNC pc):
// lanes that skipped the loop ballot with the full warp while the loop's lanes, split by
// an inner loop with per-lane trip counts (YIELD), ballot with their own mask. A WARPSYNC
// joins only lanes holding the same mask.
extern "C" __global__ void two_masks_one_warpsync(unsigned *out, const unsigned *in, unsigned *cnt) {
    const unsigned t = threadIdx.x, lane = t & 31u;
    unsigned a = in[t], b = t * 0x9e3779b9u;
    if ((lane & 2u) != 0u) {
        a += lane * 3u;
    } else {
        for (unsigned i = 0u; i < 3u; ++i) {
            a += __ballot_sync(0x33333333u, (int)b < 0) >> i;
            unsigned live = 0x33333333u;
            const unsigned trip = lane % 3u;
            for (unsigned j = 0u; ; ++j) {
                const bool go = j < trip;
                const unsigned mg = __ballot_sync(live, go);
                if (!go) break;
                live = mg;
                atomicXor(cnt, b);
                b = min(~b, lane);
            }
        }
    }
    a ^= __ballot_sync(0xffffffffu, (a & 4u) != 0u);
    out[t] = a + b;
}
