/* fold.c — input-independent tensors folded at capture time (issue 21).
 *
 * A tensor built only from constants (numbers, guarded sizes, dtypes, devices) and from other
 * such tensors — never from a graph input, a parameter or buffer (those have sources and are
 * graph inputs), a random draw or an in-place update — is computed here, now, by torch itself
 * (eager's kernels on eager's device: its values are eager's, bit for bit) and kept beside its
 * graph value as a host constant (t->hc[val], a real tensor held by t->keep). What it depended
 * on is already guarded: constants by whoever read them, sizes by the static-shape tensor
 * guards (symbolic sizes are V_SYM, never folded), the default dtype here.
 *
 * The result enters the graph as
 *  - a 0-d tensor: a graph scalar of its value (device-neutral: eager lets a CPU 0-d tensor be
 *    the scalar operand of a CUDA elementwise op; any other CUDA op with it is refused unless
 *    torch just ran that op on it, fold_ran);
 *  - a larger tensor on the graph's device: the value its handler builds, as without folding
 *    (every path of the trace can read it), the constant noted beside it;
 *  - a larger tensor on another device than the graph's (the CPU arange of a CUDA graph), or
 *    made before the graph's device is known (a constant decides none; the frame's tensor
 *    arguments do, peek_device): a stand-in of its shape, dtype and strides that no graph op
 *    reads. Ops that fold read the constant instead, updates of it (x op= y, x[k] = v,
 *    x.add_()) run on the constant itself while no graph value holds it (its views see them);
 *    an op the graph builds from it makes it a graph value first (sym_fold_materialize, from
 *    sym_fold_check): a copy of a graph input holding the constant (a DH_S_CONST source, on the
 *    graph's device, eager's values bit for bit), tagged with eager's device;
 *  - a larger tensor on the graph's device made from such stand-ins (.to(device)): that graph
 *    input at once. A view of such constants is built by its handler on them (eager's
 *    aliasing). Returned, a constant no view shares is a clone of it each call.
 *
 * Devices (sym_home): each graph value has eager's device, tagged (constants, factories made
 * on the CPU of a CUDA graph: torch.zeros(n) with no device, over fold_max_bytes; .to(device))
 * or derived from its operands (one with dims on the graph's device decides). A CPU value of a
 * CUDA graph is computed on the GPU (its ops are the CPU's to eager: integer index arithmetic,
 * exact either way); the ops reading it follow eager's rules (check_devices): a CPU index of a
 * CUDA tensor, a CPU 0-d scalar of an elementwise op, .to(device) a copy onto the graph's
 * device, .device/.is_cuda/get_device() the CPU's; a CPU tensor with dims in an op with CUDA
 * tensors is eager's device error (the trace stops there, eager raises). Returned, it is moved
 * to the CPU (sym_output.c), one object however often returned, its views replayed on it.
 * The nodes folds leave dead (the scalars of intermediate constants, stand-ins) are not in the
 * op count (sym_fold_dead_ops): the compiler drops them.
 *
 * Folded: torch functions and Tensor methods of the op table (ops_table.c sym_call), Python
 * operators (ops_pyops.c: x op= y too, on a constant no view shares: its object rebound; ~x),
 * subscripts (ops_index.c), x.T/x.mT/x.data, truth values (symbolic.c); not: random ops (by
 * torch's names), in-place methods (but of stand-ins, above), out=/generator=/requires_grad= calls, anything under autocast, a
 * TorchFunctionMode, vmap or a torch.device context, results over torchc.config.fold_max_bytes
 * (those are built in the graph as before), results that are not one plain tensor or number
 * or a tuple of plain tensors (fold_seq). */
#include "ops_internal.h"

static int ensure_hc(trace *t, ic_val v) {
    if (v < t->caphc)
        return 0;
    int cap = t->caphc ? t->caphc : 64;
    while (cap <= v)
        cap *= 2;
    PyObject **n = realloc(t->hc, (size_t)cap * sizeof *n);
    if (n == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    unsigned char *f = realloc(t->hcflag, (size_t)cap);
    if (f == NULL) {
        t->hc = n;
        PyErr_NoMemory();
        return -1;
    }
    memset(n + t->caphc, 0, (size_t)(cap - t->caphc) * sizeof *n);
    memset(f + t->caphc, 0, (size_t)(cap - t->caphc));
    t->hc = n;
    t->hcflag = f;
    t->caphc = cap;
    return 0;
}

enum { HC_STANDIN = 1 };

/* the nodes [first, last] a fold made for its value: those the graph's outputs do not need are
 * not in its op count (sym_fold_dead_ops): the compiler drops them */
static int note_chain(trace *t, ic_val first, ic_val last) {
    if (t->nfchain + 2 > t->capfchain) {
        int cap = t->capfchain ? 2 * t->capfchain : 64;
        int *n = realloc(t->fchain, (size_t)cap * sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->fchain = n;
        t->capfchain = cap;
    }
    t->fchain[t->nfchain++] = first;
    t->fchain[t->nfchain++] = last;
    return 0;
}


PyObject *sym_hconst(trace *t, const var *v) {
    if (v == NULL || v->kind != V_TENSOR || v->val < 0 || v->val >= t->caphc)
        return NULL;
    return t->hc[v->val];
}

static int hc_set(trace *t, ic_val v, PyObject *o, int flag) {
    if (v < 0 || ensure_hc(t, v) < 0)
        return -1;
    t->hc[v] = o; /* borrowed from t->keep */
    t->hcflag[v] = (unsigned char)flag;
    return 0;
}

/* the tensor o on another device than the graph's (none while the graph's is not decided) */
static int off_device(trace *t, PyObject *o) {
    if (t->device_type < 0)
        return 0;
    tc_meta m;
    tc_tensor_meta(o, &m);
    return sym_home_of(m.device_type, m.device_index) != sym_home_of(t->device_type, t->device_index);
}

/* before the trace reads a tensor, the graph's device is that of the frame's tensor arguments
 * when they agree (the first one read would decide it so): a constant built before then is on
 * the graph's device or not. With no such argument, a constant decides none (a stand-in). */
static void peek_device(trace *t) {
    if (t->device_type >= 0 || t->code == NULL || t->localsplus == NULL)
        return;
    int n = t->code->co_argcount + t->code->co_kwonlyargcount, type = -1, index = 0;
    for (int i = 0; i < n; i++) {
        PyObject *o = t->localsplus[i];
        if (o == NULL || !tc_is_tensor(o))
            continue;
        tc_meta m;
        tc_tensor_meta(o, &m);
        if ((m.device_type != TC_DEV_CPU && m.device_type != TC_DEV_CUDA) ||
            (type >= 0 && sym_home_of(m.device_type, m.device_index) != sym_home_of(type, index)))
            return;
        type = m.device_type;
        index = m.device_index;
    }
    if (type < 0 || (type == TC_DEV_CUDA && !ic_cuda_available()))
        return;
    if (sym_same_device(t, type, index, "the frame's tensors") < 0) /* (undecided: it decides) */
        (void)tc_clear_expected(PyExc_Exception);
}

/* the tensor o on the graph's device (decided) */
static int placed(trace *t, PyObject *o) {
    return t->device_type >= 0 && !off_device(t, o);
}

int sym_home_of(int device_type, int device_index) {
    if (device_type != TC_DEV_CUDA)
        return HOME_CPU;
    int i = device_index > 0 ? device_index : 0;
    return HOME_CUDA0 + (i < 100 ? i : 100);
}

static int graph_home(trace *t) {
    return t->device_type < 0 ? 0 : sym_home_of(t->device_type, t->device_index);
}

PyObject *sym_home_device(int h) {
    PyObject *torch = PyImport_ImportModule("torch");
    PyObject *dev = NULL;
    if (torch != NULL)
        dev = h >= HOME_CUDA0 ? PyObject_CallMethod(torch, "device", "si", "cuda", h - HOME_CUDA0)
                              : PyObject_CallMethod(torch, "device", "s", "cpu");
    Py_XDECREF(torch);
    return dev;
}

enum { HOME_TAGGED = 0x80 };

static int ensure_home(trace *t, ic_val v) {
    if (v < t->caphome)
        return 0;
    int cap = t->caphome ? t->caphome : 256;
    while (cap <= v)
        cap *= 2;
    unsigned char *n = realloc(t->home, (size_t)cap);
    if (n == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(n + t->caphome, 0, (size_t)(cap - t->caphome));
    t->home = n;
    t->caphome = cap;
    return 0;
}

/* v's device from its operands: a graph input is on the graph's device, a number on none; an
 * op's result where its tensor operands are (one with dims on the graph's device decides; a
 * 0-d operand only where no operand with dims has a device: eager's CPU scalars) */
static int derive_home(trace *t, ic_val v) {
    ic_op op = ic_value_op(G, v);
    if (op == IC_OP_INPUT)
        return graph_home(t) ? graph_home(t) : HOME_NEUTRAL;
    if (op == IC_OP_SCALAR)
        return HOME_NEUTRAL;
    ic_val in[IC_EXT_MAXIN];
    int k = ic_value_operands(G, v, in), gh = graph_home(t), nd_h = 0, zd_h = 0;
    for (int i = 0; i < k; i++) {
        if (in[i] < 0 || in[i] >= v)
            continue;
        int h = t->home[in[i]] & ~HOME_TAGGED;
        if (h <= HOME_NEUTRAL)
            continue;
        int *slot = ic_value_meta(G, in[i])->ndim > 0 ? &nd_h : &zd_h;
        if (*slot == 0 || h == gh)
            *slot = h;
    }
    return nd_h ? nd_h : zd_h ? zd_h : HOME_NEUTRAL;
}

int sym_home(trace *t, ic_val v) {
    if (v < 0 || v >= ic_graph_num_values(G) || ensure_home(t, v) < 0) {
        (void)tc_clear_expected(PyExc_MemoryError);
        return HOME_NEUTRAL;
    }
    for (ic_val w = t->nhome; w <= v; w++)
        if (!(t->home[w] & HOME_TAGGED))
            t->home[w] = (unsigned char)derive_home(t, w);
    if (t->nhome <= v)
        t->nhome = v + 1;
    return t->home[v] & ~HOME_TAGGED;
}

int sym_home_set(trace *t, ic_val v, int h) {
    if (v < 0 || ensure_home(t, v) < 0)
        return -1;
    t->home[v] = (unsigned char)(h ? (h | HOME_TAGGED) : 0);
    if (!h && t->nhome > v) /* derived again */
        t->home[v] = (unsigned char)derive_home(t, v);
    return 0;
}

int sym_home_off(trace *t, ic_val v) {
    int gh = graph_home(t), h = gh ? sym_home(t, v) : 0;
    return gh && h > HOME_NEUTRAL && h != gh;
}

static int is_standin(trace *t, const var *v) {
    return v->kind == V_TENSOR && v->val >= 0 && v->val < t->caphc && t->hc[v->val] && (t->hcflag[v->val] & HC_STANDIN);
}

/* v is a stand-in, as is every tensor sharing its storage: an in-place update of it runs on
 * the constants themselves (eager's update, its views seeing it); none is read by the graph
 * yet (a graph value is a copy made before the update) */
static int standin_family(trace *t, const var *v) {
    if (!is_standin(t, v) || v->oid <= 0 || v->oid > t->nobj || t->obj_val[v->oid] != v->val)
        return 0;
    for (int o = 1; o <= t->nobj; o++) {
        if (o == v->oid || !t->obj_aliased[v->oid] || !sym_alias_same(t, o, v->oid))
            continue;
        var w = sym_var(V_TENSOR);
        w.val = t->obj_val[o];
        if (w.val >= 0 && !is_standin(t, &w))
            return 0;
    }
    return 1;
}

/* a CPU 0-d tensor of a CUDA graph (a constant: a graph scalar): a scalar operand of
 * TensorIterator ops only */
static int offdev_scalar(trace *t, const var *v) {
    if (v->kind != V_TENSOR || v->val < 0 || sym_metap(t, v->val)->ndim != 0)
        return 0;
    PyObject *o = sym_hconst(t, v);
    return o != NULL ? off_device(t, o) : sym_home_off(t, v->val);
}

/* the stand-in v as a copy of a graph input holding its constant, with eager's strides (the
 * graph's value is a new tensor each call, as eager's is: outputs, views and in-place updates
 * never reach the constant itself); every copy of v resolves to it from now on (its object's
 * value). A constant on another device than the graph's (the CPU arange of a CUDA graph) is
 * held on the graph's device, its value tagged with eager's device (sym_home): the ops that
 * read it follow eager's device rules (sym_fold_check) */
int sym_fold_materialize(trace *t, var *v) {
    sym_resolve(t, v);
    if (!is_standin(t, v))
        return 0;
    PyObject *r = t->hc[v->val];
    tc_meta m;
    tc_tensor_meta(r, &m);
    peek_device(t);
    if (t->device_type < 0 && sym_same_device(t, m.device_type, m.device_index, "a tensor built from constants") < 0)
        return -1;
    /* its values now (a copy: the stand-in's constant may be updated in place after this,
     * fold_inplace_op), held on the graph's device (the same dtype and strides) */
    PyObject *dev = sym_graph_device(t);
    int busy = dh_tl_busy;
    dh_tl_busy = 1;
    PyObject *snap = dev ? sym_keep(t, PyObject_CallMethod(r, "clone", NULL)) : NULL;
    PyObject *held = snap ? sym_keep(t, PyObject_CallMethod(snap, "to", "O", dev)) : NULL;
    dh_tl_busy = busy;
    Py_XDECREF(dev);
    if (held == NULL)
        return -1;
    int s = sym_source(t, DH_S_CONST, -1, 0, held);
    var w;
    if (s < 0 || sym_wrap(t, held, s, &w) < 0)
        return -1;
    if (w.kind != V_TENSOR)
        return sym_fail(t, "a folded constant did not become a graph input");
    ic_val c = ic_cast(G, w.val, (ic_dtype)m.dtype);
    if (c < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "graph builder failed");
    ic_value_set_strides(G, c, m.strides);
    if (hc_set(t, c, snap, 0) < 0 || note_chain(t, w.val, c) < 0 ||
        sym_home_set(t, c, sym_home_of(m.device_type, m.device_index)) < 0)
        return -1;
    if (v->oid > 0 && v->oid <= t->nobj && t->obj_val[v->oid] == v->val)
        t->obj_val[v->oid] = c;
    v->val = c;
    return 0;
}

/* the devices of the tensors an op reads */
typedef struct {
    int graph, off_nd, off_0d; /* on the graph's device; elsewhere, with dims or 0-d */
} devmix;

static int gather(trace *t, var *v, devmix *m, int depth) {
    if (v->kind == V_SEQ && v->items) {
        for (int k = 0; k < v->n && depth < 4; k++)
            if (gather(t, &v->items[k], m, depth + 1) < 0)
                return -1;
        return 0;
    }
    if (sym_fold_materialize(t, v) < 0)
        return -1;
    if (v->kind != V_TENSOR || v->val < 0)
        return 0;
    if (offdev_scalar(t, v))
        m->off_0d++;
    else if (sym_home_off(t, v->val))
        m->off_nd++;
    else if (sym_home(t, v->val) > HOME_NEUTRAL)
        m->graph++;
    return 0;
}

/* mode: 0 any op, 1 elementwise (TensorIterator: CPU 0-d tensors are scalars to it), 2 an
 * index (vs[0] indexed by the rest: eager moves CPU index tensors to its device), 3 a move to
 * another tensor's device (x.to(y), x.type_as(y): the handler's, sym_h_to) */
static int check_devices(trace *t, var *const *vs, int n, int mode) {
    devmix all = {0, 0, 0}, x = {0, 0, 0};
    for (int i = 0; i < n; i++)
        if (vs[i] != NULL && gather(t, vs[i], i == 0 && mode == 2 ? &x : &all, 0) < 0)
            return -1;
    int ran = t->fold_ran; /* torch ran the op on these tensors: eager accepted their devices */
    t->fold_ran = 0;
    if (ran || mode == 3)
        return 0;
    if (mode == 2) {
        if ((x.off_nd || x.off_0d) && all.graph)
            return sym_fail(t, "a tensor on another device than the graph's indexed by the graph's tensors "
                               "(eager decides: a device mismatch)");
        return 0;
    }
    all.graph += x.graph;
    if (all.off_nd && all.graph)
        return sym_fail(t, "a tensor built from constants on another device than the graph's, used with "
                           "the graph's tensors (eager decides: a device mismatch)");
    if (all.off_0d && mode != 1 && (all.graph || !all.off_nd)) /* (with a CPU tensor of dims: the CPU's op) */
        return sym_fail(t, "a 0-d tensor built from constants on another device than the graph's, as an "
                           "operand of an op that is not elementwise (eager decides)");
    return 0;
}

int sym_fold_check(trace *t, var *args, int n, int pointwise) {
    var *vs[8];
    if (n > 8)
        return sym_fail(t, "too many operands to check");
    for (int i = 0; i < n; i++)
        vs[i] = &args[i];
    return check_devices(t, vs, n, pointwise);
}

int sym_fold_check_slots(trace *t, var **slots, int n, int pointwise) {
    return check_devices(t, slots, n, pointwise);
}

/* torch's random and uninitialised factories and methods, by torch's own names */
static int random_name(const char *s) {
    static const char *const pat[] = {"rand", "normal", "bernoulli", "multinomial", "poisson", "dropout",
                                      "uniform", "exponential", "geometric", "cauchy", "random", "empty",
                                      "seed", "rrelu", "gumbel", "fractional", "scaled_dot_product", NULL};
    for (int i = 0; pat[i]; i++)
        if (strstr(s, pat[i]) != NULL)
            return 1;
    return 0;
}

/* factories that fold with no tensor operand */
static int factory_name(const char *s) {
    static const char *const fac[] = {"tensor", "arange", "zeros", "ones", "full", "linspace", "logspace", "eye",
                                      "scalar_tensor", "as_tensor", NULL};
    for (int i = 0; fac[i]; i++)
        if (strcmp(s, fac[i]) == 0)
            return 1;
    return 0;
}

static int plain_const(PyObject *o, int depth) {
    if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o) ||
        PySlice_Check(o) || o == Py_Ellipsis || sym_dtype_from_object(o) >= 0 || dh_is_memory_format(o))
        return 1;
    if (PyErr_Occurred())
        (void)tc_clear_expected(PyExc_Exception);
    const char *tn = Py_TYPE(o)->tp_name;
    if (!strcmp(tn, "torch.device"))
        return 1;
    if ((PyTuple_Check(o) || PyList_CheckExact(o)) && depth < 4) { /* torch.Size too */
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!plain_const(PySequence_Fast_GET_ITEM(o, i), depth + 1))
                return 0;
        return 1;
    }
    return 0;
}

/* v was made to require grad in the trace (or computed from such a tensor) */
static int made_to_require_grad(trace *t, const var *v) {
    return (t->nleaf > 0 || t->nngleaf > 0) &&
           (sym_nograd_leaf(t, v->oid) || sym_value_requires_grad(t, v->val) || ic_value_is_grad_leaf(G, v->val));
}

/* the real object v stands for: a new reference; NULL (no error) when v is not foldable.
 * *ntens counts the host-constant tensors met. */
static PyObject *real_of(trace *t, const var *v, int depth, int *ntens) {
    if (v->kind == V_CONST)
        return v->obj && plain_const(v->obj, 0) ? Py_NewRef(v->obj) : NULL;
    if (v->kind == V_TENSOR) {
        PyObject *o = sym_hconst(t, v);
        if (o != NULL && made_to_require_grad(t, v))
            return NULL; /* made to require grad in the trace (x.requires_grad_()): autograd's */
        if (o != NULL)
            (*ntens)++;
        return Py_XNewRef(o);
    }
    if (v->kind == V_SEQ && v->obj == NULL && depth < 4) {
        PyObject *s = v->is_list ? PyList_New(v->n) : PyTuple_New(v->n);
        for (int i = 0; s && i < v->n; i++) {
            PyObject *x = real_of(t, &v->items[i], depth + 1, ntens);
            if (x == NULL) {
                Py_CLEAR(s);
                break;
            }
            if (v->is_list)
                PyList_SET_ITEM(s, i, x);
            else
                PyTuple_SET_ITEM(s, i, x);
        }
        if (s == NULL)
            (void)tc_clear_expected(PyExc_Exception);
        return s;
    }
    return NULL;
}

/* shares storage with a tensor operand (a view, or the operand itself) */
static int shares_storage(PyObject *r, PyObject *const *ops, int nops) {
    PyObject *rs = PyObject_CallMethod(r, "untyped_storage", NULL);
    PyObject *rp = rs ? PyObject_CallMethod(rs, "data_ptr", NULL) : NULL;
    int share = rp == NULL; /* unknown: as a view */
    for (int i = 0; rp && i < nops && !share; i++) {
        if (ops[i] == r) {
            share = 1;
            break;
        }
        if (!tc_is_tensor(ops[i]))
            continue;
        PyObject *os = PyObject_CallMethod(ops[i], "untyped_storage", NULL);
        PyObject *op = os ? PyObject_CallMethod(os, "data_ptr", NULL) : NULL;
        share = op == NULL || PyObject_RichCompareBool(op, rp, Py_EQ) == 1;
        Py_XDECREF(op);
        Py_XDECREF(os);
    }
    Py_XDECREF(rp);
    Py_XDECREF(rs);
    (void)tc_clear_expected(PyExc_Exception);
    return share;
}

static void collect_tensors(PyObject *o, PyObject **ops, int *n, int cap) {
    if (tc_is_tensor(o)) {
        if (*n < cap)
            ops[(*n)++] = o;
    } else if (PyTuple_Check(o) || PyList_CheckExact(o)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            collect_tensors(PySequence_Fast_GET_ITEM(o, i), ops, n, cap);
    }
}

int sym_fold_dead_ops(trace *t) {
    if (t->nfchain == 0)
        return 0;
    int nv = ic_graph_num_values(G), n = 0;
    unsigned char *live = calloc((size_t)nv + 1, 1);
    if (live == NULL)
        return 0;
    for (int j = 0; j < ic_graph_num_outputs(G); j++) {
        ic_val o = ic_graph_output_value(G, j);
        if (o >= 0 && o < nv)
            live[o] = 1;
    }
    for (ic_val v = nv - 1; v >= 0; v--) { /* operands come before their users */
        if (!live[v])
            continue;
        ic_val in[IC_EXT_MAXIN];
        int k = ic_value_operands(G, v, in);
        for (int i = 0; i < k; i++)
            if (in[i] >= 0 && in[i] < nv)
                live[in[i]] = 1;
    }
    for (int i = 0; i + 1 < t->nfchain; i += 2)
        for (ic_val v = t->fchain[i]; v <= t->fchain[i + 1] && v < nv; v++)
            if (!live[v] && live[v] != 2 && ic_value_op(G, v) != IC_OP_INPUT && ic_value_op(G, v) != IC_OP_SCALAR) {
                live[v] = 2; /* counted once */
                n++;
            }
    free(live);
    return n;
}

/* bytes of the tensor o (its elements) */
static double tensor_bytes(PyObject *o) {
    tc_meta m;
    tc_tensor_meta(o, &m);
    double n = 1;
    for (int i = 0; i < m.ndim; i++)
        n *= (double)m.sizes[i];
    return n * 8; /* at most 8 bytes an element */
}

/* the product of the ints in o (nested tuples/lists), zeros left out: a bound on how many
 * times larger than its operands a call's result may be (torch.zeros(n, m), x.repeat(k)) */
static double int_product(PyObject *o, int depth) {
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        double v = fabs(PyLong_AsDouble(o));
        if (v == -1.0 && PyErr_Occurred()) {
            (void)tc_clear_expected(PyExc_Exception);
            return 1e300;
        }
        return v >= 1 ? v : 1;
    }
    double p = 1;
    if ((PyTuple_Check(o) || PyList_CheckExact(o)) && depth < 4)
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            p *= int_product(PySequence_Fast_GET_ITEM(o, i), depth + 1);
    return p;
}

/* before running a call: its result may be larger than torchc.config.fold_max_bytes (its
 * tensor operands' bytes times the ints it is given): not computed (memory stays bounded) */
static int too_big(PyObject *args, PyObject *kw, PyObject *const *ops, int nops) {
    double base = 8, lim = (double)ic_config_int(IC_CFG_fold_max_bytes);
    for (int i = 0; i < nops; i++) {
        double b = tensor_bytes(ops[i]);
        base = b > base ? b : base;
    }
    double p = int_product(args, 0);
    if (kw != NULL) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kw, &pos, &k, &v))
            p *= int_product(v, 1);
    }
    return base * p > 2 * lim; /* (8 bytes an element: slack for the smaller ones) */
}

/* a broadcast of a and b (numbers or tensors) over fold_max_bytes */
static int broadcast_too_big(PyObject *a, PyObject *b) {
    tc_meta ma, mb;
    int ta = tc_is_tensor(a), tb = tc_is_tensor(b);
    if (ta)
        tc_tensor_meta(a, &ma);
    if (tb)
        tc_tensor_meta(b, &mb);
    int na = ta ? ma.ndim : 0, nb = tb ? mb.ndim : 0, n = na > nb ? na : nb;
    double numel = 1;
    for (int i = 0; i < n; i++) {
        int64_t x = i < na ? ma.sizes[na - 1 - i] : 1, y = i < nb ? mb.sizes[nb - 1 - i] : 1;
        numel *= (double)(x > y ? x : y);
    }
    return numel * 8 > 2 * (double)ic_config_int(IC_CFG_fold_max_bytes);
}

void sym_fold_clear(sym_fold *f) {
    Py_CLEAR(f->res);
}

/* a tuple of tensors (torch.broadcast_tensors, split, unbind of constants), all on the
 * graph's device and none over fold_max_bytes: built by the handler as before, each item's
 * constant noted beside it (sym_fold_attach); 1 where not */
static int fold_seq(trace *t, sym_fold *f, const var *opvars, int nopvars) {
    PyObject *r = f->res;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(r);
    if (n == 0 || n > 16)
        return 1;
    peek_device(t);
    for (int i = 0; i < nopvars; i++)
        if (is_standin(t, &opvars[i]))
            return 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(r, i);
        if (Py_TYPE(x) != (PyTypeObject *)sym_refs.tensor_type)
            return 1;
        tc_meta m;
        tc_tensor_meta(x, &m);
        if (m.flags || m.dtype < 0 || m.requires_grad || (m.device_type != TC_DEV_CPU && m.device_type != TC_DEV_CUDA) ||
            !placed(t, x) || tensor_bytes(x) > ic_config_int(IC_CFG_fold_max_bytes))
            return 1;
    }
    if (sym_keep(t, Py_NewRef(r)) == NULL)
        return -1;
    f->first = ic_graph_num_values(G);
    return 2;
}

/* f->res into the trace (see the header) */
static int fold_result(trace *t, sym_fold *f, PyObject *const *ops, int nops, const var *opvars, int nopvars,
                       var *out) {
    PyObject *r = f->res;
    if (PyBool_Check(r) || PyLong_CheckExact(r) || PyFloat_CheckExact(r) ||
        (PyTuple_Check(r) && !tc_is_tensor(r) && plain_const(r, 0) && !PyErr_Occurred())) { /* .item(), stride() */
        f->res = NULL;
        return sym_const(t, r, out);
    }
    if (PyTuple_CheckExact(r))
        return fold_seq(t, f, opvars, nopvars);
    if (!PyObject_TypeCheck(r, (PyTypeObject *)sym_refs.tensor_type) || Py_TYPE(r) != (PyTypeObject *)sym_refs.tensor_type)
        return 1;
    tc_meta m;
    tc_tensor_meta(r, &m);
    if (m.flags || m.dtype < 0 || m.requires_grad || (m.device_type != TC_DEV_CPU && m.device_type != TC_DEV_CUDA))
        return 1;
    int64_t numel = 1;
    for (int i = 0; i < m.ndim; i++)
        numel *= m.sizes[i];
    PyObject *nb = PyObject_CallMethod(r, "element_size", NULL);
    long esz = nb ? PyLong_AsLong(nb) : -1;
    Py_XDECREF(nb);
    if (esz <= 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return 1;
    }
    if (numel * esz > ic_config_int(IC_CFG_fold_max_bytes))
        return 1;
    peek_device(t);
    int standin_op = 0;
    for (int i = 0; i < nopvars; i++)
        standin_op |= is_standin(t, &opvars[i]);
    for (int i = 0; i < nopvars; i++) /* eager returned an operand itself (x.to(its dtype)) */
        if (opvars[i].kind == V_TENSOR && sym_hconst(t, &opvars[i]) == r) {
            *out = opvars[i];
            return 0;
        }
    int view = shares_storage(r, ops, nops);
    if (sym_keep(t, Py_NewRef(r)) == NULL)
        return -1;
    f->first = ic_graph_num_values(G);
    if (view && standin_op && placed(t, r)) {
        /* a view of constants on the graph's device: they become graph values, the handler
         * builds the view of them (eager's aliasing: updates and outputs see it) */
        for (int i = 0; i < nopvars; i++) {
            var c = opvars[i];
            if (c.kind == V_TENSOR && sym_fold_materialize(t, &c) < 0)
                return -1;
        }
        standin_op = 0;
    }
    if (view && !standin_op)
        return 2; /* a view of a graph value: the handler builds it (its aliasing), noted beside */
    ic_val first = ic_graph_num_values(G);
    if (m.ndim == 0) {
        PyObject *item = PyObject_CallMethod(r, "item", NULL);
        if (item == NULL || PyComplex_Check(item)) {
            Py_XDECREF(item);
            (void)tc_clear_expected(PyExc_Exception);
            return 1;
        }
        ic_dtype k = PyBool_Check(item) ? IC_BOOL : PyFloat_Check(item) ? IC_F64 : IC_I64;
        double x = PyFloat_AsDouble(item);
        if (k == IC_I64) {
            int ovf = 0;
            long long ll = PyLong_AsLongLongAndOverflow(item, &ovf);
            if (ovf || ll > (1LL << 53) || ll < -(1LL << 53)) {
                Py_DECREF(item);
                (void)tc_clear_expected(PyExc_Exception);
                return 1;
            }
            x = (double)ll;
        }
        Py_DECREF(item);
        if (PyErr_Occurred()) {
            (void)tc_clear_expected(PyExc_Exception);
            return 1;
        }
        if (sym_tensor_out(t, ic_cast(G, ic_scalar(G, x, k), (ic_dtype)m.dtype), out) < 0)
            return -1;
        if (hc_set(t, out->val, r, 0) < 0)
            return -1;
    } else if (placed(t, r) && !standin_op) {
        return 2; /* on the graph's device: built by the handler as before, the constant beside */
    } else if (placed(t, r)) { /* made from constants on another device (.to(device)) */
        ic_val z = ic_cast(G, ic_scalar(G, 0.0, IC_I64), (ic_dtype)m.dtype); /* replaced at once */
        if (sym_tensor_out(t, z, out) < 0 || hc_set(t, out->val, r, HC_STANDIN) < 0 ||
            note_chain(t, first, out->val) < 0 || sym_fold_materialize(t, out) < 0)
            return -1;
        Py_CLEAR(f->res);
        return 0;
    } else { /* on another device than the graph's, or the graph's not decided yet (a constant
              * decides none): a stand-in of its shape and strides, no graph op reads it
              * (sym_fold_check makes it a graph value first) */
        int64_t sz[IC_MAX_DIMS];
        for (int i = 0; i < m.ndim; i++)
            sz[i] = m.sizes[i];
        ic_val z = ic_expand(G, ic_cast(G, ic_scalar(G, 0.0, IC_I64), (ic_dtype)m.dtype), m.ndim, sz);
        z = z < 0 ? z : ic_cast(G, z, (ic_dtype)m.dtype);
        if (z >= 0)
            ic_value_set_strides(G, z, m.strides);
        if (sym_tensor_out(t, z, out) < 0)
            return -1;
        if (hc_set(t, out->val, r, HC_STANDIN) < 0)
            return -1;
    }
    if (note_chain(t, first, out->val) < 0)
        return -1;
    if (view) /* a view of a stand-in: an update of either is left to eager (alias_fn.c) */
        for (int i = 0; i < nopvars; i++)
            if (opvars[i].kind == V_TENSOR && opvars[i].oid > 0 && sym_hconst(t, &opvars[i]))
                sym_alias_objects(t, out->oid, opvars[i].oid);
    Py_CLEAR(f->res);
    return 0;
}

static int attach_one(trace *t, sym_fold *f, PyObject *r, const var *out);

int sym_fold_attach(trace *t, sym_fold *f, const var *out) {
    PyObject *r = f->res;
    f->res = NULL;
    if (r != NULL && PyTuple_CheckExact(r)) { /* fold_seq */
        int rc = 0;
        if (out->kind == V_SEQ && out->n == PySequence_Fast_GET_SIZE(r))
            for (int i = 0; i < out->n && rc == 0; i++)
                rc = attach_one(t, f, Py_NewRef(PySequence_Fast_GET_ITEM(r, i)), &out->items[i]);
        Py_DECREF(r);
        return rc;
    }
    return attach_one(t, f, r, out);
}

/* r (a reference, consumed): the constant of the handler's result out */
static int attach_one(trace *t, sym_fold *f, PyObject *r, const var *out) {
    if (r == NULL || out->kind != V_TENSOR || out->val < 0) {
        Py_XDECREF(r);
        return 0;
    }
    tc_meta m;
    tc_tensor_meta(r, &m);
    const ic_meta *gm = sym_metap(t, out->val);
    int same = !gm->dyn && gm->ndim == m.ndim && (int)gm->dtype == m.dtype;
    for (int i = 0; same && i < m.ndim; i++)
        same = gm->sizes[i] == m.sizes[i];
    int rc = same ? hc_set(t, out->val, r, 0) : 0; /* r is kept (fold_result) */
    if (rc == 0 && out->val >= f->first) /* a new value: on eager's device */
        rc = sym_home_set(t, out->val, sym_home_of(m.device_type, m.device_index));
    if (rc == 0 && f->first <= out->val)
        rc = note_chain(t, f->first, out->val);
    Py_DECREF(r);
    return rc;
}

/* what stops any fold in this state of the trace */
static int fold_off(trace *t) {
    /* (autocast: the trace's regions, and the caller's own state torch computes under now) */
    return dh_tl_autocast || tc_autocast_state() || t->tfm_active > 0 || t->vm_depth > 0 || t->in_gen;
}

int sym_fold_call(trace *t, PyObject *callable, const char *name, const var *self, const var *args, int nargs,
                  PyObject *kwnames, sym_fold *f, var *out) {
    f->res = NULL;
    t->fold_ran = 0;
    if (fold_off(t) || callable == NULL || name == NULL || random_name(name))
        return 1;
    size_t L = strlen(name);
    int inplace = L > 1 && name[L - 1] == '_' && name[L - 2] != '_';
    if (inplace && (self == NULL || !standin_family(t, self) || !strncmp(name, "requires_grad", 13) ||
                    !strncmp(name, "retain_grad", 11) || !strncmp(name, "resize", 6) || !strcmp(name, "set_") ||
                    !strncmp(name, "share_memory", 12) || !strcmp(name, "record_stream")))
        return 1; /* in place: only on constants no graph value holds (their own update) */
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int npos = nargs - (int)nkw;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *kn = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (kn == NULL || !strcmp(kn, "out") || !strcmp(kn, "generator") || !strcmp(kn, "requires_grad") ||
            !strcmp(kn, "pin_memory") || !strcmp(kn, "dropout_p"))
            return kn == NULL ? -1 : 1;
    }
    int ntens = 0;
    PyObject *ops[16];
    int nops = 0;
    PyObject *sreal = NULL;
    if (self != NULL && (sreal = real_of(t, self, 0, &ntens)) == NULL)
        return 1;
    PyObject *pos = PyTuple_New(npos), *kw = nkw ? PyDict_New() : NULL;
    int rc = 1;
    if (pos == NULL || (nkw && kw == NULL)) {
        rc = -1;
        goto done;
    }
    for (int i = 0; i < nargs; i++) {
        PyObject *x = real_of(t, &args[i], 0, &ntens);
        if (x == NULL)
            goto done;
        collect_tensors(x, ops, &nops, 16);
        if (i < npos)
            PyTuple_SET_ITEM(pos, i, x);
        else {
            int e = PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i - npos), x);
            Py_DECREF(x);
            if (e < 0) {
                rc = -1;
                goto done;
            }
        }
    }
    if (sreal)
        collect_tensors(sreal, ops, &nops, 16);
    if (ntens == 0 && (self != NULL || !factory_name(name) || t->devctx != NULL))
        goto done;
    if (nops >= 16 || too_big(pos, kw, ops, nops))
        goto done;
    if (sym_default_dtype(t) < 0) { /* a factory's dtype: the default one, guarded */
        rc = -1;
        goto done;
    }
    PyObject *fn = sreal ? PyObject_GetAttr(sreal, callable) : Py_NewRef(callable);
    if (fn == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        goto done;
    }
    int busy = dh_tl_busy;
    dh_tl_busy = 1; /* torch's own Python (Tensor.__rsub__ & co) runs as it is, not captured */
    f->res = PyObject_Call(fn, pos, kw);
    dh_tl_busy = busy;
    Py_DECREF(fn);
    if (f->res == NULL) { /* eager raises: the handler decides, as without folding */
        if (tc_clear_expected(PyExc_Exception) < 0)
            rc = -1;
        goto done;
    }
    if (inplace) { /* eager's update of the constant itself: x.add_(1) returns x */
        rc = f->res == sreal ? 0 : -1;
        if (rc == 0)
            *out = *self;
        else
            sym_fail(t, "an in-place method of a constant returned another object");
        goto done;
    }
    {
        var opv[17];
        int nv = 0;
        if (self)
            opv[nv++] = *self;
        for (int i = 0; i < nargs && nv < 17; i++)
            opv[nv++] = args[i];
        rc = fold_result(t, f, ops, nops, opv, nv, out);
    }
    if (rc == 1)
        Py_CLEAR(f->res);
done:
    t->fold_ran = rc == 2; /* call_op builds it next: torch accepted its operands' devices */
    Py_XDECREF(pos);
    Py_XDECREF(kw);
    Py_XDECREF(sreal);
    if (rc != 2)
        Py_CLEAR(f->res);
    return rc;
}

/* x op= y on a stand-in whose storage only stand-ins share: the operator on the constant
 * itself (its views see the update, as eager's do); 1 where torch refuses (the handler decides) */
static int fold_inplace_op(trace *t, int nb, const var *a, const var *b, var *out) {
    int ntens = 0;
    PyObject *x = real_of(t, a, 0, &ntens), *y = x ? real_of(t, b, 0, &ntens) : NULL;
    if (x == NULL || y == NULL) {
        Py_XDECREF(x);
        return 1;
    }
    PyObject *r = NULL;
    int busy = dh_tl_busy;
    dh_tl_busy = 1;
    switch (nb) {
    case 0: r = PyNumber_InPlaceAdd(x, y); break;
    case 1: r = PyNumber_InPlaceAnd(x, y); break;
    case 2: r = PyNumber_InPlaceFloorDivide(x, y); break;
    case 3: r = PyNumber_InPlaceLshift(x, y); break;
    case 5: r = PyNumber_InPlaceMultiply(x, y); break;
    case 6: r = PyNumber_InPlaceRemainder(x, y); break;
    case 7: r = PyNumber_InPlaceOr(x, y); break;
    case 8: r = PyNumber_InPlacePower(x, y, Py_None); break;
    case 9: r = PyNumber_InPlaceRshift(x, y); break;
    case 10: r = PyNumber_InPlaceSubtract(x, y); break;
    case 11: r = PyNumber_InPlaceTrueDivide(x, y); break;
    case 12: r = PyNumber_InPlaceXor(x, y); break;
    default: break; /* (@=: not in place to torch) */
    }
    dh_tl_busy = busy;
    int rc = 1;
    if (r == NULL)
        rc = tc_clear_expected(PyExc_Exception) < 0 ? -1 : 1;
    else if (r != x)
        rc = sym_fail(t, "an in-place operator on a constant tensor returned another object");
    else
        rc = 0;
    if (rc == 0)
        *out = *a;
    Py_XDECREF(r);
    Py_DECREF(x);
    Py_DECREF(y);
    return rc;
}

int sym_fold_setitem(trace *t, const var *x, const var *k, const var *v) {
    if (fold_off(t) || !standin_family(t, x))
        return 1;
    int ntens = 0;
    PyObject *xr = real_of(t, x, 0, &ntens), *kr = xr ? real_of(t, k, 0, &ntens) : NULL,
             *vr = kr ? real_of(t, v, 0, &ntens) : NULL;
    int rc = 1;
    if (vr != NULL) {
        int busy = dh_tl_busy;
        dh_tl_busy = 1;
        int e = PyObject_SetItem(xr, kr, vr);
        dh_tl_busy = busy;
        rc = e == 0 ? 0 : tc_clear_expected(PyExc_Exception) < 0 ? -1 : 1;
    }
    Py_XDECREF(xr);
    Py_XDECREF(kr);
    Py_XDECREF(vr);
    return rc;
}

int sym_fold_binary(trace *t, int nb, const var *a, const var *b, sym_fold *f, var *out) {
    f->res = NULL;
    if (fold_off(t) || (a->kind != V_TENSOR && b->kind != V_TENSOR))
        return 1;
    int inplace = 0;
    if (nb >= 13 && nb < 100 && a->kind == V_TENSOR && standin_family(t, a)) /* on the constants themselves */
        return fold_inplace_op(t, nb - 13, a, b, out);
    if (nb >= 13 && nb < 100) { /* x op= y: on a number, x op y; on a constant tensor no view
                                 * shares, its object rebound to the result (eager's update) */
        if (a->kind == V_TENSOR && (sym_hconst(t, a) == NULL || a->oid <= 0 || a->oid > t->nobj ||
                                    t->obj_aliased[a->oid] || t->obj_val[a->oid] != a->val))
            return 1;
        inplace = a->kind == V_TENSOR;
        nb -= 13;
    }
    int ntens = 0;
    PyObject *x = real_of(t, a, 0, &ntens), *y = x ? real_of(t, b, 0, &ntens) : NULL;
    if (x == NULL || y == NULL) {
        Py_XDECREF(x);
        return 1;
    }
    if (broadcast_too_big(x, y)) {
        Py_DECREF(x);
        Py_DECREF(y);
        return 1;
    }
    PyObject *r = NULL;
    int busy = dh_tl_busy;
    dh_tl_busy = 1; /* torch's own Python runs as it is, not captured */
    switch (nb) {
    case 200: r = PyNumber_Negative(x); break; /* -x (b: a placeholder) */
    case 201: r = PyNumber_Invert(x); break;   /* ~x */
    case 0: r = PyNumber_Add(x, y); break;
    case 1: r = PyNumber_And(x, y); break;
    case 2: r = PyNumber_FloorDivide(x, y); break;
    case 3: r = PyNumber_Lshift(x, y); break;
    case 4: r = PyNumber_MatrixMultiply(x, y); break;
    case 5: r = PyNumber_Multiply(x, y); break;
    case 6: r = PyNumber_Remainder(x, y); break;
    case 7: r = PyNumber_Or(x, y); break;
    case 8: r = PyNumber_Power(x, y, Py_None); break;
    case 9: r = PyNumber_Rshift(x, y); break;
    case 10: r = PyNumber_Subtract(x, y); break;
    case 11: r = PyNumber_TrueDivide(x, y); break;
    case 12: r = PyNumber_Xor(x, y); break;
    case 100 + Py_LT: case 100 + Py_LE: case 100 + Py_EQ: case 100 + Py_NE: case 100 + Py_GT: case 100 + Py_GE:
        r = PyObject_RichCompare(x, y, nb - 100);
        break;
    default: break;
    }
    dh_tl_busy = busy;
    int rc = 1;
    if (r == NULL) {
        rc = tc_clear_expected(PyExc_Exception) < 0 ? -1 : 1;
    } else {
        f->res = r;
        PyObject *ops[2];
        int nops = 0;
        collect_tensors(x, ops, &nops, 2);
        collect_tensors(y, ops, &nops, 2);
        var opv[2] = {*a, *b};
        if (inplace) { /* eager keeps x's dtype and shape (or raises: the handler decides) */
            tc_meta mx, mr;
            tc_tensor_meta(x, &mx);
            int ok = tc_is_tensor(r);
            if (ok)
                tc_tensor_meta(r, &mr);
            ok = ok && mr.ndim == mx.ndim && !mr.flags && mr.dtype >= 0;
            for (int d = 0; ok && d < mx.ndim; d++)
                ok = mr.sizes[d] == mx.sizes[d];
            if (ok && mr.dtype != mx.dtype) {
                int ofloat = mx.dtype >= IC_F16, nfloat = mr.dtype >= IC_F16;
                ok = !(nfloat && !ofloat) && !(mr.dtype != IC_BOOL && mx.dtype == IC_BOOL);
                PyObject *c = ok ? PyObject_CallMethod(r, "to", "O", sym_dtype_object((ic_dtype)mx.dtype)) : NULL;
                ok = c != NULL;
                (void)tc_clear_expected(PyExc_Exception);
                Py_SETREF(f->res, c);
            }
            rc = ok ? fold_result(t, f, ops, nops, opv, 2, out) : 1;
            if (rc == 2)
                rc = 1;
            if (rc == 0 && out->kind == V_TENSOR) {
                ic_val nv = out->val;
                t->obj_val[a->oid] = nv;
                *out = *a;
                out->val = nv;
            } else if (rc == 0) {
                rc = sym_fail(t, "an in-place operator on a constant tensor gave a non-tensor");
            }
        } else {
            rc = fold_result(t, f, ops, nops, opv, 2, out);
        }
    }
    Py_DECREF(x);
    Py_DECREF(y);
    if (rc != 2)
        Py_CLEAR(f->res);
    return rc;
}

int sym_fold_index(trace *t, const var *x, const var *k, sym_fold *f, var *out) {
    f->res = NULL;
    if (fold_off(t) || sym_hconst(t, x) == NULL)
        return 1;
    int ntens = 0;
    PyObject *xr = real_of(t, x, 0, &ntens), *kr = xr ? real_of(t, k, 0, &ntens) : NULL;
    if (xr == NULL || kr == NULL) {
        Py_XDECREF(xr);
        return 1;
    }
    PyObject *kops[8];
    int nk = 0;
    collect_tensors(kr, kops, &nk, 8);
    double est = tensor_bytes(xr);
    for (int i = 0; i < nk; i++)
        est *= tensor_bytes(kops[i]) / 8;
    if (est > 2 * (double)ic_config_int(IC_CFG_fold_max_bytes)) {
        Py_DECREF(xr);
        Py_DECREF(kr);
        return 1;
    }
    int busy = dh_tl_busy;
    dh_tl_busy = 1;
    PyObject *r = PyObject_GetItem(xr, kr);
    dh_tl_busy = busy;
    int rc = 1;
    if (r == NULL) {
        rc = tc_clear_expected(PyExc_Exception) < 0 ? -1 : 1;
    } else {
        f->res = r;
        PyObject *ops[8];
        int nops = 0;
        collect_tensors(xr, ops, &nops, 8);
        collect_tensors(kr, ops, &nops, 8);
        var opv[2] = {*x, *k};
        rc = fold_result(t, f, ops, nops, opv, 2, out);
    }
    Py_DECREF(xr);
    Py_DECREF(kr);
    if (rc != 2)
        Py_CLEAR(f->res);
    return rc;
}

int sym_fold_attr(trace *t, const var *x, PyObject *name, var *out) {
    PyObject *o = sym_hconst(t, x);
    const char *n = PyUnicode_AsUTF8(name);
    if (n == NULL)
        return -1;
    if (o == NULL || fold_off(t))
        return 1;
    if (!strcmp(n, "device") || !strcmp(n, "is_cuda") || !strcmp(n, "is_cpu")) { /* its own device */
        PyObject *r = PyObject_GetAttr(o, name);
        return r == NULL ? -1 : sym_const(t, r, out);
    }
    if (strcmp(n, "T") && strcmp(n, "mT") && strcmp(n, "data")) /* the rest: from the graph's meta */
        return 1;
    sym_fold f;
    int busy = dh_tl_busy;
    dh_tl_busy = 1;
    f.res = PyObject_GetAttr(o, name);
    dh_tl_busy = busy;
    if (f.res == NULL)
        return tc_clear_expected(PyExc_Exception) < 0 ? -1 : 1;
    PyObject *ops[1] = {o};
    int rc = fold_result(t, &f, ops, 1, x, 1, out);
    Py_CLEAR(f.res);
    return rc == 2 ? 1 : rc;
}

int sym_fold_shared(trace *t, int oid) {
    for (int o = 1; o <= t->nobj; o++) {
        if (o == oid || !sym_alias_same(t, o, oid))
            continue;
        ic_val v = t->obj_val[o];
        if (v >= 0 && v < t->caphc && t->hc[v] != NULL && (t->hcflag[v] & HC_STANDIN))
            return 1;
    }
    /* every tensor of the storage is a graph value (a materialized constant, a view the
     * handler built) with its constant noted beside: the graph's update makes the notes
     * stale, so they are dropped and later ops read the graph values */
    for (int o = 1; o <= t->nobj; o++) {
        ic_val v = t->obj_val[o];
        if ((o == oid || sym_alias_same(t, o, oid)) && v >= 0 && v < t->caphc && t->hc[v] != NULL) {
            t->hc[v] = NULL; /* borrowed from t->keep */
            t->hcflag[v] = 0;
        }
    }
    return 0;
}

int sym_fold_in_range(trace *t, const var *index, int64_t bound) {
    PyObject *o = sym_hconst(t, index);
    if (o == NULL || bound <= 0)
        return 0;
    int busy = dh_tl_busy, in = 0;
    dh_tl_busy = 1;
    PyObject *n = PyObject_CallMethod(o, "numel", NULL);
    long long k = n ? PyLong_AsLongLong(n) : -1;
    if (k == 0) {
        in = 1;
    } else if (k > 0) {
        PyObject *lo = PyObject_CallMethod(o, "min", NULL), *hi = lo ? PyObject_CallMethod(o, "max", NULL) : NULL;
        PyObject *l = lo ? PyObject_CallMethod(lo, "item", NULL) : NULL, *h = hi ? PyObject_CallMethod(hi, "item", NULL) : NULL;
        if (l && h && PyLong_Check(l) && PyLong_Check(h)) {
            long long a = PyLong_AsLongLong(l), b = PyLong_AsLongLong(h);
            in = !PyErr_Occurred() && a >= 0 && b < bound;
        }
        Py_XDECREF(lo);
        Py_XDECREF(hi);
        Py_XDECREF(l);
        Py_XDECREF(h);
    }
    dh_tl_busy = busy;
    Py_XDECREF(n);
    (void)tc_clear_expected(PyExc_Exception);
    return in;
}

int sym_fold_output(trace *t, var *v, PyObject **cst) {
    sym_resolve(t, v);
    PyObject *r = sym_hconst(t, v);
    if (r == NULL || made_to_require_grad(t, v))
        return 0;
    int alias = v->oid > 0 && v->oid <= t->nobj && t->obj_aliased[v->oid];
    PyObject *c = alias ? NULL : PyObject_CallMethod(r, "is_contiguous", NULL);
    int dense = c == Py_True;
    Py_XDECREF(c);
    (void)tc_clear_expected(PyExc_Exception);
    if (dense) { /* no view of it lives on: a copy of the constant is eager's tensor */
        *cst = r;
        return 1;
    }
    return sym_fold_materialize(t, v); /* in the graph (its views with it) */
}

int sym_fold_finish(trace *t) {
    /* (a value on another device than the graph's returned: moved there, sym_output.c) */
    for (ic_val v = 0; v < t->caphc; v++)
        if (t->hc[v] != NULL && (t->hcflag[v] & HC_STANDIN) && ic_value_num_uses(G, v) > 0)
            return sym_fail(t, "a tensor built from constants is read by a graph op that does not take its "
                               "value (not captured)");
    return 0;
}

void sym_fold_free(trace *t) {
    free(t->home);
    t->home = NULL;
    t->caphome = t->nhome = 0;
    free(t->hc);
    free(t->hcflag);
    free(t->fchain);
    t->fchain = NULL;
    t->nfchain = t->capfchain = 0;
    t->hc = NULL;
    t->hcflag = NULL;
    t->caphc = 0;
}
