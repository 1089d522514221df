// Early exits: before, inside and after divergence, and from inside loops.
// Every kernel writes one u32 per thread into out[]; in[] holds one input word per thread.
#define LANE (threadIdx.x & 31)

// Some lanes return before anything diverges; the survivors branch and use masks of survivors.
extern "C" __global__ void exit_before_divergence(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], r;
    out[t] = 0xdead0000u | t;
    if ((x & 7) == 3 || LANE == 31) return;
    unsigned live = __activemask();
    unsigned odd = __ballot_sync(live, x & 8);
    if (x & 8) r = __ballot_sync(odd, x & 16) ^ __popc(live);
    else       r = __reduce_add_sync(live & ~odd, x & 0xff) + (live << 1);
    out[t] = r;
}

// Lanes return from inside one side of an if; after the rejoin the rest vote.
extern "C" __global__ void exit_inside_divergence(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], r;
    unsigned hi = __ballot_sync(0xffffffffu, x & 1);
    if (x & 1) {
        if ((x >> 1) % 3 == 0) { out[t] = 0xe0000000u | __popc(hi); return; }
        r = x * 7;
    } else {
        r = __brev(x);
        for (unsigned i = 0; i < (x & 3); i++) r = r * 9 + 1;
    }
    unsigned live = __activemask();
    out[t] = __ballot_sync(live, r & 4) ^ (live >> 4) ^ (r & 0xf);
}

// Divergent work rejoins, then lanes return; survivors reduce over who is left.
extern "C" __global__ void exit_after_divergence(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], r;
    if (x & 1) r = x * 3;
    else { r = x; for (unsigned i = 0; i < ((x >> 1) & 7); i++) r = (r >> 3) + r * 5; }
    if (r % 5 == 0) { out[t] = 1; return; }
    unsigned live = __activemask();
    out[t] = __reduce_max_sync(live, r & 0xffff) + __popc(live) * 0x10000;
}

// Returns from inside an inner loop of a nested loop; the lanes still inside vote each round.
extern "C" __global__ void exit_in_nested_loops(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, x = in[t], acc = t & 31;
    #pragma unroll 1
    for (unsigned i = 0; i < 4; i++) {
        for (unsigned j = 0; j <= ((x >> (2 * i)) & 3); j++) {
            acc = acc * 5 + j;
            if (acc % 13 == 0) { out[t] = 0xee000000u | (i << 8) | j; return; }
        }
        acc += __popc(__ballot_sync(__activemask(), acc & 1));
    }
    out[t] = acc;
}

// Threads of a 91-thread block return between two __syncthreads (a whole warp among them);
// the second barrier waits only for the survivors, which read what the others left behind.
extern "C" __global__ void exit_between_barriers(unsigned *out, const unsigned *in) {
    __shared__ unsigned s[91], s2[91];
    unsigned t = threadIdx.x, x = in[t];
    s[t] = x;
    s2[t] = ~x;
    __syncthreads();
    if (x % 5 == 0 || (t >= 32 && t < 64)) { out[t] = x ^ 0x5555u; return; }
    s2[t] = x * 3 + s[(t + 7) % 91];
    __syncthreads();
    out[t] = s2[(t * 7 + 1) % 91] - s2[90 - t];
}
