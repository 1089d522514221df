// Products scaled by a power of two, as ptxas folds them into one FMUL (.D2, .D4, .M2, .M4,
// .M8): (a * b) * 0.5f and the like, with inputs whose products are subnormal (where the
// scaling rounds) or near the largest float (where it overflows to infinity), zeros and signs.
// Odd lanes take another set of scales than even ones.
extern "C" __global__ void fmul_scaled(float *out, const float *in) {
    unsigned t = threadIdx.x;
    float a = in[t], b = in[t + 64], c = in[t + 128], d = in[t + 192];
    float *o = out + t * 4;
    if (t & 1) {
        o[0] = (a * b) * 0.5f;
        o[1] = (c * d) * 0.25f;
    } else {
        o[0] = (a * b) * 2.0f;
        o[1] = (c * d) * 4.0f;
    }
    o[2] = (a * d) * 8.0f;
    o[3] = (b * c) * 0.5f;
}
