// Sixteen compares kept live across a loop: ptxas spills the predicates with P2R and
// reloads them with R2P or bit tests.
extern "C" __global__ void p2r_predicates(const int *in, int *out) {
    int t = threadIdx.x;
    bool p[16];
#pragma unroll
    for (int k = 0; k < 16; k++) p[k] = in[(t + k) % 64] > 32 + k;
    int acc = 0;
    for (int r = 0; r < (in[t] & 7); r++) {
#pragma unroll
        for (int k = 0; k < 16; k++) if (p[k]) acc += in[(r + k) % 64]; else acc ^= r + k;
    }
    out[t] = acc;
}
