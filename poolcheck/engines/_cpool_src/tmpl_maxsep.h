/*
 * Template: separable max pooling for one element type, one stage per axis, last axis first.
 * Included once per instance (kernels_isa.h) with these macros defined, and undefines them:
 *
 *   PC_SUF      name suffix of the instance (f32p, i8, ...)
 *   PC_T, PC_UT the element type and the unsigned integer type of its width
 *   PC_BETTER   "b replaces the current best a" for the vectorised interior (kernels.h)
 *   PC_SBETTER  the same, branch-free scalar form for the border windows
 *   PC_NAN_FREE (optional, floats) suffix of an instance of the same type with the plain
 *               strict '>' (BETTER_INT), run on chunks without NaN (has_nan_SUF tells)
 *   PC_NAN_CHUNKS (optional, with PC_NAN_FREE) a maxsep_fn that computes the chunks holding a
 *               NaN (the portable path's kernel of the same policy): the instance then has no
 *               stages of its own, only the border-row helper (used by fused_f32.h) and the
 *               dispatch, which halves the compile time of the vector paths
 *
 * W stage (last axis): rows of n elements -> rows of o elements; with positions, py receives
 * the chosen element's coordinate times the axis weight. H stage (any other axis): input
 * [outer][n][inner] -> [outer][o][inner], the chosen row's coordinate times its weight added
 * to the position carried from the previous stage.
 */
#define T PC_T
#define UT PC_UT
#define BETTER PC_BETTER
#define SBETTER PC_SBETTER
#define PC_N(f) PC_CAT(f, PC_SUF)

/* v, or b where bt: a select on the bit patterns, so that the data never steer a branch. */
INLINE T PC_N(bitsel)(const int bt, T b, T v) {
    UT ub, uv;
    memcpy(&ub, &b, sizeof(T));
    memcpy(&uv, &v, sizeof(T));
    uv = (UT)(uv ^ ((ub ^ uv) & (UT)(0 - (UT)bt)));
    memcpy(&v, &uv, sizeof(T));
    return v;
}

/* Border windows [o0, o1) of one row: valid taps only, branch-free. A real function, called
 * twice a row: inlined, its copies (both borders of every specialised row loop of mw) were
 * about 40% of the build's compile time, and the calls measured no slower (setup.py). */
static __attribute__((noinline)) void PC_N(mw_brow)(const T *restrict xr, T *restrict yr,
                                                    int64_t *restrict pr, const ax_t *restrict A, int64_t wa,
                                                    const int withpos, int64_t o0, int64_t o1) {
    const int64_t s = A->s, d = A->d, pb = A->pb;
    for (int64_t o = o0; o < o1; o++) {
        const int64_t jl = A->jlo[o], jh = A->jhi[o], b0 = o * s - pb;
        if (jl >= jh) { /* no element: filled at the end */
            yr[o] = (T)0;
            if (withpos) pr[o] = 0;
            continue;
        }
        T v = xr[b0 + jl * d];
        int64_t c = b0 + jl * d;
        for (int64_t j = jl + 1; j < jh; j++) {
            T b = xr[b0 + j * d];
            const int bt = SBETTER(b, v);
            v = PC_N(bitsel)(bt, b, v);
            c = bt ? b0 + j * d : c;
        }
        yr[o] = v;
        if (withpos) pr[o] = c * wa;
    }
}

#ifndef PC_NAN_CHUNKS
/* Rows of a W stage with kernel KK, stride SS and dilation DD (constants where the caller
 * passes constants: the function is always inlined): each row does its left border windows,
 * its interior windows (vectorised, no bounds checks), its right border. */
INLINE void PC_N(mw_rows)(const T *restrict x, T *restrict y, int64_t rows, const ax_t *restrict A,
                          int64_t wa, const int64_t KK, const int64_t SS, const int64_t DD) {
    const int64_t n = A->n, pb = A->pb, O = A->o, lo = A->lo, hi = A->hi;
    for (int64_t r = 0; r < rows; r++) {
        const T *restrict xr = x + r * n;
        T *restrict yr = y + r * O;
        PC_N(mw_brow)(xr, yr, NULL, A, wa, 0, 0, lo);
        for (int64_t o = lo; o < hi; o++) {
            const int64_t b0 = o * SS - pb;
            T v = xr[b0];
            PC_UNROLL
            for (int64_t j = 1; j < KK; j++) {
                T b = xr[b0 + j * DD];
                v = BETTER(b, v) ? b : v;
            }
            yr[o] = v;
        }
        PC_N(mw_brow)(xr, yr, NULL, A, wa, 0, hi, O);
    }
}

/* The same with positions. */
INLINE void PC_N(mw_rows_pos)(const T *restrict x, T *restrict y, int64_t *restrict py, int64_t rows,
                              const ax_t *restrict A, int64_t wa, const int64_t KK, const int64_t SS,
                              const int64_t DD) {
    const int64_t n = A->n, pb = A->pb, O = A->o, lo = A->lo, hi = A->hi;
    for (int64_t r = 0; r < rows; r++) {
        const T *restrict xr = x + r * n;
        T *restrict yr = y + r * O;
        int64_t *restrict pr = py + r * O;
        PC_N(mw_brow)(xr, yr, pr, A, wa, 1, 0, lo);
        for (int64_t o = lo; o < hi; o++) {
            const int64_t b0 = o * SS - pb;
            T v = xr[b0];
            int64_t c = b0;
            PC_UNROLL
            for (int64_t j = 1; j < KK; j++) {
                T b = xr[b0 + j * DD];
                int bt = BETTER(b, v);
                v = bt ? b : v;
                c = bt ? b0 + j * DD : c;
            }
            yr[o] = v;
            pr[o] = c * wa;
        }
        PC_N(mw_brow)(xr, yr, pr, A, wa, 1, hi, O);
    }
}

INLINE void PC_N(mw)(const T *restrict x, T *restrict y, int64_t *restrict py,
                     int64_t rows, const ax_t *restrict A, int64_t wa, const int withpos) {
    const int64_t n = A->n, k = A->k, s = A->s, d = A->d, pb = A->pb, O = A->o;
    const int64_t lo = A->lo, hi = A->hi;
    if (!withpos) {
        if (s == 1 && k == 2) PC_N(mw_rows)(x, y, rows, A, wa, 2, 1, d);
        else if (s == 1 && k == 3) PC_N(mw_rows)(x, y, rows, A, wa, 3, 1, d);
        else if (s == 2 && k == 2 && d == 1) PC_N(mw_rows)(x, y, rows, A, wa, 2, 2, 1);
        else if (s == 2 && k == 3 && d == 1) PC_N(mw_rows)(x, y, rows, A, wa, 3, 2, 1);
        else if (s == 3 && k == 3 && d == 1) PC_N(mw_rows)(x, y, rows, A, wa, 3, 3, 1);
        else if (s == 4 && k == 4 && d == 1) PC_N(mw_rows)(x, y, rows, A, wa, 4, 4, 1);
        else {
            for (int64_t r = 0; r < rows; r++) {
                const T *restrict xr = x + r * n;
                T *restrict yr = y + r * O;
                PC_N(mw_brow)(xr, yr, NULL, A, wa, 0, 0, lo);
                for (int64_t o = lo; o < hi; o++) yr[o] = xr[o * s - pb];
                for (int64_t j = 1; j < k; j++) {
                    const int64_t off = j * d - pb;
                    for (int64_t o = lo; o < hi; o++) {
                        T b = xr[off + o * s];
                        yr[o] = BETTER(b, yr[o]) ? b : yr[o];
                    }
                }
                PC_N(mw_brow)(xr, yr, NULL, A, wa, 0, hi, O);
            }
        }
    } else {
        if (s == 1 && k == 2) PC_N(mw_rows_pos)(x, y, py, rows, A, wa, 2, 1, d);
        else if (s == 1 && k == 3) PC_N(mw_rows_pos)(x, y, py, rows, A, wa, 3, 1, d);
        else if (s == 2 && k == 2 && d == 1) PC_N(mw_rows_pos)(x, y, py, rows, A, wa, 2, 2, 1);
        else if (s == 2 && k == 3 && d == 1) PC_N(mw_rows_pos)(x, y, py, rows, A, wa, 3, 2, 1);
        else {
            for (int64_t r = 0; r < rows; r++) {
                const T *restrict xr = x + r * n;
                T *restrict yr = y + r * O;
                int64_t *restrict pr = py + r * O;
                PC_N(mw_brow)(xr, yr, pr, A, wa, 1, 0, lo);
                for (int64_t o = lo; o < hi; o++) {
                    yr[o] = xr[o * s - pb];
                    pr[o] = o * s - pb;
                }
                for (int64_t j = 1; j < k; j++) {
                    const int64_t off = j * d - pb;
                    for (int64_t o = lo; o < hi; o++) {
                        T b = xr[off + o * s];
                        int bt = BETTER(b, yr[o]);
                        yr[o] = bt ? b : yr[o];
                        pr[o] = bt ? off + o * s : pr[o];
                    }
                }
                for (int64_t o = lo; o < hi; o++) pr[o] *= wa;
                PC_N(mw_brow)(xr, yr, pr, A, wa, 1, hi, O);
            }
        }
    }
}

/* H stage: combine whole rows of `inner` elements. */
INLINE void PC_N(mh)(const T *restrict x, T *restrict y, const int64_t *restrict px,
                     int64_t *restrict py, int64_t outer, const ax_t *restrict A,
                     int64_t inner, int64_t wa, const int withpos) {
    const int64_t n = A->n, s = A->s, d = A->d, pb = A->pb, O = A->o;
    for (int64_t u = 0; u < outer; u++) {
        for (int64_t o = 0; o < O; o++) {
            const int64_t jl = A->jlo[o], jh = A->jhi[o];
            T *restrict yo = y + (u * O + o) * inner;
            int64_t *restrict qo = withpos ? py + (u * O + o) * inner : NULL;
            if (jl >= jh) {
                for (int64_t i = 0; i < inner; i++) yo[i] = (T)0;
                if (withpos)
                    for (int64_t i = 0; i < inner; i++) qo[i] = 0;
                continue;
            }
            const int64_t p0 = o * s - pb + jl * d;
            const T *restrict x0 = x + (u * n + p0) * inner;
            const int64_t cnt = jh - jl;
            if (!withpos) {
                if (cnt == 2) {
                    const T *restrict x1 = x0 + d * inner;
                    for (int64_t i = 0; i < inner; i++) {
                        T a = x0[i], b = x1[i];
                        yo[i] = BETTER(b, a) ? b : a;
                    }
                } else if (cnt == 3) {
                    const T *restrict x1 = x0 + d * inner;
                    const T *restrict x2 = x1 + d * inner;
                    for (int64_t i = 0; i < inner; i++) {
                        T a = x0[i], b = x1[i], c = x2[i];
                        a = BETTER(b, a) ? b : a;
                        yo[i] = BETTER(c, a) ? c : a;
                    }
                } else {
                    for (int64_t i = 0; i < inner; i++) yo[i] = x0[i];
                    for (int64_t j = 1; j < cnt; j++) {
                        const T *restrict xj = x0 + j * d * inner;
                        for (int64_t i = 0; i < inner; i++) {
                            T b = xj[i];
                            yo[i] = BETTER(b, yo[i]) ? b : yo[i];
                        }
                    }
                }
            } else {
                const int64_t *restrict q0 = px + (u * n + p0) * inner;
                const int64_t w0 = p0 * wa;
                for (int64_t i = 0; i < inner; i++) {
                    yo[i] = x0[i];
                    qo[i] = q0[i] + w0;
                }
                for (int64_t j = 1; j < cnt; j++) {
                    const T *restrict xj = x0 + j * d * inner;
                    const int64_t *restrict qj = q0 + j * d * inner;
                    const int64_t wj = (p0 + j * d) * wa;
                    for (int64_t i = 0; i < inner; i++) {
                        T b = xj[i];
                        int bt = BETTER(b, yo[i]);
                        yo[i] = bt ? b : yo[i];
                        qo[i] = bt ? qj[i] + wj : qo[i];
                    }
                }
            }
        }
    }
}

/* The stages of one chunk of np planes starting at plane p. */
INLINE void PC_N(maxsep_chunk)(const T *restrict x, T *restrict out, int64_t *restrict pos,
                               const geo_t *g, const int64_t *w, T *restrict t0, T *restrict t1,
                               int64_t *restrict q0, int64_t *restrict q1, int64_t p, int64_t np,
                               const int withpos) {
    const int r = g->r;
    const T *src = x + p * g->plane_in;
    const int64_t *qsrc = NULL;
    for (int i = r - 1; i >= 0; i--) {
        T *dst = (i == 0) ? out + p * g->plane_out : ((i & 1) ? t0 : t1);
        int64_t *qdst = NULL;
        if (withpos) qdst = (i == 0) ? pos + p * g->plane_out : ((i & 1) ? q0 : q1);
        const int64_t outer = np * stage_outer(g, i);
        if (i == r - 1)
            PC_N(mw)(src, dst, qdst, outer, &g->a[i], w[i], withpos);
        else
            PC_N(mh)(src, dst, qsrc, qdst, outer, &g->a[i], stage_inner(g, i), w[i], withpos);
        src = dst;
        qsrc = qdst;
    }
}

/* The stages of a chunk as real functions, values only or with positions: PC_NAN_FREE callers
 * call these rather than inline them, so each body is compiled once. */
PC_ENTRY __attribute__((noinline)) void PC_N(chunk_values)(const T *x, T *out, const geo_t *g, const int64_t *w,
                                                           T *t0, T *t1, int64_t p, int64_t np) {
    PC_N(maxsep_chunk)(x, out, NULL, g, w, t0, t1, NULL, NULL, p, np, 0);
}
PC_ENTRY __attribute__((noinline)) void PC_N(chunk_positions)(const T *x, T *out, int64_t *pos, const geo_t *g,
                                                              const int64_t *w, T *t0, T *t1, int64_t *q0,
                                                              int64_t *q1, int64_t p, int64_t np) {
    PC_N(maxsep_chunk)(x, out, pos, g, w, t0, t1, q0, q1, p, np, 1);
}

#endif /* PC_NAN_CHUNKS */

/* Chunk by chunk. With PC_NAN_FREE (floats), a chunk with no NaN runs that instance's plain
 * strict '>' stages instead: without NaN the NaN policies are that same first-wins scan, and
 * the plain comparison vectorises to a single max (or compare) per tap. */
INLINE void PC_N(maxsep_body)(const T *restrict x, T *restrict out, int64_t *restrict pos,
                              const geo_t *g, const int64_t *w, T *restrict t0,
                              T *restrict t1, int64_t *restrict q0, int64_t *restrict q1,
                              int64_t chunk, const int withpos) {
#ifdef PC_NAN_FREE
    /* Steps of at most 128 KiB of input (at least a plane): the scan leaves them in cache. */
    const int64_t fit = (int64_t)(131072 / sizeof(T)) / g->plane_in;
    const int64_t step = fit < 1 ? 1 : (fit < chunk ? fit : chunk);
#else
    const int64_t step = chunk;
#endif
    for (int64_t p = 0; p < g->nc; p += step) {
        if (poll_interrupt()) break;
        const int64_t np = (g->nc - p < step) ? g->nc - p : step;
#ifdef PC_NAN_FREE
        if (!PC_CAT(has_nan, PC_NAN_FREE)(x + p * g->plane_in, np * g->plane_in)) {
            if (withpos)
                PC_CAT(chunk_positions, PC_NAN_FREE)(x, out, pos, g, w, t0, t1, q0, q1, p, np);
            else
                PC_CAT(chunk_values, PC_NAN_FREE)(x, out, g, w, t0, t1, p, np);
            continue;
        }
#endif
#ifdef PC_NAN_CHUNKS
        geo_t gc = *g; /* the chunk's planes only */
        gc.nc = np;
        PC_NAN_CHUNKS(x + p * g->plane_in, out + p * g->plane_out, withpos ? pos + p * g->plane_out : NULL, &gc, w,
                      t0, t1, q0, q1, chunk);
#else
        PC_N(maxsep_chunk)(x, out, pos, g, w, t0, t1, q0, q1, p, np, withpos);
#endif
    }
}
/* The entry point (a maxsep_fn of the kernel table). */
PC_ENTRY void PC_N(maxsep)(const void *x, void *out, int64_t *pos, const geo_t *g, const int64_t *w,
                         void *t0, void *t1, int64_t *q0, int64_t *q1, int64_t chunk) {
    if (pos)
        PC_N(maxsep_body)((const T *)x, (T *)out, pos, g, w, (T *)t0, (T *)t1, q0, q1, chunk, 1);
    else
        PC_N(maxsep_body)((const T *)x, (T *)out, pos, g, w, (T *)t0, (T *)t1, q0, q1, chunk, 0);
}

#undef T
#undef UT
#undef BETTER
#undef SBETTER
#undef PC_N
#undef PC_SUF
#undef PC_NAN_CHUNKS
#undef PC_T
#undef PC_UT
#undef PC_BETTER
#undef PC_SBETTER
#undef PC_NAN_FREE
