// Cooperative groups in divergent code, as CUDA's samples use them: the warp-aggregated
// atomic increment of warpAggregatedAtomicsCG (coalesced_threads, thread_rank, size, shfl)
// and cg::reduce over the lanes that took a branch, then over a tiled_partition.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__device__ unsigned aggregated_increment(unsigned *counter) {
    cg::coalesced_group active = cg::coalesced_threads();
    unsigned first;
    if (active.thread_rank() == 0) first = atomicAdd(counter, active.size());
    first = active.shfl(first, 0);
    return first + active.thread_rank();
}

// each warp keeps the positive values of its lanes, three rounds, in its own 96 slots
extern "C" __global__ void cg_filter_per_warp(unsigned *out, const int *src) {
    unsigned warp = threadIdx.x / 32;
    unsigned *count = out + 4 * 96 + warp;
    for (int round = 0; round < 3; ++round) {
        int v = src[round * 128 + threadIdx.x];
        if (v > 0) out[warp * 96 + aggregated_increment(count)] = (unsigned)v;
    }
}

// the lanes whose value is not a multiple of 3 add their values; a tile of 8 then adds ranks
extern "C" __global__ void cg_coalesced_reduce(unsigned *out, const unsigned *in) {
    unsigned x = in[threadIdx.x];
    unsigned result = 0xdeadu;
    if (x % 3u != 0u) {
        cg::coalesced_group active = cg::coalesced_threads();
        unsigned sum = cg::reduce(active, x & 0xffffu, cg::plus<unsigned>());
        unsigned top = cg::reduce(active, x >> 16, cg::greater<unsigned>());
        result = sum ^ (top << 20) ^ (active.thread_rank() << 26);
    }
    cg::thread_block_tile<8> tile = cg::tiled_partition<8>(cg::this_thread_block());
    unsigned tile_sum = cg::reduce(tile, result & 0xffu, cg::plus<unsigned>());
    out[threadIdx.x] = result;
    out[128 + threadIdx.x] = tile_sum;
}
