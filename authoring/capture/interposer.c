/* The interposer of `warpboard capture`: the CUDA driver loads it through
 * CUDA_INJECTION64_PATH and calls InitializeInjection() at cuInit, before the program's
 * first CUDA call returns. It subscribes to CUPTI's driver-API callbacks (the runtime's
 * launches reach the driver's cuLaunchKernel* entry points too, so programs linked with
 * the static or the shared runtime, or using the driver API, are all seen) and, for each
 * kernel launch it keeps:
 *
 *   on entry: waits for the device (cuCtxSynchronize), finds every device allocation an
 *             8-byte-aligned word of the parameters points into (cuMemGetAddressRange) and
 *             writes its contents, and those of the module variables named in
 *             WARPBOARD_CAPTURE_GLOBALS, to files (".before");
 *   on exit:  waits for the launch and writes the same memory again (".after"),
 *
 * then one JSON line describing the launch to launches.jsonl, with the launch's time on the
 * chip from CUPTI's activity record of the kernel ("device_ns": its end less its start, the
 * record matched to the launch by CUPTI's correlation id; null where none came). Beside each allocation it
 * copies it watches a guard: the first bytes of the next live allocation above it (the driver
 * packs allocations: a store past one's end lands in the next, and the chip does not fault),
 * when that is none of the launch's own; the line says which byte of it the launch changed
 * first ("guards"). Launches are serialised (one at a time, the device idle around each), so
 * every launch's words are its own. It also logs allocations and frees (and keeps those live
 * for the guards), so that pointers stored inside buffers can be recognised.
 * Nothing is decided here about what makes a faithful case: the case writer
 * (authoring/capture/cases.py) reads the record and says why it skips a launch.
 *
 * Environment: WARPBOARD_CAPTURE_DIR (required; the folder it writes),
 * WARPBOARD_CAPTURE_MAX_PER_KERNEL (launches kept per kernel name, default 8),
 * WARPBOARD_CAPTURE_MAX_BYTES (memory copied per launch and side, default 64 MiB),
 * WARPBOARD_CAPTURE_GLOBALS (a file of module variable names, one a line).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARAM_BYTES 32768
#define MAX_REGIONS 64
#define MAX_KERNELS 4096
#define MAX_GLOBALS 1024
#define MAX_STREAMS 64
#define MAX_LIVE 65536             /* allocations tracked for the guards */
#define GUARD_BYTES 4096           /* bytes of the next allocation watched after each region */
#define GUARD_GAP (2u << 20)       /* ... when it begins within this many bytes of the region's end */
#define MAX_TIMES 256              /* kernel durations kept until their launch's line is written */
#define ACTIVITY_BUFFER (1u << 20)

#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 KernelRecord;   /* CUDA 13 has this one kernel record */
#else
typedef CUpti_ActivityKernel9 KernelRecord;    /* CUDA 12's latest */
#endif

typedef struct {
    CUdeviceptr base;
    size_t size;
    unsigned memtype;   /* CU_MEMORYTYPE_DEVICE, _HOST, ... (0: unknown) */
    int managed;
    const char *name;   /* a module variable's name, or NULL for an allocation */
} Region;

typedef struct {
    CUdeviceptr base;   /* the watched bytes: the start of another live allocation */
    size_t size;
    int region;         /* the region they follow */
    unsigned char *before;
    long changed;       /* the first byte the launch changed, -1: none */
} Guard;

typedef struct {
    long index;
    const char *api;
    const char *kernel;
    unsigned grid[3], block[3], shared;
    CUstream stream;
    int cooperative, cluster;
    size_t param_bytes;
    unsigned char params[MAX_PARAM_BYTES];
    int nparams;
    size_t param_offset[1024], param_size[1024];
    Region regions[MAX_REGIONS];
    int nregions;
    Guard guards[MAX_REGIONS];
    int nguards;
    int copied;            /* the memory was written (kept, not over the limits) */
    const char *skip;      /* why the launch is only listed */
    uint32_t correlation;  /* CUPTI's id of the launch call, which its kernel's activity record names */
    char note[256];
} Launch;

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;   /* the launch holds it; calls inside take it again */
static __thread int inside;          /* the interposer's own driver calls: no callbacks */
static __thread Launch *pending;     /* the launch between its entry and exit callbacks */
static FILE *log_file;
static char out_dir[3072];
static long max_per_kernel = 8;
static unsigned long long max_bytes = 64ull << 20;
static long launches;
static char *kernel_names[MAX_KERNELS];
static long kernel_counts[MAX_KERNELS];
static int nkernels;
static char *global_names[MAX_GLOBALS];
static int nglobals;
static CUstream streams[MAX_STREAMS];
static int nstreams;
static CUdeviceptr live_base[MAX_LIVE];   /* the allocations made and not freed (cuMemAlloc...) */
static size_t live_size[MAX_LIVE];
static int nlive;

/* Kernel durations from CUPTI's activity records, by correlation id: written by the buffer
 * callback (CUPTI may call it on a thread of its own), read when the launch's line is written. */
static pthread_mutex_t times_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t time_ids[MAX_TIMES];
static unsigned long long time_ns[MAX_TIMES];
static unsigned ntimes;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, ACTIVITY_BUFFER);
    *size = *buffer ? ACTIVITY_BUFFER : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)ctx; (void)stream; (void)size;
    CUpti_Activity *record = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const KernelRecord *k = (const KernelRecord *)record;
        pthread_mutex_lock(&times_lock);
        time_ids[ntimes % MAX_TIMES] = k->correlationId;
        time_ns[ntimes % MAX_TIMES] = k->end > k->start ? k->end - k->start : 0;
        ntimes++;
        pthread_mutex_unlock(&times_lock);
    }
    free(buffer);
}

/* The launch's kernel time on the chip in ns, or -1: its records delivered now (the device
 * is idle: the launch is done). */
static long long kernel_ns(uint32_t correlation) {
    cuptiActivityFlushAll(0);
    long long found = -1;
    pthread_mutex_lock(&times_lock);
    for (unsigned i = 0; i < ntimes && i < MAX_TIMES; i++)
        if (time_ids[i] == correlation) found = (long long)time_ns[i];
    pthread_mutex_unlock(&times_lock);
    return found;
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static long count_kernel(const char *name) {
    for (int i = 0; i < nkernels; i++)
        if (strcmp(kernel_names[i], name) == 0) return ++kernel_counts[i];
    if (nkernels == MAX_KERNELS) return max_per_kernel + 1;
    kernel_names[nkernels] = strdup(name);
    kernel_counts[nkernels] = 1;
    return kernel_counts[nkernels++];
}

static int stream_number(CUstream s) {
    for (int i = 0; i < nstreams; i++)
        if (streams[i] == s) return i;
    if (nstreams == MAX_STREAMS) return MAX_STREAMS;
    streams[nstreams] = s;
    return nstreams++;
}

static void read_globals_file(void) {
    const char *path = getenv("WARPBOARD_CAPTURE_GLOBALS");
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    char line[1024];
    while (f && nglobals < MAX_GLOBALS && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (*line) global_names[nglobals++] = strdup(line);
    }
    if (f) fclose(f);
}

/* The parameter bytes and their layout, from kernelParams (sizes from the driver's
 * parameter info) or from the packed buffer of `extra`. */
static void take_params(Launch *l, CUfunction f, void **kernel_params, void **extra) {
    if (kernel_params) {
        for (size_t i = 0; i < 1024; i++) {
            size_t off, size;
            if (cuFuncGetParamInfo(f, i, &off, &size) != CUDA_SUCCESS &&
                cuKernelGetParamInfo((CUkernel)f, i, &off, &size) != CUDA_SUCCESS)
                break;
            if (off + size > MAX_PARAM_BYTES) { l->skip = "parameters over 32 KiB"; return; }
            memcpy(l->params + off, kernel_params[i], size);
            l->param_offset[i] = off;
            l->param_size[i] = size;
            l->nparams = (int)i + 1;
            if (off + size > l->param_bytes) l->param_bytes = off + size;
        }
        return;
    }
    void *buffer = NULL;
    size_t size = 0;
    for (int i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *(size_t *)extra[i + 1];
    }
    if (!buffer || size > MAX_PARAM_BYTES) { l->skip = "parameters neither in kernelParams nor a packed buffer"; return; }
    memcpy(l->params, buffer, size);
    l->param_bytes = size;
}

static void add_region(Launch *l, CUdeviceptr base, size_t size, const char *name) {
    for (int i = 0; i < l->nregions; i++)
        if (l->regions[i].base == base) return;
    if (l->nregions == MAX_REGIONS) { l->skip = "over 64 device allocations"; return; }
    Region *r = &l->regions[l->nregions++];
    memset(r, 0, sizeof *r);
    r->base = base;
    r->size = size;
    r->name = name;
    CUmemorytype type = 0;
    if (cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, base) == CUDA_SUCCESS)
        r->memtype = (unsigned)type;
    unsigned managed = 0;
    if (cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, base) == CUDA_SUCCESS)
        r->managed = managed != 0;
}

/* Every allocation a parameter word points into, and the module variables asked for. */
static void find_regions(Launch *l, CUfunction f) {
    for (size_t off = 0; off + 8 <= l->param_bytes; off += 8) {
        CUdeviceptr p, base;
        size_t size;
        memcpy(&p, l->params + off, 8);
        if (p && cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS) add_region(l, base, size, NULL);
    }
    CUmodule module = NULL;
    CUlibrary library = NULL;
    CUfunction fn = NULL;
    if (cuFuncGetModule(&module, f) != CUDA_SUCCESS) {
        module = NULL;
        if (cuKernelGetFunction(&fn, (CUkernel)f) != CUDA_SUCCESS || cuFuncGetModule(&module, fn) != CUDA_SUCCESS)
            module = NULL;
        if (!module && cuKernelGetLibrary(&library, (CUkernel)f) != CUDA_SUCCESS) library = NULL;
    }
    for (int g = 0; g < nglobals; g++) {
        CUdeviceptr p;
        size_t size;
        CUresult r = module ? cuModuleGetGlobal(&p, &size, module, global_names[g])
                   : library ? cuLibraryGetGlobal(&p, &size, library, global_names[g]) : CUDA_ERROR_NOT_FOUND;
        if (r == CUDA_SUCCESS && size) add_region(l, p, size, global_names[g]);
    }
}

static void write_memory(Launch *l, const char *side) {
    char path[4096];
    void *host = NULL;
    size_t room = 0;
    for (int i = 0; i < l->nregions; i++) {
        Region *r = &l->regions[i];
        if (r->size > room) {
            free(host);
            host = malloc(r->size);
            room = host ? r->size : 0;
            if (!host) { l->skip = "no host memory for a copy"; return; }
        }
        if (cuMemcpyDtoH(host, r->base, r->size) != CUDA_SUCCESS) {
            snprintf(l->note, sizeof l->note, "cuMemcpyDtoH of %zu bytes at 0x%llx failed", r->size,
                     (unsigned long long)r->base);
            l->skip = l->note;
            break;
        }
        snprintf(path, sizeof path, "%s/L%06ld.r%d.%s", out_dir, l->index, i, side);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(host, 1, r->size, f) != r->size) l->skip = "cannot write the capture folder";
        if (f) fclose(f);
    }
    free(host);
}

/* The guards: after each allocation of the launch, the first bytes of the next live
 * allocation when it is none of the launch's regions, copied before the launch. */
static void watch_guards(Launch *l) {
    for (int i = 0; i < l->nregions; i++) {
        Region *r = &l->regions[i];
        if (r->name) continue;                   /* module variables: not allocations */
        CUdeviceptr end = r->base + r->size;
        int next = -1;
        for (int j = 0; j < nlive; j++)
            if (live_base[j] >= end && live_base[j] - end <= GUARD_GAP &&
                (next < 0 || live_base[j] < live_base[next])) next = j;
        if (next < 0) continue;
        int taken = 0;
        for (int k = 0; k < l->nregions; k++) taken |= l->regions[k].base == live_base[next];
        for (int g = 0; g < l->nguards; g++) taken |= l->guards[g].base == live_base[next];
        if (taken) continue;
        Guard *g = &l->guards[l->nguards];
        g->base = live_base[next];
        g->size = live_size[next] < GUARD_BYTES ? live_size[next] : GUARD_BYTES;
        g->region = i;
        g->changed = -1;
        g->before = malloc(g->size);
        if (g->before && cuMemcpyDtoH(g->before, g->base, g->size) == CUDA_SUCCESS) l->nguards++;
        else free(g->before);
    }
}

/* After the launch: which guards it changed (the first byte that differs). */
static void check_guards(Launch *l) {
    unsigned char after[GUARD_BYTES];
    for (int g = 0; g < l->nguards; g++) {
        Guard *d = &l->guards[g];
        if (cuMemcpyDtoH(after, d->base, d->size) != CUDA_SUCCESS) continue;
        for (size_t k = 0; k < d->size; k++)
            if (after[k] != d->before[k]) { d->changed = (long)k; break; }
    }
}

static void begin_launch(const CUpti_CallbackData *cb, const char *api, CUfunction f, const unsigned grid[3],
                         const unsigned block[3], unsigned shared, CUstream stream, void **kernel_params,
                         void **extra, int cooperative, int cluster) {
    pthread_mutex_lock(&lock);
    Launch *l = calloc(1, sizeof *l);
    if (!l) { pthread_mutex_unlock(&lock); return; }
    l->index = launches++;
    l->api = api;
    l->correlation = cb->correlationId;
    l->kernel = cb->symbolName ? cb->symbolName : "";
    if (!*l->kernel) {
        const char *name = NULL;
        if (cuFuncGetName(&name, f) == CUDA_SUCCESS && name) l->kernel = name;
    }
    memcpy(l->grid, grid, sizeof l->grid);
    memcpy(l->block, block, sizeof l->block);
    l->shared = shared;
    l->stream = stream;
    l->cooperative = cooperative;
    l->cluster = cluster;
    pending = l;
    if (count_kernel(l->kernel) > max_per_kernel) {
        l->skip = "over --max-per-kernel";
        return;                              /* the lock is held until the exit callback */
    }
    take_params(l, f, kernel_params, extra);
    if (l->skip) return;
    cuCtxSynchronize();                      /* what earlier work wrote is in memory now */
    find_regions(l, f);
    unsigned long long total = 0;
    for (int i = 0; i < l->nregions; i++) total += l->regions[i].size;
    if (l->skip) return;
    if (total > max_bytes) {
        snprintf(l->note, sizeof l->note, "%llu bytes of device memory, over --max-bytes %llu", total, max_bytes);
        l->skip = l->note;
        return;
    }
    for (int i = 0; i < l->nregions; i++)
        if (l->regions[i].managed || l->regions[i].memtype != CU_MEMORYTYPE_DEVICE) return;  /* listed, not copied */
    write_memory(l, "before");
    l->copied = !l->skip;
    if (l->copied) watch_guards(l);
}

static void end_launch(CUresult status) {
    Launch *l = pending;
    if (!l) return;
    pending = NULL;
    long long ns = -1;
    if (l->copied) {
        CUresult done = cuCtxSynchronize();
        if (status == CUDA_SUCCESS && done == CUDA_SUCCESS) {
            ns = kernel_ns(l->correlation);
            write_memory(l, "after");
            check_guards(l);
        } else { snprintf(l->note, sizeof l->note, "the launch failed (CUresult %d, %d)", status, done); l->skip = l->note; }
    }
    FILE *f = log_file;
    fprintf(f, "{\"launch\": %ld, \"api\": ", l->index);
    json_string(f, l->api);
    fprintf(f, ", \"kernel\": ");
    json_string(f, l->kernel);
    fprintf(f, ", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"shared\": %u, \"stream\": %d",
            l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->shared,
            stream_number(l->stream));
    fprintf(f, ", \"cooperative\": %d, \"cluster\": %d, \"copied\": %d, \"skip\": ", l->cooperative, l->cluster,
            l->copied && !l->skip);
    if (l->skip) json_string(f, l->skip); else fputs("null", f);
    if (ns >= 0) fprintf(f, ", \"device_ns\": %lld", ns); else fputs(", \"device_ns\": null", f);
    fprintf(f, ", \"params\": [");
    for (int i = 0; i < l->nparams; i++)
        fprintf(f, "%s[%zu, %zu]", i ? ", " : "", l->param_offset[i], l->param_size[i]);
    fprintf(f, "], \"param_bytes\": \"");
    for (size_t i = 0; i < l->param_bytes; i++) fprintf(f, "%02x", l->params[i]);
    fprintf(f, "\", \"regions\": [");
    for (int i = 0; i < l->nregions; i++) {
        Region *r = &l->regions[i];
        fprintf(f, "%s{\"base\": %llu, \"size\": %zu, \"memtype\": %u, \"managed\": %d, \"name\": ", i ? ", " : "",
                (unsigned long long)r->base, r->size, r->memtype, r->managed);
        if (r->name) json_string(f, r->name); else fputs("null", f);
        fputc('}', f);
    }
    fprintf(f, "], \"guards\": [");
    for (int g = 0; g < l->nguards; g++) {
        Guard *d = &l->guards[g];
        fprintf(f, "%s{\"base\": %llu, \"size\": %zu, \"region\": %d, \"changed\": %ld}", g ? ", " : "",
                (unsigned long long)d->base, d->size, d->region, d->changed);
        free(d->before);
    }
    fprintf(f, "]}\n");
    fflush(f);
    free(l);
    pthread_mutex_unlock(&lock);
}

static void log_memory(const char *what, CUdeviceptr base, size_t size) {
    pthread_mutex_lock(&lock);
    if (strcmp(what, "alloc") == 0 && nlive < MAX_LIVE) {
        live_base[nlive] = base;
        live_size[nlive++] = size;
    } else if (strcmp(what, "free") == 0) {
        for (int i = 0; i < nlive; i++)
            if (live_base[i] == base) { live_base[i] = live_base[--nlive]; live_size[i] = live_size[nlive]; break; }
    }
    fprintf(log_file, "{\"%s\": %llu, \"size\": %zu}\n", what, (unsigned long long)base, size);
    fflush(log_file);
    pthread_mutex_unlock(&lock);
}

static void CUPTIAPI on_driver_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                    const void *data) {
    (void)userdata;
    const CUpti_CallbackData *cb = data;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || inside) return;
    int enter = cb->callbackSite == CUPTI_API_ENTER;
    inside = 1;
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
        if (enter) {
            /* cuLaunchCooperativeKernel's parameters are cuLaunchKernel's, less `extra` */
            const cuLaunchKernel_params *p = cb->functionParams;
            int coop = id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
                       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
            unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
            unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
            begin_launch(cb, cb->functionName, p->f, grid, block, p->sharedMemBytes, p->hStream, p->kernelParams,
                         coop ? NULL : p->extra, coop, 0);
        } else {
            end_launch(*(CUresult *)cb->functionReturnValue);
        }
        break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        if (enter) {
            const cuLaunchKernelEx_params *p = cb->functionParams;
            const CUlaunchConfig *c = p->config;
            int coop = 0, cluster = 0;
            for (unsigned i = 0; i < c->numAttrs; i++) {
                if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) coop = c->attrs[i].value.cooperative != 0;
                if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
                    cluster = c->attrs[i].value.clusterDim.x * c->attrs[i].value.clusterDim.y *
                              c->attrs[i].value.clusterDim.z > 1;
            }
            unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};
            unsigned block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
            begin_launch(cb, cb->functionName, p->f, grid, block, c->sharedMemBytes, c->hStream, p->kernelParams,
                         p->extra, coop, cluster);
        } else {
            end_launch(*(CUresult *)cb->functionReturnValue);
        }
        break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
        /* each of these begins {CUdeviceptr *dptr; size_t bytesize; ...} */
        if (!enter && *(CUresult *)cb->functionReturnValue == CUDA_SUCCESS) {
            const cuMemAlloc_v2_params *p = cb->functionParams;
            log_memory(id == CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged ? "managed" : "alloc", *p->dptr, p->bytesize);
        }
        break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
        if (!enter && *(CUresult *)cb->functionReturnValue == CUDA_SUCCESS) {
            const cuMemAllocPitch_v2_params *p = cb->functionParams;
            log_memory("alloc", *p->dptr, *p->pPitch * p->Height);
        }
        break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
        if (enter) log_memory("free", ((const cuMemFree_v2_params *)cb->functionParams)->dptr, 0);
        break;
    default:
        break;
    }
    inside = 0;
}

int InitializeInjection(void) {
    const char *dir = getenv("WARPBOARD_CAPTURE_DIR");
    if (!dir || !*dir || strlen(dir) >= sizeof out_dir) {
        fprintf(stderr, "warpboard capture: WARPBOARD_CAPTURE_DIR is not set\n");
        return 0;
    }
    strcpy(out_dir, dir);
    if (getenv("WARPBOARD_CAPTURE_MAX_PER_KERNEL")) max_per_kernel = atol(getenv("WARPBOARD_CAPTURE_MAX_PER_KERNEL"));
    if (getenv("WARPBOARD_CAPTURE_MAX_BYTES")) max_bytes = strtoull(getenv("WARPBOARD_CAPTURE_MAX_BYTES"), NULL, 10);
    read_globals_file();
    char path[4096];
    snprintf(path, sizeof path, "%s/launches.jsonl", out_dir);
    log_file = fopen(path, "w");
    if (!log_file) {
        fprintf(stderr, "warpboard capture: cannot write %s\n", path);
        return 0;
    }
    CUpti_SubscriberHandle subscriber;
    if (cuptiSubscribe(&subscriber, on_driver_call, NULL) != CUPTI_SUCCESS ||
        cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
        fprintf(stderr, "warpboard capture: CUPTI would not subscribe to the driver's calls\n");
        return 0;
    }
    /* each kernel's start and end on the chip, delivered to buffer_completed */
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
        fprintf(stderr, "warpboard capture: CUPTI gives no kernel times here; launches carry none\n");
    fprintf(log_file, "{\"interposer\": 1, \"max_per_kernel\": %ld, \"max_bytes\": %llu, \"globals\": %d}\n",
            max_per_kernel, max_bytes, nglobals);
    fflush(log_file);
    return 1;
}
