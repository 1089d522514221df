// More CUB as users write it: a descending radix sort of key-value pairs over bits 4..19,
// warp-transposed loads and stores, head flags and run-length decoding.
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_discontinuity.cuh>
#include <cub/block/block_run_length_decode.cuh>
#include <cub/block/block_scan.cuh>

struct Inequality {
    __device__ bool operator()(unsigned a, unsigned b) const { return a != b; }
};

// keys sorted descending by bits 4..19 only (a stable sort: ties keep their order), with
// their indices as values; loads and stores by warp transposes
extern "C" __global__ void cub_sort_pairs_descending(unsigned *out, const unsigned *in) {
    using Load = cub::BlockLoad<unsigned, 128, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Store = cub::BlockStore<unsigned, 128, 4, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    using Sort = cub::BlockRadixSort<unsigned, 128, 4, unsigned>;
    __shared__ union {
        typename Load::TempStorage load;
        typename Store::TempStorage store;
        typename Sort::TempStorage sort;
    } temp;
    unsigned keys[4], values[4];
    Load(temp.load).Load(in, keys);
    for (int k = 0; k < 4; ++k) values[k] = threadIdx.x * 4 + k;
    __syncthreads();
    Sort(temp.sort).SortDescending(keys, values, 4, 20);
    __syncthreads();
    Store(temp.store).Store(out, keys);
    __syncthreads();
    Store(temp.store).Store(out + 512, values);
}

// head flags of runs of equal values (in / 2^29: 8 values, long runs), then each run's
// length decoded back into a run of that many copies of its value
extern "C" __global__ void cub_runs(unsigned *out, const unsigned *in) {
    using Flags = cub::BlockDiscontinuity<unsigned, 128>;
    using Decode = cub::BlockRunLengthDecode<unsigned, 128, 1, 4>;
    __shared__ typename Flags::TempStorage flag_temp;
    __shared__ typename Decode::TempStorage decode_temp;
    unsigned items[4];
    int heads[4];
    for (int k = 0; k < 4; ++k) items[k] = in[threadIdx.x * 4 + k] >> 29;
    Flags(flag_temp).FlagHeads(heads, items, Inequality());
    for (int k = 0; k < 4; ++k) out[threadIdx.x * 4 + k] = heads[k];
    // one run per thread: value = its first item, length = 1 + (that item's low bits) % 4
    unsigned value[1] = {in[threadIdx.x] & 0xffffu};
    unsigned length[1] = {1u + in[threadIdx.x] % 4u};
    unsigned total;
    Decode decode(decode_temp, value, length, total);
    unsigned decoded[4];
    for (unsigned offset = 0; offset < total; offset += 128u * 4u) {
        decode.RunLengthDecode(decoded, offset);
        for (int k = 0; k < 4; ++k) {
            unsigned i = offset + threadIdx.x * 4 + k;
            if (i < total) out[512 + i] = decoded[k];
        }
    }
    if (threadIdx.x == 0) out[512 + 512] = total;
}
