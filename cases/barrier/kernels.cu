// Block barriers across warps: __syncthreads, its count/and/or forms (BAR.RED) and named
// barriers with thread counts (bar.sync / bar.arrive through inline PTX).
// Every kernel writes one u32 per thread into out[]; in[] holds one input word per thread.
#define LANE (threadIdx.x & 31)

// __syncthreads_count / _and / _or after divergent per-thread work, in 2 blocks of 91
// threads; block 1's and-predicate is forced true, the or-predicate holds for one thread.
extern "C" __global__ void syncthreads_count_and_or(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t, x = in[g], y = x;
    for (unsigned i = 0; i < (x & 7); i++) y = y * 5 + i;
    unsigned c = __syncthreads_count(y & 1);
    unsigned a = __syncthreads_and((x & 0x10) || blockIdx.x == 1);
    unsigned o = __syncthreads_or(t == 77 && blockIdx.x == 0);
    unsigned c2 = __syncthreads_count(t < c);
    out[g] = c | (c2 << 8) | (a << 16) | (o << 17) | ((y & 0xff) << 24);
}

// Producer warps 0-1 fill shared memory and arrive at barrier 1 (bar.arrive 1, 128) without
// waiting; consumer warps 2-3 wait there (bar.sync 1, 128), then read what was produced.
extern "C" __global__ void named_arrive_sync(unsigned *out, const unsigned *in) {
    __shared__ unsigned s[64];
    unsigned t = threadIdx.x, x = in[t];
    if (t < 64) {
        unsigned v = x;
        for (unsigned i = 0; i < (x & 3); i++) v = v * 3 + 1;
        s[t] = v;
        asm volatile("bar.arrive 1, 128;" ::: "memory");
        out[t] = v;
    } else {
        asm volatile("bar.sync 1, 128;" ::: "memory");
        out[t] = s[(t * 7) & 63] ^ s[127 - t] ^ x;
    }
}

// Two pairs of warps synchronize on their own named barrier (id 2 + pair, 64 threads; the id
// in a register), exchanging through shared memory, then the whole block meets at barrier 0.
extern "C" __global__ void named_pairs(unsigned *out, const unsigned *in) {
    __shared__ unsigned s[128];
    unsigned t = threadIdx.x, w = t >> 5, x = in[t], v = x;
    if (w & 1) { for (unsigned i = 0; i < (x & 7); i++) v = (v >> 1) ^ (v * 11); }
    s[t] = v;
    unsigned id = 2 + (w >> 1);
    asm volatile("bar.sync %0, 64;" :: "r"(id) : "memory");
    unsigned partner = s[t ^ 32];
    __syncthreads();
    s[t] = partner + v;
    __syncthreads();
    out[t] = s[(t + 64) & 127] ^ partner;
}

// A loop with a __syncthreads in every round and a shared ping-pong buffer; per-thread
// work of different lengths before each barrier, in a 48-thread block (partial warp).
extern "C" __global__ void syncthreads_pingpong(unsigned *out, const unsigned *in) {
    __shared__ unsigned buf[2][48];
    unsigned t = threadIdx.x, x = in[blockIdx.x * 48 + t], v = x;
    buf[0][t] = v;
    __syncthreads();
    #pragma unroll 1
    for (unsigned r = 0; r < 5; r++) {
        unsigned a = buf[r & 1][(t + r + 1) % 48], b = buf[r & 1][(t * 5 + r) % 48];
        v = a + (b >> 1);
        if ((v ^ t) & 1) { for (unsigned i = 0; i < (v & 3); i++) v = v * 9 + i; }
        buf[(r + 1) & 1][t] = v;
        __syncthreads();
    }
    out[blockIdx.x * 48 + t] = v;
}
