/*
 * poolcheck.engines._cpool -- the C engine: max and average pooling over (N, C, *spatial)
 * C-contiguous inputs with 1-3 spatial axes.
 *
 * The Python loader (c_engine.py) resolves every attribute into plain numbers (the Geometry of
 * poolcheck.spec.shape: per axis size n, kernel k, stride s, dilation d, pad_begin pb, pad_end pe,
 * output size o) and allocates the outputs; this file only computes.
 *
 * Semantics are those of poolcheck/engines/numpy_engine.py, bit for bit:
 *
 *  - Max pooling scans each window's valid taps (inside [0, n) on every axis) in row-major
 *    order and keeps the first element that no later element beats with a strict comparison.
 *    Under the "propagate" and "ignore" NaN policies (and for integers) that selection rule is
 *    an associative operation, so the window is reduced one axis at a time (last axis first),
 *    each partial result reused by every window that shares it: the result, and the element
 *    chosen, are the ones the row-major scan picks. Under "first" (a strict '>' scan seeded
 *    with the first element, a leading NaN sticks) the operation is not associative and the
 *    window is scanned in row-major order directly.
 *  - Average pooling accumulates in double, last spatial axis first, taps in order, exactly as
 *    numpy_engine.avg_pool does on its zero-padded copy: padded taps add +0.0, which changes
 *    nothing except the sign of a zero sum, so instead of reading a padded copy a window with
 *    any tap outside the input adds one +0.0 after its valid taps. Then one division by the
 *    divisor and one rounding to the output type.
 *
 * Nothing allocates a padded copy. Planes are processed in chunks that fit in cache. The
 * float32 kernels have hand-written AVX-512 versions (chosen at import when the CPU has
 * AVX-512 F/BW/VL/DQ, unless POOLCHECK_NO_AVX512 is set); every kernel also exists as portable
 * C compiled for x86-64-v3 (AVX2) and the baseline, chosen at load time (GCC function
 * multiversioning). The GIL is released while computing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(POOLCHECK_NO_MULTIVERSION)
#define HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#define POOLCHECK_MULTIVERSION 1
#else
#define HOT
#define POOLCHECK_MULTIVERSION 0
#endif

#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

/* Ctrl-C: the kernels run without the GIL; between chunks of planes they take it back for a
 * moment to let Python run its signal handlers. A handler that raises (KeyboardInterrupt)
 * leaves its exception set; the kernel stops and the entry point returns it. */
static _Thread_local int tls_interrupted;
static _Thread_local int64_t tls_poll_count;
static int poll_interrupt(void) {
    if (tls_interrupted) return 1;
    if ((++tls_poll_count & 15) != 0) return 0;
    PyGILState_STATE st = PyGILState_Ensure();
    if (PyErr_CheckSignals() < 0) tls_interrupted = 1;
    PyGILState_Release(st);
    return tls_interrupted;
}

/* Bytes of intermediate results one chunk of planes may use (kept within L2). */
#define CHUNK_BYTES (256 * 1024)

/* ------------------------------------------------------------------------------------------ */
/* Geometry                                                                                   */

/* A block of the 16 first (or last) windows of a row when some of them reach outside the
 * input: per tap, each lane's position clamped into its window's valid taps (max pooling: a
 * duplicate of a neighbouring valid tap never changes a strict first-wins scan, value or
 * position), as an offset into the 32 elements loaded from `base`; and which lanes' tap is
 * valid (average pooling adds only those). Used when every tap fits in those 32 elements. */
#define EDGE_KMAX 8
typedef struct edge_s {
    int use;
    int64_t o0, base;
    int32_t idx[EDGE_KMAX][16];
    int32_t pos[EDGE_KMAX][16];
    uint32_t valid[EDGE_KMAX];
} edge_t;

typedef struct {
    int64_t n, k, s, d, pb, pe, o;
    int64_t lo, hi;  /* windows in [lo, hi) have every tap inside [0, n) */
    int64_t *jlo;    /* per window: first valid tap */
    int64_t *jhi;    /* per window: one past the last valid tap (jlo >= jhi: no valid tap) */
    int has_empty;   /* some window has no valid tap */
    int zinit;       /* sums along this axis start from +0.0 (see geo_prepare) */
    edge_t *edge[2]; /* last axis only: left and right border blocks (NULL elsewhere) */
} ax_t;

typedef struct {
    int r;        /* spatial rank, 1..3 */
    int64_t nc;   /* N * C */
    ax_t a[3];
    int64_t plane_in, plane_out;
} geo_t;

static int64_t *g_scratch_i64(int64_t count) {
    return (int64_t *)malloc((size_t)(count > 0 ? count : 1) * sizeof(int64_t));
}

/* Per-thread scratch buffers, reused from call to call: freeing and re-allocating a few hundred
 * kB per call makes the C library hand the memory back to the system and fault it in again
 * on every call. Buffers above SCRATCH_KEEP are released at the end of the call. The GIL is
 * released while computing, so each thread has its own. */
#define SCRATCH_SLOTS 9
#define SCRATCH_KEEP ((size_t)64 << 20)
enum { S_POS, S_T0, S_T1, S_Q0, S_Q1, S_RING, S_QRING, S_DTAB, S_RTAB };
typedef struct {
    void *p;
    size_t cap;
} scratch_t;
static _Thread_local scratch_t tls_scratch[SCRATCH_SLOTS];

static void *scratch_get(int slot, size_t bytes) {
    scratch_t *sc = &tls_scratch[slot];
    if (bytes < 64) bytes = 64;
    if (sc->cap < bytes) {
        free(sc->p);
        const size_t cap = bytes + bytes / 4;
        sc->p = malloc(cap);
        sc->cap = sc->p ? cap : 0;
    }
    return sc->p;
}

static void scratch_trim(void) {
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        if (tls_scratch[i].cap > SCRATCH_KEEP) {
            free(tls_scratch[i].p);
            tls_scratch[i].p = NULL;
            tls_scratch[i].cap = 0;
        }
}

static void geo_free(geo_t *g) {
    for (int i = 0; i < 3; i++) {
        free(g->a[i].jlo);
        free(g->a[i].jhi);
        free(g->a[i].edge[0]);
        free(g->a[i].edge[1]);
        g->a[i].jlo = g->a[i].jhi = NULL;
        g->a[i].edge[0] = g->a[i].edge[1] = NULL;
    }
}

static void edge_build(edge_t *e, const ax_t *a, int side) {
    const int64_t n = a->n, k = a->k, O = a->o;
    memset(e, 0, sizeof(*e));
    if (k > EDGE_KMAX || O < 16 || n < 32) return;
    if (side == 0) {
        if (a->lo == 0 || a->lo > 16) return;
        e->o0 = 0;
        e->base = 0;
    } else {
        if (a->hi >= O || a->hi < O - 16) return;
        e->o0 = O - 16;
        e->base = n - 32;
    }
    for (int i = 0; i < 16; i++) {
        const int64_t o = e->o0 + i, st = o * a->s - a->pb, jl = a->jlo[o], jh = a->jhi[o];
        const int64_t first = jl < jh ? st + jl * a->d : e->base, last = jl < jh ? st + (jh - 1) * a->d : e->base;
        for (int64_t j = 0; j < k; j++) {
            const int64_t p = st + j * a->d, cp = p < first ? first : (p > last ? last : p);
            if (cp - e->base < 0 || cp - e->base >= 32) return;
            e->idx[j][i] = (int32_t)(cp - e->base);
            e->pos[j][i] = (int32_t)cp;
            if (p >= 0 && p < n) e->valid[j] |= 1u << i;
        }
    }
    e->use = 1;
}

/* Window o covers positions o * s - pb + j * d, j in [0, k). */
static int geo_prepare(geo_t *g) {
    g->plane_in = g->plane_out = 1;
    for (int i = 0; i < g->r; i++) {
        ax_t *a = &g->a[i];
        g->plane_in *= a->n;
        g->plane_out *= a->o;
        a->jlo = g_scratch_i64(a->o);
        a->jhi = g_scratch_i64(a->o);
        if (!a->jlo || !a->jhi) return -1;
        a->has_empty = 0;
        for (int64_t o = 0; o < a->o; o++) {
            int64_t st = o * a->s - a->pb;
            int64_t lo = st >= 0 ? 0 : (-st + a->d - 1) / a->d;
            int64_t hi = st > a->n - 1 ? 0 : (a->n - 1 - st) / a->d + 1;
            if (hi > a->k) hi = a->k;
            if (lo > hi) lo = hi;
            a->jlo[o] = lo;
            a->jhi[o] = hi;
            if (lo >= hi) a->has_empty = 1;
        }
        /* Interior: st >= 0 and st + (k - 1) d <= n - 1. */
        int64_t lo = a->pb <= 0 ? 0 : (a->pb + a->s - 1) / a->s; /* pb < 0: every window starts inside */
        int64_t num = a->n - 1 - (a->k - 1) * a->d + a->pb;
        int64_t hi = num < 0 ? 0 : num / a->s + 1;
        if (lo > a->o) lo = a->o;
        if (hi > a->o) hi = a->o;
        if (hi < lo) hi = lo;
        a->lo = lo;
        a->hi = hi;
        /* numpy_engine sums an axis as tap0 + tap1 + (later valid taps) when the first two taps
         * that land in the input for any window land in it for every window, and otherwise as
         * +0.0 + (valid taps). Starting from +0.0 only changes a -0.0 sum into +0.0, so it is
         * reproduced by adding +0.0 after the valid taps. */
        int64_t seen = 0, full = 0;
        /* Taps before the first one that can reach the input for the last window never land in it. */
        int64_t j0 = a->pb - (a->o - 1) * a->s;
        j0 = j0 <= 0 ? 0 : (j0 + a->d - 1) / a->d;
        for (int64_t j = j0; j < a->k && seen < 2; j++) {
            int64_t first = j * a->d - a->pb, last = (a->o - 1) * a->s + first;
            int any = 0;
            for (int64_t o = 0; o < a->o && !any; o++) any = a->jlo[o] <= j && j < a->jhi[o];
            if (!any) {
                if (first > a->n - 1) break; /* later taps start even further right */
                continue;
            }
            seen++;
            full += first >= 0 && last < a->n;
        }
        a->zinit = !(seen == 2 && full == 2);
    }
    for (int i = g->r; i < 3; i++) {
        g->a[i].jlo = g->a[i].jhi = NULL;
    }
    for (int i = 0; i < 3; i++) g->a[i].edge[0] = g->a[i].edge[1] = NULL;
    ax_t *w = &g->a[g->r - 1];
    for (int side = 0; side < 2; side++) {
        w->edge[side] = (edge_t *)malloc(sizeof(edge_t));
        if (!w->edge[side]) return -1;
        edge_build(w->edge[side], w, side);
    }
    return 0;
}

/* Planes per chunk so that the largest intermediate stays near CHUNK_BYTES. */
static int64_t chunk_planes(const geo_t *g, int64_t bytes_per_elem) {
    int64_t biggest = 1, cur_in = g->plane_in;
    for (int i = g->r - 1; i >= 0; i--) {
        int64_t cur = cur_in / g->a[i].n * g->a[i].o;
        if (cur > biggest) biggest = cur;
        cur_in = cur;
    }
    int64_t p = CHUNK_BYTES / (biggest * bytes_per_elem);
    if (p < 1) p = 1;
    if (p > g->nc) p = g->nc;
    return p;
}

/* Largest intermediate (elements per plane) over the stages. */
static int64_t stage_max(const geo_t *g) {
    int64_t biggest = 1, cur_in = g->plane_in;
    for (int i = g->r - 1; i >= 0; i--) {
        int64_t cur = cur_in / g->a[i].n * g->a[i].o;
        if (cur > biggest) biggest = cur;
        cur_in = cur;
    }
    return biggest;
}

/* Elements before/after axis i in the current stage layout: when axis i is reduced, axes
 * < i still have their input size and axes > i already have their output size. */
static int64_t stage_outer(const geo_t *g, int i) {
    int64_t v = 1;
    for (int j = 0; j < i; j++) v *= g->a[j].n;
    return v;
}
static int64_t stage_inner(const geo_t *g, int i) {
    int64_t v = 1;
    for (int j = i + 1; j < g->r; j++) v *= g->a[j].o;
    return v;
}

/* Coordinates of every axis fit comfortably in int32 (the SIMD kernels compute them so). */
static int geo_small(const geo_t *g) {
    const int64_t lim = (int64_t)1 << 30;
    for (int i = 0; i < g->r; i++) {
        const ax_t *a = &g->a[i];
        if (a->n >= lim || a->o * a->s + a->pb + a->k * a->d >= lim) return 0;
    }
    return 1;
}

/* Rows of the ring of a fused 2-D kernel: a power of two covering one window's rows. */
static int64_t ring_rows(const ax_t *h) {
    int64_t r = 1;
    while (r < (h->k - 1) * h->d + 1) r <<= 1;
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Comparisons                                                                                */

/* "b replaces the current best a", for each NaN policy (see poolcheck.spec.policy.Policy):
 *   propagate: a NaN in the window wins (the first NaN);
 *   ignore:    NaN loses to every number (an all-NaN window keeps its first NaN);
 *   first/int: a plain strict '>' scan. */
/* The float forms are written so that GCC if-converts and vectorises chains of them:
 * !(b <= a) is "b > a, or either is NaN". */
#define BETTER_INT(b, a) ((b) > (a))
#define BETTER_PROP(b, a) (__builtin_isnan(a) ? 0 : !((b) <= (a)))
#define BETTER_IGN(b, a) ((!((b) <= (a))) & ((b) == (b)))

/* Scalar forms for the border windows: integer-valued comparisons and a select on the bit
 * patterns, so that the data never steer a branch (a mispredicted branch per tap costs more
 * than the whole vectorised interior). */
#define SBETTER_INT(b, a) ((b) > (a))
#define SBETTER_PROP(b, a) (((a) == (a)) & !((b) <= (a)))
#define SBETTER_IGN(b, a) (((b) == (b)) & !((b) <= (a)))
#define BITSEL(T, UT, bt, b, v)                                                     \
    do {                                                                            \
        UT ub_, uv_;                                                                \
        memcpy(&ub_, &(b), sizeof(T));                                              \
        memcpy(&uv_, &(v), sizeof(T));                                              \
        uv_ = (UT)(uv_ ^ ((ub_ ^ uv_) & (UT)(0 - (UT)(bt))));                       \
        memcpy(&(v), &uv_, sizeof(T));                                              \
    } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Max pooling, separable: one stage per axis, last axis first.                               */
/*                                                                                            */
/* W stage (last axis): rows of n elements -> rows of o elements; with positions, py receives */
/* the chosen element's coordinate times the axis weight. H stage (any other axis): input     */
/* [outer][n][inner] -> [outer][o][inner], the chosen row's coordinate times its weight added */
/* to the position carried from the previous stage.                                           */

/* Rows of a W stage with compile-time kernel KK and stride SS (dilation DD): each row does its
 * left border windows, its interior windows (vectorised, no bounds checks), its right border. */
#define MW_INTERIOR(T, BETTER, BORDER, KK, SS, DD)                                  \
    for (int64_t r = 0; r < rows; r++) {                                            \
        const T *restrict xr = x + r * n;                                           \
        T *restrict yr = y + r * O;                                                 \
        BORDER(xr, yr, NULL, A, wa, 0, 0, lo);                                      \
        for (int64_t o = lo; o < hi; o++) {                                         \
            const int64_t b0 = o * (SS)-pb;                                         \
            T v = xr[b0];                                                           \
            for (int64_t j = 1; j < (KK); j++) {                                    \
                T b = xr[b0 + j * (DD)];                                            \
                v = BETTER(b, v) ? b : v;                                           \
            }                                                                       \
            yr[o] = v;                                                              \
        }                                                                           \
        BORDER(xr, yr, NULL, A, wa, 0, hi, O);                                      \
    }

#define MW_INTERIOR_POS(T, BETTER, BORDER, KK, SS, DD)                              \
    for (int64_t r = 0; r < rows; r++) {                                            \
        const T *restrict xr = x + r * n;                                           \
        T *restrict yr = y + r * O;                                                 \
        int64_t *restrict pr = py + r * O;                                          \
        BORDER(xr, yr, pr, A, wa, 1, 0, lo);                                        \
        for (int64_t o = lo; o < hi; o++) {                                         \
            const int64_t b0 = o * (SS)-pb;                                         \
            T v = xr[b0];                                                           \
            int64_t c = b0;                                                         \
            for (int64_t j = 1; j < (KK); j++) {                                    \
                T b = xr[b0 + j * (DD)];                                            \
                int bt = BETTER(b, v);                                              \
                v = bt ? b : v;                                                     \
                c = bt ? b0 + j * (DD) : c;                                         \
            }                                                                       \
            yr[o] = v;                                                              \
            pr[o] = c * wa;                                                         \
        }                                                                           \
        BORDER(xr, yr, pr, A, wa, 1, hi, O);                                        \
    }

#define DEF_MAX_SEP(SUF, T, UT, BETTER, SBETTER)                                               \
    /* Border windows [o0, o1) of one row: valid taps only, branch-free. */                    \
    INLINE void mw_brow_##SUF(const T *restrict xr, T *restrict yr, int64_t *restrict pr,      \
                              const ax_t *restrict A, int64_t wa, const int withpos,           \
                              int64_t o0, int64_t o1) {                                        \
        const int64_t s = A->s, d = A->d, pb = A->pb;                                          \
        for (int64_t o = o0; o < o1; o++) {                                                    \
            const int64_t jl = A->jlo[o], jh = A->jhi[o], b0 = o * s - pb;                     \
            if (jl >= jh) { /* no element: filled at the end */                                \
                yr[o] = (T)0;                                                                  \
                if (withpos) pr[o] = 0;                                                        \
                continue;                                                                      \
            }                                                                                  \
            T v = xr[b0 + jl * d];                                                             \
            int64_t c = b0 + jl * d;                                                           \
            for (int64_t j = jl + 1; j < jh; j++) {                                            \
                T b = xr[b0 + j * d];                                                          \
                const int bt = SBETTER(b, v);                                                  \
                BITSEL(T, UT, bt, b, v);                                                       \
                c = bt ? b0 + j * d : c;                                                       \
            }                                                                                  \
            yr[o] = v;                                                                         \
            if (withpos) pr[o] = c * wa;                                                       \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    INLINE void mw_##SUF(const T *restrict x, T *restrict y, int64_t *restrict py,             \
                         int64_t rows, const ax_t *restrict A, int64_t wa, const int withpos) { \
        const int64_t n = A->n, k = A->k, s = A->s, d = A->d, pb = A->pb, O = A->o;            \
        const int64_t lo = A->lo, hi = A->hi;                                                  \
        if (!withpos) {                                                                        \
            if (s == 1 && k == 2) { MW_INTERIOR(T, BETTER, mw_brow_##SUF, 2, 1, d) }           \
            else if (s == 1 && k == 3) { MW_INTERIOR(T, BETTER, mw_brow_##SUF, 3, 1, d) }      \
            else if (s == 2 && k == 2 && d == 1) { MW_INTERIOR(T, BETTER, mw_brow_##SUF, 2, 2, 1) } \
            else if (s == 2 && k == 3 && d == 1) { MW_INTERIOR(T, BETTER, mw_brow_##SUF, 3, 2, 1) } \
            else if (s == 3 && k == 3 && d == 1) { MW_INTERIOR(T, BETTER, mw_brow_##SUF, 3, 3, 1) } \
            else if (s == 4 && k == 4 && d == 1) { MW_INTERIOR(T, BETTER, mw_brow_##SUF, 4, 4, 1) } \
            else {                                                                             \
                for (int64_t r = 0; r < rows; r++) {                                           \
                    const T *restrict xr = x + r * n;                                          \
                    T *restrict yr = y + r * O;                                                \
                    mw_brow_##SUF(xr, yr, NULL, A, wa, 0, 0, lo);                              \
                    for (int64_t o = lo; o < hi; o++) yr[o] = xr[o * s - pb];                  \
                    for (int64_t j = 1; j < k; j++) {                                          \
                        const int64_t off = j * d - pb;                                        \
                        for (int64_t o = lo; o < hi; o++) {                                    \
                            T b = xr[off + o * s];                                             \
                            yr[o] = BETTER(b, yr[o]) ? b : yr[o];                              \
                        }                                                                      \
                    }                                                                          \
                    mw_brow_##SUF(xr, yr, NULL, A, wa, 0, hi, O);                              \
                }                                                                              \
            }                                                                                  \
        } else {                                                                               \
            if (s == 1 && k == 2) { MW_INTERIOR_POS(T, BETTER, mw_brow_##SUF, 2, 1, d) }       \
            else if (s == 1 && k == 3) { MW_INTERIOR_POS(T, BETTER, mw_brow_##SUF, 3, 1, d) }  \
            else if (s == 2 && k == 2 && d == 1) { MW_INTERIOR_POS(T, BETTER, mw_brow_##SUF, 2, 2, 1) } \
            else if (s == 2 && k == 3 && d == 1) { MW_INTERIOR_POS(T, BETTER, mw_brow_##SUF, 3, 2, 1) } \
            else {                                                                             \
                for (int64_t r = 0; r < rows; r++) {                                           \
                    const T *restrict xr = x + r * n;                                          \
                    T *restrict yr = y + r * O;                                                \
                    int64_t *restrict pr = py + r * O;                                         \
                    mw_brow_##SUF(xr, yr, pr, A, wa, 1, 0, lo);                                \
                    for (int64_t o = lo; o < hi; o++) {                                        \
                        yr[o] = xr[o * s - pb];                                                \
                        pr[o] = o * s - pb;                                                    \
                    }                                                                          \
                    for (int64_t j = 1; j < k; j++) {                                          \
                        const int64_t off = j * d - pb;                                        \
                        for (int64_t o = lo; o < hi; o++) {                                    \
                            T b = xr[off + o * s];                                             \
                            int bt = BETTER(b, yr[o]);                                         \
                            yr[o] = bt ? b : yr[o];                                            \
                            pr[o] = bt ? off + o * s : pr[o];                                  \
                        }                                                                      \
                    }                                                                          \
                    for (int64_t o = lo; o < hi; o++) pr[o] *= wa;                             \
                    mw_brow_##SUF(xr, yr, pr, A, wa, 1, hi, O);                                \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* H stage: combine whole rows of `inner` elements. */                                     \
    INLINE void mh_##SUF(const T *restrict x, T *restrict y, const int64_t *restrict px,       \
                         int64_t *restrict py, int64_t outer, const ax_t *restrict A,          \
                         int64_t inner, int64_t wa, const int withpos) {                       \
        const int64_t n = A->n, s = A->s, d = A->d, pb = A->pb, O = A->o;                      \
        for (int64_t u = 0; u < outer; u++) {                                                  \
            for (int64_t o = 0; o < O; o++) {                                                  \
                const int64_t jl = A->jlo[o], jh = A->jhi[o];                                  \
                T *restrict yo = y + (u * O + o) * inner;                                      \
                int64_t *restrict qo = withpos ? py + (u * O + o) * inner : NULL;              \
                if (jl >= jh) {                                                                \
                    for (int64_t i = 0; i < inner; i++) yo[i] = (T)0;                          \
                    if (withpos)                                                               \
                        for (int64_t i = 0; i < inner; i++) qo[i] = 0;                         \
                    continue;                                                                  \
                }                                                                              \
                const int64_t p0 = o * s - pb + jl * d;                                        \
                const T *restrict x0 = x + (u * n + p0) * inner;                               \
                const int64_t cnt = jh - jl;                                                   \
                if (!withpos) {                                                                \
                    if (cnt == 2) {                                                            \
                        const T *restrict x1 = x0 + d * inner;                                 \
                        for (int64_t i = 0; i < inner; i++) {                                  \
                            T a = x0[i], b = x1[i];                                            \
                            yo[i] = BETTER(b, a) ? b : a;                                      \
                        }                                                                      \
                    } else if (cnt == 3) {                                                     \
                        const T *restrict x1 = x0 + d * inner;                                 \
                        const T *restrict x2 = x1 + d * inner;                                 \
                        for (int64_t i = 0; i < inner; i++) {                                  \
                            T a = x0[i], b = x1[i], c = x2[i];                                 \
                            a = BETTER(b, a) ? b : a;                                          \
                            yo[i] = BETTER(c, a) ? c : a;                                      \
                        }                                                                      \
                    } else {                                                                   \
                        for (int64_t i = 0; i < inner; i++) yo[i] = x0[i];                     \
                        for (int64_t j = 1; j < cnt; j++) {                                    \
                            const T *restrict xj = x0 + j * d * inner;                         \
                            for (int64_t i = 0; i < inner; i++) {                              \
                                T b = xj[i];                                                   \
                                yo[i] = BETTER(b, yo[i]) ? b : yo[i];                          \
                            }                                                                  \
                        }                                                                      \
                    }                                                                          \
                } else {                                                                       \
                    const int64_t *restrict q0 = px + (u * n + p0) * inner;                    \
                    const int64_t w0 = p0 * wa;                                                \
                    for (int64_t i = 0; i < inner; i++) {                                      \
                        yo[i] = x0[i];                                                         \
                        qo[i] = q0[i] + w0;                                                    \
                    }                                                                          \
                    for (int64_t j = 1; j < cnt; j++) {                                        \
                        const T *restrict xj = x0 + j * d * inner;                             \
                        const int64_t *restrict qj = q0 + j * d * inner;                       \
                        const int64_t wj = (p0 + j * d) * wa;                                  \
                        for (int64_t i = 0; i < inner; i++) {                                  \
                            T b = xj[i];                                                       \
                            int bt = BETTER(b, yo[i]);                                         \
                            yo[i] = bt ? b : yo[i];                                            \
                            qo[i] = bt ? qj[i] + wj : qo[i];                                   \
                        }                                                                      \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    INLINE void maxsep_body_##SUF(const T *restrict x, T *restrict out, int64_t *restrict pos, \
                                  const geo_t *g, const int64_t *w, T *restrict t0,            \
                                  T *restrict t1, int64_t *restrict q0, int64_t *restrict q1,  \
                                  int64_t chunk, const int withpos) {                          \
        const int r = g->r;                                                                    \
        for (int64_t p = 0; p < g->nc; p += chunk) {                                           \
            if (poll_interrupt()) break;                                                       \
            const int64_t np = (g->nc - p < chunk) ? g->nc - p : chunk;                        \
            const T *src = x + p * g->plane_in;                                                \
            const int64_t *qsrc = NULL;                                                        \
            for (int i = r - 1; i >= 0; i--) {                                                 \
                T *dst = (i == 0) ? out + p * g->plane_out : ((i & 1) ? t0 : t1);              \
                int64_t *qdst = NULL;                                                          \
                if (withpos) qdst = (i == 0) ? pos + p * g->plane_out : ((i & 1) ? q0 : q1);   \
                const int64_t outer = np * stage_outer(g, i);                                  \
                if (i == r - 1)                                                                \
                    mw_##SUF(src, dst, qdst, outer, &g->a[i], w[i], withpos);                  \
                else                                                                           \
                    mh_##SUF(src, dst, qsrc, qdst, outer, &g->a[i], stage_inner(g, i), w[i],   \
                             withpos);                                                         \
                src = dst;                                                                     \
                qsrc = qdst;                                                                   \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    HOT static void maxsep_##SUF(const T *x, T *out, int64_t *pos, const geo_t *g,             \
                                 const int64_t *w, T *t0, T *t1, int64_t *q0, int64_t *q1,     \
                                 int64_t chunk) {                                              \
        if (pos)                                                                               \
            maxsep_body_##SUF(x, out, pos, g, w, t0, t1, q0, q1, chunk, 1);                    \
        else                                                                                   \
            maxsep_body_##SUF(x, out, pos, g, w, t0, t1, q0, q1, chunk, 0);                    \
    }

/* ------------------------------------------------------------------------------------------ */
/* Max pooling, direct row-major scan (the "first" NaN policy).                               */
/*                                                                                            */
/* For each output row (all output coordinates but the last), the valid tap rows are visited  */
/* in row-major order and, within each, the taps of the last axis in order; each output keeps */
/* its running best in `out` and the chosen position in `pos`. Per output this is exactly the */
/* sequence of comparisons of a row-major scan of its window.                                 */

#define DEF_MAX_DIRECT(SUF, T, BETTER)                                                         \
    HOT static void maxdirect_##SUF(const T *x, T *out, int64_t *pos, const geo_t *g,          \
                                    const int64_t *w) {                                        \
        const int r = g->r;                                                                    \
        const ax_t *W = &g->a[r - 1];                                                          \
        const ax_t *H = r >= 2 ? &g->a[r - 2] : NULL;                                          \
        const ax_t *D = r >= 3 ? &g->a[r - 3] : NULL;                                          \
        const int64_t n = W->n, k = W->k, s = W->s, d = W->d, pb = W->pb, O = W->o;            \
        const int64_t lo = W->lo, hi = W->hi, ww = w[r - 1];                                   \
        const int64_t OD = D ? D->o : 1, OH = H ? H->o : 1;                                    \
        const int64_t NH = H ? H->n : 1;                                                       \
        for (int64_t p = 0; p < g->nc; p++) {                                                  \
            if (poll_interrupt()) break;                                                       \
            const T *xp = x + p * g->plane_in;                                                 \
            for (int64_t od = 0; od < OD; od++) {                                              \
                const int64_t dl = D ? D->jlo[od] : 0, dh = D ? D->jhi[od] : 1;                \
                for (int64_t oh = 0; oh < OH; oh++) {                                          \
                    const int64_t hl = H ? H->jlo[oh] : 0, hh = H ? H->jhi[oh] : 1;            \
                    T *restrict yr = out + ((p * OD + od) * OH + oh) * O;                      \
                    int64_t *restrict pr = pos + ((p * OD + od) * OH + oh) * O;                \
                    int first = 1;                                                             \
                    for (int64_t jd = dl; jd < dh; jd++) {                                     \
                        const int64_t pd = D ? od * D->s - D->pb + jd * D->d : 0;              \
                        for (int64_t jh = hl; jh < hh; jh++) {                                 \
                            const int64_t ph = H ? oh * H->s - H->pb + jh * H->d : 0;          \
                            const T *restrict xr = xp + (pd * NH + ph) * n;                    \
                            const int64_t roff = (D ? pd * w[r - 3] : 0) + (H ? ph * w[r - 2] : 0); \
                            for (int64_t j = 0; j < k; j++) {                                  \
                                const int64_t off = j * d - pb;                                \
                                const int64_t cj = roff + off * ww;                            \
                                if (first && j == 0) {                                         \
                                    for (int64_t o = lo; o < hi; o++) {                        \
                                        yr[o] = xr[off + o * s];                               \
                                        pr[o] = cj + o * s * ww;                               \
                                    }                                                          \
                                } else {                                                       \
                                    for (int64_t o = lo; o < hi; o++) {                        \
                                        T b = xr[off + o * s];                                 \
                                        int bt = BETTER(b, yr[o]);                             \
                                        yr[o] = bt ? b : yr[o];                                \
                                        pr[o] = bt ? cj + o * s * ww : pr[o];                  \
                                    }                                                          \
                                }                                                              \
                            }                                                                  \
                            for (int64_t o = 0; o < O; o++) {                                  \
                                if (o == lo) o = hi;                                           \
                                if (o >= O) break;                                             \
                                const int64_t jl = W->jlo[o], jhh = W->jhi[o];                 \
                                for (int64_t j = jl; j < jhh; j++) {                           \
                                    const int64_t c = o * s - pb + j * d;                      \
                                    T b = xr[c];                                               \
                                    int bt = (first && j == jl) | BETTER(b, yr[o]);            \
                                    yr[o] = bt ? b : yr[o];                                    \
                                    pr[o] = bt ? roff + c * ww : pr[o];                        \
                                }                                                              \
                            }                                                                  \
                            first = 0;                                                         \
                        }                                                                      \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }

DEF_MAX_SEP(f32p, float, uint32_t, BETTER_PROP, SBETTER_PROP)
DEF_MAX_SEP(f32i, float, uint32_t, BETTER_IGN, SBETTER_IGN)
DEF_MAX_SEP(f64p, double, uint64_t, BETTER_PROP, SBETTER_PROP)
DEF_MAX_SEP(f64i, double, uint64_t, BETTER_IGN, SBETTER_IGN)
DEF_MAX_SEP(i8, int8_t, uint8_t, BETTER_INT, SBETTER_INT)
DEF_MAX_SEP(u8, uint8_t, uint8_t, BETTER_INT, SBETTER_INT)
DEF_MAX_SEP(i16, int16_t, uint16_t, BETTER_INT, SBETTER_INT)
DEF_MAX_SEP(u16, uint16_t, uint16_t, BETTER_INT, SBETTER_INT)
DEF_MAX_SEP(i32, int32_t, uint32_t, BETTER_INT, SBETTER_INT)
DEF_MAX_SEP(u32, uint32_t, uint32_t, BETTER_INT, SBETTER_INT)
DEF_MAX_SEP(i64, int64_t, uint64_t, BETTER_INT, SBETTER_INT)
DEF_MAX_SEP(u64, uint64_t, uint64_t, BETTER_INT, SBETTER_INT)
DEF_MAX_DIRECT(f32f, float, BETTER_INT)
DEF_MAX_DIRECT(f64f, double, BETTER_INT)

/* ------------------------------------------------------------------------------------------ */
/* Average pooling: sums in double, last axis first, taps in order.                           */

#define AW_INTERIOR(TI, BORDER, KK, SS, DD)                                         \
    for (int64_t r = 0; r < rows; r++) {                                            \
        const TI *restrict xr = x + r * n;                                          \
        double *restrict yr = y + r * O;                                            \
        BORDER(xr, yr, A, 0, lo);                                                   \
        for (int64_t o = lo; o < hi; o++) {                                         \
            const int64_t b0 = o * (SS)-pb;                                         \
            double v = (double)xr[b0];                                              \
            for (int64_t j = 1; j < (KK); j++) v += (double)xr[b0 + j * (DD)];      \
            yr[o] = v + zadd;                                                       \
        }                                                                           \
        BORDER(xr, yr, A, hi, O);                                                   \
    }

#define DEF_AVG(SUF, TI, TO)                                                                   \
    /* Border windows [o0, o1) of one row: valid taps in order (+0.0, see zinit). */           \
    INLINE void aw_brow_##SUF(const TI *restrict xr, double *restrict yr,                      \
                              const ax_t *restrict A, int64_t o0, int64_t o1) {                \
        const int64_t s = A->s, d = A->d, pb = A->pb;                                          \
        const double zadd = A->zinit ? 0.0 : -0.0;                                             \
        for (int64_t o = o0; o < o1; o++) {                                                    \
            const int64_t jl = A->jlo[o], jh = A->jhi[o], b0 = o * s - pb;                     \
            double v = 0.0;                                                                    \
            if (jl < jh) {                                                                     \
                v = (double)xr[b0 + jl * d];                                                   \
                for (int64_t j = jl + 1; j < jh; j++) v += (double)xr[b0 + j * d];             \
                v += zadd;                                                                     \
            }                                                                                  \
            yr[o] = v;                                                                         \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    INLINE void aw_##SUF(const TI *restrict x, double *restrict y, int64_t rows,               \
                         const ax_t *restrict A) {                                             \
        const int64_t n = A->n, k = A->k, s = A->s, d = A->d, pb = A->pb, O = A->o;            \
        const int64_t lo = A->lo, hi = A->hi;                                                  \
        /* x + (-0.0) == x for every x; x + (+0.0) turns -0.0 into +0.0 (see zinit). */        \
        const double zadd = A->zinit ? 0.0 : -0.0;                                             \
        if (s == 1 && k == 2) { AW_INTERIOR(TI, aw_brow_##SUF, 2, 1, d) }                      \
        else if (s == 1 && k == 3) { AW_INTERIOR(TI, aw_brow_##SUF, 3, 1, d) }                 \
        else if (s == 2 && k == 2 && d == 1) { AW_INTERIOR(TI, aw_brow_##SUF, 2, 2, 1) }       \
        else if (s == 2 && k == 3 && d == 1) { AW_INTERIOR(TI, aw_brow_##SUF, 3, 2, 1) }       \
        else if (hi - lo < 4) {                                                                \
            for (int64_t r = 0; r < rows; r++) {                                               \
                const TI *restrict xr = x + r * n;                                             \
                double *restrict yr = y + r * O;                                               \
                aw_brow_##SUF(xr, yr, A, 0, lo);                                               \
                for (int64_t o = lo; o < hi; o++) {                                            \
                    const int64_t b0 = o * s - pb;                                             \
                    double v = (double)xr[b0];                                                 \
                    for (int64_t j = 1; j < k; j++) v += (double)xr[b0 + j * d];               \
                    yr[o] = v + zadd;                                                          \
                }                                                                              \
                aw_brow_##SUF(xr, yr, A, hi, O);                                               \
            }                                                                                  \
        } else {                                                                               \
            for (int64_t r = 0; r < rows; r++) {                                               \
                const TI *restrict xr = x + r * n;                                             \
                double *restrict yr = y + r * O;                                               \
                aw_brow_##SUF(xr, yr, A, 0, lo);                                               \
                for (int64_t o = lo; o < hi; o++) yr[o] = (double)xr[o * s - pb];              \
                for (int64_t j = 1; j < k; j++) {                                              \
                    const int64_t off = j * d - pb;                                            \
                    for (int64_t o = lo; o < hi; o++) yr[o] += (double)xr[off + o * s];        \
                }                                                                              \
                for (int64_t o = lo; o < hi; o++) yr[o] += zadd;                               \
                aw_brow_##SUF(xr, yr, A, hi, O);                                               \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    INLINE void ah_##SUF(const double *restrict x, double *restrict y, int64_t outer,          \
                         const ax_t *restrict A, int64_t inner) {                              \
        const int64_t n = A->n, s = A->s, d = A->d, pb = A->pb, O = A->o;                      \
        const double zadd = A->zinit ? 0.0 : -0.0;                                             \
        if (inner == 1) {                                                                      \
            for (int64_t u = 0; u < outer; u++) {                                              \
                const double *restrict xu = x + u * n;                                         \
                for (int64_t o = 0; o < O; o++) {                                              \
                    const int64_t jl = A->jlo[o], jh = A->jhi[o], b0 = o * s - pb;             \
                    double v = 0.0;                                                            \
                    if (jl < jh) {                                                             \
                        v = xu[b0 + jl * d];                                                   \
                        for (int64_t j = jl + 1; j < jh; j++) v += xu[b0 + j * d];             \
                        v += zadd;                                                             \
                    }                                                                          \
                    y[u * O + o] = v;                                                          \
                }                                                                              \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        for (int64_t u = 0; u < outer; u++) {                                                  \
            for (int64_t o = 0; o < O; o++) {                                                  \
                const int64_t jl = A->jlo[o], jh = A->jhi[o];                                  \
                double *restrict yo = y + (u * O + o) * inner;                                 \
                if (jl >= jh) {                                                                \
                    for (int64_t i = 0; i < inner; i++) yo[i] = 0.0;                           \
                    continue;                                                                  \
                }                                                                              \
                const double *restrict x0 = x + (u * n + o * s - pb + jl * d) * inner;         \
                const int64_t cnt = jh - jl, step = d * inner;                                 \
                if (cnt == 1) {                                                                \
                    for (int64_t i = 0; i < inner; i++) yo[i] = x0[i] + zadd;                  \
                } else if (cnt == 2) {                                                         \
                    for (int64_t i = 0; i < inner; i++) yo[i] = (x0[i] + x0[i + step]) + zadd; \
                } else if (cnt == 3) {                                                         \
                    for (int64_t i = 0; i < inner; i++)                                        \
                        yo[i] = ((x0[i] + x0[i + step]) + x0[i + 2 * step]) + zadd;            \
                } else {                                                                       \
                    for (int64_t i = 0; i < inner; i++) yo[i] = x0[i];                         \
                    for (int64_t j = 1; j < cnt; j++) {                                        \
                        const double *restrict xj = x0 + j * step;                             \
                        for (int64_t i = 0; i < inner; i++) yo[i] += xj[i];                    \
                    }                                                                          \
                    for (int64_t i = 0; i < inner; i++) yo[i] += zadd;                         \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    HOT static void avg_##SUF(const TI *x, TO *out, const geo_t *g, const double *dtab,        \
                              int zeros, double efill, double *t0, double *t1, int64_t chunk) { \
        const int r = g->r;                                                                    \
        const int64_t po = g->plane_out;                                                       \
        for (int64_t p = 0; p < g->nc; p += chunk) {                                           \
            if (poll_interrupt()) break;                                                       \
            const int64_t np = (g->nc - p < chunk) ? g->nc - p : chunk;                        \
            const double *src = NULL;                                                          \
            double *dst = NULL;                                                                \
            for (int i = r - 1; i >= 0; i--) {                                                 \
                dst = (i & 1) ? t0 : t1;                                                       \
                const int64_t outer = np * stage_outer(g, i);                                  \
                if (i == r - 1)                                                                \
                    aw_##SUF(x + p * g->plane_in, dst, outer, &g->a[i]);                       \
                else                                                                           \
                    ah_##SUF(src, dst, outer, &g->a[i], stage_inner(g, i));                    \
                src = dst;                                                                     \
            }                                                                                  \
            /* "The output of each pooling window is divided by the number of elements". */    \
            /* A zero divisor (no element counted) gives the empty_avg value instead. */       \
            TO *restrict yo = out + p * po;                                                    \
            const double *restrict sum = dst;                                                  \
            for (int64_t q = 0; q < np; q++) {                                                 \
                for (int64_t i = 0; i < po; i++) yo[q * po + i] = (TO)(sum[q * po + i] / dtab[i]); \
                if (zeros)                                                                     \
                    for (int64_t i = 0; i < po; i++)                                           \
                        if (dtab[i] == 0.0) yo[q * po + i] = (TO)efill;                        \
            }                                                                                  \
        }                                                                                      \
    }

DEF_AVG(f32, float, float)
DEF_AVG(f64, double, double)
DEF_AVG(f32to64, float, double)

/* Global average pooling: one window per axis covering the whole axis (dilation 1, pb >= 0,
 * k - pb >= n), so each output is the mean of a whole plane of m elements. The plane is summed
 * in float64 in 8 interleaved partial sums (element i into sum i mod 8, each in order, from
 * -0.0, the identity of addition), combined pairwise, then +0.0 when the window reaches into
 * padding (as the zero-padded sum would). Any order of m float64 additions is within
 * (m - 1) 2^-53 sum|x| of the exact sum, the bound the NumPy engine's pairwise global sum also
 * meets (docs/benchmarks.md); the 8 lanes vectorise without reassociating anything. */
#define DEF_AVG_GLOBAL(SUF, TI, TO)                                                            \
    HOT static void avgglobal_##SUF(const TI *x, TO *out, int64_t nc, int64_t m, double div,   \
                                    double efill, double zadd) {                               \
        const int64_t m8 = m & ~(int64_t)7;                                                    \
        for (int64_t p = 0; p < nc; p++) {                                                     \
            if ((p & 1023) == 0 && poll_interrupt()) break;                                    \
            const TI *restrict xp = x + p * m;                                                 \
            double acc[8] = {-0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0};                  \
            for (int64_t i = 0; i < m8; i += 8)                                                \
                for (int j = 0; j < 8; j++) acc[j] += (double)xp[i + j];                       \
            for (int64_t i = m8; i < m; i++) acc[i - m8] += (double)xp[i];                     \
            const double sum = (((acc[0] + acc[4]) + (acc[2] + acc[6])) +                      \
                                ((acc[1] + acc[5]) + (acc[3] + acc[7]))) + zadd;               \
            /* "The output of each pooling window is divided by the number of elements". */    \
            out[p] = div == 0.0 ? (TO)efill : (TO)(sum / div);                                 \
        }                                                                                      \
    }

DEF_AVG_GLOBAL(f32, float, float)
DEF_AVG_GLOBAL(f64, double, double)
DEF_AVG_GLOBAL(f32to64, float, double)

/* Whether every axis has a single window covering the whole axis (see DEF_AVG_GLOBAL), and
 * whether that window reaches into padding. */
static int geo_global(const geo_t *g, int *padded) {
    *padded = 0;
    for (int i = 0; i < g->r; i++) {
        const ax_t *a = &g->a[i];
        if (a->o != 1 || a->d != 1 || a->pb < 0 || a->k - a->pb < a->n) return 0;
        *padded |= a->pb > 0 || a->k - a->pb > a->n;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* AVX-512 kernels for float32, chosen at run time when the CPU has AVX-512 F/BW/VL/DQ.        */
/*                                                                                            */
/* Blocks of 16 outputs. Every load is masked to the taps of the active windows, so the tail  */
/* block needs no scalar epilogue and nothing past a window is ever read. Stride 1 loads      */
/* directly, stride 2 deinterleaves two loads with vpermt2ps, other strides gather.           */
/* Max: without NaN the three NaN policies are the same strict '>' first-wins scan, and       */
/* vmaxps(b, v) computes exactly "b > v ? b : v"; a block whose taps hold a NaN is redone by  */
/* the exact scalar code of its policy.                                                       */

#if defined(__GNUC__) && defined(__x86_64__) && !defined(POOLCHECK_NO_AVX512)
#define POOLCHECK_AVX512 1
#include <immintrin.h>
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

static int cpu_has_avx512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

#define IOTA16 _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)

T512 static inline __mmask16 lanes16(int64_t m) {
    return m >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1u);
}

T512 static inline void store_pos16(int64_t *p, __mmask16 km, __m512i c32, int64_t wa) {
    const __m512i w = _mm512_set1_epi64(wa);
    const __m512i lo = _mm512_mullo_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(c32)), w);
    const __m512i hi = _mm512_mullo_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(c32, 1)), w);
    if (km == 0xFFFF) {
        _mm512_storeu_si512(p, lo);
        _mm512_storeu_si512(p + 8, hi);
    } else {
        _mm512_mask_storeu_epi64(p, (__mmask8)km, lo);
        _mm512_mask_storeu_epi64(p + 8, (__mmask8)(km >> 8), hi);
    }
}

/* Stride-2 source masks of a block of m windows: elements p[0 .. 2 (m - 1)]. */
T512 static inline void s2_masks(int64_t m, __mmask16 *ka, __mmask16 *kb) {
    const int64_t cnt = 2 * m - 1;
    *ka = lanes16(cnt);
    *kb = cnt > 16 ? lanes16(cnt - 16) : (__mmask16)0;
}

/* Lanes i < m of p[i * S]; S a compile-time constant in the specialised callers. A full block
 * (km == 0xFFFF) uses plain loads: for stride 2 the second load starts at p[15] so that it ends
 * at p[30], the last element needed (idx15 picks the evens from p[0..15] and p[15..30]). */
#define TAP16(p, S, km, ka, kb, vS, even)                                                         \
    ((S) == 1 ? ((km) == 0xFFFF ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps((km), (p)))          \
     : (S) == 2 ? ((km) == 0xFFFF ? _mm512_permutex2var_ps(_mm512_loadu_ps(p), IDX15,             \
                                                          _mm512_loadu_ps((p) + 15))              \
                                  : _mm512_permutex2var_ps(_mm512_maskz_loadu_ps((ka), (p)),      \
                                                           (even),                                \
                                                           _mm512_maskz_loadu_ps((kb), (p) + 16)))\
                : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), (km), (vS), (p), 4))
#define IDX15 _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31)
/* NaN detection for a block: the sum of its taps is NaN if any tap is (an inf - inf false
 * alarm only sends the block through the exact scalar path). */
#define HAS_NAN(acc, km) (_mm512_mask_cmp_ps_mask((km), (acc), (acc), _CMP_UNORD_Q) != 0)

/* Whether a row holds a NaN: scanned once per input row (which also brings it into L1), so
 * that the kernels of NaN-free rows need no per-tap NaN bookkeeping. */
T512 static inline int row_has_nan(const float *p, int64_t n) {
    __mmask16 m = 0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(p + i);
        m = (__mmask16)(m | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q));
    }
    if (i < n) {
        if (n >= 16) {
            const __m512 v = _mm512_loadu_ps(p + n - 16);
            m = (__mmask16)(m | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q));
        } else {
            for (; i < n; i++) m = (__mmask16)(m | (p[i] != p[i]));
        }
    }
    return m != 0;
}
/* Masked loads are slow on some CPUs even with every lane set: full blocks load plainly. */
#define LD16(p, km) ((km) == 0xFFFF ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps((km), (p)))
#define LD8Q(p, k8) ((k8) == 0xFF ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi64((k8), (p)))
#define LD8D(p, k8) ((k8) == 0xFF ? _mm512_loadu_pd(p) : _mm512_maskz_loadu_pd((k8), (p)))

/* a / d rounded to nearest, without a division, for sums of float32 values (no subnormal or
 * overflowing quotient): r = RN(1/d) (table), q0 = RN(a r) is within 1.5 ulp of a/d, the
 * remainder a - q0 d is then exact (one FMA), and q1 = RN(q0 + rem r) = RN(a/d): the
 * perturbation, at most 2 ulp 2^-53, is far below the distance from a/d to any rounding
 * midpoint (a multiple of 2^(E-53) over d, never zero) for d < 2^51. Zeros, infinities and
 * NaN keep q0 = a r (the sign of a zero, the NaN itself). Bit-identical to a true division
 * (tests/test_c_engine.py compares with NumPy's). */
T512 static inline __m512d div_pd_exact(__m512d a, __m512d d, __m512d r) {
    const __m512d q0 = _mm512_mul_pd(a, r);
    const __m512d rem = _mm512_fnmadd_pd(q0, d, a); /* a - q0 d, exact */
    const __m512d q1 = _mm512_fmadd_pd(rem, r, q0);
    /* QNaN 0x01, +0 0x02, -0 0x04, +inf 0x08, -inf 0x10, SNaN 0x80 */
    return _mm512_mask_mov_pd(q1, _mm512_fpclass_pd_mask(a, 0x9F), q0);
}

#define ST16(p, km, v)                                                                           \
    do {                                                                                         \
        if ((km) == 0xFFFF) _mm512_storeu_ps((p), (v));                                          \
        else _mm512_mask_storeu_ps((p), (km), (v));                                              \
    } while (0)
#define ST8Q(p, k8, v)                                                                           \
    do {                                                                                         \
        if ((k8) == 0xFF) _mm512_storeu_si512((p), (v));                                         \
        else _mm512_mask_storeu_epi64((p), (k8), (v));                                           \
    } while (0)

/* Interior windows [lo, hi) of one row, blocks of 16. S and K are constants when inlined from
 * the specialised cases (K == 0: use the runtime kernel k). Returns nothing; NaN blocks are
 * redone by the exact scalar code. */
T512 static inline __attribute__((always_inline)) void mw512_row(
    const float *restrict xr, float *restrict yr, int64_t *restrict pr, const ax_t *restrict A,
    int64_t wa, const int withpos, const int ign, const int64_t S, const int64_t K, int64_t lo,
    int64_t hi, __m512i vS, const int NC) {
    const int64_t k = K ? K : A->k, d = A->d, pb = A->pb;
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t o0 = lo; o0 < hi; o0 += 16) {
        /* A short last block is shifted back to overlap the previous one (recomputing equal
         * values) when the row has 16 windows: masked loads are slow on some CPUs. */
        if (hi - o0 < 16 && hi - lo >= 16) o0 = hi - 16;
        const int64_t m = hi - o0 < 16 ? hi - o0 : 16;
        const __mmask16 km = lanes16(m);
        const float *p0 = xr + (o0 * S - pb);
        if (S == 4 && K == 4 && m == 16 && d == 1) {
            /* Non-overlapping windows of 4: the 64 elements p0[0..63], deinterleaved twice;
             * taps combined in order 0, 1, 2, 3. */
            const __m512 a0 = _mm512_loadu_ps(p0), a1 = _mm512_loadu_ps(p0 + 16);
            const __m512 a2 = _mm512_loadu_ps(p0 + 32), a3 = _mm512_loadu_ps(p0 + 48);
            const __m512 e0 = _mm512_permutex2var_ps(a0, even, a1), e1 = _mm512_permutex2var_ps(a2, even, a3);
            const __m512 f0 = _mm512_permutex2var_ps(a0, odd, a1), f1 = _mm512_permutex2var_ps(a2, odd, a3);
            const __m512 t[4] = {_mm512_permutex2var_ps(e0, even, e1), _mm512_permutex2var_ps(f0, even, f1),
                                 _mm512_permutex2var_ps(e0, odd, e1), _mm512_permutex2var_ps(f0, odd, f1)};
            __m512 v = t[0];
            const __m512 acc = NC ? _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)) : a0;
            __m512i jv = _mm512_setzero_si512();
            for (int j = 1; j < 4; j++) {
                if (!withpos) {
                    v = _mm512_max_ps(t[j], v);
                } else {
                    const __mmask16 gt = _mm512_cmp_ps_mask(t[j], v, _CMP_GT_OQ);
                    v = _mm512_mask_blend_ps(gt, v, t[j]);
                    jv = _mm512_mask_blend_epi32(gt, jv, _mm512_set1_epi32(j));
                }
            }
            if (NC && __builtin_expect(HAS_NAN(acc, km), 0)) {
                if (ign) mw_brow_f32i(xr, yr, pr, A, wa, withpos, o0, o0 + m);
                else mw_brow_f32p(xr, yr, pr, A, wa, withpos, o0, o0 + m);
                continue;
            }
            _mm512_storeu_ps(yr + o0, v);
            if (withpos) {
                const __m512i ov = _mm512_add_epi32(_mm512_set1_epi32((int)o0), IOTA16);
                __m512i c = _mm512_sub_epi32(_mm512_slli_epi32(ov, 2), _mm512_set1_epi32((int)pb));
                store_pos16(pr + o0, km, _mm512_add_epi32(c, jv), wa);
            }
            continue;
        }
        __mmask16 ka = 0, kb = 0;
        if (S == 2) s2_masks(m, &ka, &kb);
        __m512 v = TAP16(p0, S, km, ka, kb, vS, even), acc = v;
        __m512i jv = _mm512_setzero_si512();
        for (int64_t j = 1; j < k; j++) {
            const __m512 b = TAP16(p0 + j * d, S, km, ka, kb, vS, even);
            if (NC) acc = _mm512_add_ps(acc, b);
            if (!withpos) {
                v = _mm512_max_ps(b, v); /* b > v ? b : v */
            } else {
                const __mmask16 gt = _mm512_cmp_ps_mask(b, v, _CMP_GT_OQ);
                v = _mm512_mask_blend_ps(gt, v, b);
                jv = _mm512_mask_blend_epi32(gt, jv, _mm512_set1_epi32((int)j));
            }
        }
        if (NC && __builtin_expect(HAS_NAN(acc, km), 0)) {
            if (ign) mw_brow_f32i(xr, yr, pr, A, wa, withpos, o0, o0 + m);
            else mw_brow_f32p(xr, yr, pr, A, wa, withpos, o0, o0 + m);
            continue;
        }
        if (km == 0xFFFF) _mm512_storeu_ps(yr + o0, v);
        else _mm512_mask_storeu_ps(yr + o0, km, v);
        if (withpos) {
            /* the chosen coordinate: o * S - pb + j * d */
            const __m512i ov = _mm512_add_epi32(_mm512_set1_epi32((int)o0), IOTA16);
            __m512i c = _mm512_sub_epi32(_mm512_mullo_epi32(ov, _mm512_set1_epi32((int)S)),
                                         _mm512_set1_epi32((int)pb));
            c = _mm512_add_epi32(c, _mm512_mullo_epi32(jv, _mm512_set1_epi32((int)d)));
            store_pos16(pr + o0, km, c, wa);
        }
    }
}

/* A border block of 16 windows (see edge_t): clamped taps from 32 loaded elements. */
T512 static inline __attribute__((always_inline)) void mw512_edge(
    const float *restrict xr, float *restrict yr, int64_t *restrict pr, const ax_t *restrict A,
    const edge_t *restrict e, int64_t wa, const int withpos, const int ign, const int64_t K, const int NC) {
    const int64_t k = K ? K : A->k;
    const __m512 a = _mm512_loadu_ps(xr + e->base), b = _mm512_loadu_ps(xr + e->base + 16);
    __m512 v = _mm512_permutex2var_ps(a, _mm512_loadu_si512(e->idx[0]), b), acc = v;
    __m512i cv = withpos ? _mm512_loadu_si512(e->pos[0]) : _mm512_setzero_si512();
    for (int64_t j = 1; j < k; j++) {
        const __m512 t = _mm512_permutex2var_ps(a, _mm512_loadu_si512(e->idx[j]), b);
        if (NC) acc = _mm512_add_ps(acc, t);
        if (!withpos) {
            v = _mm512_max_ps(t, v); /* t > v ? t : v */
        } else {
            const __mmask16 gt = _mm512_cmp_ps_mask(t, v, _CMP_GT_OQ);
            v = _mm512_mask_blend_ps(gt, v, t);
            cv = _mm512_mask_mov_epi32(cv, gt, _mm512_loadu_si512(e->pos[j]));
        }
    }
    if (NC && __builtin_expect(HAS_NAN(acc, 0xFFFF), 0)) {
        if (ign) mw_brow_f32i(xr, yr, pr, A, wa, withpos, e->o0, e->o0 + 16);
        else mw_brow_f32p(xr, yr, pr, A, wa, withpos, e->o0, e->o0 + 16);
        return;
    }
    _mm512_storeu_ps(yr + e->o0, v);
    if (withpos) store_pos16(pr + e->o0, 0xFFFF, cv, wa);
}

T512 static inline __attribute__((always_inline)) int mw512_rows(
    const float *restrict x, float *restrict y, int64_t *restrict py, int64_t rows,
    const ax_t *restrict A, int64_t wa, const int withpos, const int ign, const int64_t S,
    const int64_t K) {
    int anynan = 0;
    const int64_t n = A->n, O = A->o, lo = A->lo, hi = A->hi;
    const __m512i vS = _mm512_mullo_epi32(IOTA16, _mm512_set1_epi32((int)S));
    const edge_t *eL = A->edge[0], *eR = A->edge[1];
    const int useL = eL != NULL && eL->use, useR = eR != NULL && eR->use;
    const int64_t ilo = useL ? 16 : lo, ihi = useR ? O - 16 : hi;
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * n;
        float *restrict yr = y + r * O;
        int64_t *restrict pr = withpos ? py + r * O : NULL;
        const int rn = row_has_nan(xr, n);
        anynan |= rn;
        if (useL) {
            if (rn) mw512_edge(xr, yr, pr, A, eL, wa, withpos, ign, K, 1);
            else mw512_edge(xr, yr, pr, A, eL, wa, withpos, ign, K, 0);
        } else if (lo > 0) {
            if (ign) mw_brow_f32i(xr, yr, pr, A, wa, withpos, 0, lo);
            else mw_brow_f32p(xr, yr, pr, A, wa, withpos, 0, lo);
        }
        if (ihi > ilo) {
            if (rn) mw512_row(xr, yr, pr, A, wa, withpos, ign, S, K, ilo, ihi, vS, 1);
            else mw512_row(xr, yr, pr, A, wa, withpos, ign, S, K, ilo, ihi, vS, 0);
        }
        if (useR) {
            if (rn) mw512_edge(xr, yr, pr, A, eR, wa, withpos, ign, K, 1);
            else mw512_edge(xr, yr, pr, A, eR, wa, withpos, ign, K, 0);
        } else if (hi < O) {
            if (ign) mw_brow_f32i(xr, yr, pr, A, wa, withpos, hi, O);
            else mw_brow_f32p(xr, yr, pr, A, wa, withpos, hi, O);
        }
    }
    return anynan;
}

#define MW512_CASES(WP, IGN)                                                                     \
    if (s == 1 && k == 2) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 1, 2);                      \
    else if (s == 1 && k == 3) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 1, 3);                 \
    else if (s == 1) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 1, 0);                           \
    else if (s == 2 && k == 2) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 2, 2);                 \
    else if (s == 2 && k == 3) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 2, 3);                 \
    else if (s == 2) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 2, 0);                           \
    else if (s == 4 && k == 4) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 4, 4);                 \
    else mw512_rows(x, y, py, rows, A, wa, WP, IGN, s, 0);

/* W stage of max pooling, float32 (propagate or ignore). */
T512 __attribute__((noinline)) static void mw_f32_512(const float *restrict x, float *restrict y, int64_t *restrict py,
                            int64_t rows, const ax_t *restrict A, int64_t wa, int withpos, int ign) {
    const int64_t k = A->k, s = A->s;
    if (!withpos) {
        if (!ign) { MW512_CASES(0, 0) } else { MW512_CASES(0, 1) }
    } else {
        if (!ign) { MW512_CASES(1, 0) } else { MW512_CASES(1, 1) }
    }
}

/* One output row of an H stage: combine CNT rows (x0, x0 + step, ...) of `inner` elements.
 * CNT is a constant in the specialised cases (0: cnt). */
T512 static inline __attribute__((always_inline)) void mh512_row(
    const float *restrict x0, float *restrict yo, const int64_t *restrict q0, int64_t *restrict qo,
    int64_t inner, int64_t step, const int64_t CNT, int64_t cnt, int64_t p0, int64_t d, int64_t wa,
    const int withpos, const int ign) {
    const int64_t c = CNT ? CNT : cnt;
    for (int64_t i0 = 0; i0 < inner; i0 += 16) {
        if (inner - i0 < 16 && inner >= 16) i0 = inner - 16; /* overlap instead of masking */
        const int64_t m = inner - i0 < 16 ? inner - i0 : 16;
        const __mmask16 km = lanes16(m);
        const __mmask8 kl = (__mmask8)km, kh = (__mmask8)(km >> 8);
        __m512 v = LD16(x0 + i0, km), acc = v;
        if (!withpos) {
            for (int64_t j = 1; j < c; j++) {
                const __m512 b = LD16(x0 + j * step + i0, km);
                acc = _mm512_add_ps(acc, b);
                v = _mm512_max_ps(b, v); /* b > v ? b : v */
            }
            if (__builtin_expect(!HAS_NAN(acc, km), 1)) {
                ST16(yo + i0, km, v);
                continue;
            }
        } else {
            const __m512i w0 = _mm512_set1_epi64(p0 * wa);
            __m512i ql = _mm512_add_epi64(LD8Q(q0 + i0, kl), w0);
            __m512i qh = _mm512_add_epi64(LD8Q(q0 + i0 + 8, kh), w0);
            for (int64_t j = 1; j < c; j++) {
                const __m512 b = LD16(x0 + j * step + i0, km);
                acc = _mm512_add_ps(acc, b);
                const __mmask16 gt = _mm512_cmp_ps_mask(b, v, _CMP_GT_OQ);
                v = _mm512_mask_blend_ps(gt, v, b);
                const __m512i wj = _mm512_set1_epi64((p0 + j * d) * wa);
                const int64_t *qj = q0 + j * step + i0;
                ql = _mm512_mask_blend_epi64((__mmask8)gt, ql, _mm512_add_epi64(LD8Q(qj, kl), wj));
                qh = _mm512_mask_blend_epi64((__mmask8)(gt >> 8), qh, _mm512_add_epi64(LD8Q(qj + 8, kh), wj));
            }
            if (__builtin_expect(!HAS_NAN(acc, km), 1)) {
                ST16(yo + i0, km, v);
                ST8Q(qo + i0, kl, ql);
                ST8Q(qo + i0 + 8, kh, qh);
                continue;
            }
        }
        /* A NaN among the taps: the exact scan of the policy. */
        for (int64_t i = i0; i < i0 + m; i++) {
            float bv = x0[i];
            int64_t bc = withpos ? q0[i] + p0 * wa : 0;
            for (int64_t j = 1; j < c; j++) {
                const float b = x0[j * step + i];
                const int bt = ign ? SBETTER_IGN(b, bv) : SBETTER_PROP(b, bv);
                bv = bt ? b : bv;
                if (withpos) bc = bt ? q0[j * step + i] + (p0 + j * d) * wa : bc;
            }
            yo[i] = bv;
            if (withpos) qo[i] = bc;
        }
    }
}

T512 static inline __attribute__((always_inline)) void mh512_stage(
    const float *restrict x, float *restrict y, const int64_t *restrict px, int64_t *restrict py,
    int64_t outer, const ax_t *restrict A, int64_t inner, int64_t wa, const int withpos, const int ign) {
    const int64_t n = A->n, s = A->s, d = A->d, pb = A->pb, O = A->o;
    for (int64_t u = 0; u < outer; u++) {
        for (int64_t o = 0; o < O; o++) {
            const int64_t jl = A->jlo[o], jh = A->jhi[o];
            float *restrict yo = y + (u * O + o) * inner;
            int64_t *restrict qo = withpos ? py + (u * O + o) * inner : NULL;
            if (jl >= jh) { /* no element: filled at the end */
                memset(yo, 0, (size_t)inner * sizeof(float));
                if (withpos) memset(qo, 0, (size_t)inner * sizeof(int64_t));
                continue;
            }
            const int64_t p0 = o * s - pb + jl * d, cnt = jh - jl, step = d * inner;
            const float *restrict x0 = x + (u * n + p0) * inner;
            const int64_t *restrict q0 = withpos ? px + (u * n + p0) * inner : NULL;
            if (cnt == 2) mh512_row(x0, yo, q0, qo, inner, step, 2, cnt, p0, d, wa, withpos, ign);
            else if (cnt == 3) mh512_row(x0, yo, q0, qo, inner, step, 3, cnt, p0, d, wa, withpos, ign);
            else mh512_row(x0, yo, q0, qo, inner, step, 0, cnt, p0, d, wa, withpos, ign);
        }
    }
}

/* H stage of max pooling, float32: whole rows of `inner` elements. */
T512 static void mh_f32_512(const float *restrict x, float *restrict y, const int64_t *restrict px,
                            int64_t *restrict py, int64_t outer, const ax_t *restrict A,
                            int64_t inner, int64_t wa, int withpos, int ign) {
    if (!withpos) {
        if (!ign) mh512_stage(x, y, px, py, outer, A, inner, wa, 0, 0);
        else mh512_stage(x, y, px, py, outer, A, inner, wa, 0, 1);
    } else {
        if (!ign) mh512_stage(x, y, px, py, outer, A, inner, wa, 1, 0);
        else mh512_stage(x, y, px, py, outer, A, inner, wa, 1, 1);
    }
}

T512 static void maxsep_f32_512(const float *x, float *out, int64_t *pos, const geo_t *g,
                                const int64_t *w, float *t0, float *t1, int64_t *q0, int64_t *q1,
                                int64_t chunk, int ign) {
    const int r = g->r, withpos = pos != NULL;
    for (int64_t p = 0; p < g->nc; p += chunk) {
        if (poll_interrupt()) break;
        const int64_t np = (g->nc - p < chunk) ? g->nc - p : chunk;
        const float *src = x + p * g->plane_in;
        const int64_t *qsrc = NULL;
        for (int i = r - 1; i >= 0; i--) {
            float *dst = (i == 0) ? out + p * g->plane_out : ((i & 1) ? t0 : t1);
            int64_t *qdst = NULL;
            if (withpos) qdst = (i == 0) ? pos + p * g->plane_out : ((i & 1) ? q0 : q1);
            const int64_t outer = np * stage_outer(g, i);
            if (i == r - 1)
                mw_f32_512(src, dst, qdst, outer, &g->a[i], w[i], withpos, ign);
            else
                mh_f32_512(src, dst, qsrc, qdst, outer, &g->a[i], stage_inner(g, i), w[i], withpos, ign);
            src = dst;
            qsrc = qdst;
        }
    }
}

/* Rows of the W stage of average pooling, float32 input: interior windows in blocks of 16,
 * sums in double in tap order. S and K are constants in the specialised cases (K == 0: k). */
/* A border block of 16 windows (see edge_t): each lane starts from its first valid tap and
 * adds the later valid ones, in order. */
T512 static inline __attribute__((always_inline)) void aw512_edge(
    const float *restrict xr, double *restrict yr, const ax_t *restrict A, const edge_t *restrict e,
    __m512d zadd, const int64_t K) {
    const int64_t k = K ? K : A->k;
    const __m512 a = _mm512_loadu_ps(xr + e->base), b = _mm512_loadu_ps(xr + e->base + 16);
    __m512d al = _mm512_setzero_pd(), ah = _mm512_setzero_pd(); /* a window with no element: +0.0 */
    __mmask16 started = 0;
    for (int64_t j = 0; j < k; j++) {
        const __m512 t = _mm512_permutex2var_ps(a, _mm512_loadu_si512(e->idx[j]), b);
        const __m512d tl = _mm512_cvtps_pd(_mm512_castps512_ps256(t));
        const __m512d th = _mm512_cvtps_pd(_mm512_extractf32x8_ps(t, 1));
        const __mmask16 m = (__mmask16)e->valid[j];
        const __mmask16 first = (__mmask16)(m & ~started), more = (__mmask16)(m & started);
        al = _mm512_mask_mov_pd(al, (__mmask8)first, tl);
        ah = _mm512_mask_mov_pd(ah, (__mmask8)(first >> 8), th);
        al = _mm512_mask_add_pd(al, (__mmask8)more, al, tl);
        ah = _mm512_mask_add_pd(ah, (__mmask8)(more >> 8), ah, th);
        started = (__mmask16)(started | m);
    }
    _mm512_storeu_pd(yr + e->o0, _mm512_add_pd(al, zadd));
    _mm512_storeu_pd(yr + e->o0 + 8, _mm512_add_pd(ah, zadd));
}

T512 static inline __attribute__((always_inline)) void aw512_rows(
    const float *restrict x, double *restrict y, int64_t rows, const ax_t *restrict A,
    const int64_t S, const int64_t K) {
    const int64_t n = A->n, k = K ? K : A->k, d = A->d, pb = A->pb, O = A->o;
    const __m512d zadd = _mm512_set1_pd(A->zinit ? 0.0 : -0.0);
    const __m512i vS = _mm512_mullo_epi32(IOTA16, _mm512_set1_epi32((int)S));
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const edge_t *eL = A->edge[0], *eR = A->edge[1];
    const int useL = eL != NULL && eL->use, useR = eR != NULL && eR->use;
    const int64_t lo = useL ? 16 : A->lo, hi = useR ? O - 16 : A->hi;
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * n;
        double *restrict yr = y + r * O;
        if (useL) aw512_edge(xr, yr, A, eL, zadd, K);
        else if (lo > 0) aw_brow_f32(xr, yr, A, 0, lo);
        for (int64_t o0 = lo; o0 < hi; o0 += 16) {
            if (hi - o0 < 16 && hi - lo >= 16) o0 = hi - 16; /* overlap instead of masking */
            const int64_t m = hi - o0 < 16 ? hi - o0 : 16;
            const __mmask16 km = lanes16(m);
            __mmask16 ka = 0, kb = 0;
            if (S == 2) s2_masks(m, &ka, &kb);
            const float *p0 = xr + (o0 * S - pb);
            __m512 t = TAP16(p0, S, km, ka, kb, vS, even);
            __m512d al = _mm512_cvtps_pd(_mm512_castps512_ps256(t));
            __m512d ah = _mm512_cvtps_pd(_mm512_extractf32x8_ps(t, 1));
            for (int64_t j = 1; j < k; j++) {
                t = TAP16(p0 + j * d, S, km, ka, kb, vS, even);
                al = _mm512_add_pd(al, _mm512_cvtps_pd(_mm512_castps512_ps256(t)));
                ah = _mm512_add_pd(ah, _mm512_cvtps_pd(_mm512_extractf32x8_ps(t, 1)));
            }
            al = _mm512_add_pd(al, zadd);
            ah = _mm512_add_pd(ah, zadd);
            if (km == 0xFFFF) {
                _mm512_storeu_pd(yr + o0, al);
                _mm512_storeu_pd(yr + o0 + 8, ah);
            } else {
                _mm512_mask_storeu_pd(yr + o0, (__mmask8)km, al);
                _mm512_mask_storeu_pd(yr + o0 + 8, (__mmask8)(km >> 8), ah);
            }
        }
        if (useR) aw512_edge(xr, yr, A, eR, zadd, K);
        else if (hi < O) aw_brow_f32(xr, yr, A, hi, O);
    }
}

/* Columns of a block of short rows. B consecutive rows of n elements (n <= 16) are loaded as
 * n plain vectors of B lanes; column c (element c of each row) is gathered from them with
 * masked two-source permutes: lane i takes element i * n + c, which lies in the vector pair
 * (2t, 2t + 1), t = (i * n + c) / (2B). The plans are built once per call. */
#define PAIRS_MAX 10
typedef struct {
    int np;
    int t[PAIRS_MAX];
    int32_t idx[PAIRS_MAX][16];
    uint32_t k[PAIRS_MAX];
} colplan_t;

static void colplan_build(colplan_t *plan, int64_t n, int B) {
    for (int64_t c = 0; c < n; c++) {
        colplan_t *p = &plan[c];
        memset(p, 0, sizeof(*p));
        p->np = 0;
        for (int i = 0; i < B; i++) {
            const int64_t f = i * n + c;
            const int t = (int)(f / (2 * B));
            if (p->np == 0 || p->t[p->np - 1] != t) p->t[p->np++] = t;
            p->idx[p->np - 1][i] = (int32_t)(f % (2 * B));
            p->k[p->np - 1] |= 1u << i;
        }
    }
}

/* Column of 16 rows of floats; V holds n (+1 spare) vectors. */
T512 static inline __m512 col16(const __m512 *V, const colplan_t *p) {
    __m512 col = _mm512_permutex2var_ps(V[2 * p->t[0]], _mm512_loadu_si512(p->idx[0]), V[2 * p->t[0] + 1]);
    for (int s = 1; s < p->np; s++)
        col = _mm512_mask_mov_ps(col, (__mmask16)p->k[s],
                                 _mm512_permutex2var_ps(V[2 * p->t[s]], _mm512_loadu_si512(p->idx[s]), V[2 * p->t[s] + 1]));
    return col;
}

/* Column of 8 rows of doubles (index plans built with B = 8, widened to 64-bit lanes). */
T512 static inline __m512d col8(const __m512d *V, const colplan_t *p) {
    __m512d col = _mm512_permutexvar_pd(_mm512_setzero_si512(), V[0]);
    for (int s = 0; s < p->np; s++) {
        const __m512i idx = _mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)p->idx[s]));
        const __m512d v = _mm512_permutex2var_pd(V[2 * p->t[s]], idx, V[2 * p->t[s] + 1]);
        col = s == 0 ? v : _mm512_mask_mov_pd(col, (__mmask8)p->k[s], v);
    }
    return col;
}

/* W stage of average pooling, float32 input, double sums. */
T512 __attribute__((noinline)) static void aw_f32_512(const float *restrict x, double *restrict y, int64_t rows,
                            const ax_t *restrict A) {
    const int64_t n = A->n, k = A->k, s = A->s, d = A->d, pb = A->pb, O = A->o;
    const int64_t lo = A->lo, hi = A->hi;
    const __m512d zadd = _mm512_set1_pd(A->zinit ? 0.0 : -0.0);
    if (hi - lo < 8 && rows >= 16 && 16 * n < ((int64_t)1 << 30) && 16 * O < ((int64_t)1 << 30)) {
        /* Few windows per row (e.g. global pooling): vectorise across 16 rows. */
        const __m512i vrow = _mm512_mullo_epi32(IOTA16, _mm512_set1_epi32((int)n));
        const __m256i vout = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                _mm256_set1_epi32((int)O));
        int64_t r0 = 0;
        if (n <= 16) {
            /* Rows of at most 16 elements: plain loads of 16 rows and column permutes. */
            colplan_t plan[16];
            colplan_build(plan, n, 16);
            __m512 V[17];
            V[n] = _mm512_setzero_ps();
            for (; r0 + 16 <= rows; r0 += 16) {
                for (int64_t q = 0; q < n; q++) V[q] = _mm512_loadu_ps(x + r0 * n + 16 * q);
                for (int64_t o = lo; o < hi; o++) {
                    const int64_t c0 = o * s - pb;
                    __m512 t = col16(V, &plan[c0]);
                    __m512d al = _mm512_cvtps_pd(_mm512_castps512_ps256(t));
                    __m512d ah = _mm512_cvtps_pd(_mm512_extractf32x8_ps(t, 1));
                    for (int64_t j = 1; j < k; j++) {
                        t = col16(V, &plan[c0 + j * d]);
                        al = _mm512_add_pd(al, _mm512_cvtps_pd(_mm512_castps512_ps256(t)));
                        ah = _mm512_add_pd(ah, _mm512_cvtps_pd(_mm512_extractf32x8_ps(t, 1)));
                    }
                    al = _mm512_add_pd(al, zadd);
                    ah = _mm512_add_pd(ah, zadd);
                    double *yo = y + r0 * O + o;
                    if (O == 1) {
                        _mm512_storeu_pd(yo, al);
                        _mm512_storeu_pd(yo + 8, ah);
                    } else {
                        _mm512_i32scatter_pd(yo, vout, al, 8);
                        _mm512_i32scatter_pd(yo + 8 * O, vout, ah, 8);
                    }
                }
            }
        }
        for (; r0 < rows; r0 += 16) {
            const int64_t m = rows - r0 < 16 ? rows - r0 : 16;
            const __mmask16 km = lanes16(m);
            const __mmask8 kl = (__mmask8)km, kh = (__mmask8)(km >> 8);
            for (int64_t o = lo; o < hi; o++) {
                const float *p0 = x + r0 * n + (o * s - pb);
                __m512 t = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), km, vrow, p0, 4);
                __m512d al = _mm512_cvtps_pd(_mm512_castps512_ps256(t));
                __m512d ah = _mm512_cvtps_pd(_mm512_extractf32x8_ps(t, 1));
                for (int64_t j = 1; j < k; j++) {
                    t = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), km, vrow, p0 + j * d, 4);
                    al = _mm512_add_pd(al, _mm512_cvtps_pd(_mm512_castps512_ps256(t)));
                    ah = _mm512_add_pd(ah, _mm512_cvtps_pd(_mm512_extractf32x8_ps(t, 1)));
                }
                al = _mm512_add_pd(al, zadd);
                ah = _mm512_add_pd(ah, zadd);
                double *yo = y + r0 * O + o;
                if (O == 1) {
                    _mm512_mask_storeu_pd(yo, kl, al);
                    _mm512_mask_storeu_pd(yo + 8, kh, ah);
                } else {
                    _mm512_mask_i32scatter_pd(yo, kl, vout, al, 8);
                    _mm512_mask_i32scatter_pd(yo + 8 * O, kh, vout, ah, 8);
                }
            }
        }
        if (lo > 0 || hi < O)
            for (int64_t r = 0; r < rows; r++) {
                aw_brow_f32(x + r * n, y + r * O, A, 0, lo);
                aw_brow_f32(x + r * n, y + r * O, A, hi, O);
            }
        return;
    }
#define AW512_CASES                                                                              \
    if (s == 1 && k == 2) aw512_rows(x, y, rows, A, 1, 2);                                       \
    else if (s == 1 && k == 3) aw512_rows(x, y, rows, A, 1, 3);                                  \
    else if (s == 1) aw512_rows(x, y, rows, A, 1, 0);                                            \
    else if (s == 2 && k == 2) aw512_rows(x, y, rows, A, 2, 2);                                  \
    else if (s == 2 && k == 3) aw512_rows(x, y, rows, A, 2, 3);                                  \
    else if (s == 2) aw512_rows(x, y, rows, A, 2, 0);                                            \
    else aw512_rows(x, y, rows, A, s, 0);
    AW512_CASES
}

/* H stage of average pooling with inner == 1 (e.g. global pooling): 8 rows at a time. */
T512 __attribute__((noinline)) static void ah1_512(const double *restrict x, double *restrict y, int64_t outer,
                         const ax_t *restrict A) {
    const int64_t n = A->n, s = A->s, d = A->d, pb = A->pb, O = A->o;
    const __m512d zadd = _mm512_set1_pd(A->zinit ? 0.0 : -0.0);
    const __m256i iota8 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i vrow = _mm256_mullo_epi32(iota8, _mm256_set1_epi32((int)n));
    const __m256i vout = _mm256_mullo_epi32(iota8, _mm256_set1_epi32((int)O));
    int64_t u0 = 0;
    if (n <= 16) {
        /* Rows of at most 16 doubles: plain loads of 8 rows and column permutes. */
        colplan_t plan[16];
        colplan_build(plan, n, 8);
        __m512d V[17];
        V[n] = _mm512_setzero_pd();
        for (; u0 + 8 <= outer; u0 += 8) {
            for (int64_t q = 0; q < n; q++) V[q] = _mm512_loadu_pd(x + u0 * n + 8 * q);
            for (int64_t o = 0; o < O; o++) {
                const int64_t jl = A->jlo[o], jh = A->jhi[o];
                __m512d acc = _mm512_setzero_pd();
                if (jl < jh) {
                    const int64_t c0 = o * s - pb + jl * d;
                    acc = col8(V, &plan[c0]);
                    for (int64_t j = 1; j < jh - jl; j++) acc = _mm512_add_pd(acc, col8(V, &plan[c0 + j * d]));
                    acc = _mm512_add_pd(acc, zadd);
                }
                if (O == 1) _mm512_storeu_pd(y + u0, acc);
                else _mm512_i32scatter_pd(y + u0 * O + o, vout, acc, 8);
            }
        }
    }
    for (; u0 < outer; u0 += 8) {
        const int64_t m = outer - u0 < 8 ? outer - u0 : 8;
        const __mmask8 km = (__mmask8)lanes16(m);
        for (int64_t o = 0; o < O; o++) {
            const int64_t jl = A->jlo[o], jh = A->jhi[o];
            __m512d acc = _mm512_setzero_pd();
            if (jl < jh) {
                const double *p0 = x + u0 * n + (o * s - pb + jl * d);
                acc = _mm512_mask_i32gather_pd(_mm512_setzero_pd(), km, vrow, p0, 8);
                for (int64_t j = 1; j < jh - jl; j++)
                    acc = _mm512_add_pd(acc, _mm512_mask_i32gather_pd(_mm512_setzero_pd(), km, vrow, p0 + j * d, 8));
                acc = _mm512_add_pd(acc, zadd);
            }
            if (O == 1) _mm512_mask_storeu_pd(y + u0, km, acc);
            else _mm512_mask_i32scatter_pd(y + u0 * O + o, km, vout, acc, 8);
        }
    }
}

T512 __attribute__((noinline)) static void avg_f32_512(const float *x, float *out, const geo_t *g, const double *dtab,
                             const double *rtab, int zeros, double efill, double *t0, double *t1, int64_t chunk) {
    const int r = g->r;
    const int64_t po = g->plane_out;
    for (int64_t p = 0; p < g->nc; p += chunk) {
        if (poll_interrupt()) break;
        const int64_t np = (g->nc - p < chunk) ? g->nc - p : chunk;
        const double *src = NULL;
        double *dst = NULL;
        for (int i = r - 1; i >= 0; i--) {
            dst = (i & 1) ? t0 : t1;
            const int64_t outer = np * stage_outer(g, i), inner = stage_inner(g, i);
            if (i == r - 1)
                aw_f32_512(x + p * g->plane_in, dst, outer, &g->a[i]);
            else if (inner == 1 && outer >= 8 && 8 * g->a[i].n < ((int64_t)1 << 30) &&
                     8 * g->a[i].o < ((int64_t)1 << 30))
                ah1_512(src, dst, outer, &g->a[i]);
            else
                ah_f32(src, dst, outer, &g->a[i], inner);
            src = dst;
        }
        /* "The output of each pooling window is divided by the number of elements". */
        float *restrict yo = out + p * po;
        const double *restrict sum = dst;
        for (int64_t q = 0; q < np; q++) {
            for (int64_t i0 = 0; i0 < po; i0 += 8) {
                const int64_t m = po - i0 < 8 ? po - i0 : 8;
                const __mmask8 km = (__mmask8)lanes16(m);
                const __m256 v = _mm512_cvtpd_ps(div_pd_exact(LD8D(sum + q * po + i0, km), LD8D(dtab + i0, km),
                                                              LD8D(rtab + i0, km)));
                if (km == 0xFF) _mm256_storeu_ps(yo + q * po + i0, v);
                else _mm256_mask_storeu_ps(yo + q * po + i0, km, v);
            }
            if (zeros)
                for (int64_t i = 0; i < po; i++)
                    if (dtab[i] == 0.0) yo[q * po + i] = (float)efill;
        }
    }
}
/* ------------------------------------------------------------------------------------------ */
/* Two spatial axes, fused (float32, AVX-512). Each input row is reduced along W once, into a  */
/* ring of (k_h - 1) d_h + 1 rows that stays in L1; each output row then combines its ring     */
/* rows in tap order and is finished at once (max: stored; average: divided and rounded).     */
/* The same operations in the same order as the staged path, without its plane-sized          */
/* intermediates.                                                                              */


/* Ring slots of the tap rows of output row oh; rows not yet reduced are reduced by REDUCE. */
#define RING_ROWS(REDUCE)                                                                       \
    for (int64_t j = 0; j < cnt; j++) {                                                         \
        const int64_t h = oh * H->s - H->pb + (jl + j) * H->d;                                  \
        const int64_t slot = h & (R - 1);                                                       \
        if (tags[slot] != h) {                                                                  \
            REDUCE;                                                                             \
            tags[slot] = h;                                                                     \
        }                                                                                       \
        hrow[j] = h;                                                                            \
        sl[j] = slot;                                                                           \
    }

T512 static inline __attribute__((always_inline)) void avg2d_512_body(
    const float *restrict x, float *restrict out, const geo_t *g, const double *restrict dtab,
    const double *restrict rtab, int zeros, double efill, double *restrict ring, int64_t *restrict tags,
    int64_t *restrict hrow, int64_t *restrict sl, const int64_t S, const int64_t K) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, OH = H->o;
    const int64_t R = ring_rows(H), RS = (OW + 7) & ~(int64_t)7;
    const __m512d zh = _mm512_set1_pd(H->zinit ? 0.0 : -0.0);
    for (int64_t p = 0; p < g->nc; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * g->plane_in;
        float *op = out + p * g->plane_out;
        for (int64_t r = 0; r < R; r++) tags[r] = -1;
        for (int64_t oh = 0; oh < OH; oh++) {
            const int64_t jl = H->jlo[oh], cnt = H->jhi[oh] > jl ? H->jhi[oh] - jl : 0;
            float *restrict yo = op + oh * OW;
            const double *restrict dv = dtab + oh * OW;
            const double *restrict rv = rtab + oh * OW;
            RING_ROWS(aw512_rows(xp + h * NW, ring + slot * RS, 1, W, S, K))
            const double *r0 = ring + sl[0] * RS, *r1 = ring + sl[cnt > 1] * RS,
                         *r2 = ring + sl[cnt > 2 ? 2 : 0] * RS;
/* Sum the ring rows of one block (in tap order), then divide and round. */
#define AVG2D_BLOCKS(SUM)                                                                        \
    for (int64_t o0 = 0; o0 < OW; o0 += 8) {                                                     \
        if (OW - o0 < 8 && OW >= 8) o0 = OW - 8; /* overlap instead of masking */               \
        const int64_t m = OW - o0 < 8 ? OW - o0 : 8;                                             \
        const __mmask8 km = (__mmask8)lanes16(m);                                                \
        __m512d acc;                                                                             \
        SUM;                                                                                     \
        /* "The output of each pooling window is divided by the number of elements". */          \
        const __m256 q = _mm512_cvtpd_ps(div_pd_exact(acc, LD8D(dv + o0, km), LD8D(rv + o0, km))); \
        if (km == 0xFF) _mm256_storeu_ps(yo + o0, q);                                            \
        else _mm256_mask_storeu_ps(yo + o0, km, q);                                              \
    }
            if (cnt == 3) {
                AVG2D_BLOCKS(acc = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(LD8D(r0 + o0, km), LD8D(r1 + o0, km)),
                                                               LD8D(r2 + o0, km)), zh))
            } else if (cnt == 2) {
                AVG2D_BLOCKS(acc = _mm512_add_pd(_mm512_add_pd(LD8D(r0 + o0, km), LD8D(r1 + o0, km)), zh))
            } else if (cnt == 0) {
                AVG2D_BLOCKS(acc = _mm512_setzero_pd()) /* a window wholly in padding sums to +0.0 */
            } else {
                AVG2D_BLOCKS(acc = LD8D(r0 + o0, km);
                             for (int64_t j = 1; j < cnt; j++) acc = _mm512_add_pd(acc, LD8D(ring + sl[j] * RS + o0, km));
                             acc = _mm512_add_pd(acc, zh))
            }
#undef AVG2D_BLOCKS
            if (zeros)
                for (int64_t o = 0; o < OW; o++)
                    if (dv[o] == 0.0) yo[o] = (float)efill;
        }
    }
}

T512 static void avg2d_512(const float *x, float *out, const geo_t *g, const double *dtab, const double *rtab,
                           int zeros, double efill, double *ring, int64_t *tags, int64_t *hrow, int64_t *sl) {
    const int64_t s = g->a[1].s, k = g->a[1].k;
#define AVG2D(S, K) avg2d_512_body(x, out, g, dtab, rtab, zeros, efill, ring, tags, hrow, sl, S, K)
    if (s == 1 && k == 2) AVG2D(1, 2);
    else if (s == 1 && k == 3) AVG2D(1, 3);
    else if (s == 1) AVG2D(1, 0);
    else if (s == 2 && k == 2) AVG2D(2, 2);
    else if (s == 2 && k == 3) AVG2D(2, 3);
    else if (s == 2) AVG2D(2, 0);
    else AVG2D(s, 0);
#undef AVG2D
}

/* H combine of one output row of a fused max: CNT rows from the ring (CNT constant, 0: cnt). */
T512 static inline __attribute__((always_inline)) void max2d_512_row(
    const float *restrict ring, const int64_t *restrict qring, int64_t RS, const int64_t *restrict sl,
    const int64_t *restrict hrow, float *restrict yo, int64_t *restrict qo, int64_t OW,
    const int64_t CNT, int64_t cnt, int64_t wh, const int withpos, const int ign, const int NC) {
    const int64_t c = CNT ? CNT : cnt;
    /* Row pointers hoisted out of the block loop (at most 8 rows kept in registers; more are
     * read through the slot table). */
    const float *rp[8];
    const int64_t *qp[8];
    int64_t wj[8];
    const int64_t cr = c < 8 ? c : 8;
    for (int64_t j = 0; j < cr; j++) {
        rp[j] = ring + sl[j] * RS;
        qp[j] = withpos ? qring + sl[j] * RS : NULL;
        wj[j] = hrow[j] * wh;
    }
    for (int64_t i0 = 0; i0 < OW; i0 += 16) {
        if (OW - i0 < 16 && OW >= 16) i0 = OW - 16; /* overlap instead of masking */
        const int64_t m = OW - i0 < 16 ? OW - i0 : 16;
        const __mmask16 km = lanes16(m);
        const __mmask8 kl = (__mmask8)km, kh = (__mmask8)(km >> 8);
        __m512 v = LD16(rp[0] + i0, km), acc = v;
        if (!withpos) {
            for (int64_t j = 1; j < c; j++) {
                const __m512 b = LD16((j < 8 ? rp[j] : ring + sl[j] * RS) + i0, km);
                if (NC) acc = _mm512_add_ps(acc, b);
                v = _mm512_max_ps(b, v); /* b > v ? b : v */
            }
            if (!NC || __builtin_expect(!HAS_NAN(acc, km), 1)) {
                ST16(yo + i0, km, v);
                continue;
            }
        } else {
            const __m512i w0 = _mm512_set1_epi64(wj[0]);
            __m512i ql = _mm512_add_epi64(LD8Q(qp[0] + i0, kl), w0);
            __m512i qh = _mm512_add_epi64(LD8Q(qp[0] + i0 + 8, kh), w0);
            for (int64_t j = 1; j < c; j++) {
                const float *r = j < 8 ? rp[j] : ring + sl[j] * RS;
                const int64_t *q = j < 8 ? qp[j] : qring + sl[j] * RS;
                const __m512 b = LD16(r + i0, km);
                if (NC) acc = _mm512_add_ps(acc, b);
                const __mmask16 gt = _mm512_cmp_ps_mask(b, v, _CMP_GT_OQ);
                v = _mm512_mask_blend_ps(gt, v, b);
                const __m512i wv = _mm512_set1_epi64(j < 8 ? wj[j] : hrow[j] * wh);
                ql = _mm512_mask_blend_epi64((__mmask8)gt, ql, _mm512_add_epi64(LD8Q(q + i0, kl), wv));
                qh = _mm512_mask_blend_epi64((__mmask8)(gt >> 8), qh, _mm512_add_epi64(LD8Q(q + i0 + 8, kh), wv));
            }
            if (!NC || __builtin_expect(!HAS_NAN(acc, km), 1)) {
                ST16(yo + i0, km, v);
                ST8Q(qo + i0, kl, ql);
                ST8Q(qo + i0 + 8, kh, qh);
                continue;
            }
        }
        /* A NaN among the taps: the exact scan of the policy. */
        for (int64_t i = i0; i < i0 + m; i++) {
            float bv = ring[sl[0] * RS + i];
            int64_t bc = withpos ? qring[sl[0] * RS + i] + hrow[0] * wh : 0;
            for (int64_t j = 1; j < c; j++) {
                const float b = ring[sl[j] * RS + i];
                const int bt = ign ? SBETTER_IGN(b, bv) : SBETTER_PROP(b, bv);
                bv = bt ? b : bv;
                if (withpos) bc = bt ? qring[sl[j] * RS + i] + hrow[j] * wh : bc;
            }
            yo[i] = bv;
            if (withpos) qo[i] = bc;
        }
    }
}

T512 static inline __attribute__((always_inline)) void max2d_512_body(
    const float *restrict x, float *restrict out, int64_t *restrict pos, const geo_t *g,
    const int64_t *w, float *restrict ring, int64_t *restrict qring, int64_t *restrict tags,
    int64_t *restrict hrow, int64_t *restrict sl, const int withpos, const int ign, const int64_t S,
    const int64_t K) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, OH = H->o;
    const int64_t R = ring_rows(H), RS = (OW + 15) & ~(int64_t)15;
    int64_t *restrict snan = tags + R; /* per slot: its row holds a NaN */
    for (int64_t p = 0; p < g->nc; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * g->plane_in;
        for (int64_t r = 0; r < R; r++) tags[r] = -1;
        for (int64_t oh = 0; oh < OH; oh++) {
            const int64_t jl = H->jlo[oh], cnt = H->jhi[oh] > jl ? H->jhi[oh] - jl : 0;
            float *restrict yo = out + p * g->plane_out + oh * OW;
            int64_t *restrict qo = withpos ? pos + p * g->plane_out + oh * OW : NULL;
            if (cnt == 0) { /* no element: filled at the end */
                memset(yo, 0, (size_t)OW * sizeof(float));
                if (withpos) memset(qo, 0, (size_t)OW * sizeof(int64_t));
                continue;
            }
            int nc = 0; /* a NaN in one of the rows: the H combine watches for it */
            for (int64_t j = 0; j < cnt; j++) {
                const int64_t h = oh * H->s - H->pb + (jl + j) * H->d;
                const int64_t slot = h & (R - 1);
                if (tags[slot] != h) {
                    snan[slot] = mw512_rows(xp + h * NW, ring + slot * RS, withpos ? qring + slot * RS : NULL, 1, W,
                                            w[1], withpos, ign, S, K);
                    tags[slot] = h;
                }
                nc |= (int)snan[slot];
                hrow[j] = h;
                sl[j] = slot;
            }
#define MAX2D_ROW(C, NCV) max2d_512_row(ring, qring, RS, sl, hrow, yo, qo, OW, C, cnt, w[0], withpos, ign, NCV)
            if (nc) {
                if (cnt == 2) MAX2D_ROW(2, 1);
                else if (cnt == 3) MAX2D_ROW(3, 1);
                else MAX2D_ROW(0, 1);
            } else {
                if (cnt == 2) MAX2D_ROW(2, 0);
                else if (cnt == 3) MAX2D_ROW(3, 0);
                else MAX2D_ROW(0, 0);
            }
#undef MAX2D_ROW
        }
    }
}

T512 static void max2d_512(const float *x, float *out, int64_t *pos, const geo_t *g, const int64_t *w,
                           float *ring, int64_t *qring, int64_t *tags, int64_t *hrow, int64_t *sl, int ign) {
    const int64_t s = g->a[1].s, k = g->a[1].k;
#define MAX2D(WP, IG, S, K) max2d_512_body(x, out, pos, g, w, ring, qring, tags, hrow, sl, WP, IG, S, K)
#define MAX2D_CASES(WP, IG)                                                                     \
    if (s == 1 && k == 2) MAX2D(WP, IG, 1, 2);                                                  \
    else if (s == 1 && k == 3) MAX2D(WP, IG, 1, 3);                                             \
    else if (s == 1) MAX2D(WP, IG, 1, 0);                                                       \
    else if (s == 2 && k == 2) MAX2D(WP, IG, 2, 2);                                             \
    else if (s == 2 && k == 3) MAX2D(WP, IG, 2, 3);                                             \
    else if (s == 2) MAX2D(WP, IG, 2, 0);                                                       \
    else if (s == 4 && k == 4) MAX2D(WP, IG, 4, 4);                                             \
    else MAX2D(WP, IG, s, 0);
    if (pos == NULL) {
        if (!ign) { MAX2D_CASES(0, 0) } else { MAX2D_CASES(0, 1) }
    } else {
        if (!ign) { MAX2D_CASES(1, 0) } else { MAX2D_CASES(1, 1) }
    }
#undef MAX2D_CASES
#undef MAX2D
}

#else
#define POOLCHECK_AVX512 0
static int cpu_has_avx512(void) { return 0; }
#endif

/* Set at import: use the AVX-512 kernels (the CPU has them and the build has them). */
static int use_avx512 = 0;

/* ------------------------------------------------------------------------------------------ */
/* Index output                                                                               */

/* index = ((n * C + c) * S + pos) % modulus, or empty_index for a window with no element;
 * stored as int32 (wrapping, like NumPy's astype) or int64. */
HOT static void finish_indices(const int64_t *pos, void *idx, int idx64, const geo_t *g,
                               int64_t modulus, int64_t empty_index, const uint8_t *empty) {
    const int64_t po = g->plane_out, S = g->plane_in;
    for (int64_t p = 0; p < g->nc; p++) {
        if (poll_interrupt()) break;
        const int64_t *restrict q = pos + p * po;
        /* (p * S) % modulus without overflow: p * S < N * C * S fits in int64. */
        const int64_t base = (p * S) % modulus;
        const int fast = S <= modulus;
        if (idx64) {
            int64_t *restrict o = (int64_t *)idx + p * po;
            if (fast) {
                for (int64_t i = 0; i < po; i++) {
                    int64_t v = base + q[i];
                    o[i] = v >= modulus ? v - modulus : v;
                }
            } else {
                for (int64_t i = 0; i < po; i++) o[i] = (base + q[i]) % modulus;
            }
            if (empty)
                for (int64_t i = 0; i < po; i++)
                    if (empty[i]) o[i] = empty_index;
        } else {
            int32_t *restrict o = (int32_t *)idx + p * po;
            if (fast) {
                for (int64_t i = 0; i < po; i++) {
                    int64_t v = base + q[i];
                    o[i] = (int32_t)(uint32_t)(uint64_t)(v >= modulus ? v - modulus : v);
                }
            } else {
                for (int64_t i = 0; i < po; i++)
                    o[i] = (int32_t)(uint32_t)(uint64_t)((base + q[i]) % modulus);
            }
            if (empty)
                for (int64_t i = 0; i < po; i++)
                    if (empty[i]) o[i] = (int32_t)(uint32_t)(uint64_t)empty_index;
        }
    }
}

/* Output-plane mask of windows with no valid element (NULL when there are none). */
static uint8_t *empty_mask(const geo_t *g, int *err) {
    *err = 0;
    int any = 0;
    for (int i = 0; i < g->r; i++) any |= g->a[i].has_empty;
    if (!any) return NULL;
    uint8_t *m = (uint8_t *)malloc((size_t)g->plane_out);
    if (!m) {
        *err = 1;
        return NULL;
    }
    int64_t o[3] = {0, 0, 0};
    for (int64_t i = 0; i < g->plane_out; i++) {
        uint8_t e = 0;
        for (int a = 0; a < g->r; a++) e |= (uint8_t)(g->a[a].jlo[o[a]] >= g->a[a].jhi[o[a]]);
        m[i] = e;
        for (int a = g->r - 1; a >= 0; a--) {
            if (++o[a] < g->a[a].o) break;
            o[a] = 0;
        }
    }
    return m;
}

static void fill_empty(char *out, int64_t itemsize, const geo_t *g, const uint8_t *empty,
                       const char *fill) {
    for (int64_t p = 0; p < g->nc; p++)
        for (int64_t i = 0; i < g->plane_out; i++)
            if (empty[i]) memcpy(out + (p * g->plane_out + i) * itemsize, fill, (size_t)itemsize);
}

/* ------------------------------------------------------------------------------------------ */
/* Python entry points                                                                        */

enum { T_F32, T_F64, T_I8, T_U8, T_I16, T_U16, T_I32, T_U32, T_I64, T_U64, T_COUNT };
static const int64_t ITEMSIZE[T_COUNT] = {4, 8, 1, 1, 2, 2, 4, 4, 8, 8};
enum { NAN_PROPAGATE, NAN_IGNORE, NAN_FIRST };

/* Largest magnitude of any geometry value (the spec layer's MAX_EXTENT). */
#define GEO_MAX ((int64_t)2147483647)

/* geometry tuple: (nc, n0, k0, s0, d0, pb0, pe0, o0, n1, ...) */
static int parse_geo(PyObject *tup, geo_t *g) {
    memset(g, 0, sizeof(*g));
    if (!PyTuple_Check(tup)) {
        PyErr_SetString(PyExc_TypeError, "geometry must be a tuple");
        return -1;
    }
    Py_ssize_t len = PyTuple_GET_SIZE(tup);
    if (len < 8 || (len - 1) % 7 != 0 || (len - 1) / 7 > 3) {
        PyErr_SetString(PyExc_ValueError, "geometry tuple must hold nc and 7 values per axis (1-3 axes)");
        return -1;
    }
    int64_t v[22];
    for (Py_ssize_t i = 0; i < len; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tup, i));
        if (v[i] == -1 && PyErr_Occurred()) return -1;
    }
    g->r = (int)((len - 1) / 7);
    g->nc = v[0];
    if (g->nc < 0 || g->nc > GEO_MAX) goto bad;
    int64_t plane_in = 1, plane_out = 1, tmp;
    for (int i = 0; i < g->r; i++) {
        ax_t *a = &g->a[i];
        const int64_t *q = v + 1 + 7 * i;
        a->n = q[0]; a->k = q[1]; a->s = q[2]; a->d = q[3]; a->pb = q[4]; a->pe = q[5]; a->o = q[6];
        /* Defence in depth (the spec layer refuses these first): every value within +-(2^31 - 1),
         * so that every index expression below (o * s - pb + j * d, products of two values plus a
         * third) stays far below 2^63. Pads may be negative (ONNX same_* with a stride larger
         * than the dilated kernel: the windows start inside the input). */
        if (a->n < 1 || a->k < 1 || a->s < 1 || a->d < 1 || a->o < 1) goto bad;
        if (a->n > GEO_MAX || a->k > GEO_MAX || a->s > GEO_MAX || a->d > GEO_MAX || a->o > GEO_MAX ||
            a->pb > GEO_MAX || a->pe > GEO_MAX || a->pb < -GEO_MAX || a->pe < -GEO_MAX)
            goto bad;
        /* The dilated kernel and every window must fit the positions [-pb, n + pe + overhang). */
        if ((a->k - 1) * a->d + 1 > GEO_MAX || (a->o - 1) * a->s > GEO_MAX) goto bad;
        if (__builtin_mul_overflow(plane_in, a->n, &tmp)) goto bad;
        plane_in = tmp;
        if (__builtin_mul_overflow(plane_out, a->o, &tmp)) goto bad;
        plane_out = tmp;
    }
    /* Buffers are addressed with int64 offsets: nc * plane (times 8 bytes) must not overflow. */
    if (__builtin_mul_overflow(g->nc, plane_in, &tmp) || __builtin_mul_overflow(tmp, (int64_t)8, &tmp)) goto bad;
    if (__builtin_mul_overflow(g->nc, plane_out, &tmp) || __builtin_mul_overflow(tmp, (int64_t)8, &tmp)) goto bad;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError,
                    "invalid geometry values (each within 2^31 - 1, buffer sizes within 2^63 bytes)");
    return -1;
}

static int check_buffer(Py_buffer *b, int64_t count, int64_t itemsize, const char *name) {
    if (b->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %lld bytes, got %lld", name,
                     (long long)(count * itemsize), (long long)b->len);
        return -1;
    }
    return 0;
}

/* Flattening weights of the spatial axes ("C" row-major or "F" column-major). */
static void weights(const geo_t *g, int order_f, int64_t *w) {
    int64_t acc = 1;
    if (order_f) {
        for (int i = 0; i < g->r; i++) {
            w[i] = acc;
            acc *= g->a[i].n;
        }
    } else {
        for (int i = g->r - 1; i >= 0; i--) {
            w[i] = acc;
            acc *= g->a[i].n;
        }
    }
}

#define DISPATCH_SEP(SUF, T)                                                                   \
    maxsep_##SUF((const T *)xb.buf, (T *)ob.buf, pos, &g, w, (T *)t0, (T *)t1, q0, q1, chunk)

/* max_pool(x, out, indices_or_None, geometry, type_code, nan_mode, fill_bytes, empty_index,
 *          order_f, modulus) */
static PyObject *py_max_pool(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer xb = {0}, ob = {0}, ib = {0}, fb = {0};
    PyObject *idx_obj, *geo_obj;
    int tcode, nan_mode, order_f;
    long long empty_index, modulus;
    geo_t g;
    memset(&g, 0, sizeof(g));
    void *t0 = NULL, *t1 = NULL;
    int64_t *q0 = NULL, *q1 = NULL, *pos = NULL;
    uint8_t *empty = NULL;
    PyObject *result = NULL;
    int have_ib = 0;
    if (!PyArg_ParseTuple(args, "y*w*OOiiy*LiL", &xb, &ob, &idx_obj, &geo_obj, &tcode, &nan_mode,
                          &fb, &empty_index, &order_f, &modulus))
        return NULL;
    if (parse_geo(geo_obj, &g) < 0) goto done;
    if (tcode < 0 || tcode >= T_COUNT || nan_mode < 0 || nan_mode > 2) {
        PyErr_SetString(PyExc_ValueError, "unknown type code or NaN mode");
        goto done;
    }
    if (modulus < 1) {
        PyErr_SetString(PyExc_ValueError, "modulus must be >= 1");
        goto done;
    }
    const int64_t isz = ITEMSIZE[tcode];
    if (fb.len != isz) {
        PyErr_SetString(PyExc_ValueError, "fill must hold one element of the input type");
        goto done;
    }
    int idx64 = 0;
    if (idx_obj != Py_None) {
        if (PyObject_GetBuffer(idx_obj, &ib, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
        have_ib = 1;
        if (ib.itemsize != 4 && ib.itemsize != 8) {
            PyErr_SetString(PyExc_ValueError, "indices must be int32 or int64");
            goto done;
        }
        idx64 = ib.itemsize == 8;
    }
    if (geo_prepare(&g) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (check_buffer(&xb, g.nc * g.plane_in, isz, "input") < 0) goto done;
    if (check_buffer(&ob, g.nc * g.plane_out, isz, "output") < 0) goto done;
    if (have_ib && check_buffer(&ib, g.nc * g.plane_out, ib.itemsize, "indices") < 0) goto done;
    if (g.nc == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    int err = 0;
    empty = empty_mask(&g, &err);
    if (err) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t w[3] = {0, 0, 0};
    weights(&g, order_f, w);
    const int direct = nan_mode == NAN_FIRST && (tcode == T_F32 || tcode == T_F64);
    const int withpos = have_ib;
    int64_t chunk = 1;
    if (withpos || direct) {
        pos = (int64_t *)scratch_get(S_POS, (size_t)(g.nc * g.plane_out) * sizeof(int64_t));
        if (!pos) {
            PyErr_NoMemory();
            goto done;
        }
    }
    /* Two spatial axes with rows of at least 16 windows: the fused ring-buffer kernel. */
    const int fused = POOLCHECK_AVX512 && use_avx512 && !direct && tcode == T_F32 && g.r == 2 &&
                      g.a[1].o >= 16 && geo_small(&g);
    void *ring = NULL;
    int64_t *qring = NULL, *tags = NULL, *hrow = NULL, *sl = NULL;
    if (fused) {
        const int64_t R = ring_rows(&g.a[0]), RS = (g.a[1].o + 15) & ~(int64_t)15;
        ring = scratch_get(S_RING, (size_t)(R * RS) * sizeof(float));
        if (withpos) qring = (int64_t *)scratch_get(S_QRING, (size_t)(R * RS) * sizeof(int64_t));
        tags = g_scratch_i64(2 * R);
        hrow = g_scratch_i64(g.a[0].k);
        sl = g_scratch_i64(g.a[0].k);
        if (!ring || (withpos && !qring) || !tags || !hrow || !sl) {
            free(tags);
            free(hrow);
            free(sl);
            PyErr_NoMemory();
            goto done;
        }
    }
    if (!direct && !fused) {
        chunk = chunk_planes(&g, isz + (withpos ? 8 : 0));
        int64_t tsz = stage_max(&g) * chunk;
        t0 = scratch_get(S_T0, (size_t)(tsz * isz));
        t1 = scratch_get(S_T1, (size_t)(tsz * isz));
        if (withpos) {
            q0 = (int64_t *)scratch_get(S_Q0, (size_t)tsz * sizeof(int64_t));
            q1 = (int64_t *)scratch_get(S_Q1, (size_t)tsz * sizeof(int64_t));
        }
        if (!t0 || !t1 || (withpos && (!q0 || !q1))) {
            PyErr_NoMemory();
            goto done;
        }
    }
    tls_interrupted = 0;
    Py_BEGIN_ALLOW_THREADS
    if (direct) {
        if (tcode == T_F32)
            maxdirect_f32f((const float *)xb.buf, (float *)ob.buf, pos, &g, w);
        else
            maxdirect_f64f((const double *)xb.buf, (double *)ob.buf, pos, &g, w);
    } else {
        switch (tcode) {
            case T_F32:
#if POOLCHECK_AVX512
                if (fused) {
                    max2d_512((const float *)xb.buf, (float *)ob.buf, pos, &g, w, (float *)ring, qring,
                              tags, hrow, sl, nan_mode == NAN_IGNORE);
                    break;
                }
                if (use_avx512 && geo_small(&g)) {
                    maxsep_f32_512((const float *)xb.buf, (float *)ob.buf, pos, &g, w, (float *)t0,
                                   (float *)t1, q0, q1, chunk, nan_mode == NAN_IGNORE);
                    break;
                }
#endif
                if (nan_mode == NAN_IGNORE) DISPATCH_SEP(f32i, float);
                else DISPATCH_SEP(f32p, float);
                break;
            case T_F64:
                if (nan_mode == NAN_IGNORE) DISPATCH_SEP(f64i, double);
                else DISPATCH_SEP(f64p, double);
                break;
            case T_I8: DISPATCH_SEP(i8, int8_t); break;
            case T_U8: DISPATCH_SEP(u8, uint8_t); break;
            case T_I16: DISPATCH_SEP(i16, int16_t); break;
            case T_U16: DISPATCH_SEP(u16, uint16_t); break;
            case T_I32: DISPATCH_SEP(i32, int32_t); break;
            case T_U32: DISPATCH_SEP(u32, uint32_t); break;
            case T_I64: DISPATCH_SEP(i64, int64_t); break;
            case T_U64: DISPATCH_SEP(u64, uint64_t); break;
        }
    }
    if (empty) fill_empty((char *)ob.buf, isz, &g, empty, (const char *)fb.buf);
    if (have_ib) finish_indices(pos, ib.buf, idx64, &g, modulus, empty_index, empty);
    Py_END_ALLOW_THREADS
    if (tls_interrupted || PyErr_Occurred()) {
        free(tags);
        free(hrow);
        free(sl);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyboardInterrupt, "");
        goto done;
    }
    free(tags);
    free(hrow);
    free(sl);
    Py_INCREF(Py_None);
    result = Py_None;
done:
    free(empty);
    geo_free(&g);
    scratch_trim();
    if (have_ib) PyBuffer_Release(&ib);
    if (fb.obj) PyBuffer_Release(&fb);
    if (ob.obj) PyBuffer_Release(&ob);
    if (xb.obj) PyBuffer_Release(&xb);
    return result;
}

enum { DIV_FULL, DIV_PADDED, DIV_VALID };
enum { A_F32, A_F64, A_F32TO64 };

/* avg_pool(x, out, geometry, kind, divisor_rule, empty_avg) */
static PyObject *py_avg_pool(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer xb = {0}, ob = {0};
    PyObject *geo_obj;
    int kind, rule;
    double efill;
    geo_t g;
    memset(&g, 0, sizeof(g));
    double *t0 = NULL, *t1 = NULL, *dtab = NULL;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*w*Oiid", &xb, &ob, &geo_obj, &kind, &rule, &efill)) return NULL;
    if (parse_geo(geo_obj, &g) < 0) goto done;
    if (kind < A_F32 || kind > A_F32TO64 || rule < DIV_FULL || rule > DIV_VALID) {
        PyErr_SetString(PyExc_ValueError, "unknown average kind or divisor rule");
        goto done;
    }
    if (geo_prepare(&g) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t isz = kind == A_F64 ? 8 : 4, osz = kind == A_F32 ? 4 : 8;
    if (check_buffer(&xb, g.nc * g.plane_in, isz, "input") < 0) goto done;
    if (check_buffer(&ob, g.nc * g.plane_out, osz, "output") < 0) goto done;
    if (g.nc == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    /* The divisor of each output window: the product of per-axis counts (numpy_engine.divisor). */
    dtab = (double *)scratch_get(S_DTAB, (size_t)g.plane_out * sizeof(double));
    int64_t *cnt[3] = {NULL, NULL, NULL};
    int cnt_ok = dtab != NULL;
    for (int i = 0; i < g.r && cnt_ok; i++) {
        const ax_t *a = &g.a[i];
        cnt[i] = g_scratch_i64(a->o);
        if (!cnt[i]) {
            cnt_ok = 0;
            break;
        }
        for (int64_t o = 0; o < a->o; o++) {
            if (rule == DIV_VALID) {
                cnt[i][o] = a->jhi[o] > a->jlo[o] ? a->jhi[o] - a->jlo[o] : 0;
            } else if (rule == DIV_PADDED) {
                /* taps j in [0, k) with -pb <= st + j * d < n + pe, in closed form */
                const int64_t st = o * a->s - a->pb, lo = -a->pb - st, hi = a->n + a->pe - st;
                int64_t jl = lo <= 0 ? 0 : (lo + a->d - 1) / a->d;
                int64_t jh = hi <= 0 ? 0 : (hi + a->d - 1) / a->d;
                if (jl > a->k) jl = a->k;
                if (jh > a->k) jh = a->k;
                cnt[i][o] = jh > jl ? jh - jl : 0;
            } else {
                cnt[i][o] = a->k;
            }
        }
    }
    int zeros = 0;
    double *rtab = (double *)scratch_get(S_RTAB, (size_t)g.plane_out * sizeof(double));
    cnt_ok = cnt_ok && rtab != NULL;
    if (cnt_ok) {
        int64_t o[3] = {0, 0, 0};
        for (int64_t i = 0; i < g.plane_out; i++) {
            double v = 1.0; /* exact: a product of counts below 2^53 (the spec layer's work cap) */
            for (int a = 0; a < g.r; a++) v *= (double)cnt[a][o[a]];
            dtab[i] = v;
            rtab[i] = 1.0 / (double)v; /* correctly rounded reciprocal (inf for 0) */
            zeros |= v == 0.0;
            for (int a = g.r - 1; a >= 0; a--) {
                if (++o[a] < g.a[a].o) break;
                o[a] = 0;
            }
        }
    }
    for (int i = 0; i < 3; i++) free(cnt[i]);
    if (!cnt_ok) {
        PyErr_NoMemory();
        goto done;
    }
    int gpad = 0;
    if (geo_global(&g, &gpad)) {
        const double zadd = gpad ? 0.0 : -0.0;
        tls_interrupted = 0;
        Py_BEGIN_ALLOW_THREADS
        if (kind == A_F32)
            avgglobal_f32((const float *)xb.buf, (float *)ob.buf, g.nc, g.plane_in, dtab[0], efill, zadd);
        else if (kind == A_F64)
            avgglobal_f64((const double *)xb.buf, (double *)ob.buf, g.nc, g.plane_in, dtab[0], efill, zadd);
        else
            avgglobal_f32to64((const float *)xb.buf, (double *)ob.buf, g.nc, g.plane_in, dtab[0], efill, zadd);
        Py_END_ALLOW_THREADS
        if (tls_interrupted || PyErr_Occurred()) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyboardInterrupt, "");
            goto done;
        }
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    const int64_t chunk = chunk_planes(&g, 8);
    int64_t tsz = stage_max(&g) * chunk, tsz1 = tsz;
    /* Two spatial axes with rows of at least 16 windows: the fused ring-buffer kernel, whose
     * ring lives in t0 and whose slot tables live in t1. */
    const int fused = POOLCHECK_AVX512 && use_avx512 && kind == A_F32 && g.r == 2 && g.a[1].o >= 16 &&
                      geo_small(&g);
    const int64_t R = ring_rows(&g.a[0]);
    if (fused) {
        tsz = R * ((g.a[1].o + 7) & ~(int64_t)7);
        tsz1 = R + 2 * g.a[0].k;
    }
    t0 = (double *)scratch_get(S_T0, (size_t)tsz * sizeof(double));
    t1 = (double *)scratch_get(S_T1, (size_t)tsz1 * sizeof(double));
    if (!t0 || !t1) {
        PyErr_NoMemory();
        goto done;
    }
    tls_interrupted = 0;
    Py_BEGIN_ALLOW_THREADS
    if (kind == A_F32)
#if POOLCHECK_AVX512
        if (fused)
            avg2d_512((const float *)xb.buf, (float *)ob.buf, &g, dtab, rtab, zeros, efill, t0, (int64_t *)t1,
                      (int64_t *)t1 + R, (int64_t *)t1 + R + g.a[0].k);
        else if (use_avx512 && geo_small(&g))
            avg_f32_512((const float *)xb.buf, (float *)ob.buf, &g, dtab, rtab, zeros, efill, t0, t1, chunk);
        else
#endif
        avg_f32((const float *)xb.buf, (float *)ob.buf, &g, dtab, zeros, efill, t0, t1, chunk);
    else if (kind == A_F64)
        avg_f64((const double *)xb.buf, (double *)ob.buf, &g, dtab, zeros, efill, t0, t1, chunk);
    else
        avg_f32to64((const float *)xb.buf, (double *)ob.buf, &g, dtab, zeros, efill, t0, t1, chunk);
    Py_END_ALLOW_THREADS
    if (tls_interrupted || PyErr_Occurred()) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyboardInterrupt, "");
        goto done;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    geo_free(&g);
    scratch_trim();
    if (ob.obj) PyBuffer_Release(&ob);
    if (xb.obj) PyBuffer_Release(&xb);
    return result;
}

static PyMethodDef methods[] = {
    {"max_pool", py_max_pool, METH_VARARGS,
     "max_pool(x, out, indices, geometry, type_code, nan_mode, fill, empty_index, order_f, modulus)"},
    {"avg_pool", py_avg_pool, METH_VARARGS, "avg_pool(x, out, geometry, kind, divisor_rule, empty_avg)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cpool", "poolcheck's C pooling engine (see c_engine.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cpool(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    use_avx512 = POOLCHECK_AVX512 && cpu_has_avx512() && getenv("POOLCHECK_NO_AVX512") == NULL;
    if (PyModule_AddIntConstant(m, "MULTIVERSION", POOLCHECK_MULTIVERSION) < 0 ||
        PyModule_AddIntConstant(m, "AVX512", use_avx512) < 0 ||
        PyModule_AddIntConstant(m, "CHUNK_BYTES", CHUNK_BYTES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
