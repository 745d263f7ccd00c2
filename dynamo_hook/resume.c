/* resume.c — graph breaks: resume functions that continue a frame after an instruction
 * the trace could not capture.
 *
 * A resume function is the original code object with a prologue in front:
 *
 *   RESUME 0
 *   DELETE_FAST u        for each local unbound at the break (passed as None)
 *   LOAD_FAST  s_k       for each stack item kept across the break (PUSH_NULL for NULLs;
 *                        GET_ITER after it for a loop iterator, passed as a tuple)
 *   JUMP_FORWARD pc      to the instruction after the break (offset by the prologue)
 *   <original bytecode, unchanged>
 *
 * Relative jumps inside the original code stay valid because the body is only shifted.
 * Its arguments are the original locals followed by the stack items. The prologue gets
 * "no location" line-table entries, so the original positions still line up. Requires: no
 * cell/free variables, no exception table (checked by the caller).
 * Called under the hook, a resume function is captured like any other frame.
 */
#include "sym.h"

#include <string.h>

static int op_resume = -1, op_delete_fast, op_load_fast, op_push_null, op_jump_forward,
           op_extended_arg, op_get_iter, op_copy_free_vars;
static unsigned char deref_op[256]; /* opcodes whose oparg indexes localsplus cells/frees */
static PyObject *resume_cache; /* (code, pc, nstack, mask bytes) -> function */

static int opnum(PyObject *opmap, const char *name) {
    PyObject *v = PyDict_GetItemString(opmap, name);
    return v ? (int)PyLong_AsLong(v) : -1;
}

static int init_ops(void) {
    if (op_resume >= 0)
        return 0;
    PyObject *dis = PyImport_ImportModule("dis");
    PyObject *opmap = dis ? PyObject_GetAttrString(dis, "opmap") : NULL;
    Py_XDECREF(dis);
    if (opmap == NULL)
        return -1;
    op_resume = opnum(opmap, "RESUME");
    op_delete_fast = opnum(opmap, "DELETE_FAST");
    op_load_fast = opnum(opmap, "LOAD_FAST");
    op_push_null = opnum(opmap, "PUSH_NULL");
    op_jump_forward = opnum(opmap, "JUMP_FORWARD");
    op_extended_arg = opnum(opmap, "EXTENDED_ARG");
    op_get_iter = opnum(opmap, "GET_ITER");
    op_copy_free_vars = opnum(opmap, "COPY_FREE_VARS");
    static const char *derefs[] = {"LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE",
                                   "MAKE_CELL", "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF", NULL};
    for (int i = 0; derefs[i]; i++) {
        int o = opnum(opmap, derefs[i]);
        if (o >= 0 && o < 256)
            deref_op[o] = 1;
    }
    Py_DECREF(opmap);
    resume_cache = PyDict_New();
    if (resume_cache == NULL || op_resume < 0 || op_delete_fast < 0 || op_load_fast < 0 ||
        op_push_null < 0 || op_jump_forward < 0 || op_extended_arg < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "torchc: opcode table incomplete");
        return -1;
    }
    return 0;
}

typedef struct buf {
    unsigned char *b;
    int n, cap;
} buf;

static int emit(buf *w, int op, int arg) {
    if (w->n + 8 > w->cap) {
        int cap = w->cap ? 2 * w->cap : 64;
        unsigned char *nb = realloc(w->b, (size_t)cap);
        if (nb == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->b = nb;
        w->cap = cap;
    }
    if (arg > 0xffffff)
        w->b[w->n++] = (unsigned char)op_extended_arg, w->b[w->n++] = (unsigned char)(arg >> 24);
    if (arg > 0xffff)
        w->b[w->n++] = (unsigned char)op_extended_arg, w->b[w->n++] = (unsigned char)(arg >> 16);
    if (arg > 0xff)
        w->b[w->n++] = (unsigned char)op_extended_arg, w->b[w->n++] = (unsigned char)(arg >> 8);
    w->b[w->n++] = (unsigned char)op;
    w->b[w->n++] = (unsigned char)(arg & 0xff);
    return 0;
}

PyObject *dh_make_resume(PyCodeObject *code, PyObject *globals, int target_pc, int nlocals,
                         const unsigned char *unbound, int nstack, const unsigned char *stack_null) {
    PyObject *key = NULL, *fn = NULL, *bytes = NULL, *newcode = NULL, *varnames = NULL;
    PyObject *kw = NULL, *args = NULL, *replace = NULL, *lt = NULL, *name = NULL;
    PyObject *orig = NULL;
    buf w = {0};
    if (init_ops() < 0)
        return NULL;
    /* cache by (code, pc, layout) so every trace of the same break shares one resume code */
    key = Py_BuildValue("(Oiy#y#)", (PyObject *)code, target_pc, (const char *)unbound,
                        (Py_ssize_t)nlocals, (const char *)stack_null, (Py_ssize_t)nstack);
    if (key == NULL)
        goto done;
    fn = PyDict_GetItemWithError(resume_cache, key);
    if (fn != NULL) {
        fn = Py_NewRef(fn);
        goto done;
    }
    if (PyErr_Occurred())
        goto done;
    orig = PyCode_GetCode(code);
    if (orig == NULL)
        goto done;
    int nfree = code->co_nfreevars;
    if (nfree > 0 && emit(&w, op_copy_free_vars, nfree) < 0)
        goto done;
    if (emit(&w, op_resume, 0) < 0)
        goto done;
    for (int i = 0; i < nlocals; i++)
        if (unbound[i] && emit(&w, op_delete_fast, i) < 0)
            goto done;
    /* stack_null[k]: 0 a value, 1 NULL, 2 an iterator passed as the tuple of what is left */
    for (int k = 0; k < nstack; k++) {
        if ((stack_null[k] == 1 ? emit(&w, op_push_null, 0) : emit(&w, op_load_fast, nlocals + k)) < 0)
            goto done;
        if (stack_null[k] == 2 && emit(&w, op_get_iter, 0) < 0)
            goto done;
    }
    if (emit(&w, op_jump_forward, target_pc) < 0)
        goto done;
    int prologue_units = w.n / 2;
    Py_ssize_t olen = PyBytes_GET_SIZE(orig);
    bytes = PyBytes_FromStringAndSize(NULL, w.n + olen);
    if (bytes == NULL)
        goto done;
    memcpy(PyBytes_AS_STRING(bytes), w.b, (size_t)w.n);
    memcpy(PyBytes_AS_STRING(bytes) + w.n, PyBytes_AS_STRING(orig), (size_t)olen);
    if (nfree > 0 && nstack > 0) {
        /* the stack slots sit between the locals and the free variables: shift the free
         * variable indices of the original body by nstack (same instruction sizes only) */
        unsigned char *body = (unsigned char *)PyBytes_AS_STRING(bytes) + w.n;
        for (Py_ssize_t i = 0; i + 1 < olen; i += 2) {
            int op = body[i];
            if (!deref_op[op])
                continue;
            if (i >= 2 && body[i - 2] == op_extended_arg) {
                PyErr_SetString(PyExc_NotImplementedError, "resume: EXTENDED_ARG on a free variable");
                goto done;
            }
            int arg = body[i + 1];
            if (arg >= nlocals) {
                if (arg + nstack > 255) {
                    PyErr_SetString(PyExc_NotImplementedError, "resume: free variable index > 255");
                    goto done;
                }
                body[i + 1] = (unsigned char)(arg + nstack);
            }
        }
    }
    /* line table: "no location" entries (code 15) for the prologue, then the original */
    PyObject *olt = code->co_linetable;
    int nlt = (prologue_units + 7) / 8;
    lt = PyBytes_FromStringAndSize(NULL, nlt + PyBytes_GET_SIZE(olt));
    if (lt == NULL)
        goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(lt);
    for (int left = prologue_units; left > 0; left -= 8) {
        int k = left < 8 ? left : 8;
        *p++ = (unsigned char)(0x80 | (15 << 3) | (k - 1));
    }
    memcpy(p, PyBytes_AS_STRING(olt), (size_t)PyBytes_GET_SIZE(olt));
    /* names: the original locals, then the stack slots */
    PyObject *ov = PyObject_GetAttrString((PyObject *)code, "co_varnames");
    if (ov == NULL)
        goto done;
    varnames = PyTuple_New(nlocals + nstack);
    if (varnames == NULL) {
        Py_DECREF(ov);
        goto done;
    }
    for (int i = 0; i < nlocals; i++)
        PyTuple_SET_ITEM(varnames, i, Py_NewRef(PyTuple_GET_ITEM(ov, i)));
    Py_DECREF(ov);
    for (int k = 0; k < nstack; k++) {
        PyObject *s = PyUnicode_FromFormat("__torchc_stack%d", k);
        if (s == NULL)
            goto done;
        PyTuple_SET_ITEM(varnames, nlocals + k, s);
    }
    /* resume functions of resume functions keep the original name: torchc_resume_<fn>_at_<pc> */
    PyObject *base = code->co_name;
    Py_ssize_t cut = -1;
    const char *bn = PyUnicode_AsUTF8(base);
    if (bn && strncmp(bn, "torchc_resume_", 14) == 0) {
        const char *at = strstr(bn + 14, "_at_");
        cut = at ? at - (bn + 14) : -1;
    }
    if (cut >= 0) {
        char nb[256];
        snprintf(nb, sizeof nb, "torchc_resume_%.*s_at_%d", (int)(cut < 200 ? cut : 200), bn + 14,
                 target_pc);
        name = PyUnicode_FromString(nb);
    } else {
        name = PyUnicode_FromFormat("torchc_resume_%U_at_%d", base, target_pc);
    }
    if (name == NULL)
        goto done;
    int flags = code->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
    kw = Py_BuildValue("{s:O,s:i,s:i,s:i,s:i,s:O,s:i,s:i,s:O,s:O,s:O}", "co_code", bytes,
                       "co_argcount", nlocals + nstack, "co_posonlyargcount", 0,
                       "co_kwonlyargcount", 0, "co_nlocals", nlocals + nstack, "co_varnames",
                       varnames, "co_flags", flags, "co_stacksize",
                       code->co_stacksize + nstack + 2, "co_linetable", lt, "co_name", name,
                       "co_qualname", name);
    if (kw == NULL)
        goto done;
    replace = PyObject_GetAttrString((PyObject *)code, "replace");
    args = PyTuple_New(0);
    if (replace == NULL || args == NULL)
        goto done;
    newcode = PyObject_Call(replace, args, kw);
    if (newcode == NULL)
        goto done;
    fn = PyFunction_New(newcode, globals);
    if (fn == NULL)
        goto done;
    if (PyDict_SetItem(resume_cache, key, fn) < 0)
        Py_CLEAR(fn);
done:
    free(w.b);
    Py_XDECREF(key);
    Py_XDECREF(orig);
    Py_XDECREF(bytes);
    Py_XDECREF(newcode);
    Py_XDECREF(varnames);
    Py_XDECREF(kw);
    Py_XDECREF(args);
    Py_XDECREF(replace);
    Py_XDECREF(lt);
    Py_XDECREF(name);
    return fn;
}

void dh_resume_reset(void) {
    if (resume_cache)
        PyDict_Clear(resume_cache);
}
