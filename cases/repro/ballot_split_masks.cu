// __ballot_sync with masks held in registers, where ptxas tests them with R2UR P / BRA.DIV:
// T1: all 32 lanes converged, two disjoint masks (0xffff, 0xffff0000);
// T2: the full mask, lanes split over two branches (0-15 and 16-31);
// T3: the full mask, converged;
// T4: masks 0xffff / 0xffff0000, lanes split 0-23 and 24-31 (one branch holds both masks).
extern "C" __global__ void ballot_split_masks(unsigned *out, const unsigned *in) {
    unsigned lane = threadIdx.x & 31u;
    out[lane] = __ballot_sync(in[lane], 1);
    unsigned full = in[32 + lane], r;
    if (in[64 + lane] & 1u) { r = __ballot_sync(full, 1) ^ 0x5u; out[160 + lane] = r; }
    else { r = __ballot_sync(full, 1); out[160 + lane] = r + 7u; }
    out[32 + lane] = r;
    out[64 + lane] = __ballot_sync(full, lane & 1u);
    unsigned m4 = in[96 + lane], r4;
    if (in[128 + lane] & 1u) { r4 = __ballot_sync(m4, 1) ^ 0x3u; out[192 + lane] = r4; }
    else { r4 = __ballot_sync(m4, 1); out[192 + lane] = r4 + 9u; }
    out[96 + lane] = r4;
}
