// Immediates of binary64 instructions as nvdisasm prints them: DADD/DMUL/DFMA/DSETP take the
// binary64 value (0.5, 3, 1.25, 1.5, 100), while the FSEL that picks a high word of fmax or
// of a ?: between constants prints that word as a binary32 (100.0 -> 3.390625).
extern "C" __global__ void f64_immediates(double *o, const double *in, float *of, const float *inf) {
    int t = threadIdx.x;
    double x = in[t];
    o[t * 8 + 0] = x + 0.5;
    o[t * 8 + 1] = x * 3.0;
    o[t * 8 + 2] = fma(x, 2.5, 1.25);
    o[t * 8 + 3] = x < 1.5 ? 7.0 : -3.0;
    o[t * 8 + 4] = fmax(x, 100.0);
    o[t * 8 + 5] = x - 1e-300;
    o[t * 8 + 6] = x * 0.1;
    o[t * 8 + 7] = (double)(x > 1e10);
    float f = inf[t];
    of[t * 4 + 0] = f * 0.25f + 3.0f;      // an exact product: fused or not, one result
    of[t * 4 + 1] = fmaxf(f, 1e-30f);
    of[t * 4 + 2] = f * 1.0e38f;
    of[t * 4 + 3] = (float)(x * 1.0000001);
}
