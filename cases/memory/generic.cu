// Generic addressing: pointers that reach __noinline__ functions from shared memory, the
// thread's own stack and global memory, so that ptxas cannot place them: it forms them from
// c[0x0][0x18] (cvta.shared) and R1 + c[0x0][0x20] (cvta.local) and accesses them with
// ST.E, ST.E.U8, ATOM.E.ADD, LD.E.64 and LD.E.128.
__device__ __noinline__ void put(unsigned *p, int k, unsigned v) { p[k] = v; }
__device__ __noinline__ void put8(unsigned char *p, int k, unsigned v) { p[k] = (unsigned char)v; }
__device__ __noinline__ unsigned bump(unsigned *p, int k, unsigned v) { return atomicAdd(p + k, v); }
__device__ __noinline__ unsigned long long get64(const unsigned long long *p, int k) { return p[k]; }
__device__ __noinline__ uint4 get128(const uint4 *p, int k) { return p[k]; }

// Block 64, grid 2. out: 6 words per thread, then 4 global counters, then each block's shared
// counters 0-3. Each thread chooses its pointers from its data (in[g] & 1, in[g] & 2), so the
// lanes of one instruction reach different memories; control flow stays uniform up to the
// barriers (subgroup-native meets a __syncthreads where each thread reaches it).
extern "C" __global__ void generic_st_atom(unsigned *out, const unsigned *in) {
    __shared__ __align__(16) unsigned s[64];
    __shared__ unsigned counters[64];
    __align__(16) unsigned local[8];
    unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    unsigned v = in[g];
    put(s, t, v * 5u);
    put(counters, t, t);
    for (int k = 0; k < 8; ++k) put(local, k, in[(g + k) & 127u] + k);
    put8((v & 2u) ? (unsigned char *)s : (unsigned char *)local, (v & 2u) ? 4 * t + 1 : 4 * (t & 7u) + 1,
         (v & 2u) ? t + 0x40 : t);
    __syncthreads();
    unsigned r0 = bump(local, t & 7u, 100u);
    unsigned r1 = bump(local, t & 7u, v);
    bump(counters, t & 3u, t + 1);
    bump(out + 6 * 128, t & 3u, blockIdx.x + 1);
    const unsigned *p = (v & 1u) ? s : local;
    unsigned long long a = get64((const unsigned long long *)p, (v & 1u) ? (int)((t + 3) & 31u) : (int)(t & 3u));
    unsigned long long b = get64((const unsigned long long *)in, g >> 1);
    uint4 q = get128((const uint4 *)p, (v & 1u) ? (int)((t >> 2) & 15u) : 1);
    __syncthreads();
    if (t < 4) out[6 * 128 + 4 + 4 * blockIdx.x + t] = counters[t];
    unsigned *o = out + 6 * g;
    o[0] = r0;
    o[1] = r1;
    o[2] = (unsigned)a;
    o[3] = (unsigned)(a >> 32) ^ (unsigned)b;
    o[4] = (unsigned)(b >> 32) + q.x + q.y;
    o[5] = q.z ^ q.w ^ local[t & 7u];
}
