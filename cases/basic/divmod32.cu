// Unsigned and signed 32-bit division and remainder by per-thread divisors: thread (x, y)
// divides dividend x of the table by divisor y (edge values: 1, 2, 3, 2^31, 2^32-1 = -1,
// 2^31-1, 2^31+1, and random ones), so nvcc emits its generic division sequences.
#include <climits>

extern "C" __global__ void divmod32(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.y * blockDim.x + threadIdx.x;
    unsigned a = in[threadIdx.x], d = in[blockDim.x + threadIdx.y];
    int sa = (int)a, sd = (int)d;
    if (sa == INT_MIN && sd == -1)
        sd = 1;                 // INT_MIN / -1 overflows: divide by 1 there instead
    out[4 * t + 0] = a / d;
    out[4 * t + 1] = a % d;
    out[4 * t + 2] = (unsigned)(sa / sd);
    out[4 * t + 3] = (unsigned)(sa % sd);
}
