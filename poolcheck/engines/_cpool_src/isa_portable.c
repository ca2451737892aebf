/*
 * The portable path: the kernels compiled for the architecture's baseline (x86-64: SSE2;
 * aarch64: NEON, which every AArch64 CPU has). Always built, always available.
 */
#define PC_TABLE pc_kernels_portable
#define PC_ISA_NAME "portable"
#include "kernels_isa.h"
