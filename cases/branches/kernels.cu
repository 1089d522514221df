// Uneven branches: arms of very different lengths chosen by per-thread data.
// Every kernel writes one u32 per thread into out[]; in[] holds one input word per thread.
#define LANE (threadIdx.x & 31)

// An if / else-if chain on input bits; each arm reads the mask of the lanes that took it.
// Launch: 2 blocks of 91 threads (the third warp of each block has 27 lanes).
extern "C" __global__ void uneven_if_chain(unsigned *out, const unsigned *in) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = in[t], r;
    if ((x & 3) == 0) {
        r = __activemask();
    } else if ((x & 3) == 1) {
        r = x;
        for (int i = 0; i < 5; i++) r = r * 31 + (x >> i);
        r ^= __activemask();
    } else if (x & 0x100) {
        r = __popc(__activemask()) * 1000 + (x >> 24);
    } else {
        r = __brev(x) + __ballot_sync(__activemask(), x & 0x200);
    }
    out[t] = r;
}

// Both sides of an if/else ballot the same bit over a mask taken before the branch; the long
// side first runs a data-dependent loop, so its lanes arrive at the ballot at different times.
extern "C" __global__ void ballot_both_sides(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], r;
    unsigned odd = __ballot_sync(0xffffffffu, x & 1);
    if (x & 1) {
        r = __ballot_sync(odd, x & 2) * 3;
    } else {
        unsigned n = (x >> 4) & 7;
        r = x;
        for (unsigned i = 0; i < n; i++) r = (r >> 1) ^ (r * 3);
        r += __ballot_sync(~odd, x & 2);
    }
    out[t] = r;
}

// A one-sided if whose body is long and data dependent, then a full-warp reduction after
// the rejoin: every lane must be back before the REDUX.
extern "C" __global__ void one_sided_then_reduce(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], v = x & 0xffff;
    if ((x >> 16) % 3 == 1) {
        for (unsigned i = 0; i < ((x >> 8) & 15); i++) v = (v * 5 + i) & 0xffff;
    }
    out[t] = __reduce_add_sync(0xffffffffu, v) ^ (v << 16);
}
