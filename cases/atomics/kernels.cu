// Atomics with leader election, on shared and global memory, in several warps and blocks.
// Only order-independent results are written (final counters; the old value of an atomic
// that nobody else touches), so the expected words do not depend on the order of atomics.
#define LANE (threadIdx.x & 31)

// Lanes with the same key elect a leader (__match_any_sync), which adds the group's size to
// a shared counter; after the barrier each thread reads its key's total. 91-thread block.
extern "C" __global__ void leader_per_key_shared(unsigned *out, const unsigned *in) {
    __shared__ unsigned cnt[8];
    unsigned t = threadIdx.x, lane = LANE, x = in[t], key = x & 7;
    if (t < 8) cnt[t] = 0;
    __syncthreads();
    unsigned peers = __match_any_sync(__activemask(), key);
    if (lane == __ffs(peers) - 1) atomicAdd(&cnt[key], __popc(peers));
    __syncthreads();
    out[t] = cnt[key] * 256 + __popc(peers);
}

// Warp-aggregated allocation inside each side of an if/else: the leader of the lanes there
// takes a block of slots from its own global counter (one per warp and side), broadcasts
// the old value, and each lane gets base + rank. 3 blocks of 64 threads.
extern "C" __global__ void aggregated_alloc(unsigned *out, unsigned *counters, const unsigned *in) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x, lane = LANE, x = in[g], w = g >> 5;
    if (x & 1) {
        unsigned active = __activemask(), leader = __ffs(active) - 1, base = 0;
        if (lane == leader) base = atomicAdd(&counters[w * 2 + 1], __popc(active));
        base = __shfl_sync(active, base, leader);
        out[g] = base + __popc(active & ((1u << lane) - 1)) + 0x10000u;
    } else {
        unsigned active = __activemask(), leader = 31 - __clz(active), base = 0;
        if (lane == leader) base = atomicAdd(&counters[w * 2], __popc(active) * 2);
        base = __shfl_sync(active, base, leader);
        out[g] = base + 2 * __popc(active >> lane);
    }
}

// Global atomics from 3 blocks of 91 threads: add, min, max, or, xor, inc (wrapping) and a
// warp-uniform increment (ptxas aggregates it with REDUX); only the final values are checked.
extern "C" __global__ void global_atomic_mix(unsigned *c, const unsigned *in) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x, x = in[g], k = x & 3;
    if (x & 0x100) atomicAdd(&c[k], x & 0xff);
    else atomicXor(&c[4 + k], x);
    atomicMin(&c[8 + k], x >> 4);
    atomicMax((int *)&c[12 + k], (int)x);
    if (x & 0x200) atomicOr(&c[16 + k], 1u << (x >> 27));
    atomicInc(&c[20 + k], 10);
    atomicAdd(&c[24], 1);
}

// A compare-and-swap loop on shared memory adding each thread's value (so the total does
// not depend on who wins when), and a CAS loop computing a maximum; 96 threads.
extern "C" __global__ void cas_loops_shared(unsigned *out, const unsigned *in) {
    __shared__ unsigned total, best;
    unsigned t = threadIdx.x, x = in[t];
    if (t == 0) { total = 0; best = 0; }
    __syncthreads();
    unsigned old = total, seen;
    do { seen = old; old = atomicCAS(&total, seen, seen + (x & 0xffff)); } while (old != seen);
    old = best;
    while (old < x) { seen = old; old = atomicCAS(&best, seen, x); if (old == seen) break; }
    __syncthreads();
    out[t] = total ^ best ^ (x & 0xff);
}
