/*
 * poolcheck.engines._cpool -- the C engine: max and average pooling over (N, C, *spatial)
 * C-contiguous inputs with 1-3 spatial axes.
 *
 * The Python loader (c_engine.py) resolves every attribute into plain numbers (the Geometry of
 * poolcheck.spec.shape: per axis size n, kernel k, stride s, dilation d, pad_begin pb, pad_end pe,
 * output size o) and allocates the outputs; these files only compute.
 *
 * Semantics are those of poolcheck/engines/numpy_engine.py, bit for bit:
 *
 *  - Max pooling scans each window's valid taps (inside [0, n) on every axis) in row-major
 *    order and keeps the first element that no later element beats with a strict comparison.
 *    Under the "propagate" and "ignore" NaN policies (and for integers) that selection rule is
 *    an associative operation, so the window is reduced one axis at a time (last axis first),
 *    each partial result reused by every window that shares it: the result, and the element
 *    chosen, are the ones the row-major scan picks. Under "first" (a strict '>' scan seeded
 *    with the first element, a leading NaN sticks) the operation is not associative and the
 *    window is scanned in row-major order directly.
 *  - Average pooling accumulates in double, last spatial axis first, taps in order, exactly as
 *    numpy_engine.avg_pool does on its zero-padded copy: padded taps add +0.0, which changes
 *    nothing except the sign of a zero sum, so instead of reading a padded copy a window with
 *    any tap outside the input adds one +0.0 after its valid taps. Then one division by the
 *    divisor and one rounding to the output type.
 *
 * Nothing allocates a padded copy. Planes are processed in chunks that fit in cache. The GIL
 * is released while computing.
 *
 * Instruction-set paths, chosen at import (the fastest the CPU runs; POOLCHECK_ISA forces one;
 * _set_isa switches in-process): the same kernel source (the templates tmpl_*.h, instantiated
 * by kernels_isa.h) is compiled once per path with that path's flags -- portable (the
 * architecture's baseline: SSE2 on x86-64, NEON on aarch64), avx2 (AVX2 + FMA) and avx512
 * (AVX-512 F/BW/VL/DQ) -- each into a table of kernels. The fused float32 kernels of the
 * common shapes (fused_f32.h) are part of that source too, written with the vector types of
 * simd.h at the path's native width, so every path runs the same algorithms.
 *
 * Files: common.h (shared types, the kernel table), geometry.c (per-call geometry, scratch
 * buffers, Ctrl-C polling, empty windows), kernels.h (comparisons), tmpl_maxsep.h,
 * tmpl_maxdirect.h, tmpl_avg.h (the kernel templates), simd.h (the vector layer) and
 * fused_f32.h (the fused float32 kernels), kernels_isa.h (their instances and the table of one
 * path), isa_portable.c, isa_avx2.c, isa_avx512.c (one path each), module.c (this file: argument checking, the choice of path,
 * dispatch, and the module with multi-phase initialisation), family.c (Lp pooling sums, adaptive
 * pooling, MaxUnpool: plain portable C, registered at exec).
 */
#include "common.h"

/* The rest of the pooling family (family.c): its entry points, added to the module at exec. */
PyMethodDef *pc_family_methods(void);

/* ------------------------------------------------------------------------------------------ */
/* Instruction-set paths                                                                      */

static const char *const ISA_NAMES[ISA_COUNT] = {"portable", "avx2", "avx512"};
static const kernels_t *const BUILT[ISA_COUNT] = {&pc_kernels_portable, &pc_kernels_avx2, &pc_kernels_avx512};
/* Per path: its table with every NULL entry taken from the next slower path (filled at import). */
static kernels_t merged[ISA_COUNT];
/* The path in use: chosen at import (the fastest this CPU runs, or POOLCHECK_ISA), switched by
 * _set_isa. Each entry point reads it once, with the GIL held. */
static int isa_id = ISA_PORTABLE;

/* Whether this build has the path and this CPU runs it. */
static int isa_runs(int id) {
    if (id < 0 || id >= ISA_COUNT || BUILT[id]->name == NULL) return 0;
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (id == ISA_AVX2) return avx2;
    if (id == ISA_AVX512)
        return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#endif
    return id == ISA_PORTABLE;
}

static void merge_tables(void) {
    for (int id = 0; id < ISA_COUNT; id++) {
        merged[id] = *BUILT[id];
        if (id == 0 || BUILT[id]->name == NULL) continue;
        const kernels_t *lower = &merged[id - 1];
        kernels_t *t = &merged[id];
        for (int i = 0; i < MK_COUNT; i++)
            if (!t->maxsep[i]) t->maxsep[i] = lower->maxsep[i];
        for (int i = 0; i < 2; i++)
            if (!t->maxdirect[i]) t->maxdirect[i] = lower->maxdirect[i];
        for (int i = 0; i < A_COUNT; i++) {
            if (!t->avg[i]) t->avg[i] = lower->avg[i];
            if (!t->avgglobal[i]) t->avgglobal[i] = lower->avgglobal[i];
        }
        if (!t->finish_indices) t->finish_indices = lower->finish_indices;
        if (!t->max2d_strips) t->max2d_strips = lower->max2d_strips;
        if (!t->max3d_k2s2) t->max3d_k2s2 = lower->max3d_k2s2;
        if (!t->max2d_k3s2) t->max2d_k3s2 = lower->max2d_k3s2;
        if (!t->avg2d_strips) t->avg2d_strips = lower->avg2d_strips;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Python entry points                                                                        */

/* The type, NaN-policy, divisor-rule and average-kind codes of the entry points. These tables
 * are exported to Python as module attributes (MAX_TYPES, NAN_MODES, DIVISOR_RULES,
 * AVG_KINDS), so c_engine.py never mirrors them by hand. */
enum { T_F32, T_F64, T_I8, T_U8, T_I16, T_U16, T_I32, T_U32, T_I64, T_U64, T_COUNT };
/* Max kernel of each integer type (floats depend on the NaN policy). */
static const int INT_KERNEL[T_COUNT] = {-1, -1, MK_I8, MK_U8, MK_I16, MK_U16, MK_I32, MK_U32, MK_I64, MK_U64};
static const int64_t ITEMSIZE[T_COUNT] = {4, 8, 1, 1, 2, 2, 4, 4, 8, 8};
static const char *const TYPE_NAMES[T_COUNT] = {"float32", "float64", "int8",  "uint8",  "int16",
                                                "uint16",  "int32",   "uint32", "int64", "uint64"};
enum { NAN_PROPAGATE, NAN_IGNORE, NAN_FIRST, NAN_COUNT };
static const char *const NAN_NAMES[NAN_COUNT] = {"propagate", "ignore", "first"};

/* Largest magnitude of any geometry value (the spec layer's MAX_EXTENT). */
#define GEO_MAX ((int64_t)2147483647)

/* geometry tuple: (nc, n0, k0, s0, d0, pb0, pe0, o0, n1, ...) */
static int parse_geo(PyObject *tup, geo_t *g) {
    memset(g, 0, sizeof(*g));
    if (!PyTuple_Check(tup)) {
        PyErr_SetString(PyExc_TypeError, "geometry must be a tuple");
        return -1;
    }
    Py_ssize_t len = PyTuple_GET_SIZE(tup);
    if (len < 8 || (len - 1) % 7 != 0 || (len - 1) / 7 > 3) {
        PyErr_SetString(PyExc_ValueError, "geometry tuple must hold nc and 7 values per axis (1-3 axes)");
        return -1;
    }
    int64_t v[22];
    for (Py_ssize_t i = 0; i < len; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tup, i));
        if (v[i] == -1 && PyErr_Occurred()) return -1;
    }
    g->r = (int)((len - 1) / 7);
    g->nc = v[0];
    if (g->nc < 0 || g->nc > GEO_MAX) goto bad;
    int64_t plane_in = 1, plane_out = 1, tmp;
    for (int i = 0; i < g->r; i++) {
        ax_t *a = &g->a[i];
        const int64_t *q = v + 1 + 7 * i;
        a->n = q[0]; a->k = q[1]; a->s = q[2]; a->d = q[3]; a->pb = q[4]; a->pe = q[5]; a->o = q[6];
        /* Defence in depth (the spec layer refuses these first): every value within +-(2^31 - 1),
         * so that every index expression below (o * s - pb + j * d, products of two values plus a
         * third) stays far below 2^63. Pads may be negative (ONNX same_* with a stride larger
         * than the dilated kernel: the windows start inside the input). */
        if (a->n < 1 || a->k < 1 || a->s < 1 || a->d < 1 || a->o < 1) goto bad;
        if (a->n > GEO_MAX || a->k > GEO_MAX || a->s > GEO_MAX || a->d > GEO_MAX || a->o > GEO_MAX ||
            a->pb > GEO_MAX || a->pe > GEO_MAX || a->pb < -GEO_MAX || a->pe < -GEO_MAX)
            goto bad;
        /* The dilated kernel and every window must fit the positions [-pb, n + pe + overhang). */
        if ((a->k - 1) * a->d + 1 > GEO_MAX || (a->o - 1) * a->s > GEO_MAX) goto bad;
        if (__builtin_mul_overflow(plane_in, a->n, &tmp)) goto bad;
        plane_in = tmp;
        if (__builtin_mul_overflow(plane_out, a->o, &tmp)) goto bad;
        plane_out = tmp;
    }
    /* Buffers are addressed with int64 offsets: nc * plane (times 8 bytes) must not overflow. */
    if (__builtin_mul_overflow(g->nc, plane_in, &tmp) || __builtin_mul_overflow(tmp, (int64_t)8, &tmp)) goto bad;
    if (__builtin_mul_overflow(g->nc, plane_out, &tmp) || __builtin_mul_overflow(tmp, (int64_t)8, &tmp)) goto bad;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError,
                    "invalid geometry values (each within 2^31 - 1, buffer sizes within 2^63 bytes)");
    return -1;
}

static int check_buffer(Py_buffer *b, int64_t count, int64_t itemsize, const char *name) {
    if (b->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %lld bytes, got %lld", name,
                     (long long)(count * itemsize), (long long)b->len);
        return -1;
    }
    return 0;
}

/* Flattening weights of the spatial axes ("C" row-major or "F" column-major). */
static void weights(const geo_t *g, int order_f, int64_t *w) {
    int64_t acc = 1;
    if (order_f) {
        for (int i = 0; i < g->r; i++) {
            w[i] = acc;
            acc *= g->a[i].n;
        }
    } else {
        for (int i = g->r - 1; i >= 0; i--) {
            w[i] = acc;
            acc *= g->a[i].n;
        }
    }
}


/* max_pool(x, out, indices_or_None, geometry, type_code, nan_mode, fill_bytes, empty_index,
 *          order_f, modulus) */
/* After a kernel ran without the GIL: None, or NULL with the error set -- a KeyboardInterrupt
 * when Ctrl-C stopped it between chunks of planes (the kernels poll for it, see geometry.c). */
static PyObject *kernel_outcome(void) {
    if (pc_interrupted || PyErr_Occurred()) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyboardInterrupt, "");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *py_max_pool(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer xb = {0}, ob = {0}, ib = {0}, fb = {0};
    PyObject *idx_obj, *geo_obj;
    int tcode, nan_mode, order_f;
    long long empty_index, modulus;
    geo_t g;
    memset(&g, 0, sizeof(g));
    void *t0 = NULL, *t1 = NULL;
    int64_t *q0 = NULL, *q1 = NULL, *pos = NULL;
    uint8_t *empty = NULL;
    PyObject *result = NULL;
    int have_ib = 0;
    const kernels_t *K = &merged[isa_id];
    if (!PyArg_ParseTuple(args, "y*w*OOiiy*LiL", &xb, &ob, &idx_obj, &geo_obj, &tcode, &nan_mode,
                          &fb, &empty_index, &order_f, &modulus))
        return NULL;
    if (parse_geo(geo_obj, &g) < 0) goto done;
    if (tcode < 0 || tcode >= T_COUNT || nan_mode < 0 || nan_mode > 2) {
        PyErr_SetString(PyExc_ValueError, "unknown type code or NaN mode");
        goto done;
    }
    if (modulus < 1) {
        PyErr_SetString(PyExc_ValueError, "modulus must be >= 1");
        goto done;
    }
    const int64_t isz = ITEMSIZE[tcode];
    if (fb.len != isz) {
        PyErr_SetString(PyExc_ValueError, "fill must hold one element of the input type");
        goto done;
    }
    int idx64 = 0;
    if (idx_obj != Py_None) {
        if (PyObject_GetBuffer(idx_obj, &ib, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
        have_ib = 1;
        if (ib.itemsize != 4 && ib.itemsize != 8) {
            PyErr_SetString(PyExc_ValueError, "indices must be int32 or int64");
            goto done;
        }
        idx64 = ib.itemsize == 8;
    }
    if (geo_prepare(&g) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (check_buffer(&xb, g.nc * g.plane_in, isz, "input") < 0) goto done;
    if (check_buffer(&ob, g.nc * g.plane_out, isz, "output") < 0) goto done;
    if (have_ib && check_buffer(&ib, g.nc * g.plane_out, ib.itemsize, "indices") < 0) goto done;
    if (g.nc == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    int err = 0;
    empty = empty_mask(&g, &err);
    if (err) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t w[3] = {0, 0, 0};
    weights(&g, order_f, w);
    const int direct = nan_mode == NAN_FIRST && (tcode == T_F32 || tcode == T_F64);
    const int withpos = have_ib;
    int64_t chunk = 1;
    if (withpos || direct) {
        pos = (int64_t *)scratch_get(S_POS, (size_t)(g.nc * g.plane_out) * sizeof(int64_t));
        if (!pos) {
            PyErr_NoMemory();
            goto done;
        }
    }
    /* The fused float32 kernels (fused_f32.h), values only, where they pay: */
    const ax_t *last = &g.a[g.r - 1];
    const int fusable = !direct && !withpos && tcode == T_F32;
    /* two axes, W windows of 3 with stride 2: the k3 s2 ring kernel; */
    const int k3s2 = fusable && g.r == 2 && last->k == 3 && last->s == 2 && last->d == 1 && last->o >= 16;
    /* three axes, windows of 2 with stride 2 and dilation 1, every window whole: the fused 3-D
     * kernel (which hands a NaN back to the staged path below); */
    int k2s2_3d = fusable && g.r == 3 && last->o >= 16;
    for (int i = 0; i < g.r && k2s2_3d; i++) {
        const ax_t *a = &g.a[i];
        k2s2_3d = a->k == 2 && a->s == 2 && a->d == 1 && a->pb == 0 && a->lo == 0 && a->hi == a->o;
    }
    /* two axes, stride 1, W windows of 2 or 3, H windows of 1 to 3, every window with an
     * element: the max strips (which hand a NaN back to the staged path below). */
    const int strips = fusable && g.r == 2 && g.a[0].s == 1 && g.a[1].s == 1 && g.a[0].k <= 3 &&
                       (g.a[1].k == 2 || g.a[1].k == 3) && g.a[1].o >= 16 &&
                       !g.a[0].has_empty && !g.a[1].has_empty;
    void *ring = NULL;
    int64_t *tags = NULL, *sl = NULL;
    if (k3s2) {
        const int64_t R = ring_rows(&g.a[0]), RS = (g.a[1].o + 15) & ~(int64_t)15;
        ring = scratch_get(S_RING, (size_t)(R * RS) * sizeof(float));
        tags = g_scratch_i64(2 * R);
        sl = g_scratch_i64(g.a[0].k);
        if (!ring || !tags || !sl) {
            free(tags);
            free(sl);
            PyErr_NoMemory();
            goto done;
        }
    }
    if (!direct && !k3s2) {
        chunk = chunk_planes(&g, isz + (withpos ? 8 : 0));
        int64_t tsz = stage_max(&g) * chunk;
        t0 = scratch_get(S_T0, (size_t)(tsz * isz));
        t1 = scratch_get(S_T1, (size_t)(tsz * isz));
        if (withpos) {
            q0 = (int64_t *)scratch_get(S_Q0, (size_t)tsz * sizeof(int64_t));
            q1 = (int64_t *)scratch_get(S_Q1, (size_t)tsz * sizeof(int64_t));
        }
        if (!t0 || !t1 || (withpos && (!q0 || !q1))) {
            PyErr_NoMemory();
            goto done;
        }
    }
    pc_interrupted = 0;
    Py_BEGIN_ALLOW_THREADS
    if (direct) {
        K->maxdirect[tcode == T_F32 ? 0 : 1](xb.buf, ob.buf, pos, &g, w);
    } else {
        switch (tcode) {
            case T_F32:
                if (k2s2_3d && K->max3d_k2s2((const float *)xb.buf, (float *)ob.buf, &g) == 0) break;
                if (strips && K->max2d_strips((const float *)xb.buf, (float *)ob.buf, &g) == 0) break;
                if (k3s2) {
                    K->max2d_k3s2((const float *)xb.buf, (float *)ob.buf, &g, (float *)ring, tags, sl,
                                  nan_mode == NAN_IGNORE);
                    break;
                }
                K->maxsep[nan_mode == NAN_IGNORE ? MK_F32I : MK_F32P](xb.buf, ob.buf, pos, &g, w, t0, t1, q0,
                                                                      q1, chunk);
                break;
            case T_F64:
                K->maxsep[nan_mode == NAN_IGNORE ? MK_F64I : MK_F64P](xb.buf, ob.buf, pos, &g, w, t0, t1, q0,
                                                                      q1, chunk);
                break;
            default:
                K->maxsep[INT_KERNEL[tcode]](xb.buf, ob.buf, pos, &g, w, t0, t1, q0, q1, chunk);
                break;
        }
    }
    if (empty) fill_empty((char *)ob.buf, isz, &g, empty, (const char *)fb.buf);
    if (have_ib) K->finish_indices(pos, ib.buf, idx64, &g, modulus, empty_index, empty);
    Py_END_ALLOW_THREADS
    free(tags);
    free(sl);
    result = kernel_outcome();
done:
    free(empty);
    geo_free(&g);
    scratch_trim();
    if (have_ib) PyBuffer_Release(&ib);
    if (fb.obj) PyBuffer_Release(&fb);
    if (ob.obj) PyBuffer_Release(&ob);
    if (xb.obj) PyBuffer_Release(&xb);
    return result;
}

enum { DIV_FULL, DIV_PADDED, DIV_VALID, DIV_COUNT };
static const char *const DIV_NAMES[DIV_COUNT] = {"full", "padded", "valid"};
/* Average kinds (common.h): input -> output type; float16 runs as float32 -> float64. */
static const char *const AVG_NAMES[A_COUNT] = {"float32", "float64", "float32_to_float64"};

/* avg_pool(x, out, geometry, kind, divisor_rule, empty_avg) */
static PyObject *py_avg_pool(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer xb = {0}, ob = {0};
    PyObject *geo_obj;
    int kind, rule;
    double efill;
    geo_t g;
    memset(&g, 0, sizeof(g));
    double *t0 = NULL, *t1 = NULL, *dtab = NULL;
    PyObject *result = NULL;
    const kernels_t *K = &merged[isa_id];
    if (!PyArg_ParseTuple(args, "y*w*Oiid", &xb, &ob, &geo_obj, &kind, &rule, &efill)) return NULL;
    if (parse_geo(geo_obj, &g) < 0) goto done;
    if (kind < A_F32 || kind > A_F32TO64 || rule < DIV_FULL || rule > DIV_VALID) {
        PyErr_SetString(PyExc_ValueError, "unknown average kind or divisor rule");
        goto done;
    }
    if (geo_prepare(&g) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t isz = kind == A_F64 ? 8 : 4, osz = kind == A_F32 ? 4 : 8;
    if (check_buffer(&xb, g.nc * g.plane_in, isz, "input") < 0) goto done;
    if (check_buffer(&ob, g.nc * g.plane_out, osz, "output") < 0) goto done;
    if (g.nc == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    /* The divisor of each output window: the product of per-axis counts (numpy_engine.divisor). */
    dtab = (double *)scratch_get(S_DTAB, (size_t)g.plane_out * sizeof(double));
    int64_t *cnt[3] = {NULL, NULL, NULL};
    int cnt_ok = dtab != NULL;
    for (int i = 0; i < g.r && cnt_ok; i++) {
        const ax_t *a = &g.a[i];
        cnt[i] = g_scratch_i64(a->o);
        if (!cnt[i]) {
            cnt_ok = 0;
            break;
        }
        for (int64_t o = 0; o < a->o; o++) {
            if (rule == DIV_VALID) {
                cnt[i][o] = a->jhi[o] > a->jlo[o] ? a->jhi[o] - a->jlo[o] : 0;
            } else if (rule == DIV_PADDED) {
                /* taps j in [0, k) with -pb <= st + j * d < n + pe, in closed form */
                const int64_t st = o * a->s - a->pb, lo = -a->pb - st, hi = a->n + a->pe - st;
                int64_t jl = lo <= 0 ? 0 : (lo + a->d - 1) / a->d;
                int64_t jh = hi <= 0 ? 0 : (hi + a->d - 1) / a->d;
                if (jl > a->k) jl = a->k;
                if (jh > a->k) jh = a->k;
                cnt[i][o] = jh > jl ? jh - jl : 0;
            } else {
                cnt[i][o] = a->k;
            }
        }
    }
    int zeros = 0;
    /* float32 averages divide with FMA (kernels_isa.h, quot_f32) given reciprocals: on the paths
     * with FMA and for divisors below 2^51 (each a product of counts, so any divisor then fits). */
    double *rtab = NULL;
    /* float32, two axes, stride and dilation 1, W windows of 2 or 3, H windows of 1 to 3: the
     * average strips (fused_f32.h), which need no table of reciprocals (with FMA they form
     * their few per strip). */
    const int fused2d = kind == A_F32 && g.r == 2 && g.a[1].s == 1 && g.a[1].d == 1 &&
                        (g.a[1].k == 2 || g.a[1].k == 3) && g.a[1].o >= 8 && g.a[0].s == 1 && g.a[0].d == 1 &&
                        g.a[0].k <= 3;
    if (kind == A_F32 && !fused2d && K->fma_quot) {
        rtab = (double *)scratch_get(S_RTAB, (size_t)g.plane_out * sizeof(double));
        cnt_ok = cnt_ok && rtab != NULL;
    }
    double dmax = 0.0;
    if (cnt_ok) {
        int64_t o[3] = {0, 0, 0};
        for (int64_t i = 0; i < g.plane_out; i++) {
            double v = 1.0; /* exact: a product of counts below 2^53 (the spec layer's work cap) */
            for (int a = 0; a < g.r; a++) v *= (double)cnt[a][o[a]];
            dtab[i] = v;
            if (rtab) rtab[i] = 1.0 / v; /* correctly rounded reciprocal (inf for 0) */
            if (v > dmax) dmax = v;
            zeros |= v == 0.0;
            for (int a = g.r - 1; a >= 0; a--) {
                if (++o[a] < g.a[a].o) break;
                o[a] = 0;
            }
        }
    }
    for (int i = 0; i < 3; i++) free(cnt[i]);
    if (!cnt_ok) {
        PyErr_NoMemory();
        goto done;
    }
    if (dmax >= 2251799813685248.0) rtab = NULL; /* 2^51 */
    int gpad = 0;
    if (geo_global(&g, &gpad)) {
        const double zadd = gpad ? 0.0 : -0.0;
        pc_interrupted = 0;
        Py_BEGIN_ALLOW_THREADS
        K->avgglobal[kind](xb.buf, ob.buf, g.nc, g.plane_in, dtab[0], efill, zadd);
        Py_END_ALLOW_THREADS
        result = kernel_outcome();
        goto done;
    }
    if (fused2d) {
        int staged = 0;
        pc_interrupted = 0;
        Py_BEGIN_ALLOW_THREADS
        staged = K->avg2d_strips((const float *)xb.buf, (float *)ob.buf, &g, dtab, zeros, efill);
        Py_END_ALLOW_THREADS
        if (!staged) {
            result = kernel_outcome();
            goto done;
        }
    }
    const int64_t chunk = chunk_planes(&g, 8);
    const int64_t tsz = stage_max(&g) * chunk;
    t0 = (double *)scratch_get(S_T0, (size_t)tsz * sizeof(double));
    t1 = (double *)scratch_get(S_T1, (size_t)tsz * sizeof(double));
    if (!t0 || !t1) {
        PyErr_NoMemory();
        goto done;
    }
    pc_interrupted = 0;
    Py_BEGIN_ALLOW_THREADS
    K->avg[kind](xb.buf, ob.buf, &g, dtab, rtab, zeros, efill, t0, t1, chunk);
    Py_END_ALLOW_THREADS
    result = kernel_outcome();
done:
    geo_free(&g);
    scratch_trim();
    if (ob.obj) PyBuffer_Release(&ob);
    if (xb.obj) PyBuffer_Release(&xb);
    return result;
}

static int isa_by_name(const char *name) {
    for (int i = 0; i < ISA_COUNT; i++)
        if (strcmp(name, ISA_NAMES[i]) == 0) return i;
    return -1;
}

/* The paths this CPU and build run, as "a, b, c" (for messages). */
static void runnable_names(char *buf, size_t size) {
    buf[0] = 0;
    for (int i = 0; i < ISA_COUNT; i++) {
        if (!isa_runs(i)) continue;
        if (buf[0]) strncat(buf, ", ", size - strlen(buf) - 1);
        strncat(buf, ISA_NAMES[i], size - strlen(buf) - 1);
    }
}

/* Sets a Python exception (type exc) and returns -1 unless `name` is a path this CPU runs. */
static int check_isa(const char *what, const char *name, PyObject *exc) {
    char runs[64];
    runnable_names(runs, sizeof runs);
    const int id = isa_by_name(name);
    if (id < 0) {
        PyErr_Format(exc, "%s: unknown instruction-set path '%.40s'; expected portable, avx2 or avx512 "
                     "(this CPU runs: %s)", what, name, runs);
        return -1;
    }
    if (!isa_runs(id)) {
        PyErr_Format(exc, "%s: this %s cannot run the %s path; it runs: %s", what,
                     BUILT[id]->name == NULL ? "build" : "CPU", name, runs);
        return -1;
    }
    return id;
}

/* isa() -> the name of the path in use. */
static PyObject *py_isa(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(ISA_NAMES[isa_id]);
}

/* _set_isa(name) -> previous name: switch paths, so that tests and benchmarks can compare them
 * in one process. Not for use while another thread is computing. */
static PyObject *py_set_isa(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    const int id = check_isa("_set_isa", name, PyExc_ValueError);
    if (id < 0) return NULL;
    const int previous = isa_id;
    isa_id = id;
    return PyUnicode_FromString(ISA_NAMES[previous]);
}

static PyMethodDef methods[] = {
    {"max_pool", py_max_pool, METH_VARARGS,
     "max_pool(x, out, indices, geometry, type_code, nan_mode, fill, empty_index, order_f, modulus)"},
    {"avg_pool", py_avg_pool, METH_VARARGS, "avg_pool(x, out, geometry, kind, divisor_rule, empty_avg)"},
    {"isa", py_isa, METH_NOARGS, "isa() -> the instruction-set path in use (portable, avx2 or avx512)"},
    {"_set_isa", py_set_isa, METH_O, "_set_isa(name) -> previous path (tests and benchmarks only)"},
    {NULL, NULL, 0, NULL},
};

/* name -> code dict of one code table. */
static int add_table(PyObject *m, const char *attr, const char *const *names, int count) {
    PyObject *d = PyDict_New();
    if (!d) return -1;
    for (int i = 0; i < count; i++) {
        PyObject *v = PyLong_FromLong(i);
        if (!v || PyDict_SetItemString(d, names[i], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return -1;
        }
        Py_DECREF(v);
    }
    if (PyModule_AddObject(m, attr, d) < 0) {
        Py_DECREF(d);
        return -1;
    }
    return 0;
}

/* Multi-phase initialisation (PEP 489): the module object is created by the import machinery,
 * then this slot fills it. The module keeps no Python state (the path in use is a process-wide
 * fact about the CPU), so every interpreter may import it. POOLCHECK_ISA=portable|avx2|avx512
 * forces a path; a path this CPU or build cannot run fails the import with a message saying
 * which paths it can. */
static int cpool_exec(PyObject *m) {
    merge_tables();
    const char *forced = getenv("POOLCHECK_ISA");
    if (forced && forced[0]) {
        const int id = check_isa("POOLCHECK_ISA", forced, PyExc_ImportError);
        if (id < 0) return -1;
        isa_id = id;
    } else {
        isa_id = ISA_PORTABLE;
        for (int i = ISA_COUNT - 1; i > 0; i--)
            if (isa_runs(i)) {
                isa_id = i;
                break;
            }
    }
    PyObject *runs = PyTuple_New(0);
    if (!runs) return -1;
    for (int i = 0; i < ISA_COUNT; i++) {
        if (!isa_runs(i)) continue;
        PyObject *name = PyUnicode_FromString(ISA_NAMES[i]);
        if (!name || _PyTuple_Resize(&runs, PyTuple_GET_SIZE(runs) + 1) < 0) {
            Py_XDECREF(name);
            Py_XDECREF(runs);
            return -1;
        }
        PyTuple_SET_ITEM(runs, PyTuple_GET_SIZE(runs) - 1, name);
    }
    if (PyModule_AddObject(m, "ISAS", runs) < 0) {
        Py_DECREF(runs);
        return -1;
    }
    if (PyModule_AddIntConstant(m, "CHUNK_BYTES", CHUNK_BYTES) < 0) return -1;
    if (add_table(m, "MAX_TYPES", TYPE_NAMES, T_COUNT) < 0 || add_table(m, "NAN_MODES", NAN_NAMES, NAN_COUNT) < 0 ||
        add_table(m, "DIVISOR_RULES", DIV_NAMES, DIV_COUNT) < 0 || add_table(m, "AVG_KINDS", AVG_NAMES, A_COUNT) < 0)
        return -1;
    if (PyModule_AddFunctions(m, pc_family_methods()) < 0) return -1;
    return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)cpool_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cpool", "poolcheck's C pooling engine (see c_engine.py).", 0, methods,
    slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cpool(void) { return PyModuleDef_Init(&module); }
