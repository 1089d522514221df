// Per-thread trip counts and an uneven if/else over 3 blocks of 48 threads (each block's
// second warp is half full); signed division and modulo by constants on the results.
extern "C" __global__ void uneven_loops(int *out, const int *in) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    int x = in[t];
    unsigned trips = (t * 7u + blockIdx.x) % 13u;
    unsigned h = (unsigned)x;
    if (x < 0) {
        for (unsigned i = 0; i < trips; i++) h = h * 2654435761u + i;
        x = (int)h % 10;
    } else {
        for (unsigned n = trips; n != 0; n >>= 1) { h ^= h >> 3; h += n * 0x9e37u; }
        x = (int)h / -3;
    }
    out[t] = x;
}
