// Small float-using kernels in the style of the CUDA samples: FP32, FP64 and packed FP16/BF16
// arithmetic, comparisons, min/max, selects, conversions with each rounding mode, MUFU
// functions, and warp/block reductions and scans of floats. One block; thread i handles
// element i; kernels that give several results per thread write out[i * K + k].
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define TID (threadIdx.x)

// ------------------------------------------------------------------ FP32 arithmetic
extern "C" __global__ void f32_saxpy(float a, const float *x, float *y) {
  y[TID] = a * x[TID] + y[TID];
}

extern "C" __global__ void f32_add_sub_mul(const float *a, const float *b, float *out) {
  out[TID * 3 + 0] = a[TID] + b[TID];
  out[TID * 3 + 1] = a[TID] - b[TID];
  out[TID * 3 + 2] = a[TID] * b[TID];
}

extern "C" __global__ void f32_fma(const float *a, const float *b, const float *c, float *out) {
  out[TID] = fmaf(a[TID], b[TID], c[TID]);
}

extern "C" __global__ void f32_mul_then_add(const float *a, const float *b, const float *c, float *out) {
  out[TID] = __fadd_rn(__fmul_rn(a[TID], b[TID]), c[TID]);      // two roundings, not fused
}

extern "C" __global__ void f32_horner(const float *x, float *out) {
  float v = x[TID];
  float p = 0.0083333f;
  p = fmaf(p, v, -0.16666667f);
  p = fmaf(p, v, 0.5f);
  p = fmaf(p, v, -1.0f);
  p = fmaf(p, v, 1.0f);
  out[TID] = fmaf(p, v, 0.25f);
}

extern "C" __global__ void f32_add_rounding(const float *a, const float *b, float *out) {
  out[TID * 4 + 0] = __fadd_rn(a[TID], b[TID]);
  out[TID * 4 + 1] = __fadd_rz(a[TID], b[TID]);
  out[TID * 4 + 2] = __fadd_ru(a[TID], b[TID]);
  out[TID * 4 + 3] = __fadd_rd(a[TID], b[TID]);
}

extern "C" __global__ void f32_mul_rounding(const float *a, const float *b, float *out) {
  out[TID * 4 + 0] = __fmul_rn(a[TID], b[TID]);
  out[TID * 4 + 1] = __fmul_rz(a[TID], b[TID]);
  out[TID * 4 + 2] = __fmul_ru(a[TID], b[TID]);
  out[TID * 4 + 3] = __fmul_rd(a[TID], b[TID]);
}

extern "C" __global__ void f32_fma_rounding(const float *a, const float *b, const float *c, float *out) {
  out[TID * 4 + 0] = __fmaf_rn(a[TID], b[TID], c[TID]);
  out[TID * 4 + 1] = __fmaf_rz(a[TID], b[TID], c[TID]);
  out[TID * 4 + 2] = __fmaf_ru(a[TID], b[TID], c[TID]);
  out[TID * 4 + 3] = __fmaf_rd(a[TID], b[TID], c[TID]);
}

extern "C" __global__ void f32_ftz(const float *a, const float *b, float *out) {
  float r0, r1, r2;
  asm("add.ftz.f32 %0, %1, %2;" : "=f"(r0) : "f"(a[TID]), "f"(b[TID]));
  asm("mul.ftz.f32 %0, %1, %2;" : "=f"(r1) : "f"(a[TID]), "f"(b[TID]));
  asm("fma.rn.ftz.f32 %0, %1, %2, %1;" : "=f"(r2) : "f"(a[TID]), "f"(b[TID]));
  out[TID * 3 + 0] = r0;
  out[TID * 3 + 1] = r1;
  out[TID * 3 + 2] = r2;
}

extern "C" __global__ void f32_saturate(const float *a, const float *b, float *out) {
  float r1, r2;
  asm("add.sat.f32 %0, %1, %2;" : "=f"(r1) : "f"(a[TID]), "f"(b[TID]));
  asm("fma.rn.sat.f32 %0, %1, %2, %1;" : "=f"(r2) : "f"(a[TID]), "f"(b[TID]));
  out[TID * 3 + 0] = __saturatef(a[TID]);
  out[TID * 3 + 1] = r1;
  out[TID * 3 + 2] = r2;
}

extern "C" __global__ void f32_abs_neg(const float *a, const float *b, float *out) {
  out[TID * 4 + 0] = fabsf(a[TID]) + b[TID];
  out[TID * 4 + 1] = -a[TID] * b[TID];
  out[TID * 4 + 2] = -fabsf(a[TID]) - b[TID];
  out[TID * 4 + 3] = copysignf(a[TID], b[TID]);
}

extern "C" __global__ void f32_lerp(const float *a, const float *b, const float *t, float *out) {
  out[TID] = fmaf(t[TID], b[TID] - a[TID], a[TID]);
}

// ------------------------------------------------------------------ comparisons, min/max, select
extern "C" __global__ void f32_compare(const float *a, const float *b, unsigned *out) {
  float x = a[TID], y = b[TID];
  unsigned bits = (x < y) | (x <= y) << 1 | (x == y) << 2 | (x != y) << 3 | (x > y) << 4 |
                  (x >= y) << 5 | !(x < y) << 6 | !(x >= y) << 7 | (x != x || y != y) << 8;
  out[TID] = bits;
}

extern "C" __global__ void f32_min_max(const float *a, const float *b, float *out) {
  out[TID * 2 + 0] = fminf(a[TID], b[TID]);
  out[TID * 2 + 1] = fmaxf(a[TID], b[TID]);
}

extern "C" __global__ void f32_min_max_nan(const float *a, const float *b, float *out) {
  float lo, hi;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(lo) : "f"(a[TID]), "f"(b[TID]));
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(hi) : "f"(a[TID]), "f"(b[TID]));
  out[TID * 2 + 0] = lo;
  out[TID * 2 + 1] = hi;
}

extern "C" __global__ void f32_clamp(const float *x, float *out) {
  out[TID] = fminf(fmaxf(x[TID], -1.5f), 2.5f);
}

extern "C" __global__ void f32_select(const float *a, const float *b, const float *c, float *out) {
  float x = a[TID];
  out[TID] = x > b[TID] ? x : c[TID];
}

extern "C" __global__ void f32_classify(const float *a, unsigned *out) {
  float x = a[TID];
  out[TID] = isnan(x) | isinf(x) << 1 | isfinite(x) << 2 | signbit(x) << 3 |
             (fabsf(x) < 1.17549435e-38f && x != 0.0f) << 4;
}

// ------------------------------------------------------------------ conversions
extern "C" __global__ void f32_to_int(const float *a, int *out) {
  float x = a[TID];
  out[TID * 6 + 0] = (int)x;
  out[TID * 6 + 1] = __float2int_rn(x);
  out[TID * 6 + 2] = __float2int_rd(x);
  out[TID * 6 + 3] = __float2int_ru(x);
  out[TID * 6 + 4] = (int)(unsigned)x;
  out[TID * 6 + 5] = (int)__float2uint_rn(x);
}

extern "C" __global__ void int_to_f32(const int *a, float *out) {
  int v = a[TID];
  out[TID * 6 + 0] = (float)v;
  out[TID * 6 + 1] = __int2float_rz(v);
  out[TID * 6 + 2] = __int2float_ru(v);
  out[TID * 6 + 3] = __int2float_rd(v);
  out[TID * 6 + 4] = (float)(unsigned)v;
  out[TID * 6 + 5] = __uint2float_rz((unsigned)v);
}

extern "C" __global__ void f32_to_i64(const float *a, long long *out) {
  float x = a[TID];
  out[TID * 3 + 0] = (long long)x;
  out[TID * 3 + 1] = __float2ll_rn(x);
  out[TID * 3 + 2] = (long long)__float2ull_rd(x);
}

extern "C" __global__ void i64_to_f32(const long long *a, float *out) {
  long long v = a[TID];
  out[TID * 3 + 0] = (float)v;
  out[TID * 3 + 1] = __ll2float_rz(v);
  out[TID * 3 + 2] = __ull2float_ru((unsigned long long)v);
}

extern "C" __global__ void f32_round(const float *a, float *out) {
  float x = a[TID];
  out[TID * 5 + 0] = rintf(x);
  out[TID * 5 + 1] = floorf(x);
  out[TID * 5 + 2] = ceilf(x);
  out[TID * 5 + 3] = truncf(x);
  out[TID * 5 + 4] = roundf(x);
}

extern "C" __global__ void f32_to_unorm8(const float *a, unsigned *out) {
  out[TID] = __float2uint_rn(__saturatef(a[TID]) * 255.0f);
}

extern "C" __global__ void f32_f64_round_trip(const float *a, float *out) {
  double d = (double)a[TID] * 3.0;
  out[TID * 3 + 0] = (float)d;
  out[TID * 3 + 1] = __double2float_rz(d);
  out[TID * 3 + 2] = __double2float_ru(d);
}

// ------------------------------------------------------------------ FP64
extern "C" __global__ void f64_axpy(double a, const double *x, double *y) {
  y[TID] = a * x[TID] + y[TID];
}

extern "C" __global__ void f64_add_mul(const double *a, const double *b, double *out) {
  out[TID * 3 + 0] = a[TID] + b[TID];
  out[TID * 3 + 1] = a[TID] * b[TID];
  out[TID * 3 + 2] = __dadd_rz(a[TID], -b[TID]);
}

extern "C" __global__ void f64_compare_min_max(const double *a, const double *b, double *out) {
  double x = a[TID], y = b[TID];
  out[TID * 3 + 0] = fmin(x, y);
  out[TID * 3 + 1] = fmax(x, y);
  out[TID * 3 + 2] = x < y ? x : (x != x ? 1.0 : y);
}

extern "C" __global__ void f64_to_int(const double *a, int *out) {
  double x = a[TID];
  out[TID * 4 + 0] = (int)x;
  out[TID * 4 + 1] = __double2int_rn(x);
  out[TID * 4 + 2] = __double2int_rd(x);
  out[TID * 4 + 3] = (int)__double2uint_ru(x);
}

extern "C" __global__ void int_to_f64(const int *a, double *out) {
  out[TID * 2 + 0] = (double)a[TID];
  out[TID * 2 + 1] = (double)(unsigned)a[TID] * 0.5;
}

extern "C" __global__ void f64_horner(const double *x, double *out) {
  double v = x[TID];
  double p = fma(v, 0.125, -0.5);
  p = fma(p, v, 1.0 / 3.0);
  p = fma(p, v, -2.0);
  out[TID] = fma(p, v, 1.0);
}

extern "C" __global__ void f64_div(const double *a, const double *b, double *out) {
  out[TID] = a[TID] / b[TID];
}

// ------------------------------------------------------------------ IEEE division and square root
extern "C" __global__ void f32_div(const float *a, const float *b, float *out) {
  out[TID] = a[TID] / b[TID];
}

extern "C" __global__ void f32_sqrt(const float *a, float *out) {
  out[TID] = sqrtf(a[TID]);
}

extern "C" __global__ void f32_rcp_rn(const float *a, float *out) {
  out[TID] = __frcp_rn(a[TID]);
}

// ------------------------------------------------------------------ MUFU approximations
extern "C" __global__ void f32_fast_div(const float *a, const float *b, float *out) {
  out[TID] = __fdividef(a[TID], b[TID]);
}

extern "C" __global__ void f32_rsqrt(const float *a, float *out) {
  out[TID] = rsqrtf(a[TID]);
}

extern "C" __global__ void f32_exp2_log2(const float *a, float *out) {
  out[TID * 2 + 0] = exp2f(a[TID]);
  out[TID * 2 + 1] = __log2f(a[TID]);
}

extern "C" __global__ void f32_fast_exp(const float *a, float *out) {
  out[TID] = __expf(a[TID]);
}

extern "C" __global__ void f32_fast_sin_cos(const float *a, float *out) {
  out[TID * 2 + 0] = __sinf(a[TID]);
  out[TID * 2 + 1] = __cosf(a[TID]);
}

extern "C" __global__ void f32_expf(const float *a, float *out) {
  out[TID] = expf(a[TID]);
}

// ------------------------------------------------------------------ warp and block collectives
extern "C" __global__ void f32_warp_dot(const float *a, const float *b, float *out) {
  float v = a[TID] * b[TID];
  for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffff, v, d);
  out[TID] = v;
}

extern "C" __global__ void f32_warp_max(const float *a, float *out) {
  float v = a[TID];
  for (int d = 16; d > 0; d /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, d));
  out[TID] = v;
}

extern "C" __global__ void f32_warp_scan(const float *a, float *out) {
  float v = a[TID];
  int lane = TID % 32;
  for (int d = 1; d < 32; d *= 2) {
    float up = __shfl_up_sync(0xffffffff, v, d);
    if (lane >= d) v += up;
  }
  out[TID] = v;
}

extern "C" __global__ void f32_block_reduce(const float *a, float *out) {
  __shared__ float s[64];
  s[TID] = a[TID];
  __syncthreads();
  for (int d = 32; d > 0; d /= 2) {
    if (TID < d) s[TID] += s[TID + d];
    __syncthreads();
  }
  out[TID] = s[0] * a[TID];
}

extern "C" __global__ void f32_softmax_warp(const float *a, float *out) {
  float v = a[TID], m = v;
  for (int d = 16; d > 0; d /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, d));
  float e = __expf(v - m), s = e;
  for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffff, s, d);
  out[TID] = __fdividef(e, s);
}

extern "C" __global__ void f32_atomic_add(const float *a, float *out) {
  atomicAdd(&out[TID % 4], a[TID]);
}

// ------------------------------------------------------------------ FP16 and BF16
extern "C" __global__ void f16x2_arith(const __half2 *a, const __half2 *b, __half2 *out) {
  out[TID * 3 + 0] = __hadd2(a[TID], b[TID]);
  out[TID * 3 + 1] = __hmul2(a[TID], b[TID]);
  out[TID * 3 + 2] = __hfma2(a[TID], b[TID], a[TID]);
}

extern "C" __global__ void f16x2_compare_min_max(const __half2 *a, const __half2 *b, __half2 *out) {
  out[TID * 3 + 0] = __hmin2(a[TID], b[TID]);
  out[TID * 3 + 1] = __hmax2(a[TID], b[TID]);
  out[TID * 3 + 2] = __hlt2(a[TID], b[TID]);
}

extern "C" __global__ void f16_f32_convert(const float *a, unsigned *out) {
  __half2 h = __floats2half2_rn(a[TID], a[(TID + 1) % 64]);
  out[TID * 3 + 0] = *(unsigned *)&h;
  out[TID * 3 + 1] = __float_as_uint(__low2float(h) + __high2float(h));
  out[TID * 3 + 2] = __half_as_ushort(__float2half_rz(a[TID]));
}

extern "C" __global__ void bf16_convert_fma(const float *a, const float *b, unsigned *out) {
  __nv_bfloat162 x = __floats2bfloat162_rn(a[TID], b[TID]);
  __nv_bfloat162 y = __hfma2(x, x, x);
  out[TID * 2 + 0] = *(unsigned *)&x;
  out[TID * 2 + 1] = *(unsigned *)&y;
}
