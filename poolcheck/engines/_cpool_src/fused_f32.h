/*
 * Fused float32 kernels for the common 2-D and 3-D shapes (module.c says when each runs),
 * written once with the vector layer of simd.h and compiled per instruction-set path by
 * kernels_isa.h: PC_VL lanes of float32 (16 with AVX-512, 8 with AVX2, 4 on the baseline).
 * Values only. They do the staged path's operations in its order (last axis first, taps in
 * order), so the results have the same bits:
 *
 * Max: without NaN the three NaN policies are the same strict '>' first-wins scan, and
 * vf_max(b, v) computes exactly "b > v ? b : v" (a tie of +0.0 and -0.0 keeps the earlier,
 * as the scan does). NaN is watched for: a NaN among the taps sends the row (k3s2) through the
 * exact scalar code of its policy, or (strips, k2s2_3d) returns 1 and module.c runs the exact
 * staged path instead. Taps in the padding read as -inf: a strict '>' scan never takes a -inf
 * over a valid tap, and a window whose valid taps are all -inf gets -inf either way.
 *
 * Average: float64 sums, vectorised ACROSS windows (PC_SW windows per strip, simd.h; each lane
 * one window's own sequence of additions), so every sum has the bits of the staged path's.
 *
 * They replace a file of hand-written AVX-512 intrinsics that served the avx512 path only; the
 * timings of both are in the commit that made the change.
 */
#include "simd.h"

/* The run [*ohA, *ohB) of output rows whose H window is whole (KH rows, jlo 0): with stride 1
 * these are consecutive; the rows outside it are cut by the padding. */
INLINE void whole_rows(const ax_t *H, const int64_t KH, int64_t *ohA, int64_t *ohB) {
    int64_t a = 0;
    while (a < H->o && !(H->jlo[a] == 0 && H->jhi[a] == KH)) a++;
    int64_t b = a;
    while (b < H->o && H->jlo[b] == 0 && H->jhi[b] == KH) b++;
    *ohA = a;
    *ohB = b;
}

/* A border strip's view of tap j: its lanes [lo, hi) are inside the row, the others read
 * `fill` (vf_load_fill); at reads element e + j d of the row, wherever that is. */
typedef struct {
    int64_t lo[3], hi[3];
} lanes_t;

INLINE lanes_t strip_lanes(const int64_t e, const int64_t d, const int64_t n, const int64_t K, const int64_t L) {
    lanes_t m;
    for (int64_t j = 0; j < K; j++) {
        const int64_t a = e + j * d, lo = -a, hi = n - a;
        m.lo[j] = lo < 0 ? 0 : lo > L ? L : lo;
        m.hi[j] = hi < 0 ? 0 : hi > L ? L : hi;
    }
    return m;
}

/* xr + off without forming an out-of-range pointer arithmetically (off may be negative: the
 * lanes there are never read). */
INLINE const float *at(const float *xr, const int64_t off) {
    return (const float *)((uintptr_t)xr + (uintptr_t)(off * (int64_t)sizeof(float)));
}

/* ------------------------------------------------------------------------------------------ */
/* Max, two axes, stride 1 along both, windows of 2 or 3 along W and of 1 to 3 along H, any    */
/* dilations, no window without an element. Vertical strips of PC_VL output columns (the last */
/* one overlapping the one before when OW is not a multiple, recomputing equal values): each  */
/* input row's PC_VL window maxima are computed once and kept in registers for the KH output  */
/* rows that use them; each output row combines its rows in tap order. With H dilation d the  */
/* output rows are walked in d interleaved runs.                                              */

/* The maxima of the PC_VL windows from element e of one row (MASKED: lanes outside the row
 * read -inf). */
INLINE vf strip_max_row(const float *restrict xr, const int64_t e, const int64_t dw, const int64_t KW,
                        const int MASKED, const lanes_t *m, vi *restrict nanm) {
    const float ninf = -__builtin_inff();
    const vf t0 = MASKED ? vf_load_fill(at(xr, e), m->lo[0], m->hi[0], ninf) : vf_load(xr + e);
    const vf t1 = MASKED ? vf_load_fill(at(xr, e + dw), m->lo[1], m->hi[1], ninf) : vf_load(xr + e + dw);
    vf v = vf_max(t1, t0);
    vi u = vf_nan2(t0, t1);
    if (KW == 3) {
        const vf t2 = MASKED ? vf_load_fill(at(xr, e + 2 * dw), m->lo[2], m->hi[2], ninf) : vf_load(xr + e + 2 * dw);
        u |= vf_nan(t2);
        v = vf_max(t2, v);
    }
    *nanm |= u;
    return v;
}

/* One strip (output columns [o0, o0 + PC_VL)) of one plane; output rows [ohA, ohB) have whole
 * H windows (KH rows oh - pb + j dh), the others combine their valid rows afresh. */
INLINE void max2d_strip(const float *restrict xp, float *restrict yp, const geo_t *g, const int64_t o0,
                        const int MASKED, const int64_t KW, const int64_t KH, const int64_t ohA, const int64_t ohB,
                        vi *restrict nanm) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, OH = H->o, hpb = H->pb, dh = H->d, dw = W->d, e = o0 - W->pb;
    const lanes_t m = strip_lanes(e, dw, NW, KW, PC_VL);
    for (int64_t r = 0; r < dh && ohA + r < ohB; r++) { /* the whole windows, run by run */
        int64_t oh = ohA + r;
        if (KH == 1) {
            for (; oh < ohB; oh += dh)
                vf_store(yp + oh * OW + o0, strip_max_row(xp + (oh - hpb) * NW, e, dw, KW, MASKED, &m, nanm));
        } else if (KH == 2) {
            vf a = strip_max_row(xp + (oh - hpb) * NW, e, dw, KW, MASKED, &m, nanm);
            for (; oh < ohB; oh += dh) {
                const vf b = strip_max_row(xp + (oh - hpb + dh) * NW, e, dw, KW, MASKED, &m, nanm);
                vf_store(yp + oh * OW + o0, vf_max(b, a));
                a = b;
            }
        } else {
            vf a = strip_max_row(xp + (oh - hpb) * NW, e, dw, KW, MASKED, &m, nanm);
            vf b = strip_max_row(xp + (oh - hpb + dh) * NW, e, dw, KW, MASKED, &m, nanm);
            for (; oh < ohB; oh += dh) {
                const vf c = strip_max_row(xp + (oh - hpb + 2 * dh) * NW, e, dw, KW, MASKED, &m, nanm);
                vf_store(yp + oh * OW + o0, vf_max(c, vf_max(b, a)));
                a = b;
                b = c;
            }
        }
    }
    for (int64_t oh = 0; oh < OH; oh++) {
        if (oh == ohA) oh = ohB;
        if (oh >= OH) break;
        const int64_t jl = H->jlo[oh], cnt = H->jhi[oh] - jl, h0 = oh - hpb + jl * dh;
        vf v = strip_max_row(xp + h0 * NW, e, dw, KW, MASKED, &m, nanm);
        for (int64_t j = 1; j < cnt; j++)
            v = vf_max(strip_max_row(xp + (h0 + j * dh) * NW, e, dw, KW, MASKED, &m, nanm), v);
        vf_store(yp + oh * OW + o0, v);
    }
}

INLINE int max2d_strips_body(const float *restrict x, float *restrict out, const geo_t *g, const int64_t KW,
                             const int64_t KH) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, nc = g->nc, pin = g->plane_in, pout = g->plane_out;
    const int64_t reach = (KW - 1) * W->d + PC_VL; /* elements a strip's row reads from e */
    int64_t ohA, ohB;
    whole_rows(H, KH, &ohA, &ohB);
    for (int64_t p = 0; p < nc; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * pin;
        float *yp = out + p * pout;
        vi nanm = {0};
        for (int64_t s = 0; s < OW; s += PC_VL) {
            const int64_t o0 = s + PC_VL <= OW ? s : OW - PC_VL, e = o0 - W->pb;
            if (e >= 0 && e + reach <= NW) max2d_strip(xp, yp, g, o0, 0, KW, KH, ohA, ohB, &nanm);
            else max2d_strip(xp, yp, g, o0, 1, KW, KH, ohA, ohB, &nanm);
        }
        if (vi_any(nanm)) return 1;
    }
    return 0;
}

/* Values only; two axes, stride 1, W windows of 2 or 3 (rows of at least 16 windows), H windows
 * of 1 to 3, no window without an element (module.c). Returns 1 when a tap is NaN (module.c
 * then runs the staged kernels). */
PC_ENTRY int max2d_strips(const float *x, float *out, const geo_t *g) {
    const int64_t kw = g->a[1].k, kh = g->a[0].k;
    if (kw == 3) {
        if (kh == 3) return max2d_strips_body(x, out, g, 3, 3);
        if (kh == 2) return max2d_strips_body(x, out, g, 3, 2);
        return max2d_strips_body(x, out, g, 3, 1);
    }
    if (kh == 3) return max2d_strips_body(x, out, g, 2, 3);
    if (kh == 2) return max2d_strips_body(x, out, g, 2, 2);
    return max2d_strips_body(x, out, g, 2, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Average, two axes, float32 in and out, stride 1 and dilation 1 on both axes, windows of 2 or */
/* 3 along W and of 1 to 3 along H. The sums are the staged path's float64 sums in its order   */
/* (each W window's taps in order, then its zadd; each H window's row sums in order, then its  */
/* zadd). The plane is walked in vertical strips of PC_SW output columns (simd.h; the last one */
/* overlapping the one before): down a strip, each input row's PC_SW window sums are computed  */
/* once and kept in registers for the KH output rows that use them (avg2d_strip). With FMA     */
/* (PC_QFMA: the avx2 and avx512 paths) the rows of whole H windows divide by multiply-adds    */
/* (vd_quot_fma, exact) and add their rows on the multiply-add units (dsw_add_m).              */

/* The sums of windows [o0, o0 + PC_SW) of one input row: tap j is elements [e + j, e + j + PC_SW)
 * (e = o0 - pb). Elements outside the row read -0.0 (MASKED), the identity of addition
 * (x + -0.0 and -0.0 + x are x for every x), so a window's sum over them is the sum over its
 * valid taps in order.
 * wz: add the W axis's zadd; the caller skips it when it is -0.0 (x + -0.0 is x) and when the
 * H axis adds +0.0 at the end: +0.0
 * only turns a -0.0 partial sum into +0.0, which changes no later nonzero sum (x + y with x a
 * zero of either sign is y when y is nonzero), and every zero final sum becomes +0.0 by the H
 * axis's +0.0 either way, so the final sums have the same bits. A window with no valid tap
 * sums to -0.0 instead of the staged path's 0.0: the same argument when wz is 0; when wz is 1
 * its zadd is +0.0 (an axis with an empty window starts its sums from +0.0, see zinit). */
/* Tap j of a strip row, from element a: a masked load only when some lane is outside the row
 * (a border strip has one such tap per border; its other taps load plainly). */
INLINE dsw avg_strip_tap(const float *restrict xr, const int64_t a, const int64_t j, const int MASKED,
                         const lanes_t *m) {
    if (MASKED && (m->lo[j] != 0 || m->hi[j] != PC_SW)) return dsw_load_f32_fill(at(xr, a), m->lo[j], m->hi[j]);
    return dsw_load_f32(xr + a);
}

INLINE dsw avg_strip_row(const float *restrict xr, const int64_t e, const int64_t KW, const int MASKED,
                         const lanes_t *m, const int wz, const dsw zaddw) {
#if PC_VBYTES == 16
    /* Baseline: each element widened once, the taps formed by shufpd (W3 portable 0.70 -> 0.66
     * ms). With AVX2 (vperm2f128 + vshufpd) and AVX-512 (valignq) the shuffles cost more than
     * they save (W3 avx2 0.365 -> 0.39 ms), so those paths widen each tap from its own load. */
    if (!MASKED) {
        const dsw v = dsw_wsum_f32(xr + e, KW);
        return wz ? dsw_add(v, zaddw) : v;
    }
#endif
    dsw v = dsw_add(avg_strip_tap(xr, e, 0, MASKED, m), avg_strip_tap(xr, e + 1, 1, MASKED, m));
    if (KW == 3) v = dsw_add(v, avg_strip_tap(xr, e + 2, 2, MASKED, m));
    if (wz) v = dsw_add(v, zaddw);
    return v;
}

/* The divisors of a strip's whole rows (output rows [ohA, ohB)): the same in every such row (each
 * divisor is the product of an H count and a W count, module.c, and a whole H window counts KH
 * under every divisor rule). With FMA (PC_QFMA) they and their reciprocals stay in registers
 * and the rows divide by multiply-adds (dsw_quot_f32_fma). */
typedef struct {
    dsw d, r;
} wdiv_t;

INLINE wdiv_t whole_divisors(const double *restrict dt) {
    wdiv_t q;
    q.d = dsw_max1(dsw_load(dt));
#if PC_QFMA
    q.r = dsw_recip(q.d); /* RN(1/d): one division per lane and strip */
#else
    q.r = q.d;
#endif
    return q;
}

/* The row sums of input row h of a strip, or -0.0 (the identity of addition) for a row outside
 * the input (0 <= h < NH). */
INLINE dsw avg_strip_row_or_pad(const float *restrict xp, const int64_t h, const int64_t NH, const int64_t NW,
                                const int64_t e, const int64_t KW, const int MASKED, const lanes_t *m, const int wz,
                                const dsw zaddw) {
    if (h < 0 || h >= NH) return dsw_set1(-0.0);
    return avg_strip_row(xp + h * NW, e, KW, MASKED, m, wz, zaddw);
}

/* One strip (output columns [o0, o0 + PC_SW)) of one plane, walked down its output rows: each
 * input row's sums computed once, the last KH of them kept in registers (a, b, c), the rows
 * outside the input as -0.0. An output row's H sum adds its KH rows in tap order, so where some
 * row is outside the input it is the sum of the valid rows in order (-0.0 + x and x + -0.0 are
 * x), which is the staged path's sum; a window with no valid row sums to -0.0, and its axis
 * then adds +0.0 (hz: an axis with an empty window has zinit), as the staged path's 0.0 sum.
 * Output rows [ohA, ohB) (whole H windows) divide by q (whole_divisors), the others by their
 * dtab row. */
INLINE void avg2d_strip(const float *restrict xp, float *restrict yp, const geo_t *g, const double *restrict dtab,
                        const int64_t o0, const int MASKED, const int64_t KW, const int64_t KH, const int64_t ohA,
                        const int64_t ohB, const int wz, const dsw zaddw, const int hz, const dsw zadd) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, NH = H->n, OW = W->o, OH = H->o, hpb = H->pb, e = o0 - W->pb;
    const lanes_t m = strip_lanes(e, 1, NW, KW, PC_SW);
    const wdiv_t q = whole_divisors(dtab + (ohA < ohB ? ohA : 0) * OW + o0);
    /* the rows of output row 0 before its last one */
    dsw a = dsw_set1(-0.0), b = a;
    if (KH >= 2) a = avg_strip_row_or_pad(xp, -hpb, NH, NW, e, KW, MASKED, &m, wz, zaddw);
    if (KH == 3) b = avg_strip_row_or_pad(xp, 1 - hpb, NH, NW, e, KW, MASKED, &m, wz, zaddw);
    for (int64_t oh = 0; oh < OH; oh++) {
        if (oh == ohA) { /* the whole windows: every row inside the input, one divisor row */
            for (; oh < ohB; oh++) {
                const dsw c = avg_strip_row(xp + (oh - hpb + KH - 1) * NW, e, KW, MASKED, &m, wz, zaddw);
                /* the H sums in tap order, on the multiply-add units (dsw_add_m) */
                dsw v = KH == 1 ? c : KH == 2 ? dsw_add_m(a, c) : dsw_add_m(dsw_add_m(a, b), c);
                if (hz) v = dsw_add(v, zadd);
                /* divided by the number of elements [ONNX-DIVISOR] */
#if PC_QFMA
                dsw_quot_f32_fma(yp + oh * OW + o0, v, q.d, q.r);
#else
                dsw_quot_f32(yp + oh * OW + o0, v, q.d);
#endif
                if (KH == 3) a = b;
                b = c;
                if (KH == 2) a = c;
            }
            if (oh >= OH) break;
        }
        const dsw c = avg_strip_row_or_pad(xp, oh - hpb + KH - 1, NH, NW, e, KW, MASKED, &m, wz, zaddw);
        dsw v = KH == 1 ? c : KH == 2 ? dsw_add_m(a, c) : dsw_add_m(dsw_add_m(a, b), c);
        if (hz) v = dsw_add(v, zadd);
        /* divided by the number of elements [ONNX-DIVISOR] (a zero divisor: see dsw_max1) */
        dsw_quot_f32(yp + oh * OW + o0, v, dsw_max1(dsw_load(dtab + oh * OW + o0)));
        if (KH == 3) a = b;
        b = c;
        if (KH == 2) a = c;
    }
}

#if PC_QFMA
/* The multiply-add quotient (vd_quot_fma) is exact for finite sums only; an infinite one gives
 * NaN, and only through inf - inf in its remainder, an invalid operation, which sets the
 * sticky IE flag of MXCSR (bit 0; a NaN sum gives NaN as the division does, its payload aside,
 * as docs/benchmarks.md allows). So the kernel clears IE, runs, and returns 1 as soon as a
 * plane has set it (module.c then runs the staged kernels, which handle infinite sums), and
 * leaves IE as it found it. IE is also set by inf - inf or a signalling NaN among the taps:
 * then the staged kernels run needlessly, with the same result. This costs nothing per output,
 * where a test of the quotients cost 10% of W3 (avx2). With the invalid-operation exception
 * unmasked (IM, bit 7, clear: inf - inf would trap) the staged kernels run. The flag is read
 * after a compiler barrier, so every quotient of the plane is stored before it. */
#define PC_MXCSR_IE 0x1u
#define PC_MXCSR_IM 0x80u
INLINE unsigned mxcsr_get(void) {
    __asm__ volatile("" ::: "memory");
    return _mm_getcsr();
}
#endif

INLINE int avg2d_strips_body(const float *restrict x, float *restrict out, const geo_t *g,
                             const double *restrict dtab, const int zeros, const double efill, const int64_t KW,
                             const int64_t KH) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, nc = g->nc, pin = g->plane_in, pout = g->plane_out;
    int64_t ohA, ohB;
    whole_rows(H, KH, &ohA, &ohB);
#if PC_QFMA
    const unsigned csr = mxcsr_get();
    if (!(csr & PC_MXCSR_IM)) return 1;
    _mm_setcsr(csr & ~PC_MXCSR_IE);
#endif
    /* the zadd of an axis whose zinit is 0 is -0.0: no addition (x + -0.0 is x for every x) */
    const int wz = !H->zinit && W->zinit, hz = H->zinit;
    const dsw zaddw = dsw_set1(W->zinit ? 0.0 : -0.0), zadd = dsw_set1(H->zinit ? 0.0 : -0.0);
    int staged = 0;
    for (int64_t p = 0; p < nc; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * pin;
        float *yp = out + p * pout;
        for (int64_t s = 0; s < OW; s += PC_SW) {
            const int64_t o0 = s + PC_SW <= OW ? s : OW - PC_SW, e = o0 - W->pb;
            if (e >= 0 && e + PC_SW - 1 + KW <= NW) avg2d_strip(xp, yp, g, dtab, o0, 0, KW, KH, ohA, ohB, wz, zaddw, hz, zadd);
            else avg2d_strip(xp, yp, g, dtab, o0, 1, KW, KH, ohA, ohB, wz, zaddw, hz, zadd);
        }
#if PC_QFMA
        if (mxcsr_get() & PC_MXCSR_IE) {
            staged = 1;
            break;
        }
#endif
        /* A zero divisor (no element counted) gives the empty_avg value instead. */
        if (zeros)
            for (int64_t i = 0; i < pout; i++)
                if (dtab[i] == 0.0) yp[i] = (float)efill;
    }
#if PC_QFMA
    _mm_setcsr((mxcsr_get() & ~PC_MXCSR_IE) | (csr & PC_MXCSR_IE));
#endif
    return staged;
}

/* float32 average, two axes, stride 1 and dilation 1 on both, W windows of 2 or 3 with rows
 * of at least 8 windows, H windows of 1 to 3 (module.c). Returns 1 when module.c must run the
 * staged kernels instead (with FMA: a sum that is not finite, see PC_MXCSR_IE), else 0. */
PC_ENTRY int avg2d_strips(const float *x, float *out, const geo_t *g, const double *dtab, int zeros,
                          double efill) {
    const int64_t kw = g->a[1].k, kh = g->a[0].k;
    if (kw == 3) {
        if (kh == 3) return avg2d_strips_body(x, out, g, dtab, zeros, efill, 3, 3);
        if (kh == 2) return avg2d_strips_body(x, out, g, dtab, zeros, efill, 3, 2);
        return avg2d_strips_body(x, out, g, dtab, zeros, efill, 3, 1);
    }
    if (kh == 3) return avg2d_strips_body(x, out, g, dtab, zeros, efill, 2, 3);
    if (kh == 2) return avg2d_strips_body(x, out, g, dtab, zeros, efill, 2, 2);
    return avg2d_strips_body(x, out, g, dtab, zeros, efill, 2, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Max, three axes, windows of 2 with stride 2 and dilation 1 along every axis, every window   */
/* whole (module.c checks): each output row reads its four input rows once and writes once.   */
/* Per PC_VL outputs and input row: two loads, the even and odd taps, and vf_max(odd, even),   */
/* the staged W stage's first-wins scan; then the H pairs and the D pair in the staged order,  */
/* each vf_max(later, earlier). Returns 1 at the first NaN (module.c then runs the staged path). */
INLINE vf pairmax(const float *restrict p, vi *restrict nanm) {
    const vf a = vf_load(p), b = vf_load(p + PC_VL);
    *nanm |= vf_nan2(a, b);
    return vf_max(vf_odds(a, b), vf_evens(a, b));
}

PC_ENTRY int max3d_k2s2(const float *x, float *out, const geo_t *g) {
    const ax_t *D = &g->a[0], *H = &g->a[1], *W = &g->a[2];
    const int64_t NH = H->n, NW = W->n, OD = D->o, OH = H->o, OW = W->o;
    vi nanm = {0};
    for (int64_t p = 0; p < g->nc; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * g->plane_in;
        float *yp = out + p * g->plane_out;
        for (int64_t od = 0; od < OD; od++) {
            for (int64_t oh = 0; oh < OH; oh++) {
                const float *r00 = xp + ((2 * od) * NH + 2 * oh) * NW, *r01 = r00 + NW;
                const float *r10 = r00 + NH * NW, *r11 = r10 + NW;
                float *yo = yp + (od * OH + oh) * OW;
                for (int64_t o0 = 0;; o0 += PC_VL) {
                    if (o0 > OW - PC_VL) o0 = OW - PC_VL; /* overlap: recomputes equal values */
                    const int64_t e = 2 * o0;
                    const vf m0 = vf_max(pairmax(r01 + e, &nanm), pairmax(r00 + e, &nanm));
                    const vf m1 = vf_max(pairmax(r11 + e, &nanm), pairmax(r10 + e, &nanm));
                    vf_store(yo + o0, vf_max(m1, m0));
                    if (o0 == OW - PC_VL) break;
                }
            }
            if (vi_any(nanm)) return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Max, two axes, values only, windows of 3 with stride 2 and dilation 1 along W. Each input   */
/* row is reduced along W once (PC_VL windows from two loads: the taps 2o, 2o + 1, 2o + 2 of  */
/* the block by two deinterleaving shuffles and a one-lane shift), then each output row       */
/* combines its rows' maxima in tap order: the staged path's operations in its order, without */
/* its plane-sized intermediates. With H windows of 3, stride 2 and dilation 1 (the common     */
/* stem layer) each whole output row is one pass over its blocks: rows 2oh - pb + 1 and        */
/* 2oh - pb + 2 reduced in registers, row 2oh - pb read back from the ring, where the pass     */
/* leaves row 2oh - pb + 2 for the next output row. Other H geometries go row by row through  */
/* a ring of reduced rows that stays in L1.                                                   */

/* The maxima of the PC_VL windows whose taps are p[2i], p[2i + 1], p[2i + 2], in tap order.
 * HEAD: p[0 .. pb) (pb <= 2) lie before the row and read -inf (a strict '>' scan never takes
 * a -inf over a valid tap, and a window whose valid taps are all -inf gets -inf either way).
 * NaN among p[0 .. 2 PC_VL) is or-ed into *nanm; p[2 PC_VL] is the next block's p[0], or the
 * row's last tap, which the caller checks. */
INLINE vf k3s2_block(const float *restrict p, const int HEAD, const int64_t pb, vi *restrict nanm) {
    const vf a = HEAD ? vf_load_fill(p, pb, PC_VL, -__builtin_inff()) : vf_load(p), b = vf_load(p + PC_VL);
    *nanm |= vf_nan2(a, b);
    const vf t0 = vf_evens(a, b), t1 = vf_odds(a, b), t2 = vf_shift_in(t0, p[2 * PC_VL]);
    return vf_max(t2, vf_max(t1, t0));
}

/* Whether k3s2_row reduces every window of a W axis by blocks: window 0 reaches at most 2
 * elements before the row, none reaches past it. */
INLINE int k3s2_vector_row(const ax_t *A) { return A->hi == A->o && (A->lo == 0 || A->pb <= 2); }

/* One input row -> its O window maxima: the windows [vlo, hi) by blocks (vlo 0 when only
 * window 0 reaches before the row, by at most 2 elements: the first block reads those as
 * -inf), the last block overlapping the one before (recomputing equal values), the other
 * border windows by the exact scalar scan of the policy. Any NaN among the blocks' taps sends
 * the whole row through that scan. Returns whether any result may be NaN. */
/* (Not inlined, as k3s2_pass: one call per row, and one copy instead of one per call site
 * and NaN policy, which saves about a second of compile time per path.) */
static __attribute__((noinline)) int k3s2_row(const float *restrict xr, float *restrict yr, const ax_t *restrict A,
                                              const int ign) {
    const int64_t lo = A->lo, hi = A->hi, O = A->o, pb = A->pb;
    const int head = lo > 0 && pb <= 2;
    const int64_t vlo = head ? 0 : lo;
    if (hi - vlo >= PC_VL) {
        vi nanm = {0};
        vf_store(yr + vlo, k3s2_block(at(xr, 2 * vlo - pb), head, pb, &nanm));
        for (int64_t o0 = vlo + PC_VL; o0 < hi; o0 += PC_VL) {
            if (o0 > hi - PC_VL) o0 = hi - PC_VL;
            vf_store(yr + o0, k3s2_block(xr + 2 * o0 - pb, 0, pb, &nanm));
        }
        const float last = xr[2 * hi - pb];
        if (__builtin_expect(!vi_any(nanm) && last == last, 1)) {
            int nan = 0;
            for (int part = 0; part < 2; part++) { /* the border windows [0, vlo) and [hi, O) */
                const int64_t u0 = part ? hi : 0, u1 = part ? O : vlo;
                if (u1 <= u0) continue;
                if (ign) mw_brow_f32i(xr, yr, NULL, A, 0, 0, u0, u1);
                else mw_brow_f32p(xr, yr, NULL, A, 0, 0, u0, u1);
                for (int64_t o = u0; o < u1; o++) nan |= yr[o] != yr[o];
            }
            return nan;
        }
    }
    /* a NaN among the blocks' taps, or a short row: the whole row by the exact scan */
    if (ign) mw_brow_f32i(xr, yr, NULL, A, 0, 0, 0, O);
    else mw_brow_f32p(xr, yr, NULL, A, 0, 0, 0, O);
    int nan = 0;
    for (int64_t o = 0; o < O; o++) nan |= yr[o] != yr[o];
    return nan;
}

/* One output row from its CNT ring rows (CNT constant, 0: cnt) in tap order: vectorised when
 * none of them may hold a NaN, else the exact scalar scan of the policy. */
INLINE void k3s2_combine(const float *restrict ring, const int64_t RS, const int64_t *restrict sl,
                         float *restrict yo, const int64_t OW, const int64_t CNT, const int64_t cnt, const int nan,
                         const int ign) {
    const int64_t c = CNT ? CNT : cnt;
    if (!nan) {
        /* the first three rows hoisted out of the block loop */
        const float *r0 = ring + sl[0] * RS, *r1 = ring + sl[c > 1 ? 1 : 0] * RS, *r2 = ring + sl[c > 2 ? 2 : 0] * RS;
        for (int64_t i0 = 0;; i0 += PC_VL) {
            if (i0 > OW - PC_VL) i0 = OW - PC_VL; /* overlap: recomputes equal values */
            vf v = vf_load(r0 + i0);
            if (c > 1) v = vf_max(vf_load(r1 + i0), v);
            if (c > 2) v = vf_max(vf_load(r2 + i0), v);
            for (int64_t j = 3; j < c; j++) v = vf_max(vf_load(ring + sl[j] * RS + i0), v);
            vf_store(yo + i0, v);
            if (i0 == OW - PC_VL) break;
        }
        return;
    }
    for (int64_t i = 0; i < OW; i++) {
        float bv = ring[sl[0] * RS + i];
        for (int64_t j = 1; j < c; j++) {
            const float b = ring[sl[j] * RS + i];
            const int bt = ign ? SBETTER_IGN(b, bv) : SBETTER_PROP(b, bv);
            bv = bt ? b : bv;
        }
        yo[i] = bv;
    }
}

/* One whole output row of an H axis of windows 3, stride 2, dilation 1, in one pass: x1, x2
 * the input rows of its taps 1 and 2, m0 the maxima of its tap 0 (a ring row without NaN);
 * m2 receives row x2's maxima. Returns 1, having written garbage, when a tap of x1 or x2 is
 * NaN (the caller then takes the row by the exact path). */
static __attribute__((noinline)) int k3s2_pass(const float *restrict x1, const float *restrict x2,
                                               const float *restrict m0, float *restrict m2, float *restrict yo,
                                               const ax_t *restrict W) {
    const int64_t O = W->o, pb = W->pb;
    const int head = W->lo > 0;
    vi nanm = {0};
    vf b1 = k3s2_block(at(x1, -pb), head, pb, &nanm), b2 = k3s2_block(at(x2, -pb), head, pb, &nanm);
    vf_store(m2, b2);
    vf_store(yo, vf_max(b2, vf_max(b1, vf_load(m0))));
    for (int64_t o0 = PC_VL; o0 < O; o0 += PC_VL) {
        if (o0 > O - PC_VL) o0 = O - PC_VL; /* overlap: recomputes equal values */
        b1 = k3s2_block(x1 + 2 * o0 - pb, 0, pb, &nanm);
        b2 = k3s2_block(x2 + 2 * o0 - pb, 0, pb, &nanm);
        vf_store(m2 + o0, b2);
        vf_store(yo + o0, vf_max(b2, vf_max(b1, vf_load(m0 + o0))));
    }
    const float l1 = x1[2 * O - pb], l2 = x2[2 * O - pb];
    return vi_any(nanm) || l1 != l1 || l2 != l2;
}

INLINE void max2d_k3s2_body(const float *restrict x, float *restrict out, const geo_t *g, float *restrict ring,
                            int64_t *restrict tags, int64_t *restrict sl, const int ign) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, OH = H->o;
    const int64_t R = ring_rows(H), RS = (OW + 15) & ~(int64_t)15;
    /* the geometry in locals: the stores to the slot tables may alias it */
    const int64_t hs = H->s, hpb = H->pb, hd = H->d, nc_ = g->nc, pin = g->plane_in, pout = g->plane_out;
    const int64_t *jlo = H->jlo, *jhi = H->jhi;
    int64_t *restrict snan = tags + R; /* per slot: its row's maxima may hold a NaN */
    /* the one-pass rows [ohA, ohB) (k3s2_pass) */
    int64_t ohA = 0, ohB = 0;
    if (H->k == 3 && hs == 2 && hd == 1 && k3s2_vector_row(W)) {
        ohA = 0;
        while (ohA < OH && !(jlo[ohA] == 0 && jhi[ohA] == 3)) ohA++;
        ohB = ohA;
        while (ohB < OH && jlo[ohB] == 0 && jhi[ohB] == 3) ohB++;
    }
    for (int64_t p = 0; p < nc_; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * pin;
        for (int64_t r = 0; r < R; r++) tags[r] = -1;
        for (int64_t oh = 0; oh < OH; oh++) {
            const int64_t jl = jlo[oh], cnt = jhi[oh] > jl ? jhi[oh] - jl : 0;
            float *restrict yo = out + p * pout + oh * OW;
            if (cnt == 0) { /* no element: filled at the end */
                memset(yo, 0, (size_t)OW * sizeof(float));
                continue;
            }
            const int64_t h0 = oh * hs - hpb + jl * hd;
            if (oh >= ohA && oh < ohB) {
                const int64_t s0 = h0 & (R - 1), s2 = (h0 + 2) & (R - 1);
                if (tags[s0] != h0) {
                    snan[s0] = k3s2_row(xp + h0 * NW, ring + s0 * RS, W, ign);
                    tags[s0] = h0;
                }
                if (!snan[s0] && !k3s2_pass(xp + (h0 + 1) * NW, xp + (h0 + 2) * NW, ring + s0 * RS, ring + s2 * RS,
                                            yo, W)) {
                    tags[s2] = h0 + 2;
                    snan[s2] = 0;
                    continue;
                }
                tags[s2] = -1; /* written over: the row below reduces it again */
            }
            int nan = 0;
            for (int64_t j = 0; j < cnt; j++) {
                const int64_t h = h0 + j * hd, slot = h & (R - 1);
                if (tags[slot] != h) {
                    snan[slot] = k3s2_row(xp + h * NW, ring + slot * RS, W, ign);
                    tags[slot] = h;
                }
                nan |= (int)snan[slot];
                sl[j] = slot;
            }
            if (cnt == 3) k3s2_combine(ring, RS, sl, yo, OW, 3, cnt, nan, ign);
            else if (cnt == 2) k3s2_combine(ring, RS, sl, yo, OW, 2, cnt, nan, ign);
            else k3s2_combine(ring, RS, sl, yo, OW, 0, cnt, nan, ign);
        }
    }
}

/* Values only; W windows of 3, stride 2, dilation 1; rows of at least 16 windows (module.c).
 * ring: ring_rows(H) rows of OW rounded up to 16; tags: 2 ring_rows(H); sl: k_h slots. */
PC_ENTRY void max2d_k3s2(const float *x, float *out, const geo_t *g, float *ring, int64_t *tags, int64_t *sl,
                         int ign) {
    if (ign) max2d_k3s2_body(x, out, g, ring, tags, sl, 1);
    else max2d_k3s2_body(x, out, g, ring, tags, sl, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Global average pooling, float32: each plane summed in 16 interleaved float64 lanes (two     */
/* d8, from -0.0) reduced by halves, then the last m mod 16 elements summed in order; any     */
/* order of the additions is within the documented bound (see avgglobal in tmpl_avg.h). The   */
/* same operations on every path, so every path gives the same bits.                          */
PC_ENTRY void avgglobal_f32x16(const void *xv, void *outv, int64_t nc, int64_t m, double div, double efill,
                               double zadd) {
    const float *x = (const float *)xv;
    float *out = (float *)outv;
    const int64_t m16 = m & ~(int64_t)15;
    for (int64_t p = 0; p < nc; p++) {
        if ((p & 1023) == 0 && poll_interrupt()) break;
        const float *restrict xp = x + p * m;
        d8 a0 = d8_set1(-0.0), a1 = a0;
        for (int64_t i = 0; i < m16; i += 16) {
            a0 = d8_add(a0, d8_load_f32(xp + i));
            a1 = d8_add(a1, d8_load_f32(xp + i + 8));
        }
        double tail = -0.0; /* the last m mod 16 elements, in order */
        for (int64_t i = m16; i < m; i++) tail += (double)xp[i];
        const d8 s = d8_add(a0, a1); /* then halves */
        const double h0 = d8_lane(s, 0) + d8_lane(s, 4), h1 = d8_lane(s, 1) + d8_lane(s, 5);
        const double h2 = d8_lane(s, 2) + d8_lane(s, 6), h3 = d8_lane(s, 3) + d8_lane(s, 7);
        const double sum = (((h0 + h2) + (h1 + h3)) + tail) + zadd;
        /* divided by the number of elements [ONNX-DIVISOR] */
        out[p] = div == 0.0 ? (float)efill : (float)(sum / div);
    }
}
