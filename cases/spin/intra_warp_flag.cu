// Intra-warp spin-waits on a volatile __shared__ flag: lanes 0..7 wait for lane 20, which
// computes the value in a loop of n steps (n is a parameter, so the loop stays a loop).
// The two kernels differ only in the shape of the branch; nvcc places the spinners' loop
// before the producer for the first and after it for the second.

// spinner in the else branch: nvcc puts its loop first (lower pc than the producer)
extern "C" __global__ void intra_warp_flag_else(unsigned *out, unsigned n) {
    volatile __shared__ unsigned flag;
    unsigned t = threadIdx.x;
    if (t == 0) flag = 0;
    __syncthreads();
    unsigned r;
    if (t >= 8) {
        r = t + 100;
        if (t == 20) {
            unsigned s = 3;
#pragma unroll 1
            for (unsigned i = 0; i < n; i++) s = s * 5 + i;
            flag = s;
            r = s;
        }
    } else {
        unsigned v;
        do { v = flag; } while (v == 0);
        r = v + t;
    }
    out[t] = r;
}

// spinner in the then branch: nvcc puts its loop last (higher pc than the producer)
extern "C" __global__ void intra_warp_flag_then(unsigned *out, unsigned n) {
    volatile __shared__ unsigned flag;
    unsigned t = threadIdx.x;
    if (t == 0) flag = 0;
    __syncthreads();
    unsigned r;
    if (t < 8) {
        unsigned v;
        do { v = flag; } while (v == 0);
        r = v + t;
    } else if (t == 20) {
        unsigned s = 3;
#pragma unroll 1
        for (unsigned i = 0; i < n; i++) s = s * 5 + i;
        flag = s;
        r = s;
    } else {
        r = t + 100;
    }
    out[t] = r;
}
