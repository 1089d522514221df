// CUB's single-pass scan across blocks (decoupled look-back), as DeviceScan runs it: each
// block scans its tile, publishes its aggregate and then its inclusive prefix in a tile
// status word, and the next tiles' first warp spins on those words (ScanTileState,
// TilePrefixCallbackOp). The status words (32 padding descriptors, then one per tile: status
// SCAN_TILE_INVALID = 99, value 0) are the third buffer's initial words.
#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/std/functional>

using TileState = cub::ScanTileState<unsigned>;
using Prefix = cub::TilePrefixCallbackOp<unsigned, cuda::std::plus<>, TileState>;
using Scan = cub::BlockScan<unsigned, 128>;

extern "C" __global__ void cub_decoupled_lookback(unsigned *out, const unsigned *in, unsigned long long *tiles) {
    __shared__ typename Scan::TempStorage scan_temp;
    __shared__ typename Prefix::TempStorage prefix_temp;
    TileState state;
    state.Init(gridDim.x, tiles, (gridDim.x + 32) * sizeof(unsigned long long));
    int tile = blockIdx.x;
    unsigned items[4];
    for (int k = 0; k < 4; ++k) items[k] = in[tile * 512 + threadIdx.x * 4 + k];
    if (tile == 0) {
        unsigned aggregate;
        Scan(scan_temp).ExclusiveSum(items, items, aggregate);
        if (threadIdx.x == 0) state.SetInclusive(0, aggregate);
    } else {
        Prefix prefix(state, prefix_temp, cuda::std::plus<>{}, tile);
        Scan(scan_temp).ExclusiveSum(items, items, prefix);
    }
    for (int k = 0; k < 4; ++k) out[tile * 512 + threadIdx.x * 4 + k] = items[k];
}
