// cpu_shim.h: just enough CUDA to compile a COLLECTIVE-FREE kernel with g++ and run it
// on the CPU, one thread after another, to derive a case's expected buffer words.
//
// Sequential execution is only faithful when threads never observe each other: no warp
// votes, shuffles, barriers, atomics, shared memory or activemask. Those are deliberately
// left undefined here, so a kernel that uses them fails to compile instead of producing
// plausible-looking wrong numbers. Used by run_on_cpu.sh (see cases/README.md).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __constant__ const   // a __constant__ table: read-only data
#define __forceinline__ inline
#define __restrict__ __restrict

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x = 1, y = 1, z = 1; };

// thread_local: cpu_collectives.h runs every CUDA thread of a block on its own OS thread
static thread_local uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;

// ---- integer intrinsics, with CUDA's results where the gcc builtins are undefined (0)
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline long long __mul64hi(long long a, long long b) {
    return (long long)(((__int128)a * b) >> 64);
}
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)((v >> (((s >> (4 * i)) & 7) * 8)) & 0xff) << (8 * i);
    return r;
}
// ---- absolute differences (CUDA Math API, integer and SIMD intrinsics): lanes of 8 or 16 bits
static inline unsigned __sad(int a, int b, unsigned c) {
    return (unsigned)(a > b ? (long long)a - b : (long long)b - a) + c;
}
static inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return (a > b ? a - b : b - a) + c; }
static inline unsigned wb_lane(unsigned v, int k, int bits, bool sign) {
    unsigned u = (v >> (k * bits)) & ((1u << bits) - 1);
    return sign && (u >> (bits - 1)) ? u | ~((1u << bits) - 1) : u;     // sign-extended where signed
}
static inline unsigned wb_absdiff(unsigned a, unsigned b, int bits, bool sign, bool sum) {
    unsigned r = 0;
    for (int k = 0; k < 32 / bits; k++) {
        int x = (int)wb_lane(a, k, bits, sign), y = (int)wb_lane(b, k, bits, sign);
        unsigned d = (unsigned)(x > y ? x - y : y - x);
        r += sum ? d : (d & ((1u << bits) - 1)) << (k * bits);
    }
    return r;
}
static inline unsigned __vabsdiffu4(unsigned a, unsigned b) { return wb_absdiff(a, b, 8, false, false); }
static inline unsigned __vabsdiffs4(unsigned a, unsigned b) { return wb_absdiff(a, b, 8, true, false); }
static inline unsigned __vabsdiffu2(unsigned a, unsigned b) { return wb_absdiff(a, b, 16, false, false); }
static inline unsigned __vsadu4(unsigned a, unsigned b) { return wb_absdiff(a, b, 8, false, true); }
static inline unsigned __vsads4(unsigned a, unsigned b) { return wb_absdiff(a, b, 8, true, true); }
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)((((unsigned long long)hi << 32 | lo) << (s & 31)) >> 32);
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)(((unsigned long long)hi << 32 | lo) >> (s & 31));
}

// ---- CUDA's integer min/max overloads (same-type arguments, as in device code)
// ---- bit casts between floating-point values and their words
template <class To, class From> static inline To wb_bit_cast(From x) {
    static_assert(sizeof(To) == sizeof(From));
    To y;
    std::memcpy(&y, &x, sizeof y);
    return y;
}
static inline unsigned __float_as_uint(float x) { return wb_bit_cast<unsigned>(x); }
static inline float __uint_as_float(unsigned x) { return wb_bit_cast<float>(x); }
static inline long long __double_as_longlong(double x) { return wb_bit_cast<long long>(x); }
static inline double __longlong_as_double(long long x) { return wb_bit_cast<double>(x); }

#define WB_MINMAX(T)                                              \
    static inline T min(T a, T b) { return a < b ? a : b; }     \
    static inline T max(T a, T b) { return a > b ? a : b; }
WB_MINMAX(int)
WB_MINMAX(unsigned)
WB_MINMAX(long long)
WB_MINMAX(unsigned long long)
#undef WB_MINMAX
using std::abs;

// ---- the launch: every thread of every block, in order (x fastest), one at a time
template <class F>
static void wb_launch(dim3 grid, dim3 block, F body) {
    gridDim = grid;
    blockDim = block;
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++)
                for (unsigned tz = 0; tz < block.z; tz++)
                    for (unsigned ty = 0; ty < block.y; ty++)
                        for (unsigned tx = 0; tx < block.x; tx++) {
                            blockIdx = {bx, by, bz};
                            threadIdx = {tx, ty, tz};
                            body();
                        }
}

// A buffer argument: converts to whatever pointer type the kernel declares.
struct wb_ptr {
    void *p;
    template <class T> operator T *() const { return static_cast<T *>(p); }
};
