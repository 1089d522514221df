// nvcc 13.0 for sm_86 lowers a switch on a signed int loaded from memory, whose cases are
// divisions by constants, to an indirect branch through a jump table in constant bank 2:
// ISETP/BRA split off the upper cases, IMNMX.U32 clamps the index (negative values become
// the default), LDC reads the target from c[0x2][...] and BRX jumps there.
extern "C" __global__ void switch_table(unsigned *out, const int *sel, const unsigned *in) {
    int t = threadIdx.x;
    unsigned x = in[t];
    unsigned r;
    switch (sel[t]) {
    case 0: r = x / 7; break;
    case 1: r = x % 13; break;
    case 2: r = x / 1000; break;
    case 3: r = (x * 2654435761u) >> 7; break;
    default: r = 7; break;
    }
    out[t] = r;
}

// A state machine: each step's switch goes through the jump table, so the lanes of a warp
// take different targets of one BRX, and meet again after it.
extern "C" __global__ void switch_table_loop(unsigned *out, const int *sel, const unsigned *in) {
    int t = threadIdx.x;
    unsigned x = in[t];
    int s = sel[t];
    for (int k = 0; k < 6; k++) {
        switch (s) {
        case 0: x = x / 7 + k; s = x & 3; break;
        case 1: x = x % 13 + 3 * k; s = (x >> 1) & 3; break;
        case 2: x = x / 1000 + x; s = x % 5; break;
        case 3: x = (x * 2654435761u) >> 7; s = (int)(x & 7) - 2; break;
        default: x = x * 5 + 1; s = k & 3; break;
        }
    }
    out[t] = x ^ (unsigned)s;
}
