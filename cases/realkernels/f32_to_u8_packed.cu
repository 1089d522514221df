// Floats to bytes, four to a word, as an image kernel stores RGBA8 pixels: PTX's
// cvt.rni.sat.u8.f32 (to nearest even) and cvt.rzi.sat.u8.f32 (toward zero), which nvcc 13.0
// compiles to F2IP.U8.F32[.TRUNC].NTZ on sm_86. CUDA C++ casts and __float2uint_r* give F2I,
// so the conversions are inline PTX; the CPU build (cases/tools/run_on_cpu.sh) computes
// what the PTX ISA defines for them: saturate to 0..255, NaN to 0.
#ifndef __CUDA_ARCH__
#include <cmath>
#endif

__device__ unsigned to_u8_rn(float v) {
#ifdef __CUDA_ARCH__
    unsigned r;
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
#else
    return v != v || v <= 0.0f ? 0u : v >= 255.0f ? 255u : (unsigned)std::nearbyint(v);
#endif
}

__device__ unsigned to_u8_rz(float v) {
#ifdef __CUDA_ARCH__
    unsigned r;
    asm("cvt.rzi.sat.u8.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
#else
    return v != v || v <= 0.0f ? 0u : v >= 255.0f ? 255u : (unsigned)std::trunc(v);
#endif
}

__device__ unsigned pack(unsigned a, unsigned b, unsigned c, unsigned d) {
    return a | b << 8 | c << 16 | d << 24;
}

extern "C" __global__ void f32_to_u8_packed(unsigned *out, const float *in) {
    int t = threadIdx.x;
    const float *v = in + 4 * t;
    out[2 * t] = pack(to_u8_rn(v[0]), to_u8_rn(v[1]), to_u8_rn(v[2]), to_u8_rn(v[3]));
    out[2 * t + 1] = pack(to_u8_rz(v[0] * 255.0f), to_u8_rz(v[1] * 255.0f), to_u8_rz(v[2] * 255.0f),
                          to_u8_rz(v[3] * 255.0f));
}
