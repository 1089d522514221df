// One kernel per MUFU function of sm_86, for the MUFU sweep cases (cases/float/mufu_*_sweep.toml,
// written by cases/float/mufu_make_cases.py). Each thread reads one input word and writes the
// raw bits of the result, so that a case holds the chip's words for every input of a sweep.
//
// The approximations are written as inline PTX so that nvcc's own library code stays out:
// the .ftz forms compile to the bare MUFU (checked with nvdisasm: one MUFU.<FUNC> between the
// load and the store); the forms without .ftz keep denormals by scaling around the MUFU
// (FSETP, FMUL by 2^24, MUFU, FMUL or FADD back), so they are cases of their own. sin and cos
// compile to FMUL.RZ by 1/(2 pi) then MUFU.SIN/COS with or without .ftz: one kernel each.
// rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 of a double whose low word is 0 compile to the
// bare MUFU.RCP64H and MUFU.RSQ64H; the kernel writes the result's high word, the MUFU's own.

#define MUFU_F32(name, ptx)                                                                   \
    extern "C" __global__ void name(const unsigned *in, unsigned *out) {                      \
        unsigned t = blockIdx.x * blockDim.x + threadIdx.x;                                   \
        float x = __uint_as_float(in[t]), y;                                                  \
        asm(ptx " %0, %1;" : "=f"(y) : "f"(x));                                               \
        out[t] = __float_as_uint(y);                                                          \
    }

#define MUFU_F64H(name, ptx)                                                                  \
    extern "C" __global__ void name(const unsigned *in, unsigned *out) {                      \
        unsigned t = blockIdx.x * blockDim.x + threadIdx.x;                                   \
        double x = __hiloint2double(in[t], 0), y;                                             \
        asm(ptx " %0, %1;" : "=d"(y) : "d"(x));                                               \
        out[t] = __double2hiint(y);                                                           \
    }

MUFU_F32(mufu_rcp_ftz, "rcp.approx.ftz.f32")      // MUFU.RCP
MUFU_F32(mufu_rsq_ftz, "rsqrt.approx.ftz.f32")    // MUFU.RSQ
MUFU_F32(mufu_sqrt_ftz, "sqrt.approx.ftz.f32")    // MUFU.SQRT
MUFU_F32(mufu_ex2_ftz, "ex2.approx.ftz.f32")      // MUFU.EX2
MUFU_F32(mufu_lg2_ftz, "lg2.approx.ftz.f32")      // MUFU.LG2
MUFU_F32(mufu_sin_ftz, "sin.approx.ftz.f32")      // FMUL.RZ by 1/(2 pi), MUFU.SIN
MUFU_F32(mufu_cos_ftz, "cos.approx.ftz.f32")      // FMUL.RZ by 1/(2 pi), MUFU.COS
MUFU_F32(mufu_tanh, "tanh.approx.f32")            // MUFU.TANH

MUFU_F32(mufu_rcp, "rcp.approx.f32")      // FSETP x2, FSEL x2: scale by 2^24 or 1/4, MUFU.RCP, scale back
MUFU_F32(mufu_rsq, "rsqrt.approx.f32")    // denormal x: FMUL by 2^24, MUFU.RSQ, FMUL by 2^12
MUFU_F32(mufu_sqrt, "sqrt.approx.f32")    // denormal x: FMUL by 2^24, MUFU.SQRT, FMUL by 2^-12
MUFU_F32(mufu_ex2, "ex2.approx.f32")      // x < -126: FMUL by 1/2, MUFU.EX2, squared
MUFU_F32(mufu_lg2, "lg2.approx.f32")      // denormal x: FMUL by 2^24, MUFU.LG2, FADD -24

MUFU_F64H(mufu_rcp64h, "rcp.approx.ftz.f64")      // MUFU.RCP64H
MUFU_F64H(mufu_rsq64h, "rsqrt.approx.ftz.f64")    // MUFU.RSQ64H
