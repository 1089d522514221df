// 64-bit atomics on global memory in divergent code: unsigned long long add, min, max, and,
// or, xor, exchange and compare-and-swap, signed long long min and max, and double add. Every final word is independent of the order the threads get there: the sums are of
// integers (the double ones of multiples of 1/4 far below 2^53, so exact), the CAS loops build
// a maximum and a product of odd numbers (mod 2^64), and the values returned are used only as
// tickets (each marks its own slot, so every slot below the count is marked once).
typedef unsigned long long u64;

extern "C" __global__ void atomics64_global(u64 *acc, long long *sacc, double *dacc, u64 *marks,
                                            const u64 *in, unsigned n) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    u64 v = in[t % n];
    if (v % 5 == 0) return;                                   // early exit, by data
    if (lane & 1) {
        atomicAdd(&acc[t & 3], v);
        atomicMax(&acc[4], v);
    } else {
        atomicAdd(&acc[5 + (t % 3)], v >> 7);
        atomicMin(&acc[8], v);
        if (lane & 2) atomicAnd(&acc[9], v | 0xff00ff00ff00ff00ull);
        else atomicOr(&acc[10], v & 0x0101010101010101ull);
    }
    atomicXor(&acc[11], v * 0x9e3779b97f4a7c15ull);
    atomicMax(&sacc[0], (long long)v);
    atomicMin(&sacc[1], (long long)(v ^ (v << 17)));
    if (lane < 20) atomicAdd(&dacc[lane & 1], (double)(v & 0xffff) * 0.25);
    // a product of odd numbers by CAS (commutative, so any order gives the same word)
    u64 odd = v | 1, seen = acc[12], prev;
    while ((prev = atomicCAS(&acc[12], seen, seen * odd)) != seen) seen = prev;
    // tickets: a returning add hands out 0, 1, 2, ... once each
    u64 k = atomicAdd(&acc[13], 1ull);
    atomicExch(&marks[k], k + 1);
    double d = atomicAdd(&dacc[2], 1.0);
    atomicOr(&marks[256 + (unsigned)d], 1ull);
}
