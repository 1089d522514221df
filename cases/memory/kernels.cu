// Kernels for memory forms beyond global and shared memory: local arrays (LDL/STL),
// __constant__ data (constant bank 3), char/bool/short parameters (sub-word LDC/ULDC).

__constant__ unsigned table3[32] = {
    0x9e3779b9, 0x7f4a7c15, 0xf39cc060, 0x5ced1d2b, 0x85ebca6b, 0xc2b2ae35, 0x27d4eb2f, 0x165667b1,
    0xd3a2646c, 0xfd7046c5, 0xb55a4f09, 0x8f1bbcdc, 0xca62c1d6, 0x6ed9eba1, 0x5a827999, 0x10325476,
    1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597};

// A per-thread array indexed by data: nvcc keeps it in local memory, in every width.
extern "C" __global__ void local_array(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x + blockIdx.x * blockDim.x;
    unsigned a[24];
    unsigned short h[9];
    unsigned char c[11];
    for (int i = 0; i < 24; i++) a[i] = in[(t + i) % 64] ^ i;
    for (int i = 0; i < 9; i++) h[i] = a[i] * 3;
    for (int i = 0; i < 11; i++) c[i] = a[i] + 7;
    out[t] = a[in[t] % 24] + h[(t * 5) % 9] + c[(t * 3) % 11];
}

// A local array written in a divergent loop and read back in reverse.
extern "C" __global__ void local_divergent(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x;
    unsigned stack[16];
    unsigned n = in[t] % 16 + 1, v = in[t];
    for (unsigned i = 0; i < n; i++) { stack[i] = v; v = v * 1103515245u + 12345u; }
    unsigned acc = 0;
    for (unsigned i = n; i-- > 0;) acc = (acc << 3 | acc >> 29) ^ stack[i];
    out[t] = acc;
}

// __constant__ data, read at uniform and per-thread indices.
extern "C" __global__ void constant_table(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x;
    out[t] = table3[in[t] % 32] ^ table3[t % 16] + table3[20];
}

// char, bool, short and unsigned char parameters.
extern "C" __global__ void small_params(unsigned *out, char c, bool b, short s, unsigned char uc) {
    unsigned t = threadIdx.x;
    out[t] = c * (int)t + (b ? 5 : 9) + s * 3 + uc * 2;
}
