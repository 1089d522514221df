// The program behind tests/harness/capture/fixture: launches that make cases and launches
// that `warpboard capture` must skip, one of each reason it can see. Built with
//   nvcc -gencode arch=compute_86,code=sm_86 -gencode arch=compute_90,code=sm_90 -o capture_fixture capture_fixture.cu
// and recorded on an H200 with `warpboard capture --max-per-kernel 3 -- ./capture_fixture`.
#include <cstdio>
#include <cuda_runtime.h>

__constant__ float coef[4];          // set with cudaMemcpyToSymbol: bank 3 as the launch saw it
__device__ unsigned counter;         // a __device__ variable the kernel adds to (bank 4 points to it)

struct Job { float *out; unsigned n; float k; };

extern "C" __global__ void scale(const float *a, float *b, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        b[i] = a[i] * coef[i & 3];
        atomicAdd(&counter, 1u);
    }
}

extern "C" __global__ void by_struct(Job job, const float *a) {   // a pointer inside a struct parameter
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = a[i];
    unsigned votes = __popc(__ballot_sync(~0u, v > 0.5f));
    if (i < job.n) job.out[i] = v * job.k + (float)votes;
}

extern "C" __global__ void gather(float *const *tables, float *out) {  // pointers stored in a buffer
    out[threadIdx.x] = tables[threadIdx.x & 1][threadIdx.x];
}

extern "C" __global__ void stamp(unsigned long long *out) {        // words that depend on timing
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    out[threadIdx.x] = t;
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main() {
    const unsigned n = 1000;
    float host[1024], c[4] = {1.5f, -2.0f, 0.25f, 3.0f};
    for (unsigned i = 0; i < 1024; i++) host[i] = (float)((i * 37u) % 101u) / 100.0f;
    float *a, *b, *managed, *mapped, *mapped_dev, **tables;
    unsigned long long *stamps;
    CHECK(cudaMalloc(&a, 1024 * sizeof(float)));
    CHECK(cudaMalloc(&b, 1024 * sizeof(float)));
    CHECK(cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(b, 0, 1024 * sizeof(float)));
    CHECK(cudaMemcpyToSymbol(coef, c, sizeof c));
    scale<<<4, 256>>>(a, b, n);                                  // a case
    CHECK(cudaGetLastError());
    by_struct<<<2, 256>>>(Job{b + 16, 400, 0.5f}, a);          // a case: pointer + offset in a struct
    CHECK(cudaMallocManaged(&managed, 1024 * sizeof(float)));
    for (unsigned i = 0; i < 1024; i++) managed[i] = 1.0f;
    scale<<<4, 256>>>(managed, b, n);                            // skipped: managed memory
    CHECK(cudaHostAlloc(&mapped, 1024 * sizeof(float), cudaHostAllocMapped));
    for (unsigned i = 0; i < 1024; i++) mapped[i] = 2.0f;
    CHECK(cudaHostGetDevicePointer(&mapped_dev, mapped, 0));
    scale<<<4, 256>>>(mapped_dev, b, n);                         // skipped: host-mapped memory
    float *pair[2] = {a, b};
    CHECK(cudaMalloc(&tables, sizeof pair));
    CHECK(cudaMemcpy(tables, pair, sizeof pair, cudaMemcpyHostToDevice));
    gather<<<1, 64>>>(tables, b + 512);                          // skipped: pointers inside a buffer
    CHECK(cudaMalloc(&stamps, 64 * sizeof(unsigned long long)));
    stamp<<<1, 64>>>(stamps);                                    // skipped: words differ between runs
    for (int k = 0; k < 2; k++) scale<<<4, 256>>>(b, a, n);      // the 4th: over --max-per-kernel 3
    CHECK(cudaDeviceSynchronize());
    unsigned total;
    CHECK(cudaMemcpyFromSymbol(&total, counter, sizeof total));
    printf("counter %u\n", total);
    return 0;
}
