/*
 * The avx512 path: the portable kernels compiled with AVX-512 F/BW/VL/DQ (setup.py passes the
 * flags for this file on x86-64), chosen at import on CPUs that have them; the fused float32
 * kernels (fused_f32.h) run 16 lanes wide here. The integer max kernels are the avx2 path's
 * (PC_WITH_INTS 0), which keeps the build short.
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512DQ__) && defined(__FMA__)
#define PC_TABLE pc_kernels_avx512
#define PC_ISA_NAME "avx512"
#define PC_WIDE 1
#define PC_WITH_INTS 0
#include "kernels_isa.h"
#else
#include "common.h"
const kernels_t pc_kernels_avx512 = {.name = NULL}; /* not built for this architecture or compiler */
#endif
