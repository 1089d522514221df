// Byte and halfword loads and stores (neighbouring lanes store into the same 32-bit word)
// and a switch on a per-thread selector.
extern "C" __global__ void bytes_switch(unsigned char *out8, unsigned short *out16,
                                        const unsigned char *in) {
    unsigned t = threadIdx.x;
    unsigned c = in[t * 3 + 1];
    unsigned h = ((const unsigned short *)in)[t + 7];
    int sc = (signed char)in[t * 2];
    int sh = (short)((const unsigned short *)in)[t ^ 9];
    unsigned r;
    switch ((c ^ t) % 5) {
    case 0: r = c + h; break;
    case 1: r = (unsigned)(sc * 3); break;
    case 2: r = h >> (c & 7); break;
    case 3: r = (unsigned)(sh / 3); break;
    default: r = c * 257u; break;
    }
    out8[t] = (unsigned char)r;
    out16[t] = (unsigned short)(r >> 4);
}
