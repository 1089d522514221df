// The classic atomicCAS spin lock, taken by every thread of the block (two warps): the lock
// loop is separate from the critical section, which deadlocks under pre-Volta lockstep
// execution. sync[0] is the lock, sync[1] a plain counter it guards. The counter is read
// after __syncthreads(), so the result does not depend on the order the lock is taken.
extern "C" __global__ void cas_lock(unsigned *out, unsigned *sync) {
    unsigned t = threadIdx.x;
    volatile unsigned *count = &sync[1];
    while (atomicCAS(&sync[0], 0u, 1u) != 0u) {}
    __threadfence();
    *count = *count + 1;
    __threadfence();
    atomicExch(&sync[0], 0u);
    __syncthreads();
    out[t] = *count;
}
