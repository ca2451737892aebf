/*
 * AVX-512 versions of float32 kernels (max pooling, averages), kept where they beat the portable kernels
 * (x86-64-v3 clones) by at least 20%, measured side by side in one process with
 * _cpool._set_avx512 (AMD EPYC, single thread, medians of 5 alternating rounds):
 *
 *   kept     max 2-D k3 s2 p1 + int64 indices (fused ring kernel)      0.41 vs 0.68 ms  +40%
 *            max 2-D k3 d2 s1 p2 + indices                             1.14 vs 2.02 ms  +44%
 *            max 3-D k2 s2 + indices (staged W and H stages)            2.9 vs 33 ms    +91%
 *            max 1-D k4 s4, values only                                0.21 vs 0.30 ms  +28%
 *            max 1-D k4 s4 + indices / k5 s2 + indices                  +66% / +82%
 *            global average, float32 (16 float64 lanes; W2)            0.0195 vs 0.0255 ms +23%
 *            max 2-D k3 s2 values only (fused k3 s2 kernel; W1)         0.164 vs 0.217 ms  +32%
 *              (+35% to +64% in other rounds)
 *            average 2-D k3 s1 p1, float32 (strip kernel, float64 sums; W3) 0.358 vs 0.730 ms +104%
 *            max 3-D k2 s2 values only, fused, whole windows (W4)       0.63 vs 1.17 ms  +85%
 *              (measured against the staged portable path, alternating in one process)
 *            max 2-D stride 1 values only, strips (W6: k3 d2 s1 p2)     0.211 vs 0.370 ms +75%
 *   dropped  max 2-D values only, generic ring kernel (k3 s2 p1, k3 d2 s1 p2) 37% slower / level
 *            max 3-D k2 s2 values only, staged W and H stages            15-35% slower
 *            max 2-D stride 1 values only, fused ring (W6: k3 d2 s1 p2)  0.31 vs 0.35 ms  +14%
 *              (+14% in three quiet rounds; non-temporal stores for its output rows 5% slower;
 *              the strips above replace it)
 *            max 1-D k3 s1 p1 values only                              18% slower
 *            the other average kernels: an earlier fused 2-D (W3 8-25% slower), staged
 *            1-D/3-D and stride-2 (within +-10%, no consistent gain); a fused 2-D ring of
 *            float64 row sums for W3 (0.43 vs 0.73 ms, +70%: replaced by the strips, 18% faster
 *            in a C harness); FMA quotients in the strips (7% slower than vdivpd), two strips
 *            at once (3% slower), prefetching the next plane (4% slower)
 *
 * The stride is a compile-time constant (1, 2, and 4 with windows of 4), the kernel size a
 * run-time value: constant kernel sizes measured no faster and doubled the compile time.
 * The scalar border and NaN paths are the portable kernels' own code.
 */
#include "kernels.h"

#if POOLCHECK_AVX512
/* The portable kernels' scalar border rows (mw_brow_f32p, mw_brow_f32i). */
#define PC_BORDER_ONLY
#define PC_SUF f32p
#define PC_T float
#define PC_UT uint32_t
#define PC_BETTER BETTER_PROP
#define PC_SBETTER SBETTER_PROP
#include "tmpl_maxsep.h"
#define PC_SUF f32i
#define PC_T float
#define PC_UT uint32_t
#define PC_BETTER BETTER_IGN
#define PC_SBETTER SBETTER_IGN
#include "tmpl_maxsep.h"
#undef PC_BORDER_ONLY
#endif

/* ------------------------------------------------------------------------------------------ */
/* AVX-512 kernels for float32, chosen at run time when the CPU has AVX-512 F/BW/VL/DQ.        */
/*                                                                                            */
/* Blocks of 16 outputs. Every load is masked to the taps of the active windows, so the tail  */
/* block needs no scalar epilogue and nothing past a window is ever read. Stride 1 loads      */
/* directly, stride 2 deinterleaves two loads with vpermt2ps, other strides gather.           */
/* Max: without NaN the three NaN policies are the same strict '>' first-wins scan, and       */
/* vmaxps(b, v) computes exactly "b > v ? b : v"; a block whose taps hold a NaN is redone by  */
/* the exact scalar code of its policy.                                                       */

#if POOLCHECK_AVX512
#include <immintrin.h>
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

int cpu_has_avx512(void) {
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

/* Stride is a compile-time constant for 1 and 2 (and windows of 4 with stride 4, which
 * deinterleave); the kernel size stays a run-time value: constant kernel sizes measured no
 * faster and multiplied the compile time. */
#define MW512_CASES(WP, IGN)                                                                     \
    if (s == 1) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 1, 0);                                \
    else if (s == 2) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 2, 0);                           \
    else if (s == 4 && k == 4) mw512_rows(x, y, py, rows, A, wa, WP, IGN, 4, 4);                 \
    else mw512_rows(x, y, py, rows, A, wa, WP, IGN, s, 0);

/* W stage of max pooling, float32 (propagate or ignore). */
T512 __attribute__((noinline)) static void mw_f32_512(const float *restrict x, float *restrict y, int64_t *restrict py,
                            int64_t rows, const ax_t *restrict A, int64_t wa, int withpos, int ign) {
    const int64_t k = A->k, s = A->s;
    if (!withpos) {
        /* Values only: module.c comes here only for windows of 4 with stride 4 (the one
         * values-only shape measured faster than the portable kernel). */
        if (!ign) mw512_rows(x, y, py, rows, A, wa, 0, 0, 4, 4);
        else mw512_rows(x, y, py, rows, A, wa, 0, 1, 4, 4);
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
    (void)withpos; /* module.c comes here only with positions (rank 1 values-only has no H stage) */
    if (!ign) mh512_stage(x, y, px, py, outer, A, inner, wa, 1, 0);
    else mh512_stage(x, y, px, py, outer, A, inner, wa, 1, 1);
}

T512 void maxsep_f32_512(const float *x, float *out, int64_t *pos, const geo_t *g,
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

/* ------------------------------------------------------------------------------------------ */
/* Two spatial axes, fused (float32, AVX-512). Each input row is reduced along W once, into a  */
/* ring of (k_h - 1) d_h + 1 rows that stays in L1; each output row then combines its ring     */
/* rows in tap order and is stored at once.                                                   */
/* The same operations in the same order as the staged path, without its plane-sized          */
/* intermediates.                                                                              */


/* ROWS_IN_ORDER: with H stride 1 every input row is a tap of some output row, and the last row
 * an output row needs, h0 + (cnt - 1) d, never decreases; reducing the rows up to it in order,
 * each once, keeps every row an output row needs in the ring (its rows span at most
 * (k - 1) d + 1 <= R rows, the last one the newest), so the fused kernels need no ring tags
 * there (their lookup measured 12% slower in an earlier ring kernel for W3). Other strides
 * look the rows up by tag. */

/* The rows output row oh needs into the ring: those not there yet are reduced by REDUCE(h, slot)
 * (ROWS_IN_ORDER, or looked up by tag); sl[j] is the slot of its row j, for j < cnt, and
 * USE(j, h, slot) runs for each in the same loop. Reads in_order, h0 (its first row), cnt, hd,
 * R, hdone, tags and sl from the kernel's scope. */
#define RING_FETCH(REDUCE, USE)                                                                    \
    do {                                                                                           \
        if (in_order) {                                                                            \
            for (const int64_t hl_ = h0 + (cnt - 1) * hd; hdone < hl_;) {                          \
                hdone++;                                                                           \
                REDUCE(hdone, hdone & (R - 1));                                                    \
            }                                                                                      \
            for (int64_t j_ = 0; j_ < cnt; j_++) {                                                 \
                const int64_t h_ = h0 + j_ * hd, slot_ = h_ & (R - 1);                             \
                sl[j_] = slot_;                                                                    \
                USE(j_, h_, slot_);                                                                \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t j_ = 0; j_ < cnt; j_++) {                                                 \
                const int64_t h_ = h0 + j_ * hd, slot_ = h_ & (R - 1);                             \
                if (tags[slot_] != h_) {                                                           \
                    REDUCE(h_, slot_);                                                             \
                    tags[slot_] = h_;                                                              \
                }                                                                                  \
                sl[j_] = slot_;                                                                    \
                USE(j_, h_, slot_);                                                                \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* One output row of a fused max, with the row count (2, 3, other) and whether a NaN was seen
 * made compile-time constants, so each of the six combinations is its own specialised loop. */
#define MAX2D_ROWS_BY_COUNT(ring, qring, RS, sl, hrow, yo, qo, OW, cnt, wh, withpos, ign, nc)       \
    do {                                                                                           \
        if (nc) {                                                                                  \
            if ((cnt) == 2) max2d_512_row(ring, qring, RS, sl, hrow, yo, qo, OW, 2, cnt, wh, withpos, ign, 1); \
            else if ((cnt) == 3) max2d_512_row(ring, qring, RS, sl, hrow, yo, qo, OW, 3, cnt, wh, withpos, ign, 1); \
            else max2d_512_row(ring, qring, RS, sl, hrow, yo, qo, OW, 0, cnt, wh, withpos, ign, 1); \
        } else {                                                                                   \
            if ((cnt) == 2) max2d_512_row(ring, qring, RS, sl, hrow, yo, qo, OW, 2, cnt, wh, withpos, ign, 0); \
            else if ((cnt) == 3) max2d_512_row(ring, qring, RS, sl, hrow, yo, qo, OW, 3, cnt, wh, withpos, ign, 0); \
            else max2d_512_row(ring, qring, RS, sl, hrow, yo, qo, OW, 0, cnt, wh, withpos, ign, 0); \
        }                                                                                          \
    } while (0)

/* One block of 16 windows [i0, i0 + m) of max2d_512_row (km: its lanes; the rows rp/qp/wj
 * hoisted by the caller). */
T512 static inline __attribute__((always_inline)) void max2d_512_block(
    const float *restrict ring, const int64_t *restrict qring, int64_t RS, const int64_t *restrict sl,
    const int64_t *restrict hrow, float *restrict yo, int64_t *restrict qo, const float *const *rp,
    const int64_t *const *qp, const int64_t *wj, const int64_t c, int64_t wh, const int withpos,
    const int ign, const int NC, const int64_t i0, const int64_t m, const __mmask16 km) {
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
            return;
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
            return;
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
    /* Whole blocks unmasked, then one ending at OW that overlaps the last (recomputing equal
     * values); a row of fewer than 16 windows is one masked block. */
#define ROW_BLOCK(I0, M, KM) \
    max2d_512_block(ring, qring, RS, sl, hrow, yo, qo, rp, qp, wj, c, wh, withpos, ign, NC, (I0), (M), (KM))
    if (OW >= 16) {
        int64_t i0 = 0;
        for (; i0 + 16 <= OW; i0 += 16) ROW_BLOCK(i0, 16, (__mmask16)0xFFFF);
        if (i0 < OW) ROW_BLOCK(OW - 16, 16, (__mmask16)0xFFFF);
    } else {
        ROW_BLOCK(0, OW, lanes16(OW));
    }
#undef ROW_BLOCK
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
            MAX2D_ROWS_BY_COUNT(ring, qring, RS, sl, hrow, yo, qo, OW, cnt, w[0], withpos, ign, nc);
        }
    }
}

T512 void max2d_512(const float *x, float *out, int64_t *pos, const geo_t *g, const int64_t *w,
                           float *ring, int64_t *qring, int64_t *tags, int64_t *hrow, int64_t *sl, int ign) {
    const int64_t s = g->a[1].s, k = g->a[1].k;
#define MAX2D(WP, IG, S, K) max2d_512_body(x, out, pos, g, w, ring, qring, tags, hrow, sl, WP, IG, S, K)
#define MAX2D_CASES(WP, IG)                                                                     \
    if (s == 1) MAX2D(WP, IG, 1, 0);                                                            \
    else if (s == 2) MAX2D(WP, IG, 2, 0);                                                       \
    else if (s == 4 && k == 4) MAX2D(WP, IG, 4, 4);                                             \
    else MAX2D(WP, IG, s, 0);
    /* With positions only: values only, windows of 3 with stride 2 have max2d_k3s2_512; other
     * values-only 2-D pooling is faster in the portable kernels. */
    if (!ign) { MAX2D_CASES(1, 0) } else { MAX2D_CASES(1, 1) }
#undef MAX2D_CASES
#undef MAX2D
}
/* ------------------------------------------------------------------------------------------ */
/* Two spatial axes, fused, values only, windows of 3 with stride 2 along W (float32 max).    */
/* Each input row is reduced along W once into the ring (16 windows from four loads and three */
/* vpermt2ps: the taps 2o, 2o + 1, 2o + 2 of the block), then each output row combines its    */
/* ring rows in tap order (max2d_512_row): the staged path's operations in its order, W first */
/* (ties between +0.0 and -0.0 resolve as in the row-major scan).                             */

/* One input row -> its OW window maxima, blocks of 16 windows. When the first windows reach
 * at most 2 elements before the row, the first block loads them masked, the missing taps read
 * as -inf: a strict '>' scan never takes a -inf over a valid tap, and a window whose valid
 * taps are all -inf gets -inf either way (the same bits). Any NaN in the row sends the whole
 * row through the exact scalar code of the policy; other border windows take it too.
 * Returns whether any result may be NaN. */
T512 static inline __attribute__((always_inline)) int mw512_k3s2_row(const float *restrict xr,
                                                                     float *restrict yr,
                                                                     const ax_t *restrict A,
                                                                     const int ign) {
    const int64_t lo = A->lo, hi = A->hi, O = A->o, pb = A->pb;
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    /* the masked first block: windows 0..15, all but the first reach inside (pb <= 2) */
    const int head = lo > 0 && pb <= 2 && hi >= 16;
    const int64_t vlo = head ? 0 : lo;
    /* p[2i + 2]: the evens shifted by one lane, the last one p[32] */
    const __m512i next = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    __mmask16 nanm = 0;
    if (hi - vlo >= 16) {
        int64_t o0 = vlo;
        while (o0 < hi) {
            if (hi - o0 < 16 && hi - o0 > 8) o0 = hi - 16; /* overlap: recomputes equal values */
            const float *p = xr + (2 * o0 - pb);
            if (hi - o0 < 16) {
                /* 8 windows or fewer left: a block of 8 ending at hi (p[0 .. 16], 8-wide ops) */
                o0 = hi - 8;
                p = xr + (2 * o0 - pb);
                const __m256 a8 = _mm256_loadu_ps(p), b8 = _mm256_loadu_ps(p + 8);
                const __m256 t0 = _mm256_permutex2var_ps(a8, _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), b8);
                const __m256 t1 = _mm256_permutex2var_ps(a8, _mm256_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15), b8);
                const __m256 t2 = _mm256_permutex2var_ps(t0, _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8), _mm256_set1_ps(p[16]));
                nanm = (__mmask16)(nanm | _mm256_cmp_ps_mask(a8, b8, _CMP_UNORD_Q));
                _mm256_storeu_ps(yr + o0, _mm256_max_ps(t2, _mm256_max_ps(t1, t0)));
                break;
            }
            /* every element read, p[0 .. 32], is a tap of one of the 16 windows */
            const __m512 a = head && o0 == 0
                                 ? _mm512_mask_loadu_ps(_mm512_set1_ps(-__builtin_inff()), (__mmask16)(0xFFFFu << pb), p)
                                 : _mm512_loadu_ps(p);
            const __m512 b = _mm512_loadu_ps(p + 16);
            const __m512 t0 = _mm512_permutex2var_ps(a, even, b);                      /* p[2i] */
            const __m512 t1 = _mm512_permutex2var_ps(a, odd, b);                       /* p[2i + 1] */
            const __m512 t2 = _mm512_permutex2var_ps(t0, next, _mm512_set1_ps(p[32])); /* p[2i + 2] */
            /* NaN among p[0 .. 31]; the blocks cover the row, its last p[32] below */
            nanm = (__mmask16)(nanm | _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q));
            _mm512_storeu_ps(yr + o0, _mm512_max_ps(t2, _mm512_max_ps(t1, t0))); /* b > v ? b : v */
            o0 += 16;
        }
        const float last = xr[2 * (hi - 1) - pb + 2];
        nanm = (__mmask16)(nanm | (last != last));
    }
    int nan = 0;
    if (__builtin_expect(nanm != 0, 0)) {
        /* a NaN among the row's taps: the whole row by the exact scan */
        if (ign) mw_brow_f32i(xr, yr, NULL, A, 0, 0, 0, O);
        else mw_brow_f32p(xr, yr, NULL, A, 0, 0, 0, O);
        return 1;
    }
    /* the other border windows and short rows: exact scalar scan; a NaN result sends the
     * row's output rows through the NaN-aware combine */
    const int vec = hi - vlo >= 16;
    for (int part = 0; part < 3; part++) {
        const int64_t u0 = part == 0 ? 0 : part == 1 ? (vec ? hi : lo) : hi;
        const int64_t u1 = part == 0 ? vlo : part == 1 ? hi : O;
        if (u1 <= u0) continue;
        if (ign) mw_brow_f32i(xr, yr, NULL, A, 0, 0, u0, u1);
        else mw_brow_f32p(xr, yr, NULL, A, 0, 0, u0, u1);
        for (int64_t o = u0; o < u1; o++) nan |= yr[o] != yr[o];
    }
    return nan;
}

T512 static inline __attribute__((always_inline)) void max2d_k3s2_body(
    const float *restrict x, float *restrict out, const geo_t *g, float *restrict ring,
    int64_t *restrict tags, int64_t *restrict hrow, int64_t *restrict sl, const int ign) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, OH = H->o;
    const int64_t R = ring_rows(H), RS = (OW + 15) & ~(int64_t)15;
    /* the geometry in locals: the stores to the slot tables may alias it */
    const int64_t hs = H->s, hpb = H->pb, hd = H->d, nc_ = g->nc, pin = g->plane_in, pout = g->plane_out;
    const int64_t *jlo = H->jlo, *jhi = H->jhi;
    /* H stride 1: ROWS_IN_ORDER (above) */
    const int in_order = hs == 1;
    int64_t *restrict snan = tags + R; /* per slot: its row's maxima may hold a NaN */
#define MAX2D_ROW(h, slot) (snan[slot] = mw512_k3s2_row(xp + (h) * NW, ring + (slot) * RS, W, ign))
    for (int64_t p = 0; p < nc_; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * pin;
        int64_t hdone = -1; /* in_order: the rows [0, hdone] are reduced */
        if (!in_order)
            for (int64_t r = 0; r < R; r++) tags[r] = -1;
        for (int64_t oh = 0; oh < OH; oh++) {
            const int64_t jl = jlo[oh], cnt = jhi[oh] > jl ? jhi[oh] - jl : 0;
            float *restrict yo = out + p * pout + oh * OW;
            if (cnt == 0) { /* no element: filled at the end */
                memset(yo, 0, (size_t)OW * sizeof(float));
                continue;
            }
            const int64_t h0 = oh * hs - hpb + jl * hd;
            int nc = 0;
#define MAX2D_USE(j, h, slot) (nc |= (int)snan[slot], hrow[j] = (h))
            RING_FETCH(MAX2D_ROW, MAX2D_USE);
#undef MAX2D_USE
            MAX2D_ROWS_BY_COUNT(ring, NULL, RS, sl, hrow, yo, NULL, OW, cnt, 0, 0, ign, nc);
        }
    }
#undef MAX2D_ROW
}

/* Values only; W windows of 3, stride 2, dilation 1; rows of at least 16 windows (module.c). */
T512 void max2d_k3s2_512(const float *x, float *out, const geo_t *g, float *ring, int64_t *tags, int64_t *hrow,
                         int64_t *sl, int ign) {
    if (ign) max2d_k3s2_body(x, out, g, ring, tags, hrow, sl, 1);
    else max2d_k3s2_body(x, out, g, ring, tags, hrow, sl, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Three spatial axes, values only, windows of 2 with stride 2 and dilation 1 along every axis, */
/* every window whole (module.c checks): each output row reads its four input rows once and   */
/* writes once, where the staged path writes and rereads two intermediate tensors. Per 16      */
/* outputs and input row: two loads, the even and odd taps by vpermt2ps, and                  */
/* vmaxps(odd, even) = "odd > even ? odd : even", the staged W stage's first-wins scan; then  */
/* the H pairs and the D pair in the staged order, each vmaxps(later, earlier). Without NaN   */
/* that is every policy's result, bit for bit (a tie of +0.0 and -0.0 keeps the earlier); a   */
/* NaN among the taps returns 1 at once and module.c runs the exact staged path instead.      */
T512 static inline __m512 pairmax16(const float *restrict p, const __m512i even, const __m512i odd,
                                    __mmask16 *restrict nanm) {
    const __m512 a = _mm512_loadu_ps(p), b = _mm512_loadu_ps(p + 16);
    *nanm = (__mmask16)(*nanm | _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q));
    return _mm512_max_ps(_mm512_permutex2var_ps(a, odd, b), _mm512_permutex2var_ps(a, even, b));
}

T512 int max3d_k2s2_512(const float *x, float *out, const geo_t *g) {
    const ax_t *D = &g->a[0], *H = &g->a[1], *W = &g->a[2];
    const int64_t NH = H->n, NW = W->n, OD = D->o, OH = H->o, OW = W->o;
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __mmask16 nanm = 0;
    for (int64_t p = 0; p < g->nc; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * g->plane_in;
        float *yp = out + p * g->plane_out;
        for (int64_t od = 0; od < OD; od++) {
            for (int64_t oh = 0; oh < OH; oh++) {
                const float *r00 = xp + ((2 * od) * NH + 2 * oh) * NW, *r01 = r00 + NW;
                const float *r10 = r00 + NH * NW, *r11 = r10 + NW;
                float *yo = yp + (od * OH + oh) * OW;
                for (int64_t o0 = 0;; o0 += 16) {
                    if (o0 > OW - 16) o0 = OW - 16; /* overlap: recomputes equal values */
                    const int64_t e = 2 * o0;
                    const __m512 m0 = _mm512_max_ps(pairmax16(r01 + e, even, odd, &nanm),
                                                    pairmax16(r00 + e, even, odd, &nanm));
                    const __m512 m1 = _mm512_max_ps(pairmax16(r11 + e, even, odd, &nanm),
                                                    pairmax16(r10 + e, even, odd, &nanm));
                    _mm512_storeu_ps(yo + o0, _mm512_max_ps(m1, m0));
                    if (o0 == OW - 16) break;
                }
            }
            if (nanm) return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Two spatial axes, values only, stride 1 along both, windows of 2 or 3 along W and of 1 to 3 */
/* along H, any dilations, no window without an element (module.c checks). The average's      */
/* strips (below) for max: vertical strips of 16 output columns, each input row's 16 window    */
/* maxima computed once (its taps in order, each vmaxps(later, earlier) = "later > earlier ?   */
/* later : earlier", the staged W stage's first-wins scan) and kept in registers for the KH    */
/* output rows that use them; each output row then combines its rows in tap order, as the      */
/* staged H stage does. With H dilation d the output rows are walked in d interleaved runs     */
/* (rows oh, oh + d, ... share their rows as a run of dilation 1 does). Taps in the padding    */
/* read as -inf: a strict '>' scan never takes a -inf over a valid tap, and a window whose     */
/* valid taps are all -inf gets -inf either way (the same bits). Without NaN that is every     */
/* policy's result, bit for bit; a NaN among the taps returns 1 and module.c runs the exact   */
/* staged path instead.                                                                        */

/* The lanes of [e, e + L) inside [0, n), as a mask (the strips' masked loads). */
static inline unsigned lanes_inside(const int64_t e, const int64_t n, const int L) {
    unsigned m = 0;
    for (int t = 0; t < L; t++) m |= (unsigned)(e + t >= 0 && e + t < n) << t;
    return m;
}

/* The run [*ohA, *ohB) of output rows whose H window is whole (KH rows, jlo 0): with stride 1
 * these are consecutive; the rows outside it are cut by the padding. */
static inline void whole_rows(const ax_t *H, const int64_t KH, int64_t *ohA, int64_t *ohB) {
    int64_t a = 0;
    while (a < H->o && !(H->jlo[a] == 0 && H->jhi[a] == KH)) a++;
    int64_t b = a;
    while (b < H->o && H->jlo[b] == 0 && H->jhi[b] == KH) b++;
    *ohA = a;
    *ohB = b;
}

/* Calls BODY(KW, KH) with both window sizes made constants: W windows of 2 or 3, H of 1 to 3. */
#define STRIPS_BY_KERNEL(BODY)                                                                     \
    do {                                                                                           \
        const int64_t kw_ = g->a[1].k, kh_ = g->a[0].k;                                            \
        if (kw_ == 3) {                                                                            \
            if (kh_ == 3) BODY(3, 3);                                                              \
            else if (kh_ == 2) BODY(3, 2);                                                         \
            else BODY(3, 1);                                                                       \
        } else {                                                                                   \
            if (kh_ == 3) BODY(2, 3);                                                              \
            else if (kh_ == 2) BODY(2, 2);                                                         \
            else BODY(2, 1);                                                                       \
        }                                                                                          \
    } while (0)

/* The maxima of windows [o0, o0 + 16) of one input row: tap j is elements [e + j dw, + 16). */
T512 static inline __attribute__((always_inline)) __m512 mw512_strip(
    const float *restrict xr, const int64_t e, const int64_t dw, const int MASKED, const __mmask16 *m,
    const int64_t K, __mmask16 *restrict nanm) {
#define TAP(j)                                                                                     \
    (MASKED ? _mm512_mask_loadu_ps(                                                                \
                  _mm512_set1_ps(-INFINITY), m[j],                                                 \
                  (const float *)((uintptr_t)xr + (uintptr_t)((e + (j) * dw) * (int64_t)sizeof(float)))) \
            : _mm512_loadu_ps(xr + e + (j) * dw))
    const __m512 t0 = TAP(0), t1 = TAP(1);
    __m512 v = _mm512_max_ps(t1, t0);
    __mmask16 u = _mm512_cmp_ps_mask(t0, t1, _CMP_UNORD_Q);
    if (K == 3) {
        const __m512 t2 = TAP(2);
        u = (__mmask16)(u | _mm512_cmp_ps_mask(t2, t2, _CMP_UNORD_Q));
        v = _mm512_max_ps(t2, v);
    }
#undef TAP
    *nanm = (__mmask16)(*nanm | u);
    return v;
}

/* One strip (output columns [o0, o0 + 16)) of one plane; output rows [ohA, ohB) have whole H
 * windows (KH rows oh - pb + j dh), the others combine their valid rows afresh. */
T512 static inline __attribute__((always_inline)) void max2d_strip(
    const float *restrict xp, float *restrict yp, const geo_t *g, const int64_t o0, const int MASKED,
    const int64_t KW, const int64_t KH, const int64_t ohA, const int64_t ohB, __mmask16 *restrict nanm) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, OH = H->o, hpb = H->pb, dh = H->d, dw = W->d, e = o0 - W->pb;
    __mmask16 m[3] = {0, 0, 0};
    for (int j = 0; MASKED && j < KW; j++) m[j] = (__mmask16)lanes_inside(e + j * dw, NW, 16);
#define RS(h) mw512_strip(xp + (h) * NW, e, dw, MASKED, m, KW, nanm)
#define OUT(v, oh) _mm512_storeu_ps(yp + (oh) * OW + o0, (v))
    for (int64_t r = 0; r < dh && ohA + r < ohB; r++) { /* the whole windows, run by run */
        int64_t oh = ohA + r;
        if (KH == 1) {
            for (; oh < ohB; oh += dh) OUT(RS(oh - hpb), oh);
        } else if (KH == 2) {
            __m512 a = RS(oh - hpb);
            for (; oh < ohB; oh += dh) {
                const __m512 b = RS(oh - hpb + dh);
                OUT(_mm512_max_ps(b, a), oh);
                a = b;
            }
        } else {
            __m512 a = RS(oh - hpb), b = RS(oh - hpb + dh);
            for (; oh < ohB; oh += dh) {
                const __m512 c = RS(oh - hpb + 2 * dh);
                OUT(_mm512_max_ps(c, _mm512_max_ps(b, a)), oh);
                a = b;
                b = c;
            }
        }
    }
    for (int64_t oh = 0; oh < OH; oh++) {
        if (oh == ohA) oh = ohB;
        if (oh >= OH) break;
        const int64_t jl = H->jlo[oh], cnt = H->jhi[oh] - jl, h0 = oh - hpb + jl * dh;
        __m512 v = RS(h0);
        for (int64_t j = 1; j < cnt; j++) v = _mm512_max_ps(RS(h0 + j * dh), v);
        OUT(v, oh);
    }
#undef RS
#undef OUT
}

T512 static inline __attribute__((always_inline)) int max2d_strips_body(const float *restrict x,
                                                                       float *restrict out, const geo_t *g,
                                                                       const int64_t KW, const int64_t KH) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, nc = g->nc, pin = g->plane_in, pout = g->plane_out;
    int64_t ohA, ohB;
    whole_rows(H, KH, &ohA, &ohB);
    const int64_t reach = (KW - 1) * W->d + 16; /* elements a strip's row reads from e */
    for (int64_t p = 0; p < nc; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * pin;
        float *yp = out + p * pout;
        __mmask16 nanm = 0;
        for (int64_t s = 0; s < OW; s += 16) {
            const int64_t o0 = s + 16 <= OW ? s : OW - 16, e = o0 - W->pb;
            if (e >= 0 && e + reach <= NW) max2d_strip(xp, yp, g, o0, 0, KW, KH, ohA, ohB, &nanm);
            else max2d_strip(xp, yp, g, o0, 1, KW, KH, ohA, ohB, &nanm);
        }
        if (nanm) return 1;
    }
    return 0;
}

/* Values only; two axes, stride 1, W windows of 2 or 3 (rows of at least 16 windows), H windows
 * of 1 to 3, no window without an element (module.c). Returns 1 when a tap is NaN. */
T512 int max2d_s1_strips_512(const float *x, float *out, const geo_t *g) {
    int nan = 0;
#define MAX2D_STRIPS(KW, KH) nan = max2d_strips_body(x, out, g, KW, KH)
    STRIPS_BY_KERNEL(MAX2D_STRIPS);
#undef MAX2D_STRIPS
    return nan;
}

/* ------------------------------------------------------------------------------------------ */
/* Two spatial axes, fused, average pooling, float32 in and out, stride 1 and dilation 1 on    */
/* both axes, windows of 2 or 3 along W and of 1 to 3 along H. The sums are the staged path's */
/* float64 sums in its order (each W window's taps in order, then its zadd; each H window's   */
/* row sums in order, then its zadd), vectorised ACROSS windows: 8 windows per vector, each   */
/* lane one window's own sequence of additions, so every sum has the same bits.               */
/* The plane is walked in vertical strips of 8 output columns (the last strip overlaps the    */
/* one before when OW is not a multiple of 8, recomputing equal values): down a strip, each   */
/* input row's 8 window sums are computed once and kept in registers for the KH output rows   */
/* that use them, so row sums are never stored, and the divisions of one output row overlap   */
/* the loads and additions of the next in one long loop. (A ring of float64 row sums in L1,  */
/* each output row then adding its ring rows, measured 0.41 ms on W3 against 0.32 ms for the  */
/* strips, in a C harness: its rows of 7 vectors spent as much on bookkeeping as on sums.)    */
/* Rows whose H window is cut by the padding take their row sums afresh.                      */

/* The sums of windows [o0, o0 + 8) of one input row: tap j of the 8 windows is elements
 * [e + j, e + j + 8) (e = o0 - pb), one load each, widened (three loads measured 5% faster
 * than two and two shifts). Lanes outside the row read -0.0 (MASKED: masks m[j]; else every
 * element is inside the row), the identity of addition (x + -0.0 and -0.0 + x are x for every
 * x), so a window's sum over them is the sum over its valid taps in order.
 * wz: add the W axis's zadd; the caller skips it when the H axis adds +0.0 at the end: +0.0
 * only turns a -0.0 partial sum into +0.0, which changes no later nonzero sum (x + y with x a
 * zero of either sign is y when y is nonzero), and every zero final sum becomes +0.0 by the H
 * axis's +0.0 either way, so the final sums have the same bits. A window with no valid tap
 * sums to -0.0 instead of the staged path's 0.0: the same argument when wz is 0; when wz is 1
 * its zadd is +0.0 (an axis with an empty window starts its sums from +0.0, see zinit). */
T512 static inline __attribute__((always_inline)) __m512d aw512_strip_sums(
    const float *restrict xr, const int64_t e, const int MASKED, const __mmask8 *m, const int64_t K, const int wz,
    const __m512d zaddw) {
#define TAP(j)                                                                                     \
    (MASKED ? _mm512_cvtps_pd(_mm256_mask_loadu_ps(                                                \
                  _mm256_set1_ps(-0.0f), m[j],                                                     \
                  (const float *)((uintptr_t)xr + (uintptr_t)((e + (j)) * (int64_t)sizeof(float))))) \
            : _mm512_cvtps_pd(_mm256_loadu_ps(xr + e + (j))))
    __m512d v = _mm512_add_pd(TAP(0), TAP(1));
    if (K == 3) v = _mm512_add_pd(v, TAP(2));
#undef TAP
    if (wz) v = _mm512_add_pd(v, zaddw);
    return v;
}

/* One strip (output columns [o0, o0 + 8)) of one plane. Output rows [ohA, ohB) have whole H
 * windows (KH rows from oh - pb); the others are summed over their valid rows afresh. */
T512 static inline __attribute__((always_inline)) void avg2d_strip(
    const float *restrict xp, float *restrict yp, const geo_t *g, const double *restrict dtab, const int64_t o0,
    const int MASKED, const int64_t KW, const int64_t KH, const int64_t ohA, const int64_t ohB, const int wz,
    const __m512d zaddw, const __m512d zadd) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, OH = H->o, hpb = H->pb, e = o0 - W->pb;
    __mmask8 m[3] = {0, 0, 0};
    for (int j = 0; MASKED && j < KW; j++) m[j] = (__mmask8)lanes_inside(e + j, NW, 8);
#define RS(h) aw512_strip_sums(xp + (h) * NW, e, MASKED, m, KW, wz, zaddw)
#define QUOT(v, oh)                                                                                \
    /* divided by the number of elements [ONNX-DIVISOR]                          */               \
    _mm256_storeu_ps(yp + (oh) * OW + o0,                                                          \
                     _mm512_cvtpd_ps(_mm512_div_pd(_mm512_add_pd((v), zadd),                       \
                                                   _mm512_loadu_pd(dtab + (oh) * OW + o0))))
    for (int64_t oh = 0; oh < OH; oh++) {
        if (oh == ohA) { /* the whole windows, their row sums in registers */
            const int64_t h = ohA - hpb;
            if (KH == 1) {
                for (; oh < ohB; oh++) QUOT(RS(oh - hpb), oh);
            } else if (KH == 2) {
                __m512d a = RS(h);
                for (; oh < ohB; oh++) {
                    const __m512d b = RS(oh - hpb + 1);
                    QUOT(_mm512_add_pd(a, b), oh);
                    a = b;
                }
            } else {
                __m512d a = RS(h), b = RS(h + 1);
                for (; oh < ohB; oh++) {
                    const __m512d c = RS(oh - hpb + 2);
                    QUOT(_mm512_add_pd(_mm512_add_pd(a, b), c), oh);
                    a = b;
                    b = c;
                }
            }
            if (oh >= OH) break;
        }
        const int64_t jl = H->jlo[oh], cnt = H->jhi[oh] > jl ? H->jhi[oh] - jl : 0, h0 = oh - hpb + jl;
        /* no row: a zero sum (the divisor is 0 unless padding counts: see the fill in the caller) */
        __m512d v = cnt ? RS(h0) : _mm512_setzero_pd();
        for (int64_t j = 1; j < cnt; j++) v = _mm512_add_pd(v, RS(h0 + j));
        QUOT(v, oh);
    }
#undef RS
#undef QUOT
}

T512 static inline __attribute__((always_inline)) void avg2d_strips_body(
    const float *restrict x, float *restrict out, const geo_t *g, const double *restrict dtab, const int zeros,
    const double efill, const int64_t KW, const int64_t KH) {
    const ax_t *H = &g->a[0], *W = &g->a[1];
    const int64_t NW = W->n, OW = W->o, nc = g->nc, pin = g->plane_in, pout = g->plane_out;
    int64_t ohA, ohB;
    whole_rows(H, KH, &ohA, &ohB);
    const int wz = !H->zinit;
    const __m512d zaddw = _mm512_set1_pd(W->zinit ? 0.0 : -0.0), zadd = _mm512_set1_pd(H->zinit ? 0.0 : -0.0);
    for (int64_t p = 0; p < nc; p++) {
        if (poll_interrupt()) break;
        const float *xp = x + p * pin;
        float *yp = out + p * pout;
        for (int64_t s = 0; s < OW; s += 8) {
            const int64_t o0 = s + 8 <= OW ? s : OW - 8, e = o0 - W->pb;
            if (e >= 0 && e + 7 + KW <= NW) avg2d_strip(xp, yp, g, dtab, o0, 0, KW, KH, ohA, ohB, wz, zaddw, zadd);
            else avg2d_strip(xp, yp, g, dtab, o0, 1, KW, KH, ohA, ohB, wz, zaddw, zadd);
        }
        /* A zero divisor (no element counted) gives the empty_avg value instead. */
        if (zeros)
            for (int64_t i = 0; i < pout; i++)
                if (dtab[i] == 0.0) yp[i] = (float)efill;
    }
}

/* float32 average, two axes, stride 1 and dilation 1 on both, W windows of 2 or 3 with rows
 * of at least 8 windows, H windows of 1 to 3 (module.c). */
T512 void avg2d_strips_512(const float *x, float *out, const geo_t *g, const double *dtab, int zeros, double efill) {
#define AVG2D_STRIPS(KW, KH) avg2d_strips_body(x, out, g, dtab, zeros, efill, KW, KH)
    STRIPS_BY_KERNEL(AVG2D_STRIPS);
#undef AVG2D_STRIPS
}

/* ------------------------------------------------------------------------------------------ */
/* Global average pooling, float32: each plane summed in 16 interleaved float64 lanes (two     */
/* vectors of 8, from -0.0; the last partial block adds only its valid lanes), then reduced;    */
/* any order of the additions is within the documented bound (see DEF_AVG_GLOBAL).             */
T512 void avgglobal_f32_512(const float *x, float *out, int64_t nc, int64_t m, double div, double efill,
                            double zadd) {
    const int64_t m16 = m & ~(int64_t)15;
    const __mmask16 kt = lanes16(m - m16);
    const __m512d nz = _mm512_set1_pd(-0.0);
    for (int64_t p = 0; p < nc; p++) {
        if ((p & 1023) == 0 && poll_interrupt()) break;
        const float *xp = x + p * m;
        __m512d a0 = nz, a1 = nz;
        for (int64_t i = 0; i < m16; i += 16) {
            const __m512 v = _mm512_loadu_ps(xp + i);
            a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
            a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
        }
        if (kt) {
            const __m512 v = _mm512_maskz_loadu_ps(kt, xp + m16);
            a0 = _mm512_mask_add_pd(a0, (__mmask8)kt, a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
            a1 = _mm512_mask_add_pd(a1, (__mmask8)(kt >> 8), a1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
        }
        const double sum = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1)) + zadd;
        /* divided by the number of elements [ONNX-DIVISOR]                          */
        out[p] = div == 0.0 ? (float)efill : (float)(sum / div);
    }
}

#else
typedef int poolcheck_no_avx512; /* ISO C: a translation unit is not empty */
#endif
