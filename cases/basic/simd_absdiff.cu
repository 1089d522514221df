// Absolute differences as nvcc compiles them for sm_86: __sad/__usad (|a - b| + c, signed and
// unsigned: VABSDIFF), __vabsdiffu4 (four byte-wise |a - b|: VABSDIFF4.U8), __vsadu4 (their
// sum: VABSDIFF4.U8.ACC) and __vabsdiffs4 (signed bytes, by flipping the sign bits first), in
// divergent code: odd lanes take another mix than even ones, and some lanes leave early.
extern "C" __global__ void simd_absdiff(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x;
    unsigned a = in[t], b = in[t + 96], c = in[t + 192];
    unsigned *o = out + t * 8;
    if ((a & 0xf) == 3) return;
    o[0] = __vabsdiffu4(a, b);
    o[1] = __vsadu4(a, b) + c;
    o[2] = __vabsdiffs4(a, b);
    if (t & 1) {
        o[3] = __usad(a, b, c);
        o[4] = __sad((int)a, (int)b, c & 0xffff);
    } else {
        o[3] = __usad(a ^ c, b, 7);
        o[4] = __sad((int)(a >> 3), (int)b, 0);
    }
    o[5] = __vsadu4(a ^ b, c) + __vabsdiffu4(c, a);
    o[6] = __vabsdiffu2(a, b);
    o[7] = __vsads4(a, c);
}
