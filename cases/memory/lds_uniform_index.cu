// A uniform loop's row offset kept in a uniform register: nvcc addresses shared memory as
// [R.X4+UR] (a lane's column scaled by 4 plus the row's byte offset, unscaled).
extern "C" __global__ void lds_uniform_index(unsigned *out, const unsigned *in)
{
    __shared__ unsigned s[16][64];
    unsigned t = threadIdx.x;
#pragma unroll 1
    for (int j = 0; j < 16; j++)
        s[j][t] = in[t] * (j + 3u) + j;
    __syncthreads();
    unsigned acc = 0;
#pragma unroll 1
    for (int i = 0; i < 16; i++)
        acc = acc * 31u + s[i][(t + 5) & 63] + s[(i + 3) & 15][t];
    out[t] = acc;
}
