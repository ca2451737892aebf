/*
 * What the kernel templates share: the comparisons of max pooling and the name pasting of
 * template instances. The templates are tmpl_maxsep.h, tmpl_maxdirect.h and tmpl_avg.h, each
 * an ordinary C file included once per element type (kernels_isa.h) with its parameters
 * defined as macros, so that compiler messages and profiles point at their real lines.
 */
#ifndef POOLCHECK_CPOOL_KERNELS_H
#define POOLCHECK_CPOOL_KERNELS_H
#include "common.h"

/* PC_CAT(f, suf) -> f_suf, after expanding suf. */
#define PC_CAT_(a, b) a##_##b
#define PC_CAT(a, b) PC_CAT_(a, b)

/* Unrolls the tap loop that follows completely where its count is a constant, so that the
 * vectoriser sees straight-line code at -O2 (setup.py's optimisation level) as at -O3. */
#if defined(__GNUC__) && !defined(__clang__)
#define PC_UNROLL _Pragma("GCC unroll 8")
#elif defined(__clang__)
#define PC_UNROLL _Pragma("unroll 8")
#else
#define PC_UNROLL
#endif

/* "b replaces the current best a", for each NaN policy (see poolcheck.spec.policy.Policy):
 *   propagate: a NaN in the window wins (the first NaN);
 *   ignore:    NaN loses to every number (an all-NaN window keeps its first NaN);
 *   first/int: a plain strict '>' scan.
 * The float forms are written so that GCC if-converts and vectorises chains of them:
 * !(b <= a) is "b > a, or either is NaN". */
#define BETTER_INT(b, a) ((b) > (a))
#define BETTER_PROP(b, a) (__builtin_isnan(a) ? 0 : !((b) <= (a)))
#define BETTER_IGN(b, a) ((!((b) <= (a))) & ((b) == (b)))

/* Scalar forms for the border windows: integer-valued comparisons (and a select on the bit
 * patterns, tmpl_maxsep.h), so that the data never steer a branch (a mispredicted branch per
 * tap costs more than the whole vectorised interior). */
#define SBETTER_INT(b, a) ((b) > (a))
#define SBETTER_PROP(b, a) (((a) == (a)) & !((b) <= (a)))
#define SBETTER_IGN(b, a) (((b) == (b)) & !((b) <= (a)))

#endif
