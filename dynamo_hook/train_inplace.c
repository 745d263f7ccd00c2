/* train_inplace.c — in-place updates in training graphs (owner: training; issue 22).
 *
 * Eager's autograd keeps some tensors for the backward (mul keeps each operand for the
 * other's gradient, sin its input, exp its result) and checks their version counters when
 * the backward unpacks them: an in-place update in between makes the backward raise "one of
 * the variables needed for gradient computation has been modified by an inplace operation".
 * A functionalized graph would silently use the old value. So an update of a tensor (or of
 * any alias sharing its storage, and so its version counter) whose current value a node
 * carrying a gradient keeps (ic_value_saved_for_backward, conservative) ends the graph before
 * the update (the nodes of the update itself, made since its instruction began, are not
 * counted: eager's in-place ops keep a copy of what they overwrite): eager runs it, bumping the version, and the compiled node checks the versions
 * of what eager keeps of its inputs and outputs at backward (csrc/train.c), as eager would.
 */
#include "sym.h"
#include "sym_interp.h"

int sym_train_inplace_check(trace *t, int oid) {
    if ((t->ninputs == 0 && t->nleaf == 0) || oid <= 0 || oid > t->nobj)
        return 0;
    unsigned char *req = malloc((size_t)t->ninputs + 1);
    if (req == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = 0;
    if (sym_train_req(t, req) > 0 || t->nleaf > 0) {
        int root = t->obj_root[oid] > 0 ? t->obj_root[oid] : oid;
        for (int o = 1; o <= t->nobj && rc == 0; o++) {
            int r = t->obj_root[o] > 0 ? t->obj_root[o] : o;
            ic_val v = t->obj_val[o];
            if ((r == root || o == oid) && v >= 0 && ic_value_saved_for_backward(t->g, v, req, 0, t->inst_n0))
                rc = sym_fail(t, "training: an in-place update of a tensor saved for backward "
                                 "(eager's backward raises: the graph ends before the update)");
        }
    }
    free(req);
    return rc;
}
