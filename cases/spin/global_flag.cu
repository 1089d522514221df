// Inter-warp spin through a volatile global flag: every thread of warp 1 waits on sync[1],
// which warp 0 lane 3 sets after computing sync[2] in a loop of n steps and a __threadfence();
// the spinners fence again before reading sync[2].
// The spinners are in the else branch, which nvcc lays out first: their loop sits at a lower
// pc than the producer's.
extern "C" __global__ void global_flag(unsigned *out, unsigned *sync, unsigned n) {
    volatile unsigned *vs = sync;
    unsigned t = threadIdx.x;
    unsigned r;
    if (t < 32) {
        if (t == 3) {
            unsigned s = 1;
#pragma unroll 1
            for (unsigned i = 0; i < n; i++) s = s * s + i;
            sync[2] = s;
            __threadfence();
            vs[1] = 1;
            r = s;
        } else {
            r = t ^ 0x5a5a0000u;
        }
    } else {
        while (vs[1] == 0) {}
        __threadfence();
        r = vs[2] + t;
    }
    out[t] = r;
}
