/* interposer.c's launch recording driven without a GPU: the driver calls it makes are faked
 * here, with device memory as host memory (tests/harness/capture/test_interposer_guards.py
 * compiles this with the CUDA toolkit's headers, where they are, and reads what it records).
 * Five allocations packed as the driver packs them (at multiples of 512 bytes), the last one
 * freed, and five launches of fill(out, n), which stores the floats out[0..n), past the end
 * of `out` too: the chip does not fault there. CUPTI's activity records are faked too: each
 * launch's kernel "takes" 10 ns per float it stores, delivered when the interposer flushes,
 * except launch 4's, which never comes. */
#include "interposer.c"

static struct { CUdeviceptr base; size_t size; } allocs[16];
static int nallocs;

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) { memcpy(dst, (void *)src, n); return CUDA_SUCCESS; }
CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
    for (int i = 0; i < nallocs; i++)
        if (allocs[i].base <= p && p < allocs[i].base + allocs[i].size) {
            *base = allocs[i].base;
            *size = allocs[i].size;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p) {
    (void)p;
    if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) *(CUmemorytype *)data = CU_MEMORYTYPE_DEVICE;
    else *(unsigned *)data = 0;
    return CUDA_SUCCESS;
}
CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {   /* (float *, unsigned) */
    (void)f;
    if (i > 1) return CUDA_ERROR_INVALID_VALUE;
    *off = 8 * i;
    *size = i ? 4 : 8;
    return CUDA_SUCCESS;
}
CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *o, size_t *s) { (void)k; (void)i; (void)o; (void)s; return CUDA_ERROR_INVALID_VALUE; }
CUresult cuFuncGetModule(CUmodule *m, CUfunction f) { (void)m; (void)f; return CUDA_ERROR_INVALID_VALUE; }
CUresult cuKernelGetFunction(CUfunction *f, CUkernel k) { (void)f; (void)k; return CUDA_ERROR_INVALID_VALUE; }
CUresult cuKernelGetLibrary(CUlibrary *l, CUkernel k) { (void)l; (void)k; return CUDA_ERROR_INVALID_VALUE; }
CUresult cuModuleGetGlobal(CUdeviceptr *p, size_t *s, CUmodule m, const char *n) { (void)p; (void)s; (void)m; (void)n; return CUDA_ERROR_NOT_FOUND; }
CUresult cuLibraryGetGlobal(CUdeviceptr *p, size_t *s, CUlibrary l, const char *n) { (void)p; (void)s; (void)l; (void)n; return CUDA_ERROR_NOT_FOUND; }
CUresult cuFuncGetName(const char **name, CUfunction f) { (void)f; *name = "fill"; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc c, void *u) { (void)s; (void)c; (void)u; return CUPTI_SUCCESS; }
CUptiResult cuptiEnableDomain(uint32_t e, CUpti_SubscriberHandle s, CUpti_CallbackDomain d) { (void)e; (void)s; (void)d; return CUPTI_SUCCESS; }

static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static uint32_t last_correlation;
static unsigned long long last_ns;

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r, CUpti_BuffersCallbackCompleteFunc c) {
    requested = r;
    completed = c;
    return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) { (void)kind; return CUPTI_SUCCESS; }
CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record) {
    if (*record || valid < sizeof(KernelRecord)) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)buffer;
    return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    if (!last_ns) return CUPTI_SUCCESS;
    uint8_t *buffer;
    size_t size, records;
    requested(&buffer, &size, &records);
    KernelRecord *k = (KernelRecord *)buffer;
    memset(k, 0, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = 5000;
    k->end = 5000 + last_ns;
    k->correlationId = last_correlation;
    last_ns = 0;
    completed(NULL, 0, buffer, size, sizeof *k);
    return CUPTI_SUCCESS;
}

static char pool[1 << 16] __attribute__((aligned(512)));
static size_t used;

static CUdeviceptr alloc(size_t size) {
    CUdeviceptr p = (CUdeviceptr)(pool + used);
    used += (size + 511) / 512 * 512;
    allocs[nallocs].base = p;
    allocs[nallocs++].size = size;
    log_memory("alloc", p, size);          /* what the cuMemAlloc_v2 callback logs */
    return p;
}

static void fill(CUdeviceptr out, unsigned n, int timed) {
    static uint32_t calls;
    CUpti_CallbackData cb;
    memset(&cb, 0, sizeof cb);
    cb.symbolName = "fill";
    cb.correlationId = last_correlation = 40 + calls++;
    last_ns = timed ? 10ull * n : 0;
    unsigned grid[3] = {(n + 63) / 64, 1, 1}, block[3] = {64, 1, 1};
    void *params[2] = {&out, &n};
    begin_launch(&cb, "cuLaunchKernel", (CUfunction)1, grid, block, 0, NULL, params, NULL, 0, 0);
    for (unsigned i = 0; i < n; i++) ((float *)out)[i] = 1.0f + (float)i;   /* the launch */
    end_launch(CUDA_SUCCESS);
}

int main(void) {
    if (!InitializeInjection()) return 1;                         /* WARPBOARD_CAPTURE_DIR */
    CUdeviceptr a = alloc(4096), b = alloc(4096), c = alloc(4000), d = alloc(512), e = alloc(256);
    (void)b;
    log_memory("free", e, 0);
    fill(a, 1024, 1);        /* 0: inside a; its guard, b, unchanged */
    fill(a, 1030, 1);        /* 1: 24 bytes past a's end, into b */
    fill(c, 1010, 1);        /* 2: 40 bytes past c's end, in the padding before d: no allocation sees it */
    fill(c, 1040, 1);        /* 3: 160 bytes past c's end, into d */
    fill(d, 130, 0);        /* 4: past d's end: e was freed, no allocation follows, no guard */
    return 0;
}
