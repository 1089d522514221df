// __reduce_*_sync with a register mask that splits a converged warp in two groups:
// ptxas takes the slow path, WARPSYNC.EXCLUSIVE then a maskless REDUX, one group at a time.
extern "C" __global__ void reduce_two_masks(unsigned *out, const unsigned *in) {
    const unsigned t = threadIdx.x, lane = t & 31u;
    const unsigned x = in[t];
    const unsigned m = lane < 16u ? 0x0000ffffu : 0xffff0000u;
    out[t * 3u + 0u] = __reduce_add_sync(m, x);
    const unsigned m2 = (lane & 1u) ? 0xaaaaaaaau : 0x55555555u;
    out[t * 3u + 1u] = __reduce_max_sync(m2, x ^ lane);
    out[t * 3u + 2u] = __reduce_or_sync(lane < 8u ? 0xffu : 0xffffff00u, x << (lane & 7u));
}
