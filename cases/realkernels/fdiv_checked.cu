// IEEE division a / b: FCHK chooses between the fast reciprocal path and the full one.
extern "C" __global__ void fdiv_checked(const float *a, const float *b, float *out) {
    out[threadIdx.x] = a[threadIdx.x] / b[threadIdx.x];
}
