// printf in a loop whose trip count differs between threads (0 to 3 iterations): each
// thread's lines come in its own order, the warp's lines interleave as the schedule has it.
#include <cstdio>

extern "C" __global__ void loop(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x;
    unsigned n = in[t] % 4, sum = 0;
    for (unsigned k = 0; k < n; k++) {
        sum += in[t] >> k;
        printf("t%u k%u sum=%u\n", t, k, sum);
    }
    out[t] = sum;
}
