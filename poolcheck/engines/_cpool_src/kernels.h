/*
 * The portable kernels, as macros instantiated once per element type (portable.c; avx512.c
 * instantiates the float32 row helpers, DEF_MAX_BORDER and DEF_AVG_ROWS, for the scalar
 * border and NaN paths it inlines).
 */
#ifndef POOLCHECK_CPOOL_KERNELS_H
#define POOLCHECK_CPOOL_KERNELS_H
#include "common.h"

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

#define DEF_MAX_BORDER(SUF, T, UT, SBETTER)                                                    \
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

#define DEF_MAX_SEP(SUF, T, UT, BETTER, SBETTER)                                               \
    DEF_MAX_BORDER(SUF, T, UT, SBETTER)                                                        \
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
    HOT void maxsep_##SUF(const T *x, T *out, int64_t *pos, const geo_t *g,             \
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

/* CLONES: HOT (x86-64-v3 and baseline clones) or nothing (baseline only), per element type,
 * as measured (portable.c). */
#define DEF_MAX_DIRECT(SUF, T, BETTER, CLONES)                                                 \
    CLONES void maxdirect_##SUF(const T *x, T *out, int64_t *pos, const geo_t *g,          \
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

#define DEF_AVG_ROWS(SUF, TI)                                                                  \
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

/* QUOT(out, sum, dtab, rtab, n): out[i] = sum[i] / dtab[i], rounded once to TO. */            \
#define DEF_AVG(SUF, TI, TO, QUOT)                                                             \
    DEF_AVG_ROWS(SUF, TI)                                                                      \
    HOT void avg_##SUF(const TI *x, TO *out, const geo_t *g, const double *dtab,               \
                       const double *rtab, int zeros, double efill, double *t0, double *t1,    \
                       int64_t chunk) {                                                        \
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
            /* divided by the number of elements [ONNX-DIVISOR]                          */    \
            /* A zero divisor (no element counted) gives the empty_avg value instead. */       \
            TO *restrict yo = out + p * po;                                                    \
            const double *restrict sum = dst;                                                  \
            for (int64_t q = 0; q < np; q++) {                                                 \
                QUOT(yo + q * po, sum + q * po, dtab, rtab, po);                               \
                if (zeros)                                                                     \
                    for (int64_t i = 0; i < po; i++)                                           \
                        if (dtab[i] == 0.0) yo[q * po + i] = (TO)efill;                        \
            }                                                                                  \
        }                                                                                      \
    }

/* Global average pooling: one window per axis covering the whole axis (dilation 1, pb >= 0,
 * k - pb >= n), so each output is the mean of a whole plane of m elements. The plane is summed
 * in float64 in 8 interleaved partial sums (element i into sum i mod 8, each in order, from
 * -0.0, the identity of addition), combined pairwise, then +0.0 when the window reaches into
 * padding (as the zero-padded sum would). Any order of m float64 additions is within
 * (m - 1) 2^-53 sum|x| of the exact sum, the bound the NumPy engine's pairwise global sum also
 * meets (docs/benchmarks.md); the 8 lanes vectorise without reassociating anything (avx512.c
 * has a 16-lane float32 version). */
#define DEF_AVG_GLOBAL(SUF, TI, TO, CLONES)                                                    \
    CLONES void avgglobal_##SUF(const TI *x, TO *out, int64_t nc, int64_t m, double div,   \
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
            /* divided by the number of elements [ONNX-DIVISOR]                          */    \
            out[p] = div == 0.0 ? (TO)efill : (TO)(sum / div);                                 \
        }                                                                                      \
    }


#endif
