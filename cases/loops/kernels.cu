// Loops with per-lane trip counts, break and continue, and collectives inside and after.
// Every kernel writes one u32 per thread into out[]; in[] holds one input word per thread.
#define LANE (threadIdx.x & 31)

// continue on some iterations, break on a data-dependent condition, a ballot after the loop.
extern "C" __global__ void break_continue(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], acc = 0, i, n = x & 15;
    for (i = 0; i < n; i++) {
        if ((x >> (i + 4)) & 1) continue;
        acc = acc * 3 + i + 1;
        if (acc > (x >> 22)) break;
    }
    out[t] = acc ^ (i << 24) ^ __ballot_sync(0xffffffffu, acc & 1);
}

// Nested loops with per-lane inner trip counts; a ballot of the lanes inside the inner loop
// on every inner round.
extern "C" __global__ void nested_uneven_loops(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], acc = 1;
    unsigned outer = (x & 3) + 1;
    #pragma unroll 1
    for (unsigned i = 0; i < outer; i++) {
        unsigned inner = (x >> (2 + 2 * i)) & 3;
        #pragma unroll 1
        for (unsigned j = 0; j < inner; j++) {
            acc = acc * 7 + i * j + 1;
            acc += __popc(__ballot_sync(__activemask(), acc & 2));
        }
    }
    out[t] = acc;
}

// A bounded Collatz walk: data-dependent trip counts up to 40, with both branch sides in the
// body; the warp's longest walk by a max-reduction afterwards.
extern "C" __global__ void collatz_bounded(unsigned *out, const unsigned *in) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x, n = (in[t] & 0x3ff) + 1, steps = 0;
    #pragma unroll 1
    while (n != 1 && steps < 40) {
        if (n & 1) n = 3 * n + 1;
        else n >>= 1;
        steps++;
    }
    out[t] = steps | (__reduce_max_sync(__activemask(), steps) << 8) | (n << 16);
}
