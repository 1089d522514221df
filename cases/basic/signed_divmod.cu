// Signed division and modulo by constants (positive and negative, powers of two and not,
// 32- and 64-bit) on per-thread inputs, in 2 blocks of 8 x 5 threads.
extern "C" __global__ void signed_divmod(int *out, const int *in) {
    unsigned t = (blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int x = in[t];
    long long w = (long long)x * 12345;
    out[4 * t + 0] = x / 7 + x % 7;
    out[4 * t + 1] = (x / -16) ^ (x % 16);
    out[4 * t + 2] = x / 1000 - x % -3;
    out[4 * t + 3] = (int)(w / 10007) + (int)(w % 64);
}
