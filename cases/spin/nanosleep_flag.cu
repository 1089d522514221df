// A spin-wait with __nanosleep(100) in its loop (NANOSLEEP): threads 0..3 (warp 0) wait on a
// volatile __shared__ flag that thread 35 (warp 1 lane 3 of a partial second warp) sets
// after a loop of n steps.
extern "C" __global__ void nanosleep_flag(unsigned *out, unsigned n) {
    volatile __shared__ unsigned flag;
    unsigned t = threadIdx.x;
    if (t == 0) flag = 0;
    __syncthreads();
    unsigned r;
    if (t >= 4) {
        r = t + 200;
        if (t == 35) {
            unsigned s = 11;
#pragma unroll 1
            for (unsigned i = 0; i < n; i++) s = s * 13 + (i ^ 5);
            flag = s;
            r = s;
        }
    } else {
        unsigned v;
        while ((v = flag) == 0) __nanosleep(100);
        r = v * 2 + t;
    }
    out[t] = r;
}
