// What printf returns on the device: the CUDA C++ Programming Guide says the number of
// arguments its format string parses (2 here, 0 without arguments), not the characters printed.
#include <cstdio>

extern "C" __global__ void return_value(int *out) {
    unsigned t = threadIdx.x;
    int parsed = printf("%d squared is %d\n", t, t * t);
    int none = printf("no arguments: %%d\n");
    out[2 * t] = parsed;
    out[2 * t + 1] = none;
}
