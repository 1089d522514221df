// CUB block primitives for a block of 128 threads, instantiated for int and float: reductions
// and scans with each algorithm, loads and stores with each arrangement, exchanges,
// discontinuities, adjacent differences, histograms and shuffles.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_discontinuity.cuh>
#include <cub/block/block_adjacent_difference.cuh>
#include <cub/block/block_histogram.cuh>
#include <cub/block/block_shuffle.cuh>

constexpr int THREADS = 128;

#define BLOCK_REDUCE(NAME, T, ALGO)                                                 \
  extern "C" __global__ void NAME(const T *in, T *out) {                            \
    using BR = cub::BlockReduce<T, THREADS, cub::ALGO>;                             \
    __shared__ typename BR::TempStorage tmp;                                        \
    T r = BR(tmp).Sum(in[blockIdx.x * THREADS + threadIdx.x]);                       \
    if (threadIdx.x == 0) out[blockIdx.x] = r;                                      \
  }

BLOCK_REDUCE(cub_block_reduce_warp_reductions_int, int, BLOCK_REDUCE_WARP_REDUCTIONS)
BLOCK_REDUCE(cub_block_reduce_raking_int, int, BLOCK_REDUCE_RAKING)
BLOCK_REDUCE(cub_block_reduce_raking_commutative_int, int, BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY)
BLOCK_REDUCE(cub_block_reduce_warp_reductions_float, float, BLOCK_REDUCE_WARP_REDUCTIONS)
BLOCK_REDUCE(cub_block_reduce_raking_float, float, BLOCK_REDUCE_RAKING)

extern "C" __global__ void cub_block_reduce_max_items_float(const float *in, float *out) {
  using BR = cub::BlockReduce<float, THREADS>;
  __shared__ BR::TempStorage tmp;
  float items[4];
  for (int k = 0; k < 4; k++) items[k] = in[threadIdx.x * 4 + k];
  float r = BR(tmp).Reduce(items, cuda::maximum<>());
  if (threadIdx.x == 0) out[0] = r;
}

#define BLOCK_SCAN(NAME, T, ALGO, CALL)                                             \
  extern "C" __global__ void NAME(const T *in, T *out) {                            \
    using BS = cub::BlockScan<T, THREADS, cub::ALGO>;                               \
    __shared__ typename BS::TempStorage tmp;                                        \
    int i = blockIdx.x * THREADS + threadIdx.x;                                     \
    T r;                                                                            \
    BS(tmp).CALL(in[i], r);                                                         \
    out[i] = r;                                                                     \
  }

BLOCK_SCAN(cub_block_scan_raking_exclusive_int, int, BLOCK_SCAN_RAKING, ExclusiveSum)
BLOCK_SCAN(cub_block_scan_raking_memoize_inclusive_int, int, BLOCK_SCAN_RAKING_MEMOIZE, InclusiveSum)
BLOCK_SCAN(cub_block_scan_warp_scans_exclusive_int, int, BLOCK_SCAN_WARP_SCANS, ExclusiveSum)
BLOCK_SCAN(cub_block_scan_raking_inclusive_float, float, BLOCK_SCAN_RAKING, InclusiveSum)
BLOCK_SCAN(cub_block_scan_warp_scans_exclusive_float, float, BLOCK_SCAN_WARP_SCANS, ExclusiveSum)

extern "C" __global__ void cub_block_scan_items_aggregate_int(const int *in, int *out, int *total) {
  using BS = cub::BlockScan<int, THREADS>;
  __shared__ BS::TempStorage tmp;
  int items[4], agg;
  for (int k = 0; k < 4; k++) items[k] = in[threadIdx.x * 4 + k];
  BS(tmp).ExclusiveSum(items, items, agg);
  for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = items[k];
  if (threadIdx.x == 0) *total = agg;
}

#define BLOCK_LOAD_STORE(NAME, T, LOAD, STORE)                                      \
  extern "C" __global__ void NAME(const T *in, T *out) {                            \
    using BL = cub::BlockLoad<T, THREADS, 4, cub::LOAD>;                            \
    using BSt = cub::BlockStore<T, THREADS, 4, cub::STORE>;                         \
    __shared__ union { typename BL::TempStorage l; typename BSt::TempStorage s; } tmp; \
    T items[4];                                                                     \
    BL(tmp.l).Load(in + blockIdx.x * THREADS * 4, items);                           \
    for (int k = 0; k < 4; k++) items[k] = items[k] + items[k];                     \
    __syncthreads();                                                                \
    BSt(tmp.s).Store(out + blockIdx.x * THREADS * 4, items);                        \
  }

BLOCK_LOAD_STORE(cub_block_load_store_direct_int, int, BLOCK_LOAD_DIRECT, BLOCK_STORE_DIRECT)
BLOCK_LOAD_STORE(cub_block_load_store_striped_int, int, BLOCK_LOAD_STRIPED, BLOCK_STORE_STRIPED)
BLOCK_LOAD_STORE(cub_block_load_store_vectorize_int, int, BLOCK_LOAD_VECTORIZE, BLOCK_STORE_VECTORIZE)
BLOCK_LOAD_STORE(cub_block_load_store_transpose_int, int, BLOCK_LOAD_TRANSPOSE, BLOCK_STORE_TRANSPOSE)
BLOCK_LOAD_STORE(cub_block_load_store_warp_transpose_float, float, BLOCK_LOAD_WARP_TRANSPOSE,
                 BLOCK_STORE_WARP_TRANSPOSE)
BLOCK_LOAD_STORE(cub_block_load_store_transpose_float, float, BLOCK_LOAD_TRANSPOSE, BLOCK_STORE_TRANSPOSE)

extern "C" __global__ void cub_block_load_guarded_float(const float *in, float *out, int n) {
  using BL = cub::BlockLoad<float, THREADS, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  __shared__ BL::TempStorage tmp;
  float items[4];
  BL(tmp).Load(in, items, n, -1.0f);
  for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = items[k];
}

extern "C" __global__ void cub_block_exchange_int(const int *in, int *out) {
  using BE = cub::BlockExchange<int, THREADS, 4>;
  __shared__ BE::TempStorage tmp;
  int items[4];
  for (int k = 0; k < 4; k++) items[k] = in[k * THREADS + threadIdx.x];
  BE(tmp).StripedToBlocked(items, items);
  for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = items[k];
}

extern "C" __global__ void cub_block_discontinuity_int(const int *in, int *flags) {
  using BD = cub::BlockDiscontinuity<int, THREADS>;
  __shared__ BD::TempStorage tmp;
  int items[4], heads[4];
  for (int k = 0; k < 4; k++) items[k] = in[threadIdx.x * 4 + k];
  BD(tmp).FlagHeads(heads, items, cuda::std::not_equal_to<int>());
  for (int k = 0; k < 4; k++) flags[threadIdx.x * 4 + k] = heads[k];
}

extern "C" __global__ void cub_block_adjacent_difference_float(const float *in, float *out) {
  using BAD = cub::BlockAdjacentDifference<float, THREADS>;
  __shared__ BAD::TempStorage tmp;
  float items[4];
  for (int k = 0; k < 4; k++) items[k] = in[threadIdx.x * 4 + k];
  BAD(tmp).SubtractLeft(items, items, cuda::std::minus<float>());
  for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = items[k];
}

#define BLOCK_HISTOGRAM(NAME, ALGO)                                                 \
  extern "C" __global__ void NAME(const unsigned char *in, unsigned int *bins) {    \
    using BH = cub::BlockHistogram<unsigned char, THREADS, 4, 256, cub::ALGO>;      \
    __shared__ typename BH::TempStorage tmp;                                        \
    __shared__ unsigned int smem[256];                                              \
    unsigned char items[4];                                                         \
    for (int k = 0; k < 4; k++) items[k] = in[threadIdx.x * 4 + k];                 \
    BH(tmp).Histogram(items, smem);                                                 \
    __syncthreads();                                                                \
    for (int b = threadIdx.x; b < 256; b += THREADS) bins[b] = smem[b];             \
  }

BLOCK_HISTOGRAM(cub_block_histogram_atomic, BLOCK_HISTO_ATOMIC)
BLOCK_HISTOGRAM(cub_block_histogram_sort, BLOCK_HISTO_SORT)

extern "C" __global__ void cub_block_shuffle_offset_float(const float *in, float *out) {
  using BSh = cub::BlockShuffle<float, THREADS>;
  __shared__ BSh::TempStorage tmp;
  float r;
  BSh(tmp).Offset(in[threadIdx.x], r, -1);
  out[threadIdx.x] = r;
}
