/* train_inplace_store.c — in-place updates of inputs stored by the kernels straight into the
 * tensors (owner: training; issue 22, deliverable 7: optimizer steps).
 *
 * A graph that updates inputs in place (an optimizer step: every parameter and its state)
 * used to compute each new value into a fresh output and copy it back into the input after
 * the kernels: the copy is half the step's memory traffic, and a fresh CPU output faults its
 * pages on first touch. Here the new value of an input is asked to be stored into the input
 * itself (ic_output_into); the compiler grants it where that leaves exactly what the
 * copy-back would (inductor_c/sched/inplace.c: no later kernel reads the old value, the
 * kernel that stores an element read it there first, the tensor's elements are distinct
 * memory...). Asked only where nothing else can see the output or the old value:
 *   - the output feeds this one update: it is not returned, not an attribute written, not
 *     another update's value, and no update copies the input's old value into another;
 *   - the input is read by the graph, so the distinct-inputs guard (sym_output.c) keeps every
 *     other input the graph reads or updates out of its memory;
 *   - no index check runs after the kernels (an index out of range reruns the frame eagerly,
 *     which must find the inputs as they were), no training node reads the outputs, no other
 *     backend runs the graph.
 * After the kernels, an update stored in place only bumps the tensor's version counter, as
 * many times as eager's in-place ops on it (counted while tracing, per storage root: a view's
 * update bumps its base's shared counter); one copied back gets the rest after copy_'s own.
 * Under no_grad (torch.optim's step, a hand-written p -= lr * p.grad) a leaf that requires grad
 * is updated like this as eager updates it.
 *
 * With grad mode on, an update that autograd records (of an input that requires grad, or with
 * a value that does: x[i] = h, x.masked_fill_(m, 0), x += y on an activation passed in) is
 * functionalized: the forward graph computes the new value as an output of its own, the
 * backward graph differentiates through it to the old value, and after the kernels the value
 * is copied into the tensor without a version bump; the autograd node (csrc/train.c) then
 * marks the tensor dirty, which bumps its version once and makes the node its grad_fn (a view
 * passed in: its base's history is rewritten, as eager's CopySlices). The tensor's version
 * ends as many bumps ahead as eager's in-place ops made; what eager keeps of the new value
 * for the backward is the tensor itself, so a later update of it makes the backward raise,
 * as in eager. Eager's check_inplace runs before the kernels (dh_inplace_allowed): a leaf
 * that requires grad, a view of one, or a view whose history can't be rewritten runs the
 * frame eagerly, which raises eager's error at its place in the frame.
 */
#include "dh_internal.h"
#include "sym.h"
#include "sym_interp.h"

/* t->obj_nmut[2 oid]: in-place ops on root object oid; [2 oid + 1]: those made with grad mode on */
int sym_inplace_note(trace *t, int oid) {
    if (oid <= 0)
        return 0;
    if (oid >= t->capnmut) {
        int cap = t->capnmut ? t->capnmut : 64;
        while (cap <= oid)
            cap *= 2;
        int *p = realloc(t->obj_nmut, (size_t)cap * 2 * sizeof *p);
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memset(p + 2 * t->capnmut, 0, (size_t)(cap - t->capnmut) * 2 * sizeof *p);
        t->obj_nmut = p;
        t->capnmut = cap;
    }
    t->obj_nmut[2 * oid]++;
    if (tc_grad_enabled() && t->nograd == 0)
        t->obj_nmut[2 * oid + 1]++;
    else if (t->upd_nograd_from == 0 && tc_grad_enabled())
        for (int k = 0; k < t->ninputs; k++) /* an input that requires grad, updated under no_grad */
            if (t->input_oid[k] == oid || (t->obj_root[t->input_oid[k]] == oid && oid > 0))
                for (int q = 0; q < t->nguards; q++)
                    if (t->guards[q].kind == DH_G_TENSOR && t->guards[q].src == t->input_src[k] &&
                        t->guards[q].meta.requires_grad)
                        t->upd_nograd_from = ic_graph_num_values(t->g) + 1;
    return 0;
}

int sym_inplace_nograd_then_grad(const trace *t) {
    for (int v = t->upd_nograd_from - 1; t->upd_nograd_from > 0 && v < ic_graph_num_values(t->g); v++)
        if (ic_value_grad_on(t->g, v))
            return 1;
    return 0;
}

/* the storage root of graph input k's object */
static int input_root(const trace *t, int k) {
    int oid = k >= 0 && k < t->ninputs && t->input_oid ? t->input_oid[k] : 0;
    if (oid > 0 && oid <= t->nobj && t->obj_root[oid] > 0)
        oid = t->obj_root[oid];
    return oid;
}

int sym_inplace_under_grad(const trace *t, int src) {
    for (int k = 0; k < t->ninputs; k++)
        if (t->input_src[k] == src) {
            int oid = input_root(t, k);
            return oid <= 0 || oid >= t->capnmut || t->obj_nmut[2 * oid + 1] > 0;
        }
    return 1;
}

/* the graph input whose source is src, or -1 */
static int input_of(const int *input_src, int ninputs, int src) {
    for (int k = 0; k < ninputs; k++)
        if (input_src[k] == src)
            return k;
    return -1;
}

/* graph output j feeds update i only */
static int feeds_only(const mutlist *m, const outbuf *ob, int i, int j) {
    for (int q = 0; q < m->n; q++)
        if (q != i && m->from[q] == j)
            return 0;
    for (int q = 0; q < ob->n; q++)
        if (ob->o[q].kind == DH_O_GRAPH && ob->o[q].index == j)
            return 0;
    return 1;
}

void sym_inplace_request(trace *t, const mutlist *m, const outbuf *ob) {
    if (t->failed || m->n == 0 || t->nchk > 0 || t->cfg->backend != NULL)
        return;
    for (int i = 0; i < m->n; i++) {
        int j = m->from[i], k = input_of(t->input_src, t->ninputs, m->src[i]);
        if (j < 0 || k < 0 || !feeds_only(m, ob, i, j))
            continue;
        ic_val iv = ic_graph_input(t->g, k);
        if (iv == IC_NONE || ic_value_num_uses(t->g, iv) == 0)
            continue; /* not read: the guard does not keep other inputs out of its memory */
        int copied = 0; /* another update takes this input's old value */
        for (int q = 0; q < m->n; q++)
            copied |= m->from[q] == -1 - m->src[i];
        if (!copied)
            (void)ic_output_into(t->g, j, k); /* refused (-1): stays an ordinary output */
    }
}

int sym_inplace_train_modes(trace *t, mutlist *m, const outbuf *ob, const unsigned char *req) {
    if (m->n == 0)
        return 0;
    m->mode = calloc((size_t)m->n, 1);
    if (m->mode == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < m->n; i++) {
        int k = input_of(t->input_src, t->ninputs, m->src[i]), j = m->from[i];
        if (k < 0 || !sym_inplace_under_grad(t, m->src[i]))
            continue; /* made under no_grad only: eager's autograd records nothing */
        int dreq = (req[k] & IC_AG_REQ) != 0;
        ic_val v;
        if (j < 0) { /* another input's old value */
            int kb = input_of(t->input_src, t->ninputs, -1 - j);
            if (kb < 0)
                continue;
            v = ic_graph_input(t->g, kb);
        } else {
            v = ic_graph_output_value(t->g, j);
        }
        if (!dreq && !ic_value_requires_grad(t->g, v, req))
            continue;
        if (j < 0 || !feeds_only(m, ob, i, j)) { /* an output of its own: the node returns the
                                                  * tensor in its place */
            if (ic_graph_num_outputs(t->g) >= dh_limit.max_outputs)
                return sym_fail(t, "more than %d outputs (torchc.config.max_outputs)", dh_limit.max_outputs);
            int j2 = ic_output(t->g, v);
            if (j2 < 0) {
                sym_check_graph(t);
                return -1;
            }
            m->from[i] = j2;
        }
        m->mode[i] = DH_MUT_NODE;
    }
    return 0;
}

int dh_inplace_allowed(const dh_entry *e, PyObject *const *values) {
    for (int i = 0; e->mut_mode != NULL && i < e->nmut; i++)
        if (e->mut_mode[i] != DH_MUT_PLAIN && tc_inplace_refused(values[e->mut_src[i]], 1))
            return 0;
    return 1;
}

int sym_inplace_setup(trace *t, dh_entry *e, const mutlist *m) {
    int nout = e->compiled ? ic_compiled_num_outputs(e->compiled) : 0;
    e->mut_bumps = malloc(sizeof(int) * (size_t)m->n);
    e->mut_inplace = calloc((size_t)m->n, 1);
    if (e->mut_bumps == NULL || e->mut_inplace == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (m->mode != NULL) {
        e->mut_mode = malloc((size_t)m->n);
        if (e->mut_mode == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(e->mut_mode, m->mode, (size_t)m->n);
    }
    for (int i = 0; i < m->n; i++) {
        int k = input_of(e->input_src, e->ninputs, m->src[i]);
        int oid = input_root(t, k); /* the storage's counter (sym_mutate counts there) */
        int nb = oid > 0 && oid < t->capnmut ? t->obj_nmut[2 * oid] : 0;
        e->mut_bumps[i] = nb > 0 ? nb : 1;
        int j = m->from[i];
        if (e->compiled == NULL || j < 0 || k < 0 || ic_compiled_output_into(e->compiled, j) != k)
            continue;
        if (e->out_into_src == NULL) {
            e->out_into_src = malloc(sizeof(int) * (size_t)nout);
            if (e->out_into_src == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            for (int q = 0; q < nout; q++)
                e->out_into_src[q] = -1;
        }
        e->out_into_src[j] = m->src[i];
        e->mut_inplace[i] = 1;
    }
    return 0;
}

int dh_inplace_finish(const dh_entry *e, int i, PyObject *dst, PyObject *src) {
    int bumps = e->mut_bumps ? e->mut_bumps[i] : 1;
    int mode = e->mut_mode != NULL ? e->mut_mode[i] : DH_MUT_PLAIN;
    if (e->mut_inplace != NULL && e->mut_inplace[i])
        return tc_bump_version(dst, bumps);
    if ((mode == DH_MUT_NODE ? tc_copy_quiet(dst, src) : tc_copy_(dst, src)) < 0)
        return -1;
    /* (NODE: the node's mark_dirty bumps once; the copy did not) */
    return bumps > 1 ? tc_bump_version(dst, bumps - 1) : 0;
}
