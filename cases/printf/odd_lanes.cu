// printf in divergent code: only the odd threads of each block print, two blocks of 48
// threads (a partial second warp); every thread then writes its launch index.
#include <cstdio>

extern "C" __global__ void odd_lanes(unsigned *out) {
    unsigned t = threadIdx.x, b = blockIdx.x;
    unsigned g = b * blockDim.x + t;
    if (t & 1) printf("block %u thread %u: lane %u of warp %u\n", b, t, t % 32, t / 32);
    out[g] = g;
}
