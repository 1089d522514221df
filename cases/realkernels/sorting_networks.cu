// The shared-memory sorting networks of CUDA's sortingNetworks sample, for key-value
// pairs: bitonic sort of 128 in a block of 64 threads (the comparison's direction depends on
// the thread's position) and Batcher's odd-even merge sort of 1024 in a block of 512 threads
// (some threads sit out each stage).
__device__ inline void comparator(unsigned &ka, unsigned &va, unsigned &kb, unsigned &vb, unsigned dir) {
    if ((ka > kb) == dir) {
        unsigned t = ka; ka = kb; kb = t;
        t = va; va = vb; vb = t;
    }
}

extern "C" __global__ void bitonic_sort_shared(unsigned *dst_key, unsigned *dst_val, const unsigned *src_key) {
    __shared__ unsigned key[128], val[128];
    unsigned t = threadIdx.x;
    key[t] = src_key[t];                 val[t] = t;
    key[t + 64] = src_key[t + 64];     val[t + 64] = t + 64;
    for (unsigned size = 2; size < 128; size <<= 1) {
        unsigned ddd = 1u ^ ((t & (size / 2)) != 0);
        for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned pos = 2 * t - (t & (stride - 1));
            comparator(key[pos], val[pos], key[pos + stride], val[pos + stride], ddd);
        }
    }
    for (unsigned stride = 64; stride > 0; stride >>= 1) {
        __syncthreads();
        unsigned pos = 2 * t - (t & (stride - 1));
        comparator(key[pos], val[pos], key[pos + stride], val[pos + stride], 1u);
    }
    __syncthreads();
    dst_key[t] = key[t];             dst_val[t] = val[t];
    dst_key[t + 64] = key[t + 64]; dst_val[t + 64] = val[t + 64];
}

extern "C" __global__ void odd_even_merge_sort_shared(unsigned *dst_key, unsigned *dst_val, const unsigned *src_key) {
    __shared__ unsigned key[1024], val[1024];
    unsigned t = threadIdx.x;
    key[t] = src_key[t];                 val[t] = t;
    key[t + 512] = src_key[t + 512];     val[t + 512] = t + 512;
    for (unsigned size = 2; size <= 1024; size <<= 1) {
        unsigned stride = size / 2;
        unsigned offset = t & (stride - 1);
        {
            __syncthreads();
            unsigned pos = 2 * t - (t & (stride - 1));
            comparator(key[pos], val[pos], key[pos + stride], val[pos + stride], 1u);
            stride >>= 1;
        }
        for (; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned pos = 2 * t - (t & (stride - 1));
            if (offset >= stride)
                comparator(key[pos - stride], val[pos - stride], key[pos], val[pos], 1u);
        }
    }
    __syncthreads();
    dst_key[t] = key[t];             dst_val[t] = val[t];
    dst_key[t + 512] = key[t + 512]; dst_val[t + 512] = val[t + 512];
}
