// 64-bit division and remainder by constants, unsigned and signed: nvcc turns each into a
// 128-bit multiply-high by a magic number (IMAD.WIDE.U32 partial products, IADD3 RZ carries
// and IMAD.HI.U32.X with the carry entering the 64-bit sum) and shifts.
extern "C" __global__ void divconst64(unsigned *out, const unsigned *in) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long a = (unsigned long long)in[2 * t + 1] << 32 | in[2 * t];
    long long sa = (long long)a;
    unsigned long long v[8] = {
        a / 0x207add501ull, a / 7ull, a / 1000000007ull, a % 0xfffffffdull,
        a / 0x8000000000000001ull, (unsigned long long)(sa / -3ll),
        (unsigned long long)(sa % 1000003ll), (unsigned long long)(sa / 0x123456789abll),
    };
    for (int k = 0; k < 8; ++k) {
        out[16 * t + 2 * k] = (unsigned)v[k];
        out[16 * t + 2 * k + 1] = (unsigned)(v[k] >> 32);
    }
}
