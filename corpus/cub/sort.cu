// CUB block sorts for a block of 128 threads with 4 items each: radix sort (keys, keys and
// values, descending, blocked-to-striped) and merge sort, for int and float keys.
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_merge_sort.cuh>

constexpr int THREADS = 128;

template <typename K>
__device__ void radix_sort_keys(const K *in, K *out) {
  using BRS = cub::BlockRadixSort<K, THREADS, 4>;
  __shared__ typename BRS::TempStorage tmp;
  K keys[4];
  for (int k = 0; k < 4; k++) keys[k] = in[threadIdx.x * 4 + k];
  BRS(tmp).Sort(keys);
  for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = keys[k];
}

extern "C" __global__ void cub_block_radix_sort_int(const int *in, int *out) { radix_sort_keys(in, out); }
extern "C" __global__ void cub_block_radix_sort_float(const float *in, float *out) { radix_sort_keys(in, out); }

extern "C" __global__ void cub_block_radix_sort_descending_int(const int *in, int *out) {
  using BRS = cub::BlockRadixSort<int, THREADS, 4>;
  __shared__ BRS::TempStorage tmp;
  int keys[4];
  for (int k = 0; k < 4; k++) keys[k] = in[threadIdx.x * 4 + k];
  BRS(tmp).SortDescending(keys);
  for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = keys[k];
}

extern "C" __global__ void cub_block_radix_sort_pairs_float_int(const float *in, int *out_idx) {
  using BRS = cub::BlockRadixSort<float, THREADS, 4, int>;
  __shared__ BRS::TempStorage tmp;
  float keys[4];
  int values[4];
  for (int k = 0; k < 4; k++) {
    keys[k] = in[threadIdx.x * 4 + k];
    values[k] = threadIdx.x * 4 + k;
  }
  BRS(tmp).SortBlockedToStriped(keys, values);
  for (int k = 0; k < 4; k++) out_idx[k * THREADS + threadIdx.x] = values[k];
}

template <typename K>
__device__ void merge_sort(const K *in, K *out) {
  using BMS = cub::BlockMergeSort<K, THREADS, 4>;
  __shared__ typename BMS::TempStorage tmp;
  K keys[4];
  for (int k = 0; k < 4; k++) keys[k] = in[threadIdx.x * 4 + k];
  BMS(tmp).Sort(keys, cuda::std::less<K>());
  for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = keys[k];
}

extern "C" __global__ void cub_block_merge_sort_int(const int *in, int *out) { merge_sort(in, out); }
extern "C" __global__ void cub_block_merge_sort_float(const float *in, float *out) { merge_sort(in, out); }
