/* sym_iter_tensor.c — iterating over a tensor (issue 21): `for row in x`, list(x), tuple(x),
 * `a, b = x`, zip/enumerate over tensors, comprehensions (3.12 runs them in the frame).
 *
 * Eager's Tensor.__iter__ is `iter(self.unbind(0))`, after raising TypeError("iteration over a
 * 0-d tensor") for a 0-d tensor. The trace unrolls it: the items are x[0], x[1], ... (select
 * views of x along dim 0, as unbind's are), one per row; a size-0 dim 0 iterates nothing.
 * The rank and dim 0 come from the tensor's shape, which the entry's tensor guards fix, so
 * the unrolled count is guarded with it. A dynamic (symbolic) dim 0 is refused with a
 * reason: the number of items would depend on the run's size. */
#include "ops_internal.h"

int sym_tensor_iter_items(trace *t, const var *x_in, var **items, int *n) {
    var x = *x_in;
    sym_resolve(t, &x);
    if (x.kind != V_TENSOR)
        return sym_fail(t, "iteration over an unsupported value");
    const ic_meta m = *sym_metap(t, x.val); /* a copy: indexing grows the graph */
    if (m.ndim == 0) { /* eager's TypeError, for the frame's except clauses */
        PyObject *msg = sym_keep(t, PyUnicode_FromString("iteration over a 0-d tensor"));
        return msg ? sym_raise(t, PyExc_TypeError, msg, "iteration over a 0-d tensor (eager raises TypeError)") : -1;
    }
    if (m.dyn && !sym_dim_static(m.dims[0]))
        return sym_fail(t, "iterating over a tensor whose dim 0 is dynamic (the number of rows is not fixed)");
    int64_t rows = m.sizes[0];
    if (rows > dh_limit.max_unroll)
        return sym_fail(t, "iterating over a tensor of %lld rows (more than %d to unroll: torchc.config.max_unroll)",
                        (long long)rows, dh_limit.max_unroll);
    var *it = sym_alloc(t, rows > 0 ? (int)rows : 1);
    if (it == NULL)
        return -1;
    for (int64_t i = 0; i < rows; i++) {
        var k;
        if (sym_const(t, PyLong_FromLongLong(i), &k) < 0 || sym_tensor_index(t, &x, &k, &it[i]) < 0)
            return -1;
    }
    *items = it;
    *n = (int)rows;
    return 0;
}
