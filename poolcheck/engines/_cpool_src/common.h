/*
 * Shared declarations of the C engine's translation units (see module.c for the overview):
 * build switches, the geometry of one call (geo_t), per-thread scratch buffers and Ctrl-C
 * polling, and the entry points of the portable and AVX-512 kernels.
 */
#ifndef POOLCHECK_CPOOL_COMMON_H
#define POOLCHECK_CPOOL_COMMON_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Portable kernels: GCC function multiversioning, an x86-64-v3 (AVX2) clone and the baseline,
 * chosen by the loader. */
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

/* Hand-written AVX-512 kernels (avx512.c), chosen at import when the CPU has them. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(POOLCHECK_NO_AVX512)
#define POOLCHECK_AVX512 1
#else
#define POOLCHECK_AVX512 0
#endif

/* Ctrl-C: the kernels run without the GIL; between chunks of planes they take it back for a
 * moment to let Python run its signal handlers. A handler that raises (KeyboardInterrupt)
 * leaves its exception set, pc_interrupted is set, the kernel stops and the entry point
 * returns the exception. */
extern _Thread_local int pc_interrupted;
int poll_interrupt(void);

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

/* Per-thread scratch buffers, reused from call to call (geometry.c). */
enum { S_POS, S_T0, S_T1, S_Q0, S_Q1, S_RING, S_QRING, S_DTAB, S_RTAB, SCRATCH_SLOTS };
void *scratch_get(int slot, size_t bytes);
void scratch_trim(void);
int64_t *g_scratch_i64(int64_t count);

void geo_free(geo_t *g);
int geo_prepare(geo_t *g);
int64_t chunk_planes(const geo_t *g, int64_t bytes_per_elem);
int64_t stage_max(const geo_t *g);
int geo_global(const geo_t *g, int *padded);


/* Elements before/after axis i in the current stage layout: when axis i is reduced, axes
 * < i still have their input size and axes > i already have their output size. */
static inline int64_t stage_outer(const geo_t *g, int i) {
    int64_t v = 1;
    for (int j = 0; j < i; j++) v *= g->a[j].n;
    return v;
}
static inline int64_t stage_inner(const geo_t *g, int i) {
    int64_t v = 1;
    for (int j = i + 1; j < g->r; j++) v *= g->a[j].o;
    return v;
}

/* Coordinates of every axis fit comfortably in int32 (the SIMD kernels compute them so). */
static inline int geo_small(const geo_t *g) {
    const int64_t lim = (int64_t)1 << 30;
    for (int i = 0; i < g->r; i++) {
        const ax_t *a = &g->a[i];
        if (a->n >= lim || a->o * a->s + a->pb + a->k * a->d >= lim) return 0;
    }
    return 1;
}

/* Rows of the ring of a fused 2-D kernel: a power of two covering one window's rows. */
static inline int64_t ring_rows(const ax_t *h) {
    int64_t r = 1;
    while (r < (h->k - 1) * h->d + 1) r <<= 1;
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Kernel entry points                                                                        */

#define DECL_MAX_SEP(SUF, T)                                                                   \
    void maxsep_##SUF(const T *x, T *out, int64_t *pos, const geo_t *g, const int64_t *w,      \
                      T *t0, T *t1, int64_t *q0, int64_t *q1, int64_t chunk);
DECL_MAX_SEP(f32p, float)
DECL_MAX_SEP(f32i, float)
DECL_MAX_SEP(f64p, double)
DECL_MAX_SEP(f64i, double)
DECL_MAX_SEP(i8, int8_t)
DECL_MAX_SEP(u8, uint8_t)
DECL_MAX_SEP(i16, int16_t)
DECL_MAX_SEP(u16, uint16_t)
DECL_MAX_SEP(i32, int32_t)
DECL_MAX_SEP(u32, uint32_t)
DECL_MAX_SEP(i64, int64_t)
DECL_MAX_SEP(u64, uint64_t)
void maxdirect_f32f(const float *x, float *out, int64_t *pos, const geo_t *g, const int64_t *w);
void maxdirect_f64f(const double *x, double *out, int64_t *pos, const geo_t *g, const int64_t *w);
#define DECL_AVG(SUF, TI, TO)                                                                  \
    void avg_##SUF(const TI *x, TO *out, const geo_t *g, const double *dtab, const double *rtab,\
                   int zeros, double efill, double *t0, double *t1, int64_t chunk);            \
    void avgglobal_##SUF(const TI *x, TO *out, int64_t nc, int64_t m, double div, double efill, \
                         double zadd);
DECL_AVG(f32, float, float)
DECL_AVG(f64, double, double)
DECL_AVG(f32to64, float, double)

/* Whether the CPU runs x86-64-v3 code (AVX2, FMA): the exact float32 quotient kernel. */
int quot_fma_available(void);

void finish_indices(const int64_t *pos, void *idx, int idx64, const geo_t *g, int64_t modulus,
                    int64_t empty_index, const uint8_t *empty);
uint8_t *empty_mask(const geo_t *g, int *err);
void fill_empty(char *out, int64_t itemsize, const geo_t *g, const uint8_t *empty, const char *fill);

#if !POOLCHECK_AVX512
static inline int cpu_has_avx512(void) { return 0; }
#else
int cpu_has_avx512(void);
void maxsep_f32_512(const float *x, float *out, int64_t *pos, const geo_t *g, const int64_t *w, float *t0,
                    float *t1, int64_t *q0, int64_t *q1, int64_t chunk, int ign);
void avgglobal_f32_512(const float *x, float *out, int64_t nc, int64_t m, double div, double efill, double zadd);
void max2d_512(const float *x, float *out, int64_t *pos, const geo_t *g, const int64_t *w, float *ring,
               int64_t *qring, int64_t *tags, int64_t *hrow, int64_t *sl, int ign);
int max3d_k2s2_512(const float *x, float *out, const geo_t *g);
void max2d_k3s2_512(const float *x, float *out, const geo_t *g, float *ring, int64_t *tags, int64_t *hrow,
                    int64_t *sl, int ign);
int max2d_s1_strips_512(const float *x, float *out, const geo_t *g);
void avg2d_strips_512(const float *x, float *out, const geo_t *g, const double *dtab, int zeros, double efill);
#endif

#endif
