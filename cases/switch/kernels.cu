// switch statements on per-thread data: dense (with fall-through) and sparse.
// Every kernel writes one u32 per thread into out[]; in[] holds one input word per thread.
#define LANE (threadIdx.x & 31)

// A dense switch on 3 input bits with fall-through between some cases, then a ballot.
extern "C" __global__ void switch_dense(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], r = x >> 8;
    switch (x & 7) {
    case 0: r += 11;
    case 1: r *= 3; break;
    case 2: r ^= 0x5a5a; break;
    case 3: r = __brev(r);
    case 4: r += t; break;
    case 5: r = r * r; break;
    case 6: for (unsigned i = 0; i < (x >> 29); i++) r = r * 7 + i; break;
    default: r = ~r;
    }
    out[t] = r + __ballot_sync(0xffffffffu, r & 1);
}

// A sparse switch (compare chain) on a byte of the input, each arm reading its lanes' mask.
extern "C" __global__ void switch_sparse_masks(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], key = (x >> 4) % 6, r;
    switch (key == 0 ? 3u : key == 1 ? 17u : key == 2 ? 100u : key == 3 ? 1000u : key) {
    case 3: r = __activemask(); break;
    case 17: r = __popc(__activemask()) + 17; break;
    case 100: r = __ballot_sync(__activemask(), x & 1) ^ 100; break;
    case 1000: r = __reduce_add_sync(__activemask(), x & 0xff); break;
    default: r = x;
    }
    out[t] = r;
}

// A switch inside a loop: each round picks an arm by the loop state; arms update differently.
extern "C" __global__ void switch_in_loop(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], s = x, acc = 0;
    for (unsigned i = 0; i < 6; i++) {
        switch ((s >> (i * 2)) & 3) {
        case 0: acc += 1; break;
        case 1: acc = acc * 3; s ^= 0x30; break;
        case 2: acc ^= s; if (acc & 1) i++; break;
        default: acc += __popc(__activemask());
        }
    }
    out[t] = acc;
}
