// Producer/consumer between warps through shared memory: warp 1 lane 0 fills data[0..3]
// in a loop of n steps (plain stores), __threadfence_block(), then sets a volatile flag;
// every thread of warp 0 waits for the flag, __threadfence_block(), and reads one word.
extern "C" __global__ void fence_handoff(unsigned *out, unsigned n) {
    __shared__ unsigned data[4];
    volatile __shared__ unsigned ready;
    unsigned t = threadIdx.x;
    if (t == 0) ready = 0;
    __syncthreads();
    if (t == 32) {
        unsigned s = 5;
#pragma unroll 1
        for (unsigned i = 0; i < n; i++) {
            s = s * 7 + i;
            data[i & 3] = s;
        }
        __threadfence_block();
        ready = 1;
        out[t] = s;
    } else if (t < 32) {
        while (ready == 0) {}
        __threadfence_block();
        out[t] = data[t & 3] + t;
    } else {
        out[t] = t * 3;
    }
}
