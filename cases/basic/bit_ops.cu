// Integer intrinsics per thread in one block of 40 threads: popc, brev, clz, ffs,
// min/max/abs, umulhi/mulhi and a 64-bit multiply by a u64 parameter.
extern "C" __global__ void bit_ops(unsigned *out, const unsigned *in, unsigned long long k) {
    unsigned t = threadIdx.x;
    unsigned x = in[t], y = in[39 - t];
    int sx = (int)x, sy = (int)y;
    unsigned long long p = (unsigned long long)x * k + y;
    out[4 * t + 0] = (__popc(x) + (__brev(y) >> 20)) ^ (__clz(sx) * 0x10000u + __ffs(sy));
    out[4 * t + 1] = __umulhi(x, y) + (min(x, y) ^ (unsigned)max(sx, sy));
    out[4 * t + 2] = (unsigned)p ^ (unsigned)__mulhi(sx, sy);
    out[4 * t + 3] = (unsigned)(p >> 32) + (unsigned)abs(sx) * 3u + (unsigned)min(sx, -sy);
}
