// Warp votes: all / any / uni (VOTE.EQ) / ballot, with partial and divergent masks.
// Every kernel writes one u32 per thread into out[]; in[] holds one input word per thread.
#define LANE (threadIdx.x & 31)

// Odd and even lanes vote in separate branches, each with its own constant mask; warp 0's
// inputs are forced so that its all-votes come out true.
extern "C" __global__ void vote_split_masks(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = LANE, x = in[t], r;
    bool w0 = t < 32;
    if (lane & 1) {
        r = __all_sync(0xaaaaaaaau, (x & 1) || w0)
          | __any_sync(0xaaaaaaaau, x > 0xf0000000u) << 1
          | __all_sync(0xaaaaaaaau, x != 0) << 2;
    } else {
        for (unsigned i = 0; i < (x & 3); i++) x = x * 3 + 1;
        r = __any_sync(0x55555555u, (x & 0xff) == 7) << 4
          | __all_sync(0x55555555u, lane < 30 || w0) << 5
          | __any_sync(0x55555555u, x & 0x80000000u) << 6;
    }
    out[t] = r | (x & 0xff00);
}

// __uni_sync (VOTE.EQ): true when the predicate is the same for every lane of the mask;
// with data-dependent predicates, predicates forced uniform in some warps, and a partial mask.
extern "C" __global__ void vote_uni(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = LANE, w = t >> 5, x = in[t], r;
    r = __uni_sync(0xffffffffu, (x & 1) && w != 1);          // warp 1: uniformly false
    r |= __uni_sync(0xffffffffu, (x & 2) || w == 2) << 1;    // warp 2: uniformly true
    if (lane < 12) r |= __uni_sync(0x00000fffu, x > 0x100u) << 2;
    else r |= __uni_sync(0xfffff000u, (x >> 31) == (lane & 1)) << 3;
    out[t] = r;
}

// Ballots by subsets whose masks are exactly the lanes there: every third lane, then the
// lower ones of those.
extern "C" __global__ void ballot_exact_subsets(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = LANE, x = in[t], r = x & 0xf;
    if (lane % 3 == 0) {
        r = __ballot_sync(0x49249249u, x & 1);
        if (lane < 12) r ^= __ballot_sync(0x00000249u, x & 2) << 8;
        else r += __ballot_sync(0x49249000u, x & 4) >> 12;
    } else if (lane % 3 == 1) {
        r = __ballot_sync(0x92492492u, x & 8) + 5;
    }
    out[t] = r;
}

// A warp-uniform loop steered by __any_sync: lanes have different amounts of work, the
// loop runs until no lane has any left; an __all_sync per round too.
extern "C" __global__ void any_steered_loop(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], work = x & 7, acc = 0, rounds = 0, alls = 0;
    while (__any_sync(0xffffffffu, work != 0)) {
        if (work) { acc = acc * 3 + work; work--; }
        alls += __all_sync(0xffffffffu, work != 0);
        rounds++;
    }
    out[t] = acc ^ (rounds << 24) ^ (alls << 20);
}
