// CUB warp primitives, instantiated for int and float: one kernel per primitive and type.
// Each thread reads one element, the warp primitive combines them, and each thread writes
// its result (warp-wide results from lane 0).
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cub/warp/warp_exchange.cuh>
#include <cub/warp/warp_load.cuh>
#include <cub/warp/warp_store.cuh>
#include <cub/warp/warp_merge_sort.cuh>

#define WARP_REDUCE(NAME, T, OP)                                                    \
  extern "C" __global__ void NAME(const T *in, T *out) {                            \
    using WR = cub::WarpReduce<T>;                                                  \
    __shared__ typename WR::TempStorage tmp[4];                                     \
    int warp = threadIdx.x / 32;                                                    \
    T r = WR(tmp[warp]).OP(in[blockIdx.x * blockDim.x + threadIdx.x]);               \
    if (threadIdx.x % 32 == 0) out[blockIdx.x * 4 + warp] = r;                      \
  }

#define WARP_REDUCE_OP(NAME, T, OP)                                                 \
  extern "C" __global__ void NAME(const T *in, T *out) {                            \
    using WR = cub::WarpReduce<T>;                                                  \
    __shared__ typename WR::TempStorage tmp[4];                                     \
    int warp = threadIdx.x / 32;                                                    \
    T r = WR(tmp[warp]).Reduce(in[blockIdx.x * blockDim.x + threadIdx.x], OP());     \
    if (threadIdx.x % 32 == 0) out[blockIdx.x * 4 + warp] = r;                      \
  }

WARP_REDUCE(cub_warp_reduce_sum_int, int, Sum)
WARP_REDUCE(cub_warp_reduce_sum_float, float, Sum)
WARP_REDUCE_OP(cub_warp_reduce_max_int, int, cuda::maximum<>)
WARP_REDUCE_OP(cub_warp_reduce_min_float, float, cuda::minimum<>)

extern "C" __global__ void cub_warp_reduce_sum_partial_int(const int *in, int *out, int valid) {
  using WR = cub::WarpReduce<int>;
  __shared__ WR::TempStorage tmp;
  int r = WR(tmp).Sum(in[threadIdx.x], valid);
  if (threadIdx.x == 0) out[0] = r;
}

extern "C" __global__ void cub_warp_segmented_sum_float(const float *in, const int *flags, float *out) {
  using WR = cub::WarpReduce<float>;
  __shared__ WR::TempStorage tmp;
  out[threadIdx.x] = WR(tmp).HeadSegmentedSum(in[threadIdx.x], flags[threadIdx.x]);
}

#define WARP_SCAN(NAME, T, CALL)                                                    \
  extern "C" __global__ void NAME(const T *in, T *out) {                            \
    using WS = cub::WarpScan<T>;                                                    \
    __shared__ typename WS::TempStorage tmp[4];                                     \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                  \
    T r;                                                                            \
    WS(tmp[threadIdx.x / 32]).CALL(in[i], r);                                       \
    out[i] = r;                                                                     \
  }

WARP_SCAN(cub_warp_inclusive_sum_int, int, InclusiveSum)
WARP_SCAN(cub_warp_exclusive_sum_int, int, ExclusiveSum)
WARP_SCAN(cub_warp_inclusive_sum_float, float, InclusiveSum)
WARP_SCAN(cub_warp_exclusive_sum_float, float, ExclusiveSum)

extern "C" __global__ void cub_warp_inclusive_max_int(const int *in, int *out) {
  using WS = cub::WarpScan<int>;
  __shared__ WS::TempStorage tmp;
  int r;
  WS(tmp).InclusiveScan(in[threadIdx.x], r, cuda::maximum<>());
  out[threadIdx.x] = r;
}

extern "C" __global__ void cub_warp_scan_16_int(const int *in, int *out) {
  using WS = cub::WarpScan<int, 16>;              // logical warps of 16 lanes
  __shared__ WS::TempStorage tmp[2];
  int r;
  WS(tmp[threadIdx.x / 16]).ExclusiveSum(in[threadIdx.x], r);
  out[threadIdx.x] = r;
}

template <typename T>
__device__ void warp_exchange(const T *in, T *out) {
  using WE = cub::WarpExchange<T, 4>;
  __shared__ typename WE::TempStorage tmp;
  T items[4];
  for (int k = 0; k < 4; k++) items[k] = in[k * 32 + threadIdx.x];
  WE(tmp).StripedToBlocked(items, items);
  for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = items[k];
}

extern "C" __global__ void cub_warp_exchange_int(const int *in, int *out) { warp_exchange(in, out); }
extern "C" __global__ void cub_warp_exchange_float(const float *in, float *out) { warp_exchange(in, out); }

extern "C" __global__ void cub_warp_load_store_transpose_int(const int *in, int *out) {
  using WL = cub::WarpLoad<int, 4, cub::WARP_LOAD_TRANSPOSE>;
  using WSt = cub::WarpStore<int, 4, cub::WARP_STORE_TRANSPOSE>;
  __shared__ typename WL::TempStorage tl;
  __shared__ typename WSt::TempStorage ts;
  int items[4];
  WL(tl).Load(in, items);
  for (int k = 0; k < 4; k++) items[k] += threadIdx.x;
  WSt(ts).Store(out, items);
}

template <typename T>
__device__ void warp_merge_sort(const T *in, T *out) {
  using WMS = cub::WarpMergeSort<T, 4, 32>;
  __shared__ typename WMS::TempStorage tmp;
  T items[4];
  for (int k = 0; k < 4; k++) items[k] = in[threadIdx.x * 4 + k];
  WMS(tmp).Sort(items, cuda::std::less<T>());
  for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = items[k];
}

extern "C" __global__ void cub_warp_merge_sort_int(const int *in, int *out) { warp_merge_sort(in, out); }
extern "C" __global__ void cub_warp_merge_sort_float(const float *in, float *out) { warp_merge_sort(in, out); }
