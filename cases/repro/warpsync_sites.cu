// Lanes that call *_sync collectives from two different call sites (ptxas' votesync subroutines,
// each with its own WARPSYNC): which lanes does each VOTE count on the chip?
extern "C" __global__ void ws_ballot_any(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = t & 31u, x = in[t];
    unsigned a, b;
    if (lane % 3u == 0u) { a = __ballot_sync(0xffffffffu, x & 1u); b = __any_sync(0xffffffffu, x & 2u); }
    else                 { b = __any_sync(0xffffffffu, x & 4u);     a = __ballot_sync(0xffffffffu, x & 8u) ^ 1u; }
    out[t] = a;
    out[64 + t] = b;
}
extern "C" __global__ void ws_ballot_all(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = t & 31u, x = in[t];
    unsigned a, b;
    if (lane < 10u) { a = __ballot_sync(0xffffffffu, 1u);     b = __all_sync(0xffffffffu, x != 0u); }
    else            { b = __all_sync(0xffffffffu, x != 0u);   a = __ballot_sync(0xffffffffu, 1u); }
    out[t] = a;
    out[64 + t] = b;
}
extern "C" __global__ void ws_ballot_uni(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = t & 31u, x = in[t];
    unsigned a, b;
    if (x & 1u) { a = __ballot_sync(0xffffffffu, 1u); b = __all_sync(0xffffffffu, 1u); }
    else        { b = __any_sync(0xffffffffu, 1u);     a = __ballot_sync(0xffffffffu, 1u); }
    out[t] = a;
    out[64 + t] = b | (lane << 8);
}
extern "C" __global__ void ws_three_sites(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = t & 31u, x = in[t];
    unsigned a;
    if (lane < 8u)       a = __ballot_sync(0xffffffffu, 1u);
    else if (lane < 20u) a = __any_sync(0xffffffffu, x & 1u) + 2u;
    else                 a = __all_sync(0xffffffffu, 1u) + 4u;
    out[t] = a;
}
extern "C" __global__ void ws_one_then_two(unsigned *out, const unsigned *in) {
    unsigned t = threadIdx.x, lane = t & 31u, x = in[t];
    unsigned a = 0u, b = 0u;
    if (lane < 16u) { a = __ballot_sync(0xffffffffu, x & 1u); }
    else            { b = __any_sync(0xffffffffu, x & 1u); a = __ballot_sync(0xffffffffu, x & 2u); }
    out[t] = a;
    out[64 + t] = b;
}
