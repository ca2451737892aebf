/*
 * The avx2 path: the portable kernels compiled with AVX2 and FMA (setup.py passes -mavx2
 * -mfma for this file on x86-64), chosen at import on CPUs that have both.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#define PC_TABLE pc_kernels_avx2
#define PC_ISA_NAME "avx2"
#define PC_WIDE 1
#include "kernels_isa.h"
#else
#include "common.h"
const kernels_t pc_kernels_avx2 = {.name = NULL}; /* not built for this architecture or compiler */
#endif
