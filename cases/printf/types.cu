// printf of every argument type nvcc packs: int, unsigned, hex with width and zero padding,
// octal, float (promoted to double), double, long long, char, a constant string, %%.
#include <cstdio>

extern "C" __global__ void types(unsigned *out, const unsigned *in, long long big) {
    unsigned t = threadIdx.x;
    int v = (int)in[t];
    float f = (float)(in[t] & 0xFFFF) * 0.25f;
    double d = (double)in[t] * 0x1p-20;
    printf("t=%d v=%d u=%u x=%08X o=%o f=%.3f d=%e g=%g ll=%lld llx=%llx c=%c s=%s %5.2f%% [%-4d] [%+d]\n",
           t, v, (unsigned)v, (unsigned)v, t, f, d, d / 8, big * t, big ^ t,
           'a' + t, "str", 12.5f, t, v % 100);
    out[t] = t;
}
