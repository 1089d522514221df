// Unsigned and signed 64-bit division and remainder by per-thread divisors: thread (x, y)
// divides dividend x of the table by divisor y (edge values: 1, 2, 3, 2^32-1, 2^32, 2^63,
// 2^64-1 = -1, and random ones with and without a high word), so nvcc emits both the 32-bit
// fast path and its udiv64/sdiv64 subroutines (I2F.U64.RP, MUFU.RCP, F2I.U64.TRUNC and the
// IMAD.WIDE/IMAD.HI Newton chain with its carries).
#include <climits>

__device__ unsigned long long pair(const unsigned *in, unsigned k) {
    return (unsigned long long)in[2 * k + 1] << 32 | in[2 * k];
}

extern "C" __global__ void divmod64(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.y * blockDim.x + threadIdx.x;
    unsigned long long a = pair(in, threadIdx.x), d = pair(in, blockDim.x + threadIdx.y);
    long long sa = (long long)a, sd = (long long)d;
    if (sa == LLONG_MIN && sd == -1)
        sd = 1;                 // LLONG_MIN / -1 overflows: divide by 1 there instead
    unsigned long long q = a / d, r = a % d;
    unsigned long long sq = (unsigned long long)(sa / sd), sr = (unsigned long long)(sa % sd);
    unsigned *o = out + 8 * t;
    o[0] = (unsigned)q; o[1] = (unsigned)(q >> 32);
    o[2] = (unsigned)r; o[3] = (unsigned)(r >> 32);
    o[4] = (unsigned)sq; o[5] = (unsigned)(sq >> 32);
    o[6] = (unsigned)sr; o[7] = (unsigned)(sr >> 32);
}
