/* linalg.c — shapes and dtypes of the linear-algebra extern nodes (ic_extern with kind >=
 * IC_EXT_MATRIX_EXP): matrix_exp, matrix_exp_vjp and solve, checked like ATen.
 *
 * Requires: static metas of the operands (ic_extern refuses symbolic ones before this).
 * Gives: the contiguous result meta, or IC_EINVALID where eager raises (non-square, shapes
 * that do not match) and IC_EUNSUPPORTED for what stays eager (dtypes other than
 * float32/float64 — complex tensors never reach a graph —, solve's vector right-hand side
 * and broadcast batch dims).
 *
 * The extern handler (csrc/matrix_exp.cpp) runs them: the degree and scaling of matrix_exp
 * depend on the 1-norm of the data, so they are chosen there at each call, and the GEMMs and
 * fused linear combinations follow. */
#include <stdio.h>
#include <string.h>

#include "ic_internal.h"

static ic_errcode why(char *buf, size_t n, ic_errcode code, const char *msg) {
    snprintf(buf, n, "%s", msg);
    return code;
}

static bool square(const ic_meta *m) { return m->ndim >= 2 && m->sizes[m->ndim - 1] == m->sizes[m->ndim - 2]; }

IC_HIDDEN ic_errcode ic_linalg_meta(ic_extern_kind kind, int nin, const ic_meta *const *m, int nparams,
                                    const int64_t *params, ic_meta *o, char *w, size_t nw) {
    int want = kind == IC_EXT_MATRIX_EXP ? 1 : 2;
    if (nin != want) return why(w, nw, IC_EINVALID, "wrong operand count");
    if (nparams != (kind == IC_EXT_SOLVE ? 1 : 0) && !(kind == IC_EXT_SOLVE && nparams == 4))
        return why(w, nw, IC_EINVALID, "wrong param count"); /* solve_triangular: left, upper, unitriangular, 1 */
    ic_dtype t = m[0]->dtype;
    if (t != IC_F32 && t != IC_F64) return why(w, nw, IC_EUNSUPPORTED, "only float32/float64 are compiled");
    if (nin == 2 && m[1]->dtype != t) return why(w, nw, IC_EUNSUPPORTED, "operands of different dtypes");
    if (!square(m[0])) return why(w, nw, IC_EINVALID, "expected a tensor of square matrices [..., n, n]");
    *o = *m[0];
    switch (kind) {
    case IC_EXT_MATRIX_EXP: break;
    case IC_EXT_MATRIX_EXP_VJP:
        if (m[1]->ndim != m[0]->ndim || memcmp(m[1]->sizes, m[0]->sizes, sizeof(int64_t) * (size_t)m[0]->ndim))
            return why(w, nw, IC_EINVALID, "the gradient must have the input's shape");
        break;
    case IC_EXT_SOLVE: {
        const ic_meta *a = m[0], *b = m[1];
        int nd = a->ndim, left = params[0] != 0;
        if (b->ndim != nd) return why(w, nw, IC_EUNSUPPORTED, "right-hand side of another rank (vector or broadcast)");
        for (int i = 0; i < nd - 2; i++)
            if (a->sizes[i] != b->sizes[i]) return why(w, nw, IC_EUNSUPPORTED, "broadcast batch dims");
        int64_t n = a->sizes[nd - 1];
        if ((left ? b->sizes[nd - 2] : b->sizes[nd - 1]) != n)
            return why(w, nw, IC_EINVALID, "incompatible shapes of A and B for the equation");
        *o = *b;
        o->dtype = t;
        break;
    }
    default: return why(w, nw, IC_EINVALID, "not a linear-algebra extern");
    }
    o->dyn = 0;
    ic_contiguous_strides(o);
    return IC_OK;
}
