/*
 * The rest of the pooling family in the C engine: Lp pooling sums, adaptive average and max
 * pooling, and MaxUnpool. Plain portable C over float64 data (the Python side widens float16 and
 * float32 inputs exactly and rounds the results once); the semantics are those of
 * poolcheck/engines/family_numpy.py, bit for bit:
 *
 *  - lp_sums: per window, the sum over its taps inside the input, in row-major tap order,
 *    starting from +0.0, of |x|^p, the power computed by binary exponentiation (square-and-
 *    multiply over the bits of p, lowest first: one fixed sequence of float64 multiplications).
 *    Taps in padding would add +0.0 to a sum >= +0.0, which changes nothing, so they are skipped.
 *    The 1/p-th root is taken by the caller.
 *  - adaptive: bin j of an axis of size n pooled to o is [floor(j n / o), ceil((j + 1) n / o)).
 *    Average: sum from -0.0 (the identity of IEEE addition) in row-major order, one division by
 *    the bin's element count. Max: a row-major scan keeping the first element that no later one
 *    beats (strict '>'), a NaN beating any number (the first NaN wins); the index is the element's
 *    position in its (n, c) plane, flattened row-major.
 *  - max_unpool: a zero output, then out[ind[i]] = x[i] for every i in row-major order (the last
 *    write to a position stays).
 *
 * Registered in module.c by pc_family_methods(). The GIL is released while computing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#define FAM_MAX_RANK 3
#define FAM_GEO_MAX ((int64_t)2147483647)

typedef struct {
    int64_t n, k, s, d, pb, pe, o;
} fam_axis_t;

/* (nc, n0, k0, s0, d0, pb0, pe0, o0, n1, ...) -> planes and three axes (missing ones trivial). */
static int fam_parse_geometry(PyObject *tup, int64_t *planes, fam_axis_t *ax) {
    if (!PyTuple_Check(tup)) {
        PyErr_SetString(PyExc_TypeError, "geometry: expected a tuple");
        return -1;
    }
    const Py_ssize_t len = PyTuple_GET_SIZE(tup);
    if (len < 8 || len > 1 + 7 * FAM_MAX_RANK || (len - 1) % 7 != 0) {
        PyErr_SetString(PyExc_ValueError, "geometry: expected 1 + 7 values per spatial axis (1 to 3 axes)");
        return -1;
    }
    const int rank = (int)((len - 1) / 7);
    int64_t v[1 + 7 * FAM_MAX_RANK];
    for (Py_ssize_t i = 0; i < len; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tup, i));
        if (v[i] == -1 && PyErr_Occurred()) return -1;
    }
    *planes = v[0];
    if (*planes < 1 || *planes > FAM_GEO_MAX * 64) goto bad;
    for (int a = 0; a < FAM_MAX_RANK; a++) {
        /* the leading axes of a rank below 3 are trivial: one element, one tap, one output */
        const int src = a - (FAM_MAX_RANK - rank);
        if (src < 0) {
            ax[a] = (fam_axis_t){1, 1, 1, 1, 0, 0, 1};
            continue;
        }
        const int64_t *w = v + 1 + 7 * src;
        ax[a] = (fam_axis_t){w[0], w[1], w[2], w[3], w[4], w[5], w[6]};
        if (ax[a].n < 1 || ax[a].k < 1 || ax[a].s < 1 || ax[a].d < 1 || ax[a].o < 0) goto bad;
        for (int j = 0; j < 7; j++)
            if (w[j] > FAM_GEO_MAX || w[j] < -FAM_GEO_MAX) goto bad;
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "geometry: values out of range");
    return -1;
}

static int fam_check_len(const Py_buffer *b, int64_t count, int64_t itemsize, const char *name) {
    if (b->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %lld bytes, got %lld", name, (long long)(count * itemsize),
                     (long long)b->len);
        return -1;
    }
    return 0;
}

/* |v|^p by square-and-multiply over the bits of p, lowest first. */
static double fam_power(double v, int64_t p) {
    double base = fabs(v);
    double result = 1.0;
    int first = 1;
    while (p > 0) {
        if (p & 1) {
            result = first ? base : result * base;
            first = 0;
        }
        p >>= 1;
        if (p > 0) base = base * base;
    }
    return result;
}

static void fam_lp_sums(const double *x, double *out, int64_t planes, const fam_axis_t *ax, int64_t p) {
    const int64_t plane_in = ax[0].n * ax[1].n * ax[2].n;
    const int64_t plane_out = ax[0].o * ax[1].o * ax[2].o;
    for (int64_t c = 0; c < planes; c++) {
        const double *xp = x + c * plane_in;
        double *op = out + c * plane_out;
        for (int64_t o0 = 0; o0 < ax[0].o; o0++)
            for (int64_t o1 = 0; o1 < ax[1].o; o1++)
                for (int64_t o2 = 0; o2 < ax[2].o; o2++) {
                    double acc = 0.0;
                    for (int64_t j0 = 0; j0 < ax[0].k; j0++) {
                        const int64_t q0 = o0 * ax[0].s - ax[0].pb + j0 * ax[0].d;
                        if (q0 < 0 || q0 >= ax[0].n) continue;
                        for (int64_t j1 = 0; j1 < ax[1].k; j1++) {
                            const int64_t q1 = o1 * ax[1].s - ax[1].pb + j1 * ax[1].d;
                            if (q1 < 0 || q1 >= ax[1].n) continue;
                            for (int64_t j2 = 0; j2 < ax[2].k; j2++) {
                                const int64_t q2 = o2 * ax[2].s - ax[2].pb + j2 * ax[2].d;
                                if (q2 < 0 || q2 >= ax[2].n) continue;
                                acc = acc + fam_power(xp[(q0 * ax[1].n + q1) * ax[2].n + q2], p);
                            }
                        }
                    }
                    op[(o0 * ax[1].o + o1) * ax[2].o + o2] = acc;
                }
    }
}

/* lp_sums(x: float64 buffer, out: writable float64 buffer, geometry, p) */
static PyObject *py_lp_sums(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer xb = {0}, ob = {0};
    PyObject *geo;
    long long p;
    int64_t planes;
    fam_axis_t ax[FAM_MAX_RANK];
    if (!PyArg_ParseTuple(args, "y*w*OL", &xb, &ob, &geo, &p)) return NULL;
    PyObject *result = NULL;
    if (fam_parse_geometry(geo, &planes, ax) < 0) goto done;
    if (p < 1) {
        PyErr_SetString(PyExc_ValueError, "p: must be >= 1");
        goto done;
    }
    if (fam_check_len(&xb, planes * ax[0].n * ax[1].n * ax[2].n, 8, "x") < 0 ||
        fam_check_len(&ob, planes * ax[0].o * ax[1].o * ax[2].o, 8, "out") < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS fam_lp_sums((const double *)xb.buf, (double *)ob.buf, planes, ax, (int64_t)p);
    Py_END_ALLOW_THREADS result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&xb);
    PyBuffer_Release(&ob);
    return result;
}

/* Bin j of an axis of size n pooled to o: [floor(j n / o), ceil((j + 1) n / o)). */
static void fam_bin(int64_t j, int64_t n, int64_t o, int64_t *start, int64_t *end) {
    *start = (j * n) / o;
    *end = ((j + 1) * n + o - 1) / o;
}

static void fam_adaptive(const double *x, double *out, int64_t *idx, int64_t planes, const int64_t *n,
                         const int64_t *o, int want_max) {
    const int64_t plane_in = n[0] * n[1] * n[2];
    const int64_t plane_out = o[0] * o[1] * o[2];
    for (int64_t c = 0; c < planes; c++) {
        const double *xp = x + c * plane_in;
        for (int64_t i0 = 0; i0 < o[0]; i0++) {
            int64_t s0, e0;
            fam_bin(i0, n[0], o[0], &s0, &e0);
            for (int64_t i1 = 0; i1 < o[1]; i1++) {
                int64_t s1, e1;
                fam_bin(i1, n[1], o[1], &s1, &e1);
                for (int64_t i2 = 0; i2 < o[2]; i2++) {
                    int64_t s2, e2;
                    fam_bin(i2, n[2], o[2], &s2, &e2);
                    const int64_t at = c * plane_out + (i0 * o[1] + i1) * o[2] + i2;
                    double acc = -0.0, best = 0.0;
                    int64_t where = -1;
                    for (int64_t q0 = s0; q0 < e0; q0++)
                        for (int64_t q1 = s1; q1 < e1; q1++)
                            for (int64_t q2 = s2; q2 < e2; q2++) {
                                const int64_t pos = (q0 * n[1] + q1) * n[2] + q2;
                                const double v = xp[pos];
                                if (!want_max) {
                                    acc = acc + v;
                                } else if (where < 0 || v > best || (isnan(v) && !isnan(best))) {
                                    best = v;
                                    where = pos;
                                }
                            }
                    if (want_max) {
                        out[at] = best;
                        idx[at] = where;
                    } else {
                        out[at] = acc / (double)((e0 - s0) * (e1 - s1) * (e2 - s2));
                    }
                }
            }
        }
    }
}

static int fam_sizes(PyObject *tup, int64_t *v, const char *name) {
    if (!PyTuple_Check(tup) || PyTuple_GET_SIZE(tup) < 1 || PyTuple_GET_SIZE(tup) > FAM_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "%s: expected a tuple of 1 to 3 sizes", name);
        return -1;
    }
    const Py_ssize_t rank = PyTuple_GET_SIZE(tup);
    for (int a = 0; a < FAM_MAX_RANK; a++) {
        const Py_ssize_t src = a - (FAM_MAX_RANK - rank);
        if (src < 0) {
            v[a] = 1;
            continue;
        }
        v[a] = PyLong_AsLongLong(PyTuple_GET_ITEM(tup, src));
        if (v[a] == -1 && PyErr_Occurred()) return -1;
        if (v[a] < 1 || v[a] > FAM_GEO_MAX) {
            PyErr_Format(PyExc_ValueError, "%s: every size must lie in [1, 2^31 - 1]", name);
            return -1;
        }
    }
    return 0;
}

/* adaptive(x: float64, out: writable float64, indices: writable int64 or None, planes,
 *          input_sizes, output_sizes) -- indices None: average pooling, else max pooling */
static PyObject *py_adaptive(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer xb = {0}, ob = {0}, ib = {0};
    PyObject *idx_obj, *in_obj, *out_obj;
    long long planes;
    int64_t n[FAM_MAX_RANK], o[FAM_MAX_RANK];
    if (!PyArg_ParseTuple(args, "y*w*OLOO", &xb, &ob, &idx_obj, &planes, &in_obj, &out_obj)) return NULL;
    PyObject *result = NULL;
    const int want_max = idx_obj != Py_None;
    if (want_max && PyObject_GetBuffer(idx_obj, &ib, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
    if (planes < 1 || fam_sizes(in_obj, n, "input_sizes") < 0 || fam_sizes(out_obj, o, "output_sizes") < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "planes: must be >= 1");
        goto done;
    }
    if (PyTuple_GET_SIZE(in_obj) != PyTuple_GET_SIZE(out_obj)) {
        PyErr_SetString(PyExc_ValueError, "input_sizes and output_sizes must have the same length");
        goto done;
    }
    const int64_t count_out = planes * o[0] * o[1] * o[2];
    if (fam_check_len(&xb, planes * n[0] * n[1] * n[2], 8, "x") < 0 || fam_check_len(&ob, count_out, 8, "out") < 0 ||
        (want_max && fam_check_len(&ib, count_out, 8, "indices") < 0))
        goto done;
    Py_BEGIN_ALLOW_THREADS fam_adaptive((const double *)xb.buf, (double *)ob.buf, want_max ? (int64_t *)ib.buf : NULL,
                                        (int64_t)planes, n, o, want_max);
    Py_END_ALLOW_THREADS result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&xb);
    PyBuffer_Release(&ob);
    if (want_max && ib.obj) PyBuffer_Release(&ib);
    return result;
}

/* max_unpool(x: float64, indices: int64 (as many as x), out: writable float64) */
static PyObject *py_max_unpool(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer xb = {0}, ib = {0}, ob = {0};
    if (!PyArg_ParseTuple(args, "y*y*w*", &xb, &ib, &ob)) return NULL;
    PyObject *result = NULL;
    const int64_t count = (int64_t)(xb.len / 8), total = (int64_t)(ob.len / 8);
    if (fam_check_len(&ib, count, 8, "indices") < 0 || xb.len % 8 != 0 || ob.len % 8 != 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "x and out must hold float64 values");
        goto done;
    }
    const int64_t *ind = (const int64_t *)ib.buf;
    for (int64_t i = 0; i < count; i++) {
        if (ind[i] < 0 || ind[i] >= total) {
            PyErr_Format(PyExc_ValueError, "indices: %lld lies outside [0, %lld)", (long long)ind[i], (long long)total);
            goto done;
        }
    }
    {
        const double *x = (const double *)xb.buf;
        double *out = (double *)ob.buf;
        Py_BEGIN_ALLOW_THREADS memset(out, 0, (size_t)total * sizeof(double));
        for (int64_t i = 0; i < count; i++) out[ind[i]] = x[i];
        Py_END_ALLOW_THREADS
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&xb);
    PyBuffer_Release(&ib);
    PyBuffer_Release(&ob);
    return result;
}

static PyMethodDef family_methods[] = {
    {"lp_sums", py_lp_sums, METH_VARARGS, "lp_sums(x, out, geometry, p): per window, sum of |x|^p"},
    {"adaptive", py_adaptive, METH_VARARGS,
     "adaptive(x, out, indices_or_None, planes, input_sizes, output_sizes): adaptive avg (None) or max pooling"},
    {"max_unpool", py_max_unpool, METH_VARARGS, "max_unpool(x, indices, out)"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef *pc_family_methods(void) { return family_methods; }
