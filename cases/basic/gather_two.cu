// Threads at or past n, and those whose input says so, return early (collective-free);
// the rest read two input buffers through 64-bit pointers with signed per-thread offsets.
extern "C" __global__ void gather_two(unsigned *out, const unsigned *a, const int *b, unsigned n) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n || (a[t] & 7u) == 5u) return;
    long long off = b[t] >> 27;                 // -16..15
    const unsigned *p = a + 32 + off;           // signed 64-bit pointer arithmetic
    const int *q = b + (t * 3u) % n;
    out[t] = p[0] + (unsigned)q[0] * 3u + (unsigned)off + p[t & 3];
}
