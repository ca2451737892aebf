/*
 * Geometry of one call (per axis: which taps of each window land in the input, the interior
 * windows, the border blocks of the AVX-512 kernels), per-thread scratch buffers, and Ctrl-C
 * polling for kernels that run without the GIL.
 */
#include "common.h"

_Thread_local int pc_interrupted;
static _Thread_local int64_t tls_poll_count;
int poll_interrupt(void) {
    if (pc_interrupted) return 1;
    if ((++tls_poll_count & 15) != 0) return 0;
    PyGILState_STATE st = PyGILState_Ensure();
    if (PyErr_CheckSignals() < 0) pc_interrupted = 1;
    PyGILState_Release(st);
    return pc_interrupted;
}

int64_t *g_scratch_i64(int64_t count) {
    return (int64_t *)malloc((size_t)(count > 0 ? count : 1) * sizeof(int64_t));
}

/* Per-thread scratch buffers, reused from call to call: freeing and re-allocating a few hundred
 * kB per call makes the C library hand the memory back to the system and fault it in again
 * on every call. Buffers above SCRATCH_KEEP are released at the end of the call. The GIL is
 * released while computing, so each thread has its own. */
#define SCRATCH_KEEP ((size_t)64 << 20)
typedef struct {
    void *p;
    size_t cap;
} scratch_t;
static _Thread_local scratch_t tls_scratch[SCRATCH_SLOTS];

void *scratch_get(int slot, size_t bytes) {
    scratch_t *sc = &tls_scratch[slot];
    if (bytes < 64) bytes = 64;
    if (sc->cap < bytes) {
        free(sc->p);
        /* 64-byte aligned: the AVX-512 kernels keep rows of float64 sums and float32 maxima
         * here, and a 64-byte vector that straddles two cache lines costs two accesses. */
        const size_t cap = (bytes + bytes / 4 + 63) & ~(size_t)63;
        sc->p = aligned_alloc(64, cap);
        sc->cap = sc->p ? cap : 0;
    }
    return sc->p;
}

void scratch_trim(void) {
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        if (tls_scratch[i].cap > SCRATCH_KEEP) {
            free(tls_scratch[i].p);
            tls_scratch[i].p = NULL;
            tls_scratch[i].cap = 0;
        }
}

void geo_free(geo_t *g) {
    for (int i = 0; i < 3; i++) {
        free(g->a[i].jlo);
        free(g->a[i].jhi);
        g->a[i].jlo = g->a[i].jhi = NULL;
    }
}

/* Window o covers positions o * s - pb + j * d, j in [0, k). */
int geo_prepare(geo_t *g) {
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
    return 0;
}

/* Planes per chunk so that the largest intermediate stays near CHUNK_BYTES. */
int64_t chunk_planes(const geo_t *g, int64_t bytes_per_elem) {
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
int64_t stage_max(const geo_t *g) {
    int64_t biggest = 1, cur_in = g->plane_in;
    for (int i = g->r - 1; i >= 0; i--) {
        int64_t cur = cur_in / g->a[i].n * g->a[i].o;
        if (cur > biggest) biggest = cur;
        cur_in = cur;
    }
    return biggest;
}
/* Whether every axis has a single window covering the whole axis (see DEF_AVG_GLOBAL), and
 * whether that window reaches into padding. */
int geo_global(const geo_t *g, int *padded) {
    *padded = 0;
    for (int i = 0; i < g->r; i++) {
        const ax_t *a = &g->a[i];
        if (a->o != 1 || a->d != 1 || a->pb < 0 || a->k - a->pb < a->n) return 0;
        *padded |= a->pb > 0 || a->k - a->pb > a->n;
    }
    return 1;
}

/* Output-plane mask of windows with no valid element (NULL when there are none). */
uint8_t *empty_mask(const geo_t *g, int *err) {
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

void fill_empty(char *out, int64_t itemsize, const geo_t *g, const uint8_t *empty,
                       const char *fill) {
    for (int64_t p = 0; p < g->nc; p++)
        for (int64_t i = 0; i < g->plane_out; i++)
            if (empty[i]) memcpy(out + (p * g->plane_out + i) * itemsize, fill, (size_t)itemsize);
}
