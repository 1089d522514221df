// printf in a branch after a vote: the lanes whose index in the warp is below the number
// of bits set in the warp's ballot print it; the others print nothing.
#include <cstdio>

extern "C" __global__ void vote_branch(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x;
    unsigned ballot = __ballot_sync(0xffffffffu, in[t] & 1);
    unsigned count = __popc(ballot);
    if (count > t % 32) printf("warp %u lane %u: ballot %08x (%u set)\n", t / 32, t % 32, ballot, count);
    out[t] = count;
}
