// CUB's block-wide primitives, as a library user writes them: BlockRadixSort (warp scans,
// shuffles, ballots and shared-memory exchanges) and BlockHistogram with shared atomics
// (ptxas's ATOMS.POPC.INC for atomicAdd(&bin, 1)).
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_histogram.cuh>

extern "C" __global__ void cub_block_radix_sort(const unsigned *in, unsigned *out) {
    using Sort = cub::BlockRadixSort<unsigned, 128, 4>;
    __shared__ typename Sort::TempStorage temp;
    unsigned keys[4];
    for (int k = 0; k < 4; ++k) keys[k] = in[threadIdx.x * 4 + k];
    Sort(temp).Sort(keys);
    for (int k = 0; k < 4; ++k) out[threadIdx.x * 4 + k] = keys[k];
}

extern "C" __global__ void cub_block_histogram(const unsigned *in, unsigned *out) {
    using Histogram = cub::BlockHistogram<unsigned char, 128, 4, 256, cub::BLOCK_HISTO_ATOMIC>;
    __shared__ typename Histogram::TempStorage temp;
    __shared__ unsigned bins[256];
    unsigned char samples[4];
    for (int k = 0; k < 4; ++k) samples[k] = (unsigned char)(in[threadIdx.x * 4 + k] % 37u);
    Histogram(temp).Histogram(samples, bins);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += 128) out[b] = bins[b];
}
