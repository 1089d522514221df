// cp.async through __pipeline_memcpy_async: LDGSTS, LDGDEPBAR, DEPBAR.LE, then a barrier.
#include <cuda_pipeline.h>
extern "C" __global__ void async_copy(const int *in, int *out) {
    __shared__ int s[64];
    __pipeline_memcpy_async(&s[threadIdx.x], &in[threadIdx.x], 4);
    __pipeline_memcpy_async(&s[threadIdx.x + 32], &in[threadIdx.x + 32], 4);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 64] + s[63 - threadIdx.x];
}
