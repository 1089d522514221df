// Warp-synchronous memory: lanes of one warp hand words to each other through shared or
// global memory with only __syncwarp() (or nothing) between the store and the load. On the
// chip the lanes of a converged warp issue each instruction together, so one instruction's
// accesses of every lane are done before the next instruction of that warp; ptxas turns
// these __syncwarp() into NOP or drops them. CUB kernels use the CUDA toolkit's own CUB;
// the rest are written out by hand. Integer only.
#include <cub/warp/warp_exchange.cuh>
#include <cub/warp/warp_load.cuh>
#include <cub/warp/warp_store.cuh>
#include <cub/block/block_store.cuh>

#define LANE (threadIdx.x & 31)

// Lanes of this thread's warp that exist (a partial last warp has fewer than 32).
__device__ __forceinline__ unsigned warp_width() {
    unsigned base = threadIdx.x & ~31u;
    return min(32u, blockDim.x - base);
}

// Lane l + k of a warp of n lanes, wrapping (k < n; no division, which ptxas would do in float).
__device__ __forceinline__ unsigned lane_above(unsigned l, unsigned k, unsigned n) {
    return l + k < n ? l + k : l + k - n;
}

// CUB WarpExchange (shared-memory algorithm), blocked to striped: 4 items per thread, 32-lane
// warps. Thread t loads in[4t..4t+3]; afterwards item i of lane l is the warp's element
// 32*i + l. 96 threads (3 warps).
extern "C" __global__ void cub_exchange_b2s(unsigned *out, const unsigned *in) {
    typedef cub::WarpExchange<unsigned, 4, 32> Exchange;
    __shared__ typename Exchange::TempStorage temp[3];
    unsigned t = threadIdx.x, items[4];
    for (int i = 0; i < 4; i++) items[i] = in[4 * t + i];
    Exchange(temp[t / 32]).BlockedToStriped(items, items);
    for (int i = 0; i < 4; i++) out[4 * t + i] = items[i] + i;
}

// CUB WarpExchange, striped to blocked, in 16-lane logical warps: 2 items per thread.
// 48 threads: the second hardware warp is a partial one of 16 lanes (logical warp 2).
extern "C" __global__ void cub_exchange_s2b(unsigned *out, const unsigned *in) {
    typedef cub::WarpExchange<unsigned, 2, 16> Exchange;
    __shared__ typename Exchange::TempStorage temp[3];
    unsigned t = threadIdx.x, w = t / 16, l = t % 16, items[2];
    for (int i = 0; i < 2; i++) items[i] = in[32 * w + 16 * i + l];
    Exchange(temp[w]).StripedToBlocked(items, items);
    for (int i = 0; i < 2; i++) out[2 * t + i] = items[i] ^ (t << 24);
}

// CUB WarpLoad / WarpStore with WARP_LOAD_TRANSPOSE and WARP_STORE_TRANSPOSE: striped
// (coalesced) global loads, a shared-memory transpose to blocked, a per-thread mix of the 4
// blocked items, and the reverse transpose on the way out. 32 threads.
extern "C" __global__ void cub_warp_load_store(unsigned *out, const unsigned *in) {
    typedef cub::WarpLoad<unsigned, 4, cub::WARP_LOAD_TRANSPOSE, 32> Load;
    typedef cub::WarpStore<unsigned, 4, cub::WARP_STORE_TRANSPOSE, 32> Store;
    __shared__ typename Load::TempStorage load_temp;
    __shared__ typename Store::TempStorage store_temp;
    unsigned items[4], mixed[4];
    Load(load_temp).Load(in, items);
    for (int i = 0; i < 4; i++) mixed[i] = items[i] + (items[(i + 1) & 3] >> 3) + i * LANE;
    Store(store_temp).Store(out, mixed);
}

// CUB BlockStore with BLOCK_STORE_WARP_TRANSPOSE: each thread's 4 blocked items go through a
// per-warp shared-memory transpose and leave as warp-striped coalesced stores. 128 threads.
extern "C" __global__ void cub_block_store_warp_transpose(unsigned *out, const unsigned *in) {
    typedef cub::BlockStore<unsigned, 128, 4, cub::BLOCK_STORE_WARP_TRANSPOSE> Store;
    __shared__ typename Store::TempStorage temp;
    unsigned t = threadIdx.x, x = in[t], items[4];
    for (int i = 0; i < 4; i++) items[i] = x * (i + 1) + (x >> (8 * i));
    Store(temp).Store(out, items);
}

// Hand-written warp transpose through shared memory: lane l stores its 4 items at slots
// 4l..4l+3 of its warp's tile, __syncwarp(), then reads slots n*i + l, where n is the number
// of lanes in its warp. 80 threads: the last warp has 16 lanes.
extern "C" __global__ void smem_transpose(unsigned *out, const unsigned *in) {
    __shared__ unsigned tile[3][128];
    unsigned t = threadIdx.x, w = t / 32, l = LANE, n = warp_width(), x = in[t];
    for (int i = 0; i < 4; i++) tile[w][4 * l + i] = x + (x >> (8 * i)) * (i + 1);
    __syncwarp();
    unsigned acc = 0;
    for (int i = 0; i < 4; i++) acc = acc * 31 + tile[w][n * i + l];
    out[t] = acc;
}

// The warp-synchronous reduction tail of the CUDA reduction sample (reduce4/5 before
// cooperative groups): volatile shared memory, no __syncwarp. Each thread sums 2 words, the
// block halves down to 64 with __syncthreads, and warp 0 finishes alone. Every word of the
// tail is written out (slot 0 is the block's sum). 2 blocks of 128 threads.
__device__ void warp_reduce_tail(volatile unsigned *v, unsigned tid) {
    v[tid] += v[tid + 32];
    v[tid] += v[tid + 16];
    v[tid] += v[tid + 8];
    v[tid] += v[tid + 4];
    v[tid] += v[tid + 2];
    v[tid] += v[tid + 1];
}

extern "C" __global__ void volatile_reduce_tail(unsigned *out, const unsigned *in) {
    __shared__ unsigned v[128];
    unsigned tid = threadIdx.x, g = blockIdx.x * 256 + tid;
    v[tid] = in[g] + in[g + 128];
    __syncthreads();
    if (tid < 64) v[tid] += v[tid + 64];
    __syncthreads();
    if (tid < 32) {
        warp_reduce_tail(v, tid);
        out[blockIdx.x * 32 + tid] = v[tid];
    }
}

// Lane-to-lane hand-offs through global memory in one block: each lane stores a word,
// __syncwarp(), loads the word of the lane 1 above (wrapping in its warp), and hands the sum
// on to the lane 3 above through a second region the same way. 2 blocks of 96 threads.
extern "C" __global__ void global_handoff(unsigned *out, unsigned *scratch, const unsigned *in) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x, l = LANE, n = warp_width();
    unsigned base = g - l, total = gridDim.x * blockDim.x, x = in[g];
    scratch[g] = x;
    __syncwarp();
    unsigned y = scratch[base + lane_above(l, 1, n)] * 5 + x;
    scratch[total + g] = y;
    __syncwarp();
    out[g] = scratch[total + base + lane_above(l, 3, n)] ^ y;
}

// Write-after-read through global memory: each lane loads the word of the lane 1 above
// (wrapping in its warp), __syncwarp(), then overwrites its own word. Every lane must read
// the old word. 48 threads: the second warp has 16 lanes.
extern "C" __global__ void war_global(unsigned *buf) {
    unsigned t = threadIdx.x, l = LANE, n = warp_width();
    unsigned y = buf[t - l + lane_above(l, 1, n)];
    __syncwarp();
    buf[t] = y * 3 + l;
}

// Write-after-read and read-after-write through shared memory: store, __syncwarp(), read the
// lane 1 above, __syncwarp(), overwrite the own slot, __syncwarp(), read the lane 5 above.
// 96 threads.
extern "C" __global__ void war_shared(unsigned *out, const unsigned *in) {
    __shared__ unsigned s[96];
    unsigned t = threadIdx.x, l = LANE, base = t - l, x = in[t];
    s[t] = x;
    __syncwarp();
    unsigned y = s[base + ((l + 1) & 31)];
    __syncwarp();
    s[t] = y + x * 7;
    __syncwarp();
    out[t] = s[base + ((l + 5) & 31)] - l;
}
