/*
 * The portable kernels, one instance per element type, plus the index output. Compiled for
 * the baseline and, where GCC function multiversioning is available, for x86-64-v3 (HOT).
 */
#include "kernels.h"

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
/* x86-64-v3 clones are kept where they measured at least 20% faster than the baseline-only
 * build (the two loaded side by side in one process; 2-D k3 s2 p1, 1-D k4 s4, 3-D k2 s2
 * shapes): separable max, every element type, +23% to +56% values only on most shapes and
 * +77% to +94% with indices (integer values-only 2-D/3-D +6% to +20%); staged averages +21%
 * to +47%; float64 direct scan (NaN policy "first") +18% to +79%, float64 global average +23%.
 * Not for the float32 direct scan (-14% to +26%, mostly slower) nor the float32-input global
 * averages (+7%, +8%: the baseline code already runs near memory speed). */
#define BASELINE_ONLY
DEF_MAX_DIRECT(f32f, float, BETTER_INT, BASELINE_ONLY)
DEF_MAX_DIRECT(f64f, double, BETTER_INT, HOT)

/* Quotients, rounded once to the output type: a true division. */
#define QUOT_DIV(TO)                                                                           \
    static inline void quot_div_##TO(TO *restrict out, const double *restrict sum,            \
                                     const double *restrict dtab, int64_t n) {                 \
        for (int64_t i = 0; i < n; i++) out[i] = (TO)(sum[i] / dtab[i]);                       \
    }
QUOT_DIV(float)
QUOT_DIV(double)

#if POOLCHECK_MULTIVERSION
/* sum / d rounded to nearest without a division, for sums of float32 values: r = RN(1/d)
 * (rtab), q0 = RN(sum r) is within 1.5 ulp of sum/d, the remainder sum - q0 d is exact (one
 * FMA), and q1 = RN(q0 + rem r) = RN(sum/d): the perturbation, at most 2 ulp 2^-53, is far
 * below the distance from sum/d to any rounding midpoint (a multiple of 2^(E-53) over d,
 * never zero) for d < 2^51, and a nonzero sum of float32 values (a multiple of 2^-149) is
 * never subnormal in float64, nor is its quotient. Zeros, infinities and NaN keep q0 (the
 * sign of a zero, the NaN itself). Bit-identical to a true division (tests/engines/test_c_engine.py
 * compares with the NumPy engine's), and 4 multiply-adds cost less than one vdivpd. */
__attribute__((target("arch=x86-64-v3"))) static void quot_fma_f32(float *restrict out,
                                                                   const double *restrict sum,
                                                                   const double *restrict dtab,
                                                                   const double *restrict rtab, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const double a = sum[i], q0 = a * rtab[i];
        const double rem = __builtin_fma(-q0, dtab[i], a);
        const double q1 = __builtin_fma(rem, rtab[i], q0);
        out[i] = (float)((a == 0.0 || !(__builtin_fabs(a) <= 1.7976931348623157e308)) ? q0 : q1);
    }
}

int quot_fma_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
int quot_fma_available(void) { return 0; }
#endif

/* float32 averages: the FMA quotient where module.c passes reciprocals (x86-64-v3 CPU,
 * divisors below 2^51), else a division. */
static inline void quot_f32(float *restrict out, const double *restrict sum, const double *restrict dtab,
                            const double *restrict rtab, int64_t n) {
#if POOLCHECK_MULTIVERSION
    if (rtab) {
        quot_fma_f32(out, sum, dtab, rtab, n);
        return;
    }
#endif
    quot_div_float(out, sum, dtab, n);
}
#define QUOT_F64(out, sum, dtab, rtab, n) quot_div_double((out), (sum), (dtab), (n))

DEF_AVG(f32, float, float, quot_f32)
DEF_AVG(f64, double, double, QUOT_F64)
DEF_AVG(f32to64, float, double, QUOT_F64)

DEF_AVG_GLOBAL(f32, float, float, BASELINE_ONLY)
DEF_AVG_GLOBAL(f64, double, double, HOT)
DEF_AVG_GLOBAL(f32to64, float, double, BASELINE_ONLY)

/* ------------------------------------------------------------------------------------------ */
/* Index output                                                                               */

/* index = ((n * C + c) * S + pos) % modulus, or empty_index for a window with no element;
 * stored as int32 (wrapping, like NumPy's astype) or int64. */
HOT void finish_indices(const int64_t *pos, void *idx, int idx64, const geo_t *g,
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
