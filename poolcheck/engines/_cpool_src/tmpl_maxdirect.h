/*
 * Template: max pooling by a direct row-major scan (the "first" NaN policy), for one element
 * type. Included once per instance (kernels_isa.h) with PC_SUF (name suffix), PC_T (element
 * type) and PC_BETTER (the strict comparison) defined, and undefines them.
 *
 * For each output row (all output coordinates but the last), the valid tap rows are visited
 * in row-major order and, within each, the taps of the last axis in order; each output keeps
 * its running best in `out` and the chosen position in `pos`. Per output this is exactly the
 * sequence of comparisons of a row-major scan of its window.
 */
#define T PC_T
#define BETTER PC_BETTER
#define PC_N(f) PC_CAT(f, PC_SUF)

PC_ENTRY void PC_N(maxdirect)(const void *xv, void *outv, int64_t *pos, const geo_t *g, const int64_t *w) {
    const T *x = (const T *)xv;
    T *out = (T *)outv;
    const int r = g->r;
    const ax_t *W = &g->a[r - 1];
    const ax_t *H = r >= 2 ? &g->a[r - 2] : NULL;
    const ax_t *D = r >= 3 ? &g->a[r - 3] : NULL;
    const int64_t n = W->n, k = W->k, s = W->s, d = W->d, pb = W->pb, O = W->o;
    const int64_t lo = W->lo, hi = W->hi, ww = w[r - 1];
    const int64_t OD = D ? D->o : 1, OH = H ? H->o : 1;
    const int64_t NH = H ? H->n : 1;
    for (int64_t p = 0; p < g->nc; p++) {
        if (poll_interrupt()) break;
        const T *xp = x + p * g->plane_in;
        for (int64_t od = 0; od < OD; od++) {
            const int64_t dl = D ? D->jlo[od] : 0, dh = D ? D->jhi[od] : 1;
            for (int64_t oh = 0; oh < OH; oh++) {
                const int64_t hl = H ? H->jlo[oh] : 0, hh = H ? H->jhi[oh] : 1;
                T *restrict yr = out + ((p * OD + od) * OH + oh) * O;
                int64_t *restrict pr = pos + ((p * OD + od) * OH + oh) * O;
                int first = 1;
                for (int64_t jd = dl; jd < dh; jd++) {
                    const int64_t pd = D ? od * D->s - D->pb + jd * D->d : 0;
                    for (int64_t jh = hl; jh < hh; jh++) {
                        const int64_t ph = H ? oh * H->s - H->pb + jh * H->d : 0;
                        const T *restrict xr = xp + (pd * NH + ph) * n;
                        const int64_t roff = (D ? pd * w[r - 3] : 0) + (H ? ph * w[r - 2] : 0);
                        for (int64_t j = 0; j < k; j++) {
                            const int64_t off = j * d - pb;
                            const int64_t cj = roff + off * ww;
                            if (first && j == 0) {
                                for (int64_t o = lo; o < hi; o++) {
                                    yr[o] = xr[off + o * s];
                                    pr[o] = cj + o * s * ww;
                                }
                            } else {
                                for (int64_t o = lo; o < hi; o++) {
                                    T b = xr[off + o * s];
                                    int bt = BETTER(b, yr[o]);
                                    yr[o] = bt ? b : yr[o];
                                    pr[o] = bt ? cj + o * s * ww : pr[o];
                                }
                            }
                        }
                        for (int64_t o = 0; o < O; o++) {
                            if (o == lo) o = hi;
                            if (o >= O) break;
                            const int64_t jl = W->jlo[o], jhh = W->jhi[o];
                            for (int64_t j = jl; j < jhh; j++) {
                                const int64_t c = o * s - pb + j * d;
                                T b = xr[c];
                                int bt = (first && j == jl) | BETTER(b, yr[o]);
                                yr[o] = bt ? b : yr[o];
                                pr[o] = bt ? roff + c * ww : pr[o];
                            }
                        }
                        first = 0;
                    }
                }
            }
        }
    }
}

#undef T
#undef BETTER
#undef PC_N
#undef PC_SUF
#undef PC_T
#undef PC_BETTER
