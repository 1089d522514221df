// Warp-level pieces of CUB and cooperative groups with logical warps and partitions:
// segmented reductions and scans over 16- and 8-lane logical warps, labeled and binary
// partitions (MATCH.ANY), and a scan over the lanes that took a branch.
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda/functional>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

// out[t]: head-segmented sum over a 16-lane logical warp (a segment starts where in & 7 == 0,
// and at lane 0 of the logical warp; the segment's first lane gets its sum, the others write
// 0xffffffff);
// out[128+t]: inclusive max-scan over an 8-lane logical warp
extern "C" __global__ void cub_logical_warps(unsigned *out, const unsigned *in) {
    using Reduce16 = cub::WarpReduce<unsigned, 16>;
    using Scan8 = cub::WarpScan<unsigned, 8>;
    __shared__ typename Reduce16::TempStorage reduce_temp[8];
    __shared__ typename Scan8::TempStorage scan_temp[16];
    unsigned x = in[threadIdx.x];
    int head = (x & 7u) == 0u;
    unsigned seg = Reduce16(reduce_temp[threadIdx.x / 16]).HeadSegmentedSum(x & 0xffffu, head);
    out[threadIdx.x] = head || threadIdx.x % 16u == 0u ? seg : 0xffffffffu;   // other lanes' values are unspecified
    unsigned m;
    Scan8(scan_temp[threadIdx.x / 8]).InclusiveScan(x >> 8, m, cuda::maximum<>{});
    out[128 + threadIdx.x] = m;
}

// partitions of each warp by a data label, then by a predicate, and a scan of a branch's lanes
extern "C" __global__ void cg_partitions(unsigned *out, const unsigned *in) {
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
    unsigned x = in[threadIdx.x];
    unsigned label = x % 5u;
    cg::coalesced_group same = cg::labeled_partition(warp, label);
    unsigned sum = cg::reduce(same, x & 0xfffu, cg::plus<unsigned>());
    out[threadIdx.x] = sum ^ (same.thread_rank() << 16) ^ (same.size() << 24);
    cg::coalesced_group half = cg::binary_partition(warp, (x & 0x10u) != 0u);
    out[128 + threadIdx.x] = cg::exclusive_scan(half, x & 0xffu, cg::plus<unsigned>());
    unsigned s = 0xbeefu;
    if (x & 0x100u) {
        cg::coalesced_group active = cg::coalesced_threads();
        s = cg::inclusive_scan(active, (x >> 20) & 0xfu, cg::plus<unsigned>());
    }
    out[256 + threadIdx.x] = s;
}
