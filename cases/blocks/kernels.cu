// Several warps, several blocks, 2-D and 3-D indices, block sizes not a multiple of 32.
// in[] holds one input word per thread of the grid; out[] one result per thread.
#define LANE (threadIdx.x & 31)

// 2-D grid (2, 3) of 2-D blocks (8, 6): 48 threads per block, so every block's second warp
// has 16 lanes; votes over those lanes and the block/thread coordinates in the result.
extern "C" __global__ void grid2d_block2d(unsigned *out, const unsigned *in) {
    unsigned tid = threadIdx.y * blockDim.x + threadIdx.x;
    unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    unsigned g = block * blockDim.x * blockDim.y + tid, x = in[g];
    unsigned m = __activemask();
    unsigned b = __ballot_sync(m, (x ^ threadIdx.y) & 1);
    out[g] = b ^ (m << 1) ^ (blockIdx.x << 28) ^ (blockIdx.y << 24) ^ (threadIdx.x << 8) ^ threadIdx.y;
}

// 3-D blocks (5, 3, 4) = 60 threads (second warp: 28 lanes) in a 3-D grid (1, 2, 2);
// divergence on the z index, reductions over the lanes present.
extern "C" __global__ void block3d_reduce(unsigned *out, const unsigned *in) {
    unsigned tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    unsigned g = block * 60 + tid, x = in[g], r;
    if (threadIdx.z & 1) r = __reduce_add_sync(__activemask(), x & 0xffff) + blockIdx.z;
    else r = __reduce_xor_sync(__activemask(), x) ^ (blockIdx.y << 4);
    out[g] = r;
}

// Per-warp and per-block sums of 4 blocks of 91 threads: warp sums by REDUX, block sums by
// shared atomics of the warp leaders, read after a barrier.
extern "C" __global__ void block91_sums(unsigned *out, const unsigned *in) {
    __shared__ unsigned total;
    unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t, x = in[g] & 0xfffff;
    if (t == 0) total = 0;
    __syncthreads();
    unsigned m = __activemask();
    unsigned ws = __reduce_add_sync(m, x);
    if (LANE == 0) atomicAdd(&total, ws);
    __syncthreads();
    out[g] = total - ws + __popc(m);
}
