// cpu_collectives.h: a CPU model of CUDA's warp and block collectives, for deriving the
// expected words of kernels that use them (and for checking that they are well-defined).
//
// One OS thread (std::thread) per CUDA thread of a block; blocks run one after another.
//  - Warp collectives (__ballot/__any/__all/__uni_sync, __shfl*_sync, __match_*_sync,
//    __reduce_*_sync, __syncwarp) meet by mask: a rendezvous per warp keyed by the mask;
//    it completes when every lane of the mask has arrived, and each lane gets its result
//    from the values the lanes brought (a shuffle reads the source lane's value as of the
//    collective). A shuffle whose source lane is outside the mask yields WB_POISON (an
//    environment variable, hex; run twice with two poisons to see whether it leaks).
//  - __syncthreads / _count / _and / _or: a real barrier among the block's threads.
// Rule breaks end the process with exit status 3 and a message on stderr that starts with
// "rule break:": a lane calling a *_sync with a mask that omits it or names lanes that do
// not exist or have exited; lanes of one mask arriving at different collectives (kind or
// source line); a lane exiting while lanes of a mask naming it wait; a block barrier after
// a thread of the block exited, or reached at different lines; nothing moving for
// WB_DEADLOCK_S seconds (default 20) while a lane waits (deadlock).
// Plain loads and stores are the CPU's: where lanes race (several lanes of one `y[m] = v`
// storing different values, which CUDA leaves undefined), the words are whichever OS thread
// came last. WB_JITTER=N (N > 0) makes every thread pause a pseudo-random 0-63 us, drawn from
// N and its index, when it starts and after each warp collective and block barrier, so that
// two values of N run the threads in two different orders: run_on_cpu.sh --collectives runs
// every kernel so twice and refuses words that differ (a race).
// A collective is identified by its source line (__LINE__): lanes meet at one call site.
// Used by harness/fuzz/cpu_model.py and by run_on_cpu.sh --collectives.
#pragma once
#include "cpu_shim.h"
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#define __shared__ static

enum WbKind {
    WB_BALLOT, WB_ANY, WB_ALL, WB_UNI, WB_SHFL_IDX, WB_SHFL_UP, WB_SHFL_DOWN, WB_SHFL_XOR,
    WB_MATCH_ANY, WB_MATCH_ALL, WB_RED_ADD, WB_RED_MIN_U, WB_RED_MAX_U, WB_RED_MIN_S,
    WB_RED_MAX_S, WB_RED_AND, WB_RED_OR, WB_RED_XOR, WB_SYNCWARP, WB_KINDS
};
static const char *const wb_kind_name[WB_KINDS] = {
    "__ballot_sync", "__any_sync", "__all_sync", "__uni_sync", "__shfl_sync", "__shfl_up_sync",
    "__shfl_down_sync", "__shfl_xor_sync", "__match_any_sync", "__match_all_sync",
    "__reduce_add_sync", "__reduce_min_sync(unsigned)", "__reduce_max_sync(unsigned)",
    "__reduce_min_sync(int)", "__reduce_max_sync(int)", "__reduce_and_sync", "__reduce_or_sync",
    "__reduce_xor_sync", "__syncwarp"};
static const char *const wb_bar_name[4] = {"__syncthreads", "__syncthreads_count",
                                           "__syncthreads_and", "__syncthreads_or"};

[[noreturn]] static void wb_fail(const char *fmt, ...) {
    static std::mutex once;
    once.lock();   // never unlocked: the first rule break is the one reported
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "rule break: block %u thread %u (warp %u lane %u): ", blockIdx.x,
                 threadIdx.x, threadIdx.x / 32, threadIdx.x % 32);
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(3);
}

struct WbGather {                 // one warp collective in progress
    int kind, line;
    unsigned mask, arrived = 0;
    bool done = false;
    unsigned long long val[32], arg[32], res[32];
    int pred[32];
};

struct WbWarp {
    unsigned existing = 0, exited = 0;
    std::vector<std::shared_ptr<WbGather>> open;
};

struct WbBlock {
    std::mutex mu;
    std::condition_variable cv;
    unsigned nthreads = 0, arrived = 0, exited = 0;
    unsigned long long generation = 0;
    int bar_kind = -1, bar_line = -1, bar_result = 0;
    unsigned bar_true = 0;
    std::vector<WbWarp> warps;
};

static WbBlock *wb_block;
static unsigned long long wb_poison = 0xdeadbeefdeadbeefull;
static double wb_deadlock_s = 20.0;
static unsigned long long wb_jitter_seed = 0;          // WB_JITTER; 0: no pauses
static thread_local unsigned long long wb_jitter_state;

// WB_JITTER: a pause of a pseudo-random 0-63 us (never while holding the block's lock)
static void wb_jitter() {
    if (!wb_jitter_seed) return;
    wb_jitter_state = wb_jitter_state * 6364136223846793005ull + 1442695040888963407ull;
    std::this_thread::sleep_for(std::chrono::microseconds((wb_jitter_state >> 33) % 64));
}

static inline unsigned wb_lane() { return threadIdx.x % 32; }
static inline unsigned wb_warp_id() { return threadIdx.x / 32; }

static std::chrono::steady_clock::time_point wb_deadline() {
    return std::chrono::steady_clock::now() +
           std::chrono::milliseconds((long long)(wb_deadlock_s * 1000));
}

// PTX shfl.sync: the source lane j of `lane` for mode/b/width, and whether it is in range
// (out of range: the lane's own value). segmask = 32 - width; c = 0x1f except for .up.
static unsigned wb_shfl_lane(int kind, unsigned lane, unsigned b, unsigned width) {
    unsigned seg = (32u - width) & 31u, cval = kind == WB_SHFL_UP ? 0u : 31u;
    unsigned max_lane = (lane & seg) | (cval & ~seg), min_lane = lane & seg;
    int j;
    bool ok;
    switch (kind) {
    case WB_SHFL_UP: j = (int)lane - (int)b; ok = j >= (int)max_lane; break;
    case WB_SHFL_DOWN: j = (int)lane + (int)b; ok = j <= (int)max_lane; break;
    case WB_SHFL_XOR: j = (int)(lane ^ (b & 31u)); ok = j <= (int)max_lane; break;
    default: j = (int)(min_lane | (b & 31u & ~seg)); ok = j <= (int)max_lane; break;
    }
    return ok ? (unsigned)j : lane;
}

static void wb_complete(WbGather &g) {
    unsigned m = g.mask, bits = 0;
    unsigned long long acc = 0;
    bool same = true;
    int first = __builtin_ctz(m);
    for (int l = 0; l < 32; l++) {
        if (!(m >> l & 1)) continue;
        bits |= (g.val[l] != 0 ? 1u : 0u) << l;
        same = same && g.val[l] == g.val[first];
        unsigned long long v = g.val[l];
        switch (g.kind) {
        case WB_RED_ADD: acc = (unsigned)(acc + v); break;
        case WB_RED_MIN_U: acc = l == first || (unsigned)v < (unsigned)acc ? v : acc; break;
        case WB_RED_MAX_U: acc = l == first || (unsigned)v > (unsigned)acc ? v : acc; break;
        case WB_RED_MIN_S: acc = l == first || (int)v < (int)acc ? v : acc; break;
        case WB_RED_MAX_S: acc = l == first || (int)v > (int)acc ? v : acc; break;
        case WB_RED_AND: acc = l == first ? v : (acc & v); break;
        case WB_RED_OR: acc |= v; break;
        case WB_RED_XOR: acc ^= v; break;
        default: break;
        }
    }
    for (int l = 0; l < 32; l++) {
        if (!(m >> l & 1)) continue;
        unsigned long long r = 0;
        g.pred[l] = 0;
        switch (g.kind) {
        case WB_BALLOT: r = bits; break;
        case WB_ANY: r = bits != 0; break;
        case WB_ALL: r = bits == m; break;
        case WB_UNI: r = bits == 0 || bits == m; break;
        case WB_SHFL_IDX: case WB_SHFL_UP: case WB_SHFL_DOWN: case WB_SHFL_XOR: {
            unsigned j = wb_shfl_lane(g.kind, l, (unsigned)g.arg[l], (unsigned)(g.arg[l] >> 32));
            r = (m >> j & 1) ? g.val[j] : wb_poison;
            break;
        }
        case WB_MATCH_ANY:
            for (int k = 0; k < 32; k++)
                if ((m >> k & 1) && g.val[k] == g.val[l]) r |= 1ull << k;
            break;
        case WB_MATCH_ALL: r = same ? m : 0; g.pred[l] = same; break;
        case WB_SYNCWARP: break;
        default: r = acc; break;
        }
        g.res[l] = r;
    }
}

static std::string wb_lanes(unsigned m) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", m);
    return buf;
}

// One lane arrives at a warp collective; returns its result once every lane of mask came.
static unsigned long long wb_warp_op(int kind, int line, unsigned mask, unsigned long long v,
                                     unsigned long long arg = 0, int *pred = nullptr) {
    WbBlock &b = *wb_block;
    std::unique_lock<std::mutex> lk(b.mu);
    WbWarp &w = b.warps[wb_warp_id()];
    unsigned lane = wb_lane();
    const char *name = wb_kind_name[kind];
    if (!(mask >> lane & 1))
        wb_fail("line %d: %s with mask 0x%08x, which omits the calling lane", line, name, mask);
    if (mask & ~w.existing)
        wb_fail("line %d: %s with mask 0x%08x names lanes 0x%08x that do not exist", line,
                name, mask, mask & ~w.existing);
    if (mask & w.exited)
        wb_fail("line %d: %s with mask 0x%08x names lanes 0x%08x that have exited", line, name,
                mask, mask & w.exited);
    std::shared_ptr<WbGather> g;
    for (auto &o : w.open)
        if (o->mask == mask) g = o;
    if (g && (g->kind != kind || g->line != line))
        wb_fail("line %d: %s with mask 0x%08x, while lanes %s wait at %s (line %d) with the "
                "same mask", line, name, mask, wb_lanes(g->arrived).c_str(),
                wb_kind_name[g->kind], g->line);
    if (!g) {
        g = std::make_shared<WbGather>();
        g->kind = kind, g->line = line, g->mask = mask;
        w.open.push_back(g);
    }
    g->val[lane] = v, g->arg[lane] = arg, g->arrived |= 1u << lane;
    if (g->arrived == mask) {
        wb_complete(*g);
        g->done = true;
        std::erase(w.open, g);
        b.cv.notify_all();
    } else {
        auto until = wb_deadline();
        while (!g->done)
            if (b.cv.wait_until(lk, until) == std::cv_status::timeout && !g->done)
                wb_fail("line %d: deadlock: %s with mask 0x%08x: lanes 0x%08x arrived, lanes "
                        "0x%08x did not in %g s", line, name, mask, g->arrived,
                        mask & ~g->arrived, wb_deadlock_s);
    }
    if (pred) *pred = g->pred[lane];
    unsigned long long result = g->res[lane];
    lk.unlock();
    wb_jitter();
    return result;
}

// A block barrier: every thread of the block arrives at the same line.
static int wb_bar(int line, int kind, int predicate) {
    WbBlock &b = *wb_block;
    std::unique_lock<std::mutex> lk(b.mu);
    if (b.exited)
        wb_fail("line %d: %s after %u thread(s) of the block exited", line, wb_bar_name[kind],
                b.exited);
    if (b.arrived == 0) {
        b.bar_kind = kind, b.bar_line = line, b.bar_true = 0;
    } else if (b.bar_kind != kind || b.bar_line != line) {
        wb_fail("line %d: %s, while %u thread(s) wait at %s (line %d)", line, wb_bar_name[kind],
                b.arrived, wb_bar_name[b.bar_kind], b.bar_line);
    }
    b.bar_true += predicate != 0;
    unsigned long long gen = b.generation;
    if (++b.arrived == b.nthreads) {
        unsigned n = b.bar_true;
        b.bar_result = kind == 1 ? (int)n : kind == 2 ? n == b.nthreads : kind == 3 ? n != 0 : 0;
        b.arrived = 0;
        b.generation++;
        b.cv.notify_all();
    } else {
        auto until = wb_deadline();
        while (b.generation == gen)
            if (b.cv.wait_until(lk, until) == std::cv_status::timeout && b.generation == gen)
                wb_fail("line %d: deadlock: %u of %u threads reached %s in %g s", line,
                        b.arrived, b.nthreads, wb_bar_name[kind], wb_deadlock_s);
    }
    int result = b.bar_result;
    lk.unlock();
    wb_jitter();
    return result;
}

// A thread ends: no lane may still be waiting for it.
static void wb_thread_exit() {
    WbBlock &b = *wb_block;
    std::lock_guard<std::mutex> lk(b.mu);
    WbWarp &w = b.warps[wb_warp_id()];
    unsigned bit = 1u << wb_lane();
    for (auto &g : w.open)
        if ((g->mask & bit) && !(g->arrived & bit))
            wb_fail("exits while lanes 0x%08x wait for it at %s (line %d) with mask 0x%08x",
                    g->arrived, wb_kind_name[g->kind], g->line, g->mask);
    if (b.arrived)
        wb_fail("exits while %u thread(s) wait at %s (line %d)", b.arrived,
                wb_bar_name[b.bar_kind], b.bar_line);
    w.exited |= bit;
    b.exited++;
}

// ---- the CUDA names
#define __syncthreads() wb_bar(__LINE__, 0, 1)
#define __syncthreads_count(p) wb_bar(__LINE__, 1, (p))
#define __syncthreads_and(p) wb_bar(__LINE__, 2, (p))
#define __syncthreads_or(p) wb_bar(__LINE__, 3, (p))
#define __syncwarp(m) ((void)wb_warp_op(WB_SYNCWARP, __LINE__, (m), 0))
#define __ballot_sync(m, p) ((unsigned)wb_warp_op(WB_BALLOT, __LINE__, (m), (p) != 0))
#define __any_sync(m, p) ((int)wb_warp_op(WB_ANY, __LINE__, (m), (p) != 0))
#define __all_sync(m, p) ((int)wb_warp_op(WB_ALL, __LINE__, (m), (p) != 0))
#define __uni_sync(m, p) ((int)wb_warp_op(WB_UNI, __LINE__, (m), (p) != 0))

// a value's word(s) as a collective carries them (a float's bits, not its value), and back
template <class T> static unsigned long long wb_bits(T v) {
    if constexpr (std::is_same_v<T, float>) return wb_bit_cast<unsigned>(v);
    else if constexpr (std::is_same_v<T, double>) return wb_bit_cast<unsigned long long>(v);
    else if constexpr (sizeof(T) == 8) return (unsigned long long)v;
    else return (unsigned long long)(unsigned)v;
}
template <class T> static T wb_value(unsigned long long w) {
    if constexpr (std::is_same_v<T, float>) return wb_bit_cast<float>((unsigned)w);
    else if constexpr (std::is_same_v<T, double>) return wb_bit_cast<double>(w);
    else return (T)w;
}

template <class T>
static T wb_shfl(int kind, int line, unsigned mask, T v, int b, int width = 32) {
    if (width < 1 || width > 32 || (width & (width - 1)))
        wb_fail("line %d: %s with width %d (not a power of two up to 32)", line,
                wb_kind_name[kind], width);
    unsigned long long arg = (unsigned)b | (unsigned long long)(unsigned)width << 32;
    return wb_value<T>(wb_warp_op(kind, line, mask, wb_bits(v), arg));
}
#define __shfl_sync(m, ...) wb_shfl(WB_SHFL_IDX, __LINE__, (m), __VA_ARGS__)
#define __shfl_up_sync(m, ...) wb_shfl(WB_SHFL_UP, __LINE__, (m), __VA_ARGS__)
#define __shfl_down_sync(m, ...) wb_shfl(WB_SHFL_DOWN, __LINE__, (m), __VA_ARGS__)
#define __shfl_xor_sync(m, ...) wb_shfl(WB_SHFL_XOR, __LINE__, (m), __VA_ARGS__)

template <class T> static unsigned wb_match_any(int line, unsigned mask, T v) {
    return (unsigned)wb_warp_op(WB_MATCH_ANY, line, mask, wb_bits(v));
}
template <class T> static unsigned wb_match_all(int line, unsigned mask, T v, int *pred) {
    return (unsigned)wb_warp_op(WB_MATCH_ALL, line, mask, wb_bits(v), 0, pred);
}
#define __match_any_sync(m, v) wb_match_any(__LINE__, (m), (v))
#define __match_all_sync(m, v, p) wb_match_all(__LINE__, (m), (v), (p))

static unsigned wb_red(int kind, int line, unsigned m, unsigned v) {
    return (unsigned)wb_warp_op(kind, line, m, v);
}
static int wb_red(int kind, int line, unsigned m, int v) {
    int k = kind == WB_RED_MIN_U ? WB_RED_MIN_S : kind == WB_RED_MAX_U ? WB_RED_MAX_S : kind;
    return (int)(unsigned)wb_warp_op(k, line, m, (unsigned)v);
}
#define __reduce_add_sync(m, v) wb_red(WB_RED_ADD, __LINE__, (m), (v))
#define __reduce_min_sync(m, v) wb_red(WB_RED_MIN_U, __LINE__, (m), (v))
#define __reduce_max_sync(m, v) wb_red(WB_RED_MAX_U, __LINE__, (m), (v))
#define __reduce_and_sync(m, v) wb_red(WB_RED_AND, __LINE__, (m), (unsigned)(v))
#define __reduce_or_sync(m, v) wb_red(WB_RED_OR, __LINE__, (m), (unsigned)(v))
#define __reduce_xor_sync(m, v) wb_red(WB_RED_XOR, __LINE__, (m), (unsigned)(v))

// ---- atomics (global or shared): sequentially consistent; only final values are defined
static unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static unsigned atomicOr(unsigned *p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
static unsigned atomicAnd(unsigned *p, unsigned v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
static unsigned atomicXor(unsigned *p, unsigned v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }
static unsigned atomicMax(unsigned *p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    return old;
}
static unsigned atomicMin(unsigned *p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (old > v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    return old;
}

// ---- the launch: blocks one after another, every thread of a block on its own OS thread
template <class F>
static void wb_launch_threads(dim3 grid, dim3 block, F body) {
    if (const char *p = std::getenv("WB_POISON")) wb_poison = std::strtoull(p, nullptr, 16);
    if (const char *d = std::getenv("WB_DEADLOCK_S")) wb_deadlock_s = std::atof(d);
    if (const char *j = std::getenv("WB_JITTER")) wb_jitter_seed = std::strtoull(j, nullptr, 10);
    if (block.y != 1 || block.z != 1) {
        std::fprintf(stderr, "cpu_collectives.h: only 1-D blocks are modelled\n");
        std::exit(2);
    }
    gridDim = grid;
    blockDim = block;
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                WbBlock b;
                b.nthreads = block.x;
                b.warps.resize((block.x + 31) / 32);
                for (unsigned t = 0; t < block.x; t++) b.warps[t / 32].existing |= 1u << (t % 32);
                wb_block = &b;
                std::vector<std::thread> threads;
                for (unsigned t = 0; t < block.x; t++)
                    threads.emplace_back([&, t] {
                        blockIdx = {bx, by, bz};
                        threadIdx = {t, 0, 0};
                        wb_jitter_state = wb_jitter_seed * 0x9e3779b97f4a7c15ull ^
                                          ((unsigned long long)(bx + grid.x * (by + grid.y * bz)) << 32 | t);
                        wb_jitter();
                        body();
                        wb_thread_exit();
                    });
                for (auto &th : threads) th.join();
            }
}
