/* sym_vmap.c — torch.vmap (torch.func.vmap) of a Python function inside the trace.
 *
 * vmap(f, in_dims, out_dims)(*args) runs f once per slice of the mapped inputs. The trace
 * runs f once, on inputs whose mapped dim is moved to an axis of its own in front of the
 * per-sample dims: one "batch axis" per vmap level being traced (nested vmaps: one each),
 * of size 1 where a value does not vary along that level. For the ops accepted below, the
 * result of that one run read at each batch position is the per-sample result:
 *   - pointwise ops (arithmetic, comparisons, logical and bitwise ops, where, casts) whose
 *     operands line up: the mapped ones have every batch axis and the same per-sample rank,
 *     the unmapped ones no more dims than that rank (right-aligned broadcasting is then the
 *     per-sample broadcasting);
 *   - ops on unmapped values only (a reduction of a captured tensor), but library calls
 *     (matmul, random numbers, custom ops), which are refused inside the function;
 *   - indexing an unmapped tensor by mapped integer index tensors that are per-sample
 *     scalars, and ints (sym_vmap_index): the gather at the broadcast positions.
 * Anything else that reads a mapped value (a reduction, a view, its shape, an in-place
 * update, the value leaving the function) fails the call with a reason: the call is then a
 * graph break and runs eagerly (functorch), never a different answer.
 *
 * A value's batch axes: t->vb[v], 0 for unmapped values. vb_sync computes it for the values
 * appended since the last sync from their operands (the graph only appends) and checks them
 * against the rules above; the nodes made here at entry and exit are marked directly.
 *
 * Requires: torch importable (torch.vmap is known by identity).
 * Keeps:    the graph; adds a reshape (and a permute) per mapped input, a reshape (and an
 *           expand) per output.
 */
#include "sym.h"
#include "sym_interp.h"
#include "ops_internal.h"

#include <string.h>

#define NO_DIM (-1000000) /* in_dim None */

static PyObject *vmap_fn; /* torch.vmap, which torch.func.vmap is; kept for the process */

static int is_vmap(PyObject *f) {
    static int inited;
    if (!inited) {
        inited = 1;
        PyObject *torch = PyImport_ImportModule("torch");
        vmap_fn = torch ? PyObject_GetAttrString(torch, "vmap") : NULL;
        Py_XDECREF(torch);
        if (vmap_fn == NULL)
            (void)tc_clear_expected(PyExc_Exception);
    }
    return vmap_fn != NULL && f == vmap_fn;
}

PyObject *sym_vmap_fn(void) {
    (void)is_vmap(NULL);
    return vmap_fn;
}

PyObject *sym_vmap_keys(void) {
    static PyObject *keys;
    if (keys == NULL)
        keys = Py_BuildValue("(ssss)", "func", "in_dims", "out_dims", "randomness"); /* kept */
    return keys;
}

/* ---- batch axes of graph values -------------------------------------------------------- */

static int vb_room(trace *t, int n) {
    if (n <= t->vb_cap)
        return 0;
    int cap = t->vb_cap ? t->vb_cap : 256;
    while (cap < n)
        cap *= 2;
    signed char *nv = realloc(t->vb, (size_t)cap);
    if (nv == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(nv + t->vb_cap, 0, (size_t)(cap - t->vb_cap));
    t->vb = nv;
    t->vb_cap = cap;
    return 0;
}

static int nb_of(const trace *t, ic_val v) { return v >= 0 && v < t->vb_done ? t->vb[v] : 0; }

static int ndim_of(trace *t, ic_val v) { return ic_value_meta(t->g, v)->ndim; }

/* the batch axes of the values appended since the last sync, from their operands; with
 * check, each is held to the rules at the top (the first failure is the reason) */
static int vb_sync_to(trace *t, int n, int check) {
    int failed = 0;
    if (vb_room(t, n) < 0)
        return -1;
    for (ic_val v = t->vb_done; v < n; v++) {
        ic_val in[IC_EXT_MAXIN];
        int k = ic_value_operands(t->g, v, in), nb = 0;
        for (int i = 0; i < k; i++)
            if (nb_of(t, in[i]) > nb)
                nb = nb_of(t, in[i]);
        ic_op op = ic_value_op(t->g, v);
        unsigned fl = ic_op_flags(op);
        if (check && !failed && t->vm_depth > 0 && (fl & IC_F_EXT))
            failed = sym_fail(t, "vmap: a library call (matmul, random numbers, a custom op) inside the mapped "
                                 "function is not captured");
        if (check && !failed && nb > 0) {
            int R = ndim_of(t, v), bad = 0;
            if (nb > t->vm_depth)
                failed = sym_fail(t, "vmap: a value of the mapped function is used outside it");
            else if (!(fl & IC_F_PW))
                failed = sym_fail(t, "vmap: %s of a mapped value is not captured (its per-sample result is not "
                                     "the broadcast one)", ic_op_name(op));
            for (int i = 0; !failed && i < k; i++) {
                int b = nb_of(t, in[i]), r = ndim_of(t, in[i]);
                bad |= b > 0 ? (b != nb || r != R) : r > R - nb;
            }
            if (!failed && bad)
                failed = sym_fail(t, "vmap: operands of different per-sample ranks (broadcasting them is not the "
                                     "per-sample broadcasting)");
        }
        t->vb[v] = (signed char)nb;
        t->vb_done = v + 1;
    }
    return failed ? -1 : 0;
}

static int vb_sync(trace *t, int check) { return vb_sync_to(t, ic_graph_num_values(t->g), check); }

/* the values appended since n0 (made here) have nb batch axes */
static int vb_mark(trace *t, ic_val n0, int nb) {
    int n = ic_graph_num_values(t->g);
    if (vb_sync_to(t, n0, 0) < 0 || vb_room(t, n) < 0)
        return -1;
    for (ic_val v = n0; v < n; v++)
        t->vb[v] = (signed char)nb;
    t->vb_done = n;
    return 0;
}

int sym_vmap_batched(trace *t, const var *v) {
    if (t->vb == NULL || v->kind != V_TENSOR)
        return 0;
    if (vb_sync(t, 1) < 0)
        return -1;
    var r = *v;
    sym_resolve(t, &r);
    return nb_of(t, r.val) > 0;
}

/* what (an op of the table, a builtin) reads a mapped value among args (one level into
 * sequences): refused; only the callers' pointwise handlers skip this */
int sym_vmap_gate(trace *t, const char *what, const var *args, int n) {
    if (t->vm_depth == 0)
        return 0;
    for (int i = 0; i < n; i++) {
        const var *a = &args[i];
        int m = a->kind == V_SEQ ? a->n : 1;
        for (int j = 0; j < m; j++) {
            int b = sym_vmap_batched(t, a->kind == V_SEQ ? &a->items[j] : a);
            if (b < 0)
                return -1;
            if (b)
                return sym_fail(t, "vmap: %s of a mapped value is not captured (its per-sample result is not the "
                                   "broadcast one)", what);
        }
    }
    return 0;
}

/* the tensor operands of a pointwise op inside a mapped function, lined up: each mapped one
 * gets every batch axis and, after them, size-1 dims up to the largest per-sample rank among
 * the operands (an unmapped operand's rank is its per-sample rank), so that right-aligned
 * broadcasting is the per-sample broadcasting. Operands are replaced in place. */
int sym_vmap_align(trace *t, var **ops, int n) {
    if (t->vm_depth == 0)
        return 0;
    if (vb_sync(t, 1) < 0)
        return -1;
    int L = t->vm_depth, R = 0, any = 0;
    for (int i = 0; i < n; i++) {
        if (ops[i] == NULL || ops[i]->kind != V_TENSOR)
            continue;
        var v = *ops[i];
        sym_resolve(t, &v);
        int b = nb_of(t, v.val), r = ndim_of(t, v.val) - b;
        any |= b > 0;
        if (r > R)
            R = r;
    }
    if (!any)
        return 0;
    for (int i = 0; i < n; i++) {
        if (ops[i] == NULL || ops[i]->kind != V_TENSOR)
            continue;
        var v = *ops[i];
        sym_resolve(t, &v);
        int b = nb_of(t, v.val), nd = ndim_of(t, v.val);
        if (b == 0 || (b == L && nd - b == R))
            continue;
        const ic_meta *m = ic_value_meta(t->g, v.val);
        if (m->dyn)
            return sym_fail(t, "vmap of a value with dynamic sizes not captured");
        if (L + R > IC_MAX_DIMS)
            return sym_fail(t, "vmap: more than %d dims with the batch axes", IC_MAX_DIMS);
        int64_t sz[IC_MAX_DIMS];
        int k = 0;
        for (int j = 0; j < b; j++)
            sz[k++] = m->sizes[j];
        while (k < L + R - (nd - b))
            sz[k++] = 1;
        for (int j = b; j < nd; j++)
            sz[k++] = m->sizes[j];
        ic_val n0 = ic_graph_num_values(t->g), nv = ic_reshape(t->g, v.val, k, sz);
        if (nv < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "vmap: reshape failed");
        if (vb_mark(t, n0, L) < 0)
            return -1;
        var *a = sym_alloc(t, 1);
        if (a == NULL || sym_tensor_out(t, nv, a) < 0)
            return -1;
        ops[i] = a;
    }
    return 0;
}

/* a binary operator's two operands lined up (sym_vmap_align), written back in place */
int sym_vmap_align2(trace *t, var *a, var *b) {
    var *ab[2] = {a, b};
    if (sym_vmap_align(t, ab, 2) < 0)
        return -1;
    *a = *ab[0];
    *b = *ab[1];
    return 0;
}

/* ---- torch.vmap(f, in_dims, out_dims) ----------------------------------------------------- */

/* a constant (int, None, nested tuples/lists of them) as a new Python object; NULL (no
 * exception) when it is not one */
static PyObject *const_of(trace *t, const var *v_in, int depth) {
    var v = *v_in;
    sym_resolve(t, &v);
    if (v.kind == V_CONST)
        return Py_NewRef(v.obj);
    if (v.kind != V_SEQ || v.obj != NULL || depth > 8)
        return NULL;
    PyObject *r = PyTuple_New(v.n);
    for (int i = 0; r && i < v.n; i++) {
        PyObject *it = const_of(t, &v.items[i], depth + 1);
        if (it == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, it);
    }
    return r;
}

int sym_vmap_make(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (fn->kind != V_FUNC || fn->obj == NULL || !is_vmap(fn->obj))
        return 1;
    static const char *names[] = {"func", "in_dims", "out_dims", "randomness", "chunk_size"};
    const var *slot[5] = {NULL, NULL, NULL, NULL, NULL};
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw;
    if (npos > 4)
        return sym_fail(t, "torch.vmap() with %d positional arguments (eager raises)", npos);
    for (int i = 0; i < npos; i++)
        slot[i] = &args[i];
    for (int j = 0; j < nkw; j++) {
        int k = 0;
        while (k < 5 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, j), names[k]) != 0)
            k++;
        if (k == 5 || slot[k] != NULL)
            return sym_fail(t, "torch.vmap() with keyword %U (eager raises)", PyTuple_GET_ITEM(kwnames, j));
        slot[k] = &args[npos + j];
    }
    if (slot[0] == NULL)
        return sym_fail(t, "torch.vmap() without a function (eager raises)");
    if (slot[4] != NULL && !sym_is_none(slot[4]))
        return sym_fail(t, "torch.vmap(chunk_size=...) not captured");
    /* randomness: random numbers are refused inside the function whatever it says (kept for
     * the torch.vmap rebuilt at a break) */
    var *items = sym_alloc(t, 4);
    if (items == NULL)
        return -1;
    items[0] = *slot[0];
    for (int k = 1; k <= 3; k++) {
        PyObject *c = slot[k] ? const_of(t, slot[k], 0) : k < 3 ? PyLong_FromLong(0) : PyUnicode_FromString("error");
        if (c == NULL)
            return PyErr_Occurred() ? -1 : sym_fail(t, "torch.vmap(): %s not a constant", names[k]);
        if (sym_const(t, c, &items[k]) < 0)
            return -1;
    }
    *out = sym_var(V_FUNC);
    out->op = SYM_VMAP;
    out->items = items;
    out->n = 4;
    return 0;
}

/* v with (to - nb) axes of size 1 inserted at nb: always a new node */
static int pad_axes(trace *t, ic_val v, int nb, int to, ic_val *outv) {
    const ic_meta *m = ic_value_meta(t->g, v);
    int nd = m->ndim, k = 0;
    if (m->dyn)
        return sym_fail(t, "vmap of a value with dynamic sizes not captured");
    if (nd + to - nb > IC_MAX_DIMS)
        return sym_fail(t, "vmap: more than %d dims with the batch axes", IC_MAX_DIMS);
    int64_t sz[IC_MAX_DIMS];
    for (int i = 0; i < nb; i++)
        sz[k++] = m->sizes[i];
    for (int i = nb; i < to; i++)
        sz[k++] = 1;
    for (int i = nb; i < nd; i++)
        sz[k++] = m->sizes[i];
    *outv = ic_reshape(t->g, v, k, sz);
    return *outv < 0 ? (sym_check_graph(t) < 0 ? -1 : sym_fail(t, "vmap: reshape failed")) : 0;
}

/* an argument entering level L with in_dim d (NO_DIM: None); *S the level's size (-1: none yet) */
static int enter(trace *t, const var *x_in, long long d, int L, int64_t *S, var *out) {
    var xv = *x_in;
    sym_resolve(t, &xv);
    if (xv.kind == V_SEQ && xv.obj == NULL && d == NO_DIM) {
        *out = xv;
        return 0;
    }
    if (xv.kind != V_TENSOR) {
        if (d == NO_DIM) {
            *out = xv;
            return 0;
        }
        return sym_fail(t, "vmap: in_dim %lld for a value that is not a tensor (eager raises)", d);
    }
    int nb = nb_of(t, xv.val), nd = ndim_of(t, xv.val), lrank = nd - nb;
    if (d == NO_DIM && nb == 0) {
        *out = xv;
        return 0;
    }
    ic_val n0 = ic_graph_num_values(t->g), v;
    if (d == NO_DIM) {
        if (pad_axes(t, xv.val, nb, L, &v) < 0)
            return -1;
    } else {
        if (d < -lrank || d >= lrank)
            return sym_fail(t, "vmap: in_dim %lld out of range for a value of %d dims (eager raises)", d, lrank);
        if (d < 0)
            d += lrank;
        if (pad_axes(t, xv.val, nb, L - 1, &v) < 0)
            return -1;
        int at = L - 1 + (int)d;
        int64_t size = ic_value_meta(t->g, v)->sizes[at];
        if (*S >= 0 && *S != size)
            return sym_fail(t, "vmap: mapped dims of sizes %lld and %lld (eager raises)", (long long)*S,
                            (long long)size);
        *S = size;
        if (d != 0) {
            int perm[IC_MAX_DIMS], k = 0;
            for (int i = 0; i < L - 1; i++)
                perm[k++] = i;
            perm[k++] = at;
            for (int i = L - 1; i < ndim_of(t, v); i++)
                if (i != at)
                    perm[k++] = i;
            if ((v = ic_permute(t->g, v, perm)) < 0)
                return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "vmap: permute failed");
        }
    }
    if (vb_mark(t, n0, L) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* the arguments entering level L by their in_dims spec (an int or None for all, or a tuple
 * with one entry per argument, nested like the argument) */
static int enter_tree(trace *t, const var *x, PyObject *spec, int L, int64_t *S, var *out, int depth) {
    if (spec == Py_None || PyLong_Check(spec)) {
        int ovf = 0;
        long long d = spec == Py_None ? NO_DIM : PyLong_AsLongLongAndOverflow(spec, &ovf);
        if (spec != Py_None && (ovf || d > IC_MAX_DIMS || d < -IC_MAX_DIMS)) /* (NO_DIM itself too) */
            return sym_fail(t, "vmap: in_dim %R out of range (eager raises)", spec);
        var xv = *x;
        sym_resolve(t, &xv);
        if (xv.kind == V_SEQ && xv.obj == NULL && d != NO_DIM) { /* an int for every leaf */
            var *items = sym_alloc(t, xv.n);
            if (items == NULL && xv.n > 0)
                return -1;
            for (int i = 0; i < xv.n; i++)
                if (enter_tree(t, &xv.items[i], spec, L, S, &items[i], depth + 1) < 0)
                    return -1;
            *out = xv;
            out->items = items;
            out->src = -1;
            return 0;
        }
        return enter(t, &xv, d, L, S, out);
    }
    var xv = *x;
    sym_resolve(t, &xv);
    if (!(PyTuple_Check(spec) || PyList_Check(spec)) || xv.kind != V_SEQ || xv.obj != NULL || depth > 8 ||
        PySequence_Fast_GET_SIZE(spec) != xv.n)
        return sym_fail(t, "vmap: in_dims %R does not match the arguments (eager raises)", spec);
    var *items = sym_alloc(t, xv.n);
    if (items == NULL && xv.n > 0)
        return -1;
    for (int i = 0; i < xv.n; i++)
        if (enter_tree(t, &xv.items[i], PySequence_Fast_GET_ITEM(spec, i), L, S, &items[i], depth + 1) < 0)
            return -1;
    *out = xv;
    out->items = items;
    out->src = -1;
    return 0;
}

/* a result leaving level L at out_dim 0: its level-L axis expanded to S */
static int leave(trace *t, const var *r_in, int L, int64_t S, var *out) {
    var rv = *r_in;
    sym_resolve(t, &rv);
    if (rv.kind == V_SEQ && rv.obj == NULL) {
        var *items = sym_alloc(t, rv.n);
        if (items == NULL && rv.n > 0)
            return -1;
        for (int i = 0; i < rv.n; i++)
            if (leave(t, &rv.items[i], L, S, &items[i]) < 0)
                return -1;
        *out = rv;
        out->items = items;
        out->src = -1;
        return 0;
    }
    if (rv.kind != V_TENSOR)
        return sym_fail(t, "vmap: the mapped function returns a value that is not a tensor (eager raises)");
    int nb = nb_of(t, rv.val);
    if (nb > L)
        return sym_fail(t, "vmap: a value of an inner mapped function is returned");
    ic_val n0 = ic_graph_num_values(t->g), v;
    if (pad_axes(t, rv.val, nb, L, &v) < 0)
        return -1;
    const ic_meta *m = ic_value_meta(t->g, v);
    if (m->sizes[L - 1] != S) {
        int64_t sz[IC_MAX_DIMS];
        memcpy(sz, m->sizes, sizeof sz);
        sz[L - 1] = S;
        if ((v = ic_expand(t->g, v, m->ndim, sz)) < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "vmap: expand failed");
    }
    if (vb_mark(t, n0, L - 1) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* o is an int equal to 0 (a huge int is not, and raises nothing) */
static int int_is_zero(PyObject *o) {
    int ovf = 0;
    return PyLong_Check(o) && PyLong_AsLongAndOverflow(o, &ovf) == 0 && !ovf;
}

int sym_vmap_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    PyObject *in_dims = fn->items[1].obj, *out_dims = fn->items[2].obj;
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw;
    if (!int_is_zero(out_dims)) {
        int zeros = PyTuple_Check(out_dims);
        for (Py_ssize_t i = 0; zeros && i < PyTuple_GET_SIZE(out_dims); i++)
            zeros = int_is_zero(PyTuple_GET_ITEM(out_dims, i));
        if (!zeros)
            return sym_fail(t, "vmap: out_dims %R not captured (only 0)", out_dims);
    }
    if (!(in_dims == Py_None || PyLong_Check(in_dims)) && !(PyTuple_Check(in_dims) && PyTuple_GET_SIZE(in_dims) == npos))
        return sym_fail(t, "vmap: in_dims %R does not match %d positional arguments (eager raises)", in_dims, npos);
    if (t->vm_depth >= 32)
        return sym_fail(t, "vmap: nested more than 32 deep");
    if (vb_sync(t, 1) < 0 || sym_tfm_sync(t) < 0) /* (a TorchFunctionMode: its entry and exit nodes
                                                   * are the tracer's own, as functorch's are) */
        return -1;
    int L = t->vm_depth + 1;
    int64_t S = -1;
    var *in = sym_alloc(t, nargs);
    if (in == NULL && nargs > 0)
        return -1;
    t->vm_depth = L; /* the entry pads mapped values of outer levels to L axes */
    for (int i = 0; i < npos; i++) {
        PyObject *spec = PyTuple_Check(in_dims) ? PyTuple_GET_ITEM(in_dims, i) : in_dims;
        if (enter_tree(t, &args[i], spec, L, &S, &in[i], 0) < 0)
            goto error;
    }
    for (int i = npos; i < nargs; i++) /* keyword arguments are not mapped */
        in[i] = args[i];
    if (S < 0) {
        sym_fail(t, "vmap: no input is mapped (eager raises)");
        goto error;
    }
    if (S == 0) {
        sym_fail(t, "vmap over a dim of size 0 left to eager");
        goto error;
    }
    sym_tfm_made_here(t);
    var r;
    if (sym_call(t, &fn->items[0], in, nargs, kwnames, &r) < 0 || vb_sync(t, 1) < 0 || sym_tfm_sync(t) < 0)
        goto error;
    if (PyTuple_Check(out_dims) && !(r.kind == V_SEQ && r.n == PyTuple_GET_SIZE(out_dims))) {
        sym_fail(t, "vmap: out_dims %R does not match the results (eager raises)", out_dims);
        goto error;
    }
    if (leave(t, &r, L, S, out) < 0)
        goto error;
    sym_tfm_made_here(t);
    t->vm_depth = L - 1;
    return 0;
error:
    (void)vb_sync(t, 0); /* the values of the abandoned call keep their batch axes: any use of
                          * them outside fails the trace */
    t->vm_depth = L - 1;
    return -1;
}

/* x[k] inside a mapped function where k holds mapped index tensors: x unmapped, every part
 * an integer tensor that is a per-sample scalar (mapped, or a 0-d unmapped one) or an int,
 * no more parts than x has dims. 1: no mapped value involved (the caller indexes). */
int sym_vmap_index(trace *t, const var *x_in, const var *k, var *out) {
    if (t->vm_depth == 0 || t->vm_in_index)
        return 1;
    var xv = *x_in;
    sym_resolve(t, &xv);
    const var *parts[SYM_INDEX_PARTS];
    var tmp[SYM_INDEX_PARTS];
    int np = sym_index_parts(t, k, parts, tmp), any = 0;
    if (np < 0)
        return -1;
    int bx = sym_vmap_batched(t, &xv);
    if (bx < 0)
        return -1;
    for (int i = 0; i < np; i++) {
        int b = sym_vmap_batched(t, parts[i]);
        if (b < 0)
            return -1;
        any |= b;
    }
    if (bx)
        return sym_fail(t, "vmap: indexing a mapped tensor is not captured");
    if (!any)
        return 1;
    int L = t->vm_depth;
    if (np > ndim_of(t, xv.val))
        return sym_fail(t, "vmap: more indices than dims (eager raises)");
    for (int i = 0; i < np; i++) {
        var p = *parts[i];
        sym_resolve(t, &p);
        int ok;
        if (p.kind == V_CONST)
            ok = PyLong_Check(p.obj) && !PyBool_Check(p.obj);
        else if (p.kind == V_TENSOR) {
            const ic_meta *m = ic_value_meta(t->g, p.val);
            int b = nb_of(t, p.val);
            ok = m->dtype != IC_BOOL && (m->dtype == IC_I64 || m->dtype == IC_I32 || m->dtype == IC_I16 ||
                                         m->dtype == IC_I8 || m->dtype == IC_U8) &&
                 (b > 0 ? b == L && m->ndim == L : m->ndim == 0);
        } else
            ok = 0;
        if (!ok)
            return sym_fail(t, "vmap: an index other than mapped integer scalars and ints is not captured");
    }
    ic_val n0 = ic_graph_num_values(t->g);
    if (vb_sync(t, 1) < 0)
        return -1;
    t->vm_in_index = 1;
    int rc = sym_tensor_index(t, &xv, k, out);
    t->vm_in_index = 0;
    if (rc < 0)
        return -1;
    (void)n0;
    if (vb_sync(t, 0) < 0) /* the gather's values: batched by their operands */
        return -1;
    if (out->kind != V_TENSOR || ndim_of(t, out->val) != L + ndim_of(t, xv.val) - np || out->val >= t->vb_done)
        return sym_fail(t, "vmap: indexing gave an unexpected shape");
    t->vb[out->val] = (signed char)L;
    return 0;
}
