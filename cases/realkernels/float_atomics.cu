// Float atomicAdd on shared memory (a compare-and-store loop: ATOMS.CAST.SPIN) and on global
// memory (RED/ATOMG .ADD.F32.FTZ.RN), with values whose sums are exact in any order.
extern "C" __global__ void float_atomics(float *acc, int *out) {
    __shared__ float s[4];
    __shared__ int n;
    if (threadIdx.x < 4) s[threadIdx.x] = 0.25f * threadIdx.x;
    if (threadIdx.x == 0) n = 0;
    __syncthreads();
    atomicAdd(&s[threadIdx.x & 3], 0.5f);
    atomicAdd(&n, 1);
    atomicAdd(&acc[threadIdx.x % 3], 1.5f);
    float old = atomicAdd(&acc[4], 1.0f);
    __syncthreads();
    out[threadIdx.x] = __float_as_int(s[threadIdx.x & 3]) ^ n ^ ((int)old >= 0);
}
