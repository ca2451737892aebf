/*
 * Shared declarations of the C engine's translation units (see module.c for the overview):
 * build switches, the geometry of one call (geo_t), per-thread scratch buffers and Ctrl-C
 * polling, and the kernel table of an instruction-set path.
 */
#ifndef POOLCHECK_CPOOL_COMMON_H
#define POOLCHECK_CPOOL_COMMON_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

/* A template's entry point: static, reached through the kernel table (or left unused where a
 * path takes another path's kernel). */
#if defined(__GNUC__)
#define PC_ENTRY static __attribute__((unused))
#else
#define PC_ENTRY static
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

typedef struct {
    int64_t n, k, s, d, pb, pe, o;
    int64_t lo, hi;  /* windows in [lo, hi) have every tap inside [0, n) */
    int64_t *jlo;    /* per window: first valid tap */
    int64_t *jhi;    /* per window: one past the last valid tap (jlo >= jhi: no valid tap) */
    int has_empty;   /* some window has no valid tap */
    int zinit;       /* sums along this axis start from +0.0 (see geo_prepare) */
} ax_t;

typedef struct {
    int r;        /* spatial rank, 1..3 */
    int64_t nc;   /* N * C */
    ax_t a[3];
    int64_t plane_in, plane_out;
} geo_t;

/* Per-thread scratch buffers, reused from call to call (geometry.c). */
enum { S_POS, S_T0, S_T1, S_Q0, S_Q1, S_RING, S_DTAB, S_RTAB, SCRATCH_SLOTS };
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

/* Rows of the ring of a fused 2-D kernel: a power of two covering one window's rows. */
static inline int64_t ring_rows(const ax_t *h) {
    int64_t r = 1;
    while (r < (h->k - 1) * h->d + 1) r <<= 1;
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Kernel tables: one per instruction-set path                                                */

/* Max kernels by element type and NaN policy (floats: propagate or ignore; the "first" policy
 * scans directly, maxdirect). */
enum { MK_F32P, MK_F32I, MK_F64P, MK_F64I, MK_I8, MK_U8, MK_I16, MK_U16, MK_I32, MK_U32, MK_I64, MK_U64,
       MK_COUNT };
/* Average kinds by input -> output type; float16 runs as float32 -> float64. */
enum { A_F32, A_F64, A_F32TO64, A_COUNT };
/* Instruction-set paths, slowest first. */
enum { ISA_PORTABLE, ISA_AVX2, ISA_AVX512, ISA_COUNT };

typedef void (*maxsep_fn)(const void *x, void *out, int64_t *pos, const geo_t *g, const int64_t *w, void *t0,
                          void *t1, int64_t *q0, int64_t *q1, int64_t chunk);
typedef void (*maxdirect_fn)(const void *x, void *out, int64_t *pos, const geo_t *g, const int64_t *w);
/* rtab: reciprocals of the divisors, or NULL (see fma_quot). */
typedef void (*avg_fn)(const void *x, void *out, const geo_t *g, const double *dtab, const double *rtab, int zeros,
                       double efill, double *t0, double *t1, int64_t chunk);
typedef void (*avgglobal_fn)(const void *x, void *out, int64_t nc, int64_t m, double div, double efill,
                             double zadd);
/* The fused float32 kernels (fused_f32.h); the int ones return 1 when they met a NaN and the
 * caller must run the staged kernels instead. */
typedef int (*max_fused_fn)(const float *x, float *out, const geo_t *g);
typedef void (*max_k3s2_fn)(const float *x, float *out, const geo_t *g, float *ring, int64_t *tags, int64_t *sl,
                            int ign);
typedef int (*avg_strips_fn)(const float *x, float *out, const geo_t *g, const double *dtab, int zeros,
                              double efill);
typedef void (*indices_fn)(const int64_t *pos, void *idx, int idx64, const geo_t *g, int64_t modulus,
                           int64_t empty_index, const uint8_t *empty);

/* The kernels of one path: kernels_isa.h compiled once per path (isa_portable.c, isa_avx2.c,
 * isa_avx512.c, each with its compiler flags). A NULL entry takes the next slower path's
 * kernel (module.c), where a kernel measured no faster for the wider instructions. */
typedef struct {
    const char *name;  /* NULL: this build has no such path (another architecture or compiler) */
    maxsep_fn maxsep[MK_COUNT];
    maxdirect_fn maxdirect[2]; /* float32, float64 */
    avg_fn avg[A_COUNT];
    avgglobal_fn avgglobal[A_COUNT];
    indices_fn finish_indices;
    max_fused_fn max2d_strips, max3d_k2s2;
    max_k3s2_fn max2d_k3s2;
    avg_strips_fn avg2d_strips;
    int fma_quot; /* avg[A_F32] divides exactly with FMA when given reciprocals (divisors < 2^51) */
} kernels_t;

extern const kernels_t pc_kernels_portable, pc_kernels_avx2, pc_kernels_avx512;

uint8_t *empty_mask(const geo_t *g, int *err);
void fill_empty(char *out, int64_t itemsize, const geo_t *g, const uint8_t *empty, const char *fill);


#endif
