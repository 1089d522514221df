// The pattern of CUDA's threadFenceReduction sample: every block reduces its part (a shared-
// memory tree, then a warp-synchronous shuffle tail), writes its partial sum, fences, and
// takes a ticket with atomicInc; the block that draws the last ticket adds the partial sums
// and resets the counter.
extern "C" __global__ void thread_fence_reduction(const unsigned *in, unsigned *partial, unsigned *count,
                                                  unsigned *out) {
    __shared__ unsigned sdata[128];
    __shared__ bool last;
    unsigned t = threadIdx.x, base = blockIdx.x * 512u;
    unsigned sum = in[base + t] + in[base + t + 128u] + in[base + t + 256u] + in[base + t + 384u];
    sdata[t] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2u; s > 32u; s >>= 1) {
        if (t < s) sdata[t] = sum = sum + sdata[t + s];
        __syncthreads();
    }
    if (t < 32u) {
        sum += sdata[t + 32u];
        for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (t == 0u) {
        partial[blockIdx.x] = sum;
        __threadfence();
        unsigned ticket = atomicInc(count, gridDim.x);
        last = ticket == gridDim.x - 1u;
    }
    __syncthreads();
    if (last) {
        unsigned total = t < gridDim.x ? ((volatile unsigned *)partial)[t] : 0u;
        for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_down_sync(0xffffffffu, total, offset);
        if (t == 0u) {
            out[0] = total;
            count[0] = 0u;
        }
    }
}
