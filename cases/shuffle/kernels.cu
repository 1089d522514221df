// Warp shuffles: idx / up / down / xor at widths 2..32, lanes out of range, partial masks.
// Every kernel writes one u32 per thread into out[]; in[] holds one input word per thread.
#define LANE (threadIdx.x & 31)

// __shfl_sync at every width, source lanes past the segment, negative and data-dependent.
extern "C" __global__ void shfl_idx_widths(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = LANE, x = in[t], r;
    r = __shfl_sync(0xffffffffu, x, (x >> 3) & 63, 2);
    r ^= __shfl_sync(0xffffffffu, x + 1, lane * 5 + 3, 4);
    r += __shfl_sync(0xffffffffu, x ^ r, 37 - (int)lane, 8) * 3;
    r ^= __shfl_sync(0xffffffffu, r, (int)(x & 0x3f) - 20, 16);
    r += __shfl_sync(0xffffffffu, r, x & 0xff, 32);
    out[t] = r;
}

// __shfl_up_sync and __shfl_down_sync with per-lane deltas, some past the segment (the lane
// keeps its own value), at widths 4, 8, 16 and 32.
extern "C" __global__ void shfl_up_down_widths(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = LANE, x = in[t], r;
    r = __shfl_up_sync(0xffffffffu, x, lane % 5, 4);
    r += __shfl_down_sync(0xffffffffu, r ^ x, (x >> 8) % 11, 8) << 1;
    r ^= __shfl_up_sync(0xffffffffu, r, 9, 16);
    r += __shfl_down_sync(0xffffffffu, r, 3 + (lane & 1), 32);
    r ^= __shfl_up_sync(0xffffffffu, r * 7, 1, 2);
    out[t] = r;
}

// __shfl_xor_sync with lane masks below, at and above the width (above: own value).
extern "C" __global__ void shfl_xor_widths(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], r = x;
    r += __shfl_xor_sync(0xffffffffu, r, 1, 2);
    r ^= __shfl_xor_sync(0xffffffffu, r, 3, 4) * 5;
    r += __shfl_xor_sync(0xffffffffu, r, 12, 8);
    r ^= __shfl_xor_sync(0xffffffffu, r, (x >> 28) | 1, 16);
    r += __shfl_xor_sync(0xffffffffu, r, 17, 32);
    out[t] = r;
}

// Shuffles inside divergent branches with half-warp masks, then among every fourth lane
// after the rejoin; sources always inside the mask.
extern "C" __global__ void shfl_divergent_subsets(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = LANE, x = in[t], r;
    if (lane < 16) {
        r = __shfl_xor_sync(0x0000ffffu, x, 5);
    } else {
        r = x;
        for (unsigned i = 0; i < (x & 3); i++) r = r * 13 + i;
        r = __shfl_down_sync(0xffff0000u, r, 2);
    }
    if (lane % 4 == 0) r += __shfl_sync(0x11111111u, r, lane ^ 4);
    out[t] = r;
}

// An inclusive prefix sum with __shfl_up_sync over each 16-lane segment of a 48-thread
// block (its second warp has 16 lanes), then the segment total from its last lane.
extern "C" __global__ void shfl_scan_partial_warp(unsigned *out, const unsigned *in) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x, lane = LANE, x = in[t] & 0xffff, v = x;
    unsigned m = __activemask();
    for (unsigned d = 1; d < 16; d <<= 1) {
        unsigned u = __shfl_up_sync(m, v, d, 16);
        if ((lane & 15) >= d) v += u;
    }
    out[t] = v + (__shfl_sync(m, v, 15, 16) << 16);
}

// 64-bit values through shuffles (two SHFLs each), with a data-dependent source lane.
extern "C" __global__ void shfl_u64(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = LANE, x = in[t];
    unsigned long long v = ((unsigned long long)x << 32) | (x * 0x9e3779b9u);
    v = __shfl_sync(0xffffffffu, v, x % 32);
    v += __shfl_down_sync(0xffffffffu, v, 7, 16);
    v ^= __shfl_xor_sync(0xffffffffu, v, lane & 6);
    out[t] = (unsigned)(v >> 32) ^ (unsigned)v;
}
