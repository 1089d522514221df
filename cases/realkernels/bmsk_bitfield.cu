// PTX bfe/bfi with register position and width: BMSK builds the field mask.
extern "C" __global__ void bmsk_bitfield(const unsigned *in, unsigned *out) {
    unsigned a = in[threadIdx.x], b = in[threadIdx.x + 32] & 31, c = in[threadIdx.x + 64] % 40, r, s;
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(s) : "r"(a), "r"(r), "r"(b), "r"(c));
    out[threadIdx.x] = r ^ s;
}
