/*
 * Template: average pooling for one input -> output type: sums in float64, last axis first,
 * taps in order; one division; one rounding to the output type. Included once per instance
 * (kernels_isa.h) with these macros defined, and undefines them:
 *
 *   PC_SUF   name suffix of the instance (f32, f64, f32to64)
 *   PC_TI    the input element type; PC_TO the output element type
 *   PC_QUOT  quotient function (out, sum, dtab, rtab, n): out[i] = sum[i] / dtab[i], rounded
 *            once to PC_TO
 */
#define TI PC_TI
#define TO PC_TO
#define PC_N(f) PC_CAT(f, PC_SUF)

/* Border windows [o0, o1) of one row: valid taps in order (+0.0, see zinit). A real function,
 * as mw_brow (tmpl_maxsep.h) is. */
static __attribute__((noinline)) void PC_N(aw_brow)(const TI *restrict xr, double *restrict yr,
                                                    const ax_t *restrict A, int64_t o0, int64_t o1) {
    const int64_t s = A->s, d = A->d, pb = A->pb;
    const double zadd = A->zinit ? 0.0 : -0.0;
    for (int64_t o = o0; o < o1; o++) {
        const int64_t jl = A->jlo[o], jh = A->jhi[o], b0 = o * s - pb;
        double v = 0.0;
        if (jl < jh) {
            v = (double)xr[b0 + jl * d];
            for (int64_t j = jl + 1; j < jh; j++) v += (double)xr[b0 + j * d];
            v += zadd;
        }
        yr[o] = v;
    }
}

/* Rows of a W stage with kernel KK, stride SS and dilation DD (constants where the caller
 * passes constants: the function is always inlined). */
INLINE void PC_N(aw_rows)(const TI *restrict x, double *restrict y, int64_t rows, const ax_t *restrict A,
                          const double zadd, const int64_t KK, const int64_t SS, const int64_t DD) {
    const int64_t n = A->n, pb = A->pb, O = A->o, lo = A->lo, hi = A->hi;
    for (int64_t r = 0; r < rows; r++) {
        const TI *restrict xr = x + r * n;
        double *restrict yr = y + r * O;
        PC_N(aw_brow)(xr, yr, A, 0, lo);
        for (int64_t o = lo; o < hi; o++) {
            const int64_t b0 = o * SS - pb;
            double v = (double)xr[b0];
            PC_UNROLL
            for (int64_t j = 1; j < KK; j++) v += (double)xr[b0 + j * DD];
            yr[o] = v + zadd;
        }
        PC_N(aw_brow)(xr, yr, A, hi, O);
    }
}

INLINE void PC_N(aw)(const TI *restrict x, double *restrict y, int64_t rows,
                     const ax_t *restrict A) {
    const int64_t n = A->n, k = A->k, s = A->s, d = A->d, pb = A->pb, O = A->o;
    const int64_t lo = A->lo, hi = A->hi;
    /* x + (-0.0) == x for every x; x + (+0.0) turns -0.0 into +0.0 (see zinit). */
    const double zadd = A->zinit ? 0.0 : -0.0;
    if (s == 1 && k == 2) PC_N(aw_rows)(x, y, rows, A, zadd, 2, 1, d);
    else if (s == 1 && k == 3) PC_N(aw_rows)(x, y, rows, A, zadd, 3, 1, d);
    else if (s == 2 && k == 2 && d == 1) PC_N(aw_rows)(x, y, rows, A, zadd, 2, 2, 1);
    else if (s == 2 && k == 3 && d == 1) PC_N(aw_rows)(x, y, rows, A, zadd, 3, 2, 1);
    else if (hi - lo < 4) {
        for (int64_t r = 0; r < rows; r++) {
            const TI *restrict xr = x + r * n;
            double *restrict yr = y + r * O;
            PC_N(aw_brow)(xr, yr, A, 0, lo);
            for (int64_t o = lo; o < hi; o++) {
                const int64_t b0 = o * s - pb;
                double v = (double)xr[b0];
                for (int64_t j = 1; j < k; j++) v += (double)xr[b0 + j * d];
                yr[o] = v + zadd;
            }
            PC_N(aw_brow)(xr, yr, A, hi, O);
        }
    } else {
        for (int64_t r = 0; r < rows; r++) {
            const TI *restrict xr = x + r * n;
            double *restrict yr = y + r * O;
            PC_N(aw_brow)(xr, yr, A, 0, lo);
            for (int64_t o = lo; o < hi; o++) yr[o] = (double)xr[o * s - pb];
            for (int64_t j = 1; j < k; j++) {
                const int64_t off = j * d - pb;
                for (int64_t o = lo; o < hi; o++) yr[o] += (double)xr[off + o * s];
            }
            for (int64_t o = lo; o < hi; o++) yr[o] += zadd;
            PC_N(aw_brow)(xr, yr, A, hi, O);
        }
    }
}

INLINE void PC_N(ah)(const double *restrict x, double *restrict y, int64_t outer,
                     const ax_t *restrict A, int64_t inner) {
    const int64_t n = A->n, s = A->s, d = A->d, pb = A->pb, O = A->o;
    const double zadd = A->zinit ? 0.0 : -0.0;
    if (inner == 1) {
        for (int64_t u = 0; u < outer; u++) {
            const double *restrict xu = x + u * n;
            for (int64_t o = 0; o < O; o++) {
                const int64_t jl = A->jlo[o], jh = A->jhi[o], b0 = o * s - pb;
                double v = 0.0;
                if (jl < jh) {
                    v = xu[b0 + jl * d];
                    for (int64_t j = jl + 1; j < jh; j++) v += xu[b0 + j * d];
                    v += zadd;
                }
                y[u * O + o] = v;
            }
        }
        return;
    }
    for (int64_t u = 0; u < outer; u++) {
        for (int64_t o = 0; o < O; o++) {
            const int64_t jl = A->jlo[o], jh = A->jhi[o];
            double *restrict yo = y + (u * O + o) * inner;
            if (jl >= jh) {
                for (int64_t i = 0; i < inner; i++) yo[i] = 0.0;
                continue;
            }
            const double *restrict x0 = x + (u * n + o * s - pb + jl * d) * inner;
            const int64_t cnt = jh - jl, step = d * inner;
            if (cnt == 1) {
                for (int64_t i = 0; i < inner; i++) yo[i] = x0[i] + zadd;
            } else if (cnt == 2) {
                for (int64_t i = 0; i < inner; i++) yo[i] = (x0[i] + x0[i + step]) + zadd;
            } else if (cnt == 3) {
                for (int64_t i = 0; i < inner; i++)
                    yo[i] = ((x0[i] + x0[i + step]) + x0[i + 2 * step]) + zadd;
            } else {
                for (int64_t i = 0; i < inner; i++) yo[i] = x0[i];
                for (int64_t j = 1; j < cnt; j++) {
                    const double *restrict xj = x0 + j * step;
                    for (int64_t i = 0; i < inner; i++) yo[i] += xj[i];
                }
                for (int64_t i = 0; i < inner; i++) yo[i] += zadd;
            }
        }
    }
}

PC_ENTRY void PC_N(avg)(const void *xv, void *outv, const geo_t *g, const double *dtab, const double *rtab,
                      int zeros, double efill, double *t0, double *t1, int64_t chunk) {
    const TI *x = (const TI *)xv;
    TO *out = (TO *)outv;
    const int r = g->r;
    const int64_t po = g->plane_out;
    for (int64_t p = 0; p < g->nc; p += chunk) {
        if (poll_interrupt()) break;
        const int64_t np = (g->nc - p < chunk) ? g->nc - p : chunk;
        const double *src = NULL;
        double *dst = NULL;
        for (int i = r - 1; i >= 0; i--) {
            dst = (i & 1) ? t0 : t1;
            const int64_t outer = np * stage_outer(g, i);
            if (i == r - 1)
                PC_N(aw)(x + p * g->plane_in, dst, outer, &g->a[i]);
            else
                PC_N(ah)(src, dst, outer, &g->a[i], stage_inner(g, i));
            src = dst;
        }
        /* divided by the number of elements [ONNX-DIVISOR] */
        /* A zero divisor (no element counted) gives the empty_avg value instead. */
        TO *restrict yo = out + p * po;
        const double *restrict sum = dst;
        for (int64_t q = 0; q < np; q++) {
            PC_QUOT(yo + q * po, sum + q * po, dtab, rtab, po);
            if (zeros)
                for (int64_t i = 0; i < po; i++)
                    if (dtab[i] == 0.0) yo[q * po + i] = (TO)efill;
        }
    }
}

/* Global average pooling: one window per axis covering the whole axis (dilation 1, pb >= 0,
 * k - pb >= n), so each output is the mean of a whole plane of m elements. The plane is summed
 * in float64 in 8 interleaved partial sums (element i into sum i mod 8, each in order, from
 * -0.0, the identity of addition), combined pairwise, then +0.0 when the window reaches into
 * padding (as the zero-padded sum would). Any order of m float64 additions is within
 * (m - 1) 2^-53 sum|x| of the exact sum, the bound the NumPy engine's pairwise global sum also
 * meets (docs/benchmarks.md); the 8 lanes vectorise without reassociating anything (float32
 * inputs take the 16-lane avgglobal_f32x16 of fused_f32.h instead). */
PC_ENTRY void PC_N(avgglobal)(const void *xv, void *outv, int64_t nc, int64_t m, double div, double efill,
                            double zadd) {
    const TI *x = (const TI *)xv;
    TO *out = (TO *)outv;
    const int64_t m8 = m & ~(int64_t)7;
    for (int64_t p = 0; p < nc; p++) {
        if ((p & 1023) == 0 && poll_interrupt()) break;
        const TI *restrict xp = x + p * m;
        double acc[8] = {-0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0};
        for (int64_t i = 0; i < m8; i += 8)
            PC_UNROLL
            for (int j = 0; j < 8; j++) acc[j] += (double)xp[i + j];
        for (int64_t i = m8; i < m; i++) acc[i - m8] += (double)xp[i];
        const double sum = (((acc[0] + acc[4]) + (acc[2] + acc[6])) +
                            ((acc[1] + acc[5]) + (acc[3] + acc[7]))) + zadd;
        /* divided by the number of elements [ONNX-DIVISOR] */
        out[p] = div == 0.0 ? (TO)efill : (TO)(sum / div);
    }
}

#undef TI
#undef TO
#undef PC_N
#undef PC_SUF
#undef PC_TI
#undef PC_TO
#undef PC_QUOT
