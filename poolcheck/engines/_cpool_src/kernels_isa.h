/*
 * The kernels of one instruction-set path: every template instance and the path's kernel
 * table. Included by isa_portable.c, isa_avx2.c and isa_avx512.c, which define PC_TABLE (the
 * table's name) and PC_ISA_NAME and are compiled with their path's flags (setup.py): the
 * compiler vectorises the same C source for SSE2 (or NEON), AVX2 or AVX-512. Everything here
 * is static; only the table is visible to module.c.
 *
 * PC_WIDE (the vector paths) leaves to the portable path the kernels that measured no faster
 * with AVX2 (x86-64-v3 against the baseline, side by side in one process): the float32 direct
 * scan (-14% to +26%, mostly slower) and the float32-to-float64 global averages (+7%, +8%:
 * the baseline code already runs near memory speed). PC_WITH_INTS 0 leaves the integer max
 * kernels to the next slower path, PC_WITH_INTS 2 all but the 64-bit ones.
 */
#include "kernels.h"

#ifndef PC_WIDE
#define PC_WIDE 0
#endif
#ifndef PC_WITH_INTS
#define PC_WITH_INTS 1
#endif

/* ------------------------------------------------------------------------------------------ */
/* Max pooling                                                                                */

/* Floats, vector paths: the plain strict '>' instances (f32n, f64n) serve the chunks without
 * NaN of the NaN-policy instances (PC_NAN_FREE): on the avx2 path W1 0.57x the time, W6
 * 0.91x, W1i/W4/W5 1.04-1.06x (the two builds side by side in one process). Not on the
 * portable path, where the SSE2 code of the plain comparison measured 22x slower on W4 and
 * 1.9x on W5 (W1i 6.6x faster). The chunks with a NaN (rare data) run the portable path's
 * kernel of their policy (PC_NAN_CHUNKS), so the vector paths compile two instances fewer. */
#if PC_WIDE
/* Whether x[0 .. n) holds a NaN: the largest magnitude bit pattern is above infinity's (an
 * integer max reduction, which vectorises). */
typedef uint32_t __attribute__((may_alias)) pc_u32_alias;
typedef uint64_t __attribute__((may_alias)) pc_u64_alias;
static inline int has_nan_f32n(const float *restrict x, int64_t n) {
    const pc_u32_alias *restrict u = (const pc_u32_alias *)x;
    uint32_t top = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t m = u[i] & 0x7fffffffu;
        top = m > top ? m : top;
    }
    return top > 0x7f800000u;
}
static inline int has_nan_f64n(const double *restrict x, int64_t n) {
    const pc_u64_alias *restrict u = (const pc_u64_alias *)x;
    uint64_t top = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint64_t m = u[i] & 0x7fffffffffffffffull;
        top = m > top ? m : top;
    }
    return top > 0x7ff0000000000000ull;
}
#define PC_SUF f32n
#define PC_T float
#define PC_UT uint32_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#define PC_SUF f64n
#define PC_T double
#define PC_UT uint64_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#define PC_FLOAT_NAN_FREE 1
#else
#define PC_FLOAT_NAN_FREE 0
#endif

#define PC_SUF f32p
#if PC_FLOAT_NAN_FREE
#define PC_NAN_FREE f32n
#define PC_NAN_CHUNKS pc_kernels_portable.maxsep[MK_F32P]
#endif
#define PC_T float
#define PC_UT uint32_t
#define PC_BETTER BETTER_PROP
#define PC_SBETTER SBETTER_PROP
#include "tmpl_maxsep.h"
#define PC_SUF f32i
#if PC_FLOAT_NAN_FREE
#define PC_NAN_FREE f32n
#define PC_NAN_CHUNKS pc_kernels_portable.maxsep[MK_F32I]
#endif
#define PC_T float
#define PC_UT uint32_t
#define PC_BETTER BETTER_IGN
#define PC_SBETTER SBETTER_IGN
#include "tmpl_maxsep.h"
#define PC_SUF f64p
#if PC_FLOAT_NAN_FREE
#define PC_NAN_FREE f64n
#define PC_NAN_CHUNKS pc_kernels_portable.maxsep[MK_F64P]
#endif
#define PC_T double
#define PC_UT uint64_t
#define PC_BETTER BETTER_PROP
#define PC_SBETTER SBETTER_PROP
#include "tmpl_maxsep.h"
#define PC_SUF f64i
#if PC_FLOAT_NAN_FREE
#define PC_NAN_FREE f64n
#define PC_NAN_CHUNKS pc_kernels_portable.maxsep[MK_F64I]
#endif
#define PC_T double
#define PC_UT uint64_t
#define PC_BETTER BETTER_IGN
#define PC_SBETTER SBETTER_IGN
#include "tmpl_maxsep.h"

#if PC_WITH_INTS == 1
/* Integers: one instance per width and signedness. */
#define PC_SUF i8
#define PC_T int8_t
#define PC_UT uint8_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#define PC_SUF u8
#define PC_T uint8_t
#define PC_UT uint8_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#define PC_SUF i16
#define PC_T int16_t
#define PC_UT uint16_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#define PC_SUF u16
#define PC_T uint16_t
#define PC_UT uint16_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#define PC_SUF i32
#define PC_T int32_t
#define PC_UT uint32_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#define PC_SUF u32
#define PC_T uint32_t
#define PC_UT uint32_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#endif
#if PC_WITH_INTS
#define PC_SUF i64
#define PC_T int64_t
#define PC_UT uint64_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#define PC_SUF u64
#define PC_T uint64_t
#define PC_UT uint64_t
#define PC_BETTER BETTER_INT
#define PC_SBETTER SBETTER_INT
#include "tmpl_maxsep.h"
#endif

/* The "first" NaN policy: a direct row-major scan. */
#if !PC_WIDE
#define PC_SUF f32f
#define PC_T float
#define PC_BETTER BETTER_INT
#include "tmpl_maxdirect.h"
#endif
#define PC_SUF f64f
#define PC_T double
#define PC_BETTER BETTER_INT
#include "tmpl_maxdirect.h"

/* ------------------------------------------------------------------------------------------ */
/* Average pooling                                                                            */

/* Quotients, rounded once to the output type: a true division. */
static inline void quot_div_f32(float *restrict out, const double *restrict sum, const double *restrict dtab,
                                const double *restrict rtab, int64_t n) {
    (void)rtab;
    for (int64_t i = 0; i < n; i++) out[i] = (float)(sum[i] / dtab[i]);
}
static inline void quot_div_f64(double *restrict out, const double *restrict sum, const double *restrict dtab,
                                const double *restrict rtab, int64_t n) {
    (void)rtab;
    for (int64_t i = 0; i < n; i++) out[i] = sum[i] / dtab[i];
}

/* Every path with a fused multiply-add instruction: avx2 and avx512 on x86-64 (-mfma), and the
 * portable path on AArch64, where every CPU has one (tools/test-aarch64.sh runs the engine tests
 * there, under qemu). */
#if defined(__FMA__) || (defined(__aarch64__) && defined(__ARM_FEATURE_FMA))
#define PC_FMA_QUOT 1
/* sum / d rounded to nearest without a division, for sums of float32 values: r = RN(1/d)
 * (rtab), q0 = RN(sum r) is within 1.5 ulp of sum/d, the remainder sum - q0 d is exact (one
 * FMA), and q1 = RN(q0 + rem r) = RN(sum/d): the perturbation, at most 2 ulp 2^-53, is far
 * below the distance from sum/d to any rounding midpoint (a multiple of 2^(E-53) over d,
 * never zero) for d < 2^51, and a nonzero sum of float32 values (a multiple of 2^-149) is
 * never subnormal in float64, nor is its quotient. Zeros, infinities and NaN keep q0 (the
 * sign of a zero, the NaN itself). Bit-identical to a true division (tests/engines/test_c_engine.py
 * compares with the NumPy engine's), and 4 multiply-adds cost less than one vdivpd. module.c
 * passes reciprocals only where the divisors are below 2^51. */
static inline void quot_f32(float *restrict out, const double *restrict sum, const double *restrict dtab,
                            const double *restrict rtab, int64_t n) {
    if (!rtab) {
        quot_div_f32(out, sum, dtab, rtab, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const double a = sum[i], q0 = a * rtab[i];
        const double rem = __builtin_fma(-q0, dtab[i], a);
        const double q1 = __builtin_fma(rem, rtab[i], q0);
        out[i] = (float)((a == 0.0 || !(__builtin_fabs(a) <= 1.7976931348623157e308)) ? q0 : q1);
    }
}
#else
#define PC_FMA_QUOT 0
#define quot_f32 quot_div_f32
#endif

#define PC_SUF f32
#define PC_TI float
#define PC_TO float
#define PC_QUOT quot_f32
#include "tmpl_avg.h"
#define PC_SUF f64
#define PC_TI double
#define PC_TO double
#define PC_QUOT quot_div_f64
#include "tmpl_avg.h"
#define PC_SUF f32to64
#define PC_TI float
#define PC_TO double
#define PC_QUOT quot_div_f64
#include "tmpl_avg.h"

/* ------------------------------------------------------------------------------------------ */
/* Fused float32 kernels (values only) and the float32 global average, written with the vector */
/* layer of simd.h (the avgglobal_f32 instance above is left unused)                          */

#include "fused_f32.h"

/* ------------------------------------------------------------------------------------------ */
/* Index output                                                                               */

/* index = ((n * C + c) * S + pos) % modulus, or empty_index for a window with no element;
 * stored as int32 (wrapping, like NumPy's astype) or int64. */
static void finish_indices(const int64_t *pos, void *idx, int idx64, const geo_t *g, int64_t modulus,
                           int64_t empty_index, const uint8_t *empty) {
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

/* ------------------------------------------------------------------------------------------ */
/* The table                                                                                  */

#if PC_WIDE
#define PC_NARROW_ONLY(f) NULL
#else
#define PC_NARROW_ONLY(f) f
#endif
#if PC_WITH_INTS == 1
#define PC_INTS(f) f
#else
#define PC_INTS(f) NULL
#endif
#if PC_WITH_INTS
#define PC_INTS64(f) f
#else
#define PC_INTS64(f) NULL
#endif

const kernels_t PC_TABLE = {
    .name = PC_ISA_NAME,
    .maxsep = {
        [MK_F32P] = maxsep_f32p, [MK_F32I] = maxsep_f32i, [MK_F64P] = maxsep_f64p, [MK_F64I] = maxsep_f64i,
        [MK_I8] = PC_INTS(maxsep_i8), [MK_U8] = PC_INTS(maxsep_u8), [MK_I16] = PC_INTS(maxsep_i16),
        [MK_U16] = PC_INTS(maxsep_u16), [MK_I32] = PC_INTS(maxsep_i32), [MK_U32] = PC_INTS(maxsep_u32),
        [MK_I64] = PC_INTS64(maxsep_i64), [MK_U64] = PC_INTS64(maxsep_u64),
    },
    .maxdirect = {PC_NARROW_ONLY(maxdirect_f32f), maxdirect_f64f},
    .avg = {[A_F32] = avg_f32, [A_F64] = avg_f64, [A_F32TO64] = avg_f32to64},
    .avgglobal = {[A_F32] = avgglobal_f32x16, [A_F64] = avgglobal_f64,
                  [A_F32TO64] = PC_NARROW_ONLY(avgglobal_f32to64)},
    .finish_indices = finish_indices,
    .max2d_strips = max2d_strips,
    .max3d_k2s2 = max3d_k2s2,
    .max2d_k3s2 = max2d_k3s2,
    .avg2d_strips = avg2d_strips,
    .fma_quot = PC_FMA_QUOT,
};
