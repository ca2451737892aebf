/*
 * The avx2 path: the portable kernels compiled with AVX2 and FMA (setup.py passes -mavx2
 * -mfma for this file on x86-64), chosen at import on CPUs that have both. Of the integer max
 * kernels only the 64-bit ones (PC_WITH_INTS 2): built here, the 8-, 16- and 32-bit ones ran at 0.81-1.12x
 * the portable path's time on an AVX2 EPYC (MaxPool 1x64x112x112 k3 s2, both paths in one
 * process), 64-bit at 0.58-0.61x; the six cost 12 of this file's 25 s of compile there.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#define PC_TABLE pc_kernels_avx2
#define PC_ISA_NAME "avx2"
#define PC_WIDE 1
#define PC_WITH_INTS 2
#include "kernels_isa.h"
#else
#include "common.h"
const kernels_t pc_kernels_avx2 = {.name = NULL}; /* not built for this architecture or compiler */
#endif
