// A program with one launch that stays inside its allocation and one that writes 128 bytes
// past the end of it, into the next allocation, which the launch was not given. The chip does
// not fault on that; `warpboard capture` must keep the first launch as a case and skip the
// second with "writes outside its allocations" (authoring/capture/check.py: the interposer's
// guards). On an NVIDIA GPU:
//   nvcc -gencode arch=compute_86,code=sm_86 -gencode arch=compute_90,code=sm_90 -o overrun overrun.cu
//   warpboard capture --out build/capture/overrun -- ./overrun
#include <cstdio>
#include <cuda_runtime.h>

extern "C" __global__ void within(unsigned *a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 3u + i;
}

extern "C" __global__ void past_end(unsigned *a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n + 32) a[i] = i;          // the last 32 threads store past a[n - 1]
}

int main() {
    const unsigned n = 4096;
    unsigned *a, *b;
    cudaMalloc(&a, n * sizeof(unsigned));
    cudaMalloc(&b, n * sizeof(unsigned));
    cudaMemset(a, 1, n * sizeof(unsigned));
    cudaMemset(b, 0, n * sizeof(unsigned));
    within<<<n / 256, 256>>>(a, n);
    past_end<<<n / 256 + 1, 256>>>(a, n);
    unsigned first = 0;
    cudaMemcpy(&first, b, sizeof first, cudaMemcpyDeviceToHost);
    printf("b[0] after the launches: %u (%s)\n", first, first ? "the overrun reached b" : "b untouched");
    return cudaDeviceSynchronize() != cudaSuccess;
}
