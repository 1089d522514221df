// MATCH (__match_any_sync / __match_all_sync) and REDUX (__reduce_*_sync, sm_80+).
// in[] holds one input word per thread; outputs as named per kernel.
#define LANE (threadIdx.x & 31)

// Groups of lanes holding the same key (full warp), then again inside the odd lanes' branch.
extern "C" __global__ void match_any_groups(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = LANE, x = in[t];
    unsigned m = __match_any_sync(0xffffffffu, x % 5);
    unsigned r = m ^ ((__ffs(m) - 1) << 27);
    if (lane & 1) r += __match_any_sync(0xaaaaaaaau, (x >> 8) & 3) * 3;
    out[t] = r;
}

// __match_all_sync: warp 1's value is uniform, the others' are not; then a partial mask
// (lanes 0-7) where warp 2's value is uniform.
extern "C" __global__ void match_all_partial(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = LANE, w = t >> 5, x = in[t];
    int p1 = 7, p2 = 7;
    unsigned m1 = __match_all_sync(0xffffffffu, w == 1 ? 42u : x & 1, &p1);
    unsigned m2 = 0xabcdu;
    if (lane < 8) m2 = __match_all_sync(0x000000ffu, w == 2 ? w : x >> 30, &p2);
    out[t] = m1 ^ (m2 << 4) ^ (p1 << 1) ^ (p2 << 2);
}

// Every REDUX flavour over the full warp: add, unsigned and signed min/max, and, or, xor.
extern "C" __global__ void redux_all_ops(unsigned *sum, unsigned *minmax, unsigned *bits, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t];
    sum[t] = __reduce_add_sync(0xffffffffu, x);
    unsigned umin = __reduce_min_sync(0xffffffffu, x), umax = __reduce_max_sync(0xffffffffu, x);
    int smin = __reduce_min_sync(0xffffffffu, (int)x), smax = __reduce_max_sync(0xffffffffu, (int)x);
    minmax[t] = (t & 1) ? umin ^ (unsigned)smin : umax ^ (unsigned)smax;
    bits[t] = __reduce_and_sync(0xffffffffu, x | 0x0f0f0000u) ^ __reduce_or_sync(0xffffffffu, x & 0x00ff00ffu)
            ^ (__reduce_xor_sync(0xffffffffu, x) << 1);
}

// Reductions inside divergent branches of a 91-thread block, over the lanes there.
extern "C" __global__ void redux_divergent(unsigned *out, const unsigned *in) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x, x = in[t], r;
    if (x & 1) {
        unsigned m = __activemask();
        r = __reduce_add_sync(m, x >> 16) + __reduce_max_sync(m, (int)x);
    } else {
        for (unsigned i = 0; i < (x & 6); i++) x = x * 3 + 1;
        r = __reduce_min_sync(__activemask(), x) ^ __reduce_or_sync(__activemask(), x & 0xf0f0u);
    }
    out[t] = r;
}

// 64-bit match: MATCH.ANY.U64 on (value, lane parity) pairs.
extern "C" __global__ void match_any_u64(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t];
    unsigned long long key = ((unsigned long long)(x & 3) << 32) | (t & 1);
    out[t] = __match_any_sync(0xffffffffu, key);
}
