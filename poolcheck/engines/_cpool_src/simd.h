/*
 * The small width-agnostic vector layer of the fused float32 kernels (fused_f32.h): GCC/Clang
 * vector extensions, at the native width of the path being compiled (PC_VBYTES: 64 bytes with
 * AVX-512, 32 with AVX2, 16 on the baseline -- SSE2 on x86-64, NEON on aarch64), plus an
 * 8-lane float64 type that the compiler splits into native vectors (the float64 sums of the
 * average kernels). Every operation is an inline function, so compiler messages and profiles
 * point at real lines. x86 intrinsics stand in where the generic form compiles poorly: vf_max
 * (the compiler does not turn the generic form into maxps), the masked loads, the NaN tests
 * and the one-lane shift (valignd).
 * Wider-than-native vector types are avoided: GCC keeps them in memory (an 8 x float64 type
 * made the average strips 10x slower on the avx2 path).
 */
#ifndef POOLCHECK_CPOOL_SIMD_H
#define POOLCHECK_CPOOL_SIMD_H
#include "kernels.h"

#if defined(__AVX512F__)
#define PC_VBYTES 64
#elif defined(__AVX2__)
#define PC_VBYTES 32
#else
#define PC_VBYTES 16
#endif
/* float32 lanes of one native vector */
#define PC_VL (PC_VBYTES / 4)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PC_X86 1
#else
#define PC_X86 0
#endif

typedef float vf __attribute__((vector_size(PC_VBYTES)));
typedef int32_t vi __attribute__((vector_size(PC_VBYTES)));

/* Unaligned loads and stores (memcpy compiles to one vector move). */
INLINE vf vf_load(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
INLINE void vf_store(float *p, vf v) { memcpy(p, &v, sizeof v); }
INLINE vf vf_set1(float a) {
    vf v;
    for (int i = 0; i < PC_VL; i++) v[i] = a;
    return v;
}

/* Lanes t in [lo, hi) from p[t], the others `fill`; p[t] outside [lo, hi) is never read (the
 * border strips: their taps outside the row). 0 <= lo, hi <= PC_VL. */
INLINE vf vf_load_fill(const float *p, const int64_t lo, const int64_t hi, const float fill) {
#if PC_X86 && PC_VBYTES == 64
    const uint32_t m = hi <= lo ? 0u : ((1u << hi) - 1u) & ~((1u << lo) - 1u);
    return (vf)_mm512_mask_loadu_ps(_mm512_set1_ps(fill), (__mmask16)m, p);
#elif PC_X86 && PC_VBYTES == 32
    const __m256i t = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m = _mm256_and_si256(_mm256_cmpgt_epi32(t, _mm256_set1_epi32((int)lo - 1)),
                                       _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), t));
    return (vf)_mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
#elif PC_VL == 4
    /* built in registers: a vector loaded from scalar stores stalls (store forwarding fails) */
    return (vf){0 >= lo && 0 < hi ? p[0] : fill, 1 >= lo && 1 < hi ? p[1] : fill, 2 >= lo && 2 < hi ? p[2] : fill,
                3 >= lo && 3 < hi ? p[3] : fill};
#else
    vf v;
    for (int t = 0; t < PC_VL; t++) v[t] = t >= lo && t < hi ? p[t] : fill;
    return v;
#endif
}

/* "b > a ? b : a", lane by lane: the strict first-wins scan's step (a NaN in either lane gives
 * a; the kernels watch for NaN separately). */
INLINE vf vf_max(vf b, vf a) {
#if PC_X86 && PC_VBYTES == 64
    return (vf)_mm512_max_ps((__m512)b, (__m512)a);
#elif PC_X86 && PC_VBYTES == 32
    return (vf)_mm256_max_ps((__m256)b, (__m256)a);
#elif PC_X86
    return (vf)_mm_max_ps((__m128)b, (__m128)a);
#else
    const vi m = b > a;
    return (vf)((m & (vi)b) | (~m & (vi)a));
#endif
}

/* Lanes holding a NaN (all ones), to be or-ed into a mask. */
INLINE vi vf_nan(vf a) { return (vi)(a != a); }
/* Lanes where a or b holds a NaN: one unordered comparison on x86. */
INLINE vi vf_nan2(vf a, vf b) {
#if PC_X86 && PC_VBYTES == 64
    return (vi)_mm512_movm_epi32(_mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_UNORD_Q));
#elif PC_X86 && PC_VBYTES == 32
    return (vi)_mm256_castps_si256(_mm256_cmp_ps((__m256)a, (__m256)b, _CMP_UNORD_Q));
#elif PC_X86
    return (vi)_mm_castps_si128(_mm_cmpunord_ps((__m128)a, (__m128)b));
#else
    return vf_nan(a) | vf_nan(b);
#endif
}

/* Whether any lane of a mask is set (one test instruction on x86). */
INLINE int vi_any(vi m) {
#if PC_X86 && PC_VBYTES == 64
    return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) != 0;
#elif PC_X86 && PC_VBYTES == 32
    return !_mm256_testz_si256((__m256i)m, (__m256i)m);
#elif PC_X86
    return _mm_movemask_ps(_mm_castsi128_ps((__m128i)m)) != 0;
#else
    int32_t t[PC_VL];
    memcpy(t, &m, sizeof t);
    int32_t a = 0;
    for (int i = 0; i < PC_VL; i++) a |= t[i];
    return a != 0;
#endif
}

#if defined(__clang__)
#define PC_SHUFFLE(a, b, ...) __builtin_shufflevector((a), (b), __VA_ARGS__)
#else
#define PC_SHUFFLE(a, b, ...) __builtin_shuffle((a), (b), (vi){__VA_ARGS__})
#endif

/* The even (odd) lanes of the 2 PC_VL elements a, b: p[2i] (p[2i + 1]) of p = a ++ b. With
 * AVX2 one in-lane shufps and one vpermpd each (GCC's generic form takes three operations). */
INLINE vf vf_evens(vf a, vf b) {
#if PC_X86 && PC_VBYTES == 32
    const __m256 t = _mm256_shuffle_ps((__m256)a, (__m256)b, 0x88); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
    return (vf)_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), 0xd8));
#elif PC_VL == 16
    return PC_SHUFFLE(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#elif PC_VL == 8
    return PC_SHUFFLE(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
#else
    return PC_SHUFFLE(a, b, 0, 2, 4, 6);
#endif
}
INLINE vf vf_odds(vf a, vf b) {
#if PC_X86 && PC_VBYTES == 32
    const __m256 t = _mm256_shuffle_ps((__m256)a, (__m256)b, 0xdd); /* a1 a3 b1 b3 | a5 a7 b5 b7 */
    return (vf)_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), 0xd8));
#elif PC_VL == 16
    return PC_SHUFFLE(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
#elif PC_VL == 8
    return PC_SHUFFLE(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
#else
    return PC_SHUFFLE(a, b, 1, 3, 5, 7);
#endif
}

/* Lanes a[1 .. PC_VL) then x: a shifted down by one lane (one valignd with AVX-512). */
INLINE vf vf_shift_in(vf a, float x) {
#if PC_X86 && PC_VBYTES == 64
    return (vf)_mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(_mm512_set1_ps(x)), _mm512_castps_si512((__m512)a), 1));
#elif PC_X86 && PC_VBYTES == 16
    /* two shufps (GCC builds the generic form from scalar loads) */
    const __m128 u = _mm_shuffle_ps((__m128)a, _mm_set1_ps(x), _MM_SHUFFLE(0, 0, 3, 3)); /* a3 a3 x x */
    return (vf)_mm_shuffle_ps((__m128)a, u, _MM_SHUFFLE(2, 0, 2, 1));                    /* a1 a2 a3 x */
#elif PC_VL == 16
    return PC_SHUFFLE(a, vf_set1(x), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
#elif PC_VL == 8
    return PC_SHUFFLE(a, vf_set1(x), 1, 2, 3, 4, 5, 6, 7, 8);
#else
    return PC_SHUFFLE(a, vf_set1(x), 1, 2, 3, 4);
#endif
}

/* 8 float64 lanes as PC_D8 native vectors (the window sums of the average kernels). */
#define PC_VLD (PC_VBYTES / 8)
#define PC_D8 (8 / PC_VLD)
typedef double vd __attribute__((vector_size(PC_VBYTES)));
typedef float vfh __attribute__((vector_size(PC_VBYTES / 2))); /* PC_VLD float32 lanes */
/* Named members, no array and no address taken: GCC then keeps them in registers. */
typedef struct {
    vd v0;
#if PC_D8 > 1
    vd v1;
#endif
#if PC_D8 > 2
    vd v2, v3;
#endif
} d8;

INLINE vd vd_load(const double *p) {
    vd v;
    memcpy(&v, p, sizeof v);
    return v;
}
INLINE vd vd_set1(double a) {
    vd v;
    for (int i = 0; i < PC_VLD; i++) v[i] = a;
    return v;
}
/* PC_VLD float32 elements from p, widened to float64 (GCC 12 splits the generic conversion of
 * a whole vector into halves: the x86 forms load and convert in one instruction). */
INLINE vd vd_load_f32(const float *p) {
#if PC_X86 && PC_VBYTES == 64
    return (vd)_mm512_cvtps_pd(_mm256_loadu_ps(p));
#elif PC_X86 && PC_VBYTES == 32
    return (vd)_mm256_cvtps_pd(_mm_loadu_ps(p));
#elif PC_X86
    return (vd)_mm_cvtps_pd(_mm_castpd_ps(_mm_load_sd((const double *)p)));
#else
    vfh h;
    memcpy(&h, p, sizeof h);
    return __builtin_convertvector(h, vd);
#endif
}
/* s / d, rounded to float32 into p[0 .. PC_VLD). */
INLINE void vd_quot_f32(float *p, vd s, vd d) {
    const vfh q = __builtin_convertvector(s / d, vfh);
    memcpy(p, &q, sizeof q);
}

/* Fused multiply-adds, one rounding each (setup.py's -ffp-contract=off fuses nothing by itself):
 * on the paths compiled with FMA, the average strips divide with them (vd_quot_fma). */
#if PC_X86 && defined(__FMA__)
#define PC_QFMA 1
/* The multiply-add instruction OP (fmadd, fmsub, fnmadd) of this path's vector width. */
#if PC_VBYTES == 64
#define PC_FMA_OP(op, a, b, c) (vd) _mm512_##op##_pd((__m512d)(a), (__m512d)(b), (__m512d)(c))
#elif PC_VBYTES == 32
#define PC_FMA_OP(op, a, b, c) (vd) _mm256_##op##_pd((__m256d)(a), (__m256d)(b), (__m256d)(c))
#else
#define PC_FMA_OP(op, a, b, c) (vd) _mm_##op##_pd((__m128d)(a), (__m128d)(b), (__m128d)(c))
#endif
/* a b + c */
INLINE vd vd_fmadd(vd a, vd b, vd c) { return PC_FMA_OP(fmadd, a, b, c); }
/* a b - c */
INLINE vd vd_fmsub(vd a, vd b, vd c) { return PC_FMA_OP(fmsub, a, b, c); }
/* c - a b */
INLINE vd vd_fnmadd(vd a, vd b, vd c) { return PC_FMA_OP(fnmadd, a, b, c); }
/* s / d rounded to nearest, without a division, given r = RN(1/d) (Markstein's correction, as
 * quot_f32 in kernels_isa.h): q0 = RN(s r); e = q0 d - s, exact; q = RN(q0 - e r) = RN(s / d)
 * for every finite s that is 0 or a sum of float32 values (a multiple of 2^-149 below 2^132)
 * and every integer 1 <= d < 2^51. Proof, with 2^E <= |s/d| < 2^(E+1) (E >= -200: no float64
 * underflow) and d = 2^k d', d' odd:
 * - d' = 1: r is exact, so q0 = s/d exactly, e = 0 and q = q0.
 * - |q0 - s/d| <= |s/d| (2^-52 + 2^-106) < 2^(E-51) (1 + 2^-54) (two roundings), so
 *   e = d (q0 - s/d) is below 4 d (1 + 2^-54) 2^(E-53) < 2^53 2^(E-53) in magnitude and a
 *   multiple of 2^(E-53) (q0, at least 2^E (1 - 2^-51), is one, and so is s, at least
 *   2^(E+k) d'): exact.
 * - q0 - e r = s/d - (q0 - s/d)(r d - 1) is within 2^(E-104) (1 + 2^-54) of s/d.
 * - d' >= 3: s/d is at least 2^(E-53)/d' from every float64 rounding midpoint m: |s| >= 3
 *   2^(E+k), so s is a multiple of 2^(E+k-51), and m d an odd multiple of 2^(E+k-53), so
 *   s - m d is a nonzero multiple of 2^(E+k-53). As 2^(E-104) (1 + 2^-54) < 2^(E-53)/d' for
 *   d' < 2^51, q0 - e r rounds as s/d does.
 * The signs of zeros: s = +-0 gives q0 = +-0, e = +0, q = q0 - (+0) = q0. s = NaN gives NaN;
 * s = +-inf gives NaN through inf - inf, an invalid operation (the caller watches for it, see
 * PC_MXCSR_IE in fused_f32.h). A zero d gives NaN likewise (the callers pass 1 instead).
 * tests/engines/test_c_fma_quotient.py checks the claim against exact arithmetic. */
INLINE vd vd_quot_fma(vd s, vd d, vd r) {
    const vd q0 = s * r;
    return vd_fnmadd(vd_fmsub(q0, d, s), r, q0);
}
#else
#define PC_QFMA 0
#endif

/* 8 float32 elements from p, widened to float64. */
INLINE d8 d8_load_f32(const float *p) {
    d8 r;
    r.v0 = vd_load_f32(p);
#if PC_D8 > 1
    r.v1 = vd_load_f32(p + PC_VLD);
#endif
#if PC_D8 > 2
    r.v2 = vd_load_f32(p + 2 * PC_VLD);
    r.v3 = vd_load_f32(p + 3 * PC_VLD);
#endif
    return r;
}
/* The same, lanes outside [lo, hi) -0.0 and p not read there (as vf_load_fill). */
INLINE d8 d8_load_f32_fill(const float *p, const int64_t lo, const int64_t hi) {
#if PC_X86 && PC_VBYTES == 64
    const uint32_t m = hi <= lo ? 0u : ((1u << hi) - 1u) & ~((1u << lo) - 1u);
    d8 r;
    r.v0 = (vd)_mm512_cvtps_pd(_mm256_mask_loadu_ps(_mm256_set1_ps(-0.0f), (__mmask8)m, p));
    return r;
#elif PC_X86 && PC_VBYTES == 32
    /* a half whose lanes are all inside loads plainly (a border strip's masked tap usually
     * reaches out of the row in one half only) */
    d8 r;
    const __m128i l = _mm_set1_epi32((int)lo - 1), h = _mm_set1_epi32((int)hi);
    const __m128 z = _mm_set1_ps(-0.0f);
    if (lo <= 0 && hi >= 4) {
        r.v0 = vd_load_f32(p);
    } else {
        const __m128i t0 = _mm_setr_epi32(0, 1, 2, 3);
        const __m128i m0 = _mm_and_si128(_mm_cmpgt_epi32(t0, l), _mm_cmpgt_epi32(h, t0));
        r.v0 = (vd)_mm256_cvtps_pd(_mm_blendv_ps(z, _mm_maskload_ps(p, m0), _mm_castsi128_ps(m0)));
    }
    if (lo <= 4 && hi >= 8) {
        r.v1 = vd_load_f32(p + 4);
    } else {
        const __m128i t1 = _mm_setr_epi32(4, 5, 6, 7);
        const __m128i m1 = _mm_and_si128(_mm_cmpgt_epi32(t1, l), _mm_cmpgt_epi32(h, t1));
        r.v1 = (vd)_mm256_cvtps_pd(_mm_blendv_ps(z, _mm_maskload_ps(p + 4, m1), _mm_castsi128_ps(m1)));
    }
    return r;
#elif PC_VLD == 2
    /* built in registers (see vf_load_fill) */
    d8 r;
    r.v0 = (vd){0 >= lo && 0 < hi ? (double)p[0] : -0.0, 1 >= lo && 1 < hi ? (double)p[1] : -0.0};
    r.v1 = (vd){2 >= lo && 2 < hi ? (double)p[2] : -0.0, 3 >= lo && 3 < hi ? (double)p[3] : -0.0};
    r.v2 = (vd){4 >= lo && 4 < hi ? (double)p[4] : -0.0, 5 >= lo && 5 < hi ? (double)p[5] : -0.0};
    r.v3 = (vd){6 >= lo && 6 < hi ? (double)p[6] : -0.0, 7 >= lo && 7 < hi ? (double)p[7] : -0.0};
    return r;
#else
    float t[8];
    for (int i = 0; i < 8; i++) t[i] = i >= lo && i < hi ? p[i] : -0.0f;
    return d8_load_f32(t);
#endif
}
INLINE d8 d8_load(const double *p) {
    d8 r;
    r.v0 = vd_load(p);
#if PC_D8 > 1
    r.v1 = vd_load(p + PC_VLD);
#endif
#if PC_D8 > 2
    r.v2 = vd_load(p + 2 * PC_VLD);
    r.v3 = vd_load(p + 3 * PC_VLD);
#endif
    return r;
}
INLINE d8 d8_set1(double a) {
    d8 r;
    r.v0 = vd_set1(a);
#if PC_D8 > 1
    r.v1 = r.v0;
#endif
#if PC_D8 > 2
    r.v2 = r.v3 = r.v0;
#endif
    return r;
}
INLINE d8 d8_add(d8 a, const d8 b) {
    a.v0 = a.v0 + b.v0;
#if PC_D8 > 1
    a.v1 = a.v1 + b.v1;
#endif
#if PC_D8 > 2
    a.v2 = a.v2 + b.v2;
    a.v3 = a.v3 + b.v3;
#endif
    return a;
}
/* Lane i of a (i a constant after inlining). */
INLINE double d8_lane(const d8 a, const int i) {
#if PC_D8 == 1
    return a.v0[i];
#elif PC_D8 == 2
    return i < 4 ? a.v0[i & 3] : a.v1[i & 3];
#else
    return i < 2 ? a.v0[i & 1] : i < 4 ? a.v1[i & 1] : i < 6 ? a.v2[i & 1] : a.v3[i & 1];
#endif
}
/* s / d, rounded to float32 into p[0 .. 8). */
INLINE void d8_quot_f32(float *p, const d8 s, const d8 d) {
    vd_quot_f32(p, s.v0, d.v0);
#if PC_D8 > 1
    vd_quot_f32(p + PC_VLD, s.v1, d.v1);
#endif
#if PC_D8 > 2
    vd_quot_f32(p + 2 * PC_VLD, s.v2, d.v2);
    vd_quot_f32(p + 3 * PC_VLD, s.v3, d.v3);
#endif
}

/* The window sums of one average strip (fused_f32.h): PC_SW float64 lanes. 8 (one d8) on the
 * wide paths; 4 on the 16-byte baseline, where three rows of d8 sums (12 of its 16 registers)
 * plus the loads and divisors spill to the stack. */
#if PC_VBYTES == 16
#define PC_SW 4
typedef struct {
    vd v0, v1;
} dsw;
INLINE dsw dsw_load_f32(const float *p) {
    dsw r;
    r.v0 = vd_load_f32(p);
    r.v1 = vd_load_f32(p + 2);
    return r;
}
INLINE dsw dsw_load_f32_fill(const float *p, const int64_t lo, const int64_t hi) {
    /* built in registers (see vf_load_fill) */
    dsw r;
    r.v0 = (vd){0 >= lo && 0 < hi ? (double)p[0] : -0.0, 1 >= lo && 1 < hi ? (double)p[1] : -0.0};
    r.v1 = (vd){2 >= lo && 2 < hi ? (double)p[2] : -0.0, 3 >= lo && 3 < hi ? (double)p[3] : -0.0};
    return r;
}
INLINE dsw dsw_load(const double *p) {
    dsw r;
    r.v0 = vd_load(p);
    r.v1 = vd_load(p + 2);
    return r;
}
INLINE dsw dsw_set1(double a) {
    dsw r;
    r.v0 = r.v1 = vd_set1(a);
    return r;
}
INLINE dsw dsw_add(dsw a, const dsw b) {
    a.v0 = a.v0 + b.v0;
    a.v1 = a.v1 + b.v1;
    return a;
}
INLINE void dsw_quot_f32(float *p, const dsw s, const dsw d) {
    vd_quot_f32(p, s.v0, d.v0);
    vd_quot_f32(p + 2, s.v1, d.v1);
}
#else
#define PC_SW 8
typedef d8 dsw;
#define dsw_load_f32 d8_load_f32
#define dsw_load_f32_fill d8_load_f32_fill
#define dsw_load d8_load
#define dsw_set1 d8_set1
#define dsw_add d8_add
#define dsw_quot_f32 d8_quot_f32
#endif

/* The divisors d (0 or at least 1) with 0 replaced by 1: a window with no element divides by 1
 * (its output gets the empty_avg fill afterwards) rather than by 0, whose 0/0 or the NaN of
 * vd_quot_fma would set the invalid-operation flag that the FMA paths watch (PC_MXCSR_IE). */
typedef int64_t vdl __attribute__((vector_size(PC_VBYTES))); /* a vd's lane masks */
INLINE dsw dsw_max1(dsw d) {
    const vd one = vd_set1(1.0), zero = vd_set1(0.0);
    d.v0 = d.v0 + (vd)((vdl)(d.v0 == zero) & (vdl)one); /* d + 1 where d is 0, else d + 0 */
#if PC_SW / PC_VLD > 1
    d.v1 = d.v1 + (vd)((vdl)(d.v1 == zero) & (vdl)one);
#endif
    return d;
}

#if PC_QFMA
/* a + b as a 1 + b on the multiply-add units: the product is exact, so the bits are those of
 * a + b (signed zeros included; a NaN stays a NaN). AMD cores add on other pipes than they
 * multiply, and the average strips' additions and conversions keep the adders busiest. */
INLINE dsw dsw_add_m(dsw a, const dsw b) {
    const vd one = vd_set1(1.0);
    a.v0 = vd_fmadd(a.v0, one, b.v0);
#if PC_SW / PC_VLD > 1
    a.v1 = vd_fmadd(a.v1, one, b.v1);
#endif
    return a;
}
/* s / d rounded to float32 into p[0 .. PC_SW), given r = RN(1/d) (vd_quot_fma): the bits of
 * dsw_quot_f32 wherever s is finite. */
INLINE void dsw_quot_f32_fma(float *p, const dsw s, const dsw d, const dsw r) {
    const vfh h0 = __builtin_convertvector(vd_quot_fma(s.v0, d.v0, r.v0), vfh);
    memcpy(p, &h0, sizeof h0);
#if PC_SW / PC_VLD > 1
    const vfh h1 = __builtin_convertvector(vd_quot_fma(s.v1, d.v1, r.v1), vfh);
    memcpy(p + PC_VLD, &h1, sizeof h1);
#endif
}
INLINE dsw dsw_recip(const dsw d) {
    dsw r;
    r.v0 = vd_set1(1.0) / d.v0;
#if PC_SW / PC_VLD > 1
    r.v1 = vd_set1(1.0) / d.v1;
#endif
    return r;
}
#else
#define dsw_add_m dsw_add
#endif

#if PC_VBYTES == 16
typedef int64_t vl2 __attribute__((vector_size(16)));
/* Lanes 1, 2 of a ++ b: the taps one element on (one shufpd on x86). */
INLINE vd vd_next1(const vd a, const vd b) {
#if defined(__clang__)
    return __builtin_shufflevector(a, b, 1, 2);
#else
    return __builtin_shuffle(a, b, (vl2){1, 2});
#endif
}

/* The sums of the PC_SW windows of KW taps (2 or 3) from p, taps in order (the first two, then
 * the third): each of p[0 .. PC_SW + KW - 1) widened once, the taps formed by shuffles
 * (vd_next1) rather than widened again from unaligned loads (fused_f32.h uses it on the
 * baseline only). */
INLINE dsw dsw_wsum_f32(const float *p, const int64_t KW) {
    /* p[5] is read only when it is a tap (KW 3): it may lie past the end of the input */
    const vd a = vd_load_f32(p), b = vd_load_f32(p + 2), x = KW == 3 ? vd_load_f32(p + 4) : (vd){(double)p[4], 0.0};
    dsw r;
    r.v0 = a + vd_next1(a, b);
    r.v1 = b + vd_next1(b, x);
    if (KW == 3) { /* two elements on: the next vector */
        r.v0 = r.v0 + b;
        r.v1 = r.v1 + x;
    }
    return r;
}
#endif

#endif
