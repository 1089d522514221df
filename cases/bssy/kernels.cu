// Nested convergence regions: collectives after every rejoin force ptxas to nest BSSY/BSYNC.
// Every kernel writes one u32 per thread into out[]; in[] holds one input word per thread.
#define LANE (threadIdx.x & 31)

// Four nested ifs on input bits; a ballot over an exactly known mask at every level, and
// after every rejoin (masks computed up front, where the warp is converged).
extern "C" __global__ void nested_if4(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], acc = 0;
    unsigned m1 = __ballot_sync(0xffffffffu, x & 1);
    unsigned m2 = __ballot_sync(0xffffffffu, (x & 3) == 3);
    unsigned m3 = __ballot_sync(0xffffffffu, (x & 7) == 7);
    unsigned m4 = __ballot_sync(0xffffffffu, (x & 15) == 15);
    if (x & 1) {
        acc = __ballot_sync(m1, x & 0x10);
        if (x & 2) {
            acc ^= __ballot_sync(m2, x & 0x20) * 3;
            if (x & 4) {
                acc += __ballot_sync(m3, x & 0x40) >> 1;
                if (x & 8) acc ^= __ballot_sync(m4, x & 0x80) * 7;
                acc += __ballot_sync(m3, acc & 1) * 5;
            }
            acc ^= __ballot_sync(m2, acc & 2) >> 3;
        }
        acc += __popc(__ballot_sync(m1, acc & 4));
    }
    out[t] = acc + __ballot_sync(0xffffffffu, acc & 8);
}

// The same nesting read through __activemask() instead: what the chip reports as converged
// at each level and after each rejoin (3 levels, inside a per-lane loop).
extern "C" __global__ void nested_masks_in_loop(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], acc = 0;
    #pragma unroll 1
    for (unsigned i = 0; i < 3; i++) {
        unsigned y = x >> (i * 3);
        if (y & 1) {
            if (y & 2) {
                if (y & 4) acc += __activemask();
                else acc ^= __activemask() >> 1;
            }
            acc = acc * 3 + __popc(__activemask());
        }
        acc ^= __ballot_sync(0xffffffffu, acc & 1) + i;
    }
    out[t] = acc;
}

// An if inside a loop with a break in the inner branch: BSSY for the loop and for the if.
extern "C" __global__ void break_from_nested_if(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], acc = x & 0xff, i;
    for (i = 0; i < 8; i++) {
        if ((x >> i) & 1) {
            acc = acc * 7 + i;
            if ((acc & 0x1f) < 6) break;
        } else {
            acc ^= i << 8;
        }
    }
    unsigned done = __ballot_sync(0xffffffffu, i < 8);
    out[t] = acc + i * 0x1000000 + __popc(done);
}
