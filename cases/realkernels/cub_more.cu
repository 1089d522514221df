// More of CUB, as a library user writes it: merge sorts over a block and over each warp
// (with a partial tile), a radix rank by __match_any_sync, a partial-tile reduction and a
// block-wide exclusive scan.
#include <cub/block/block_merge_sort.cuh>
#include <cub/warp/warp_merge_sort.cuh>
#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

struct Less {
    __device__ bool operator()(unsigned a, unsigned b) const { return a < b; }
};

// 500 valid keys of 512 (a partial tile): CUB leaves the slots past the valid items
// unspecified, so only the first 500 are written
extern "C" __global__ void cub_block_merge_sort(const unsigned *in, unsigned *out) {
    using Sort = cub::BlockMergeSort<unsigned, 128, 4>;
    __shared__ typename Sort::TempStorage temp;
    unsigned keys[4];
    for (int k = 0; k < 4; ++k) keys[k] = in[threadIdx.x * 4 + k];
    Sort(temp).Sort(keys, Less(), 500, 0xffffffffu);
    for (int k = 0; k < 4; ++k)
        if (threadIdx.x * 4 + k < 500) out[threadIdx.x * 4 + k] = keys[k];
}

// each warp sorts its own 128 keys (4 per lane, blocked over the warp)
extern "C" __global__ void cub_warp_merge_sort(const unsigned *in, unsigned *out) {
    using Sort = cub::WarpMergeSort<unsigned, 4, 32>;
    __shared__ typename Sort::TempStorage temp[4];
    unsigned keys[4];
    for (int k = 0; k < 4; ++k) keys[k] = in[threadIdx.x * 4 + k];
    Sort(temp[threadIdx.x / 32]).Sort(keys, Less());
    for (int k = 0; k < 4; ++k) out[threadIdx.x * 4 + k] = keys[k];
}

// ranks by the low 4 bits with BlockRadixRankMatch (__match_any_sync per digit); each key's
// digit is written at its rank, so out[] is the digits sorted and every slot is written once
extern "C" __global__ void cub_block_radix_rank_match(const unsigned *in, unsigned *out) {
    using Rank = cub::BlockRadixRankMatch<128, 4, false>;
    __shared__ typename Rank::TempStorage temp;
    unsigned keys[4];
    int ranks[4];
    for (int k = 0; k < 4; ++k) keys[k] = in[threadIdx.x * 4 + k];
    Rank(temp).RankKeys(keys, ranks, cub::BFEDigitExtractor<unsigned>(0, 4));
    for (int k = 0; k < 4; ++k) out[ranks[k]] = keys[k] & 15u;
}

// the sum of the first 77 values (thread 0's result) and an exclusive prefix sum of 512
extern "C" __global__ void cub_block_reduce_scan(const unsigned *in, unsigned *out) {
    using Reduce = cub::BlockReduce<unsigned, 128>;
    using Scan = cub::BlockScan<unsigned, 128, cub::BLOCK_SCAN_WARP_SCANS>;
    __shared__ typename Reduce::TempStorage reduce_temp;
    __shared__ typename Scan::TempStorage scan_temp;
    unsigned x = in[threadIdx.x * 4];
    unsigned partial = Reduce(reduce_temp).Sum(x, 77);
    if (threadIdx.x == 0) out[512] = partial;
    unsigned items[4];
    for (int k = 0; k < 4; ++k) items[k] = in[threadIdx.x * 4 + k];
    Scan(scan_temp).ExclusiveSum(items, items);
    for (int k = 0; k < 4; ++k) out[threadIdx.x * 4 + k] = items[k];
}
