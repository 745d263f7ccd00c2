/* resume.c — graph breaks: resume functions that continue a frame after an instruction
 * the trace could not capture.
 *
 * A resume function is the original code object with a prologue in front:
 *
 *   RESUME 0
 *   DELETE_FAST u        for each local unbound at the break (passed as None)
 *   LOAD_FAST  s_k       for each stack item kept across the break (PUSH_NULL for NULLs;
 *                        GET_ITER after it for a loop iterator, passed as a tuple)
 *   DELETE_FAST s_k      each stack slot loaded (locals() shows the function's own variables)
 *   JUMP_FORWARD pc      to the instruction after the break (offset by the prologue)
 *   <original bytecode, unchanged>
 *
 * Relative jumps inside the original code stay valid because the body is only shifted.
 * Its arguments are the original locals followed by the stack items. The prologue gets
 * "no location" line-table entries, so the original positions still line up. Cell variables
 * come in as plain values and get a fresh cell each (MAKE_CELL after the DELETE_FASTs: no
 * closure over them lives across the break, sym_output.c refuses one); the exception table
 * moves with the body. Requires: the break's own instruction outside every try block
 * (symbolic.c sym_record_break_state), so what it raises needs no handler here.
 * Called under the hook, a resume function is captured like any other frame.
 */
#include "sym.h"

#ifndef CO_FAST_CELL
#define CO_FAST_CELL 0x40 /* internal/pycore_code.h, 3.11 and 3.12 */
#endif

#include <string.h>

static int op_resume = -1, op_delete_fast, op_load_fast, op_push_null, op_jump_forward,
           op_extended_arg, op_get_iter, op_copy_free_vars, op_make_cell, op_raise_varargs,
           op_load_const, op_before_with, op_pop_top;
static unsigned char deref_op[256]; /* opcodes whose oparg indexes localsplus cells/frees */
static PyObject *resume_cache; /* (code, pc, nstack, mask bytes) -> function */
static PyObject *resume_info;  /* resume code -> (original code, target pc, unbound mask bytes,
                                *                prologue code units) */
static PyObject *break_cache;  /* (resume code, nargs, kwnames) -> break-call function */
static int op_precall = -1, op_call = -1, op_kw_names = -1, op_return_value = -1;
static int ncache_precall, ncache_call;

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
    op_make_cell = opnum(opmap, "MAKE_CELL");
    op_raise_varargs = opnum(opmap, "RAISE_VARARGS");
    op_load_const = opnum(opmap, "LOAD_CONST");
    op_before_with = opnum(opmap, "BEFORE_WITH");
    op_pop_top = opnum(opmap, "POP_TOP");
    op_precall = opnum(opmap, "PRECALL"); /* 3.11 only */
    op_call = opnum(opmap, "CALL");
    op_kw_names = opnum(opmap, "KW_NAMES");
    op_return_value = opnum(opmap, "RETURN_VALUE");
    {
        PyObject *opc = PyImport_ImportModule("opcode");
        PyObject *ce = opc ? PyObject_GetAttrString(opc, "_inline_cache_entries") : NULL;
        Py_XDECREF(opc);
        if (ce != NULL && PySequence_Check(ce)) {
            PyObject *v = op_call >= 0 ? PySequence_GetItem(ce, op_call) : NULL;
            ncache_call = v ? (int)PyLong_AsLong(v) : -1;
            Py_XDECREF(v);
            v = op_precall >= 0 ? PySequence_GetItem(ce, op_precall) : NULL;
            ncache_precall = v ? (int)PyLong_AsLong(v) : 0;
            Py_XDECREF(v);
        } else {
            ncache_call = -1; /* unknown layout: break calls run from C */
        }
        Py_XDECREF(ce);
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError, PyExc_IndexError, PyExc_TypeError,
                                PyExc_OverflowError);
    }
    static const char *derefs[] = {"LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE",
                                   "MAKE_CELL", "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF", NULL};
    for (int i = 0; derefs[i]; i++) {
        int o = opnum(opmap, derefs[i]);
        if (o >= 0 && o < 256)
            deref_op[o] = 1;
    }
    Py_DECREF(opmap);
    resume_cache = PyDict_New();
    resume_info = PyDict_New();
    break_cache = PyDict_New();
    if (resume_cache == NULL || resume_info == NULL || break_cache == NULL || op_resume < 0 || op_delete_fast < 0 || op_load_fast < 0 ||
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

/* The exception table of a body shifted by `by` code units: every entry's start and target
 * move (lengths, depths and lasti flags stay). Entries: four varints of 6-bit groups, most
 * significant first, 0x40 = more follow, 0x80 marks an entry's first byte. New reference. */
static void put_varint(unsigned char **p, unsigned int v, int first) {
    int shift = 0;
    while ((v >> shift) >= 64)
        shift += 6;
    for (; shift >= 0; shift -= 6) {
        unsigned char b = (unsigned char)((v >> shift) & 63);
        if (shift > 0)
            b |= 64;
        if (first)
            b |= 128;
        first = 0;
        *(*p)++ = b;
    }
}

static PyObject *shift_exception_table(PyObject *tab, int by, int extra_at, int extra_target,
                                       int extra_dl) {
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(tab);
    const unsigned char *end = p + PyBytes_GET_SIZE(tab);
    /* each varint grows by at most one group; the extra entry (one instruction at extra_at,
     * after every other: the table stays sorted by start) takes at most 4 * 6 bytes */
    unsigned char *out = PyMem_Malloc((size_t)(end - p) * 2 + 32), *q = out;
    if (out == NULL)
        return PyErr_NoMemory();
    while (p < end) {
        unsigned int v[4];
        for (int k = 0; k < 4; k++) {
            if (p >= end)
                goto bad;
            int b = *p++;
            v[k] = (unsigned int)(b & 63);
            while (b & 64) {
                if (p >= end)
                    goto bad;
                b = *p++;
                v[k] = (v[k] << 6) | (unsigned int)(b & 63);
            }
        }
        v[0] += (unsigned int)by;
        v[2] += (unsigned int)by;
        for (int k = 0; k < 4; k++)
            put_varint(&q, v[k], k == 0);
    }
    if (extra_at >= 0) {
        put_varint(&q, (unsigned int)extra_at, 1);
        put_varint(&q, 1, 0);
        put_varint(&q, (unsigned int)extra_target, 0);
        put_varint(&q, (unsigned int)extra_dl, 0);
    }
    PyObject *r = PyBytes_FromStringAndSize((const char *)out, q - out);
    PyMem_Free(out);
    return r;
bad:
    PyMem_Free(out);
    PyErr_SetString(PyExc_SystemError, "resume: malformed exception table");
    return NULL;
}

/* exc_target >= 0: the exception resume of a break inside a try block (dh_make_exc_resume):
 * the prologue jumps to a RAISE_VARARGS 1 appended after the body, covered by a new
 * exception-table entry to exc_target with the handler's depth and lasti; the last stack
 * item is the exception. */
static PyObject *make_resume(PyCodeObject *code, PyObject *globals, int target_pc, int nlocals,
                             const unsigned char *unbound, int nstack, const unsigned char *stack_null,
                             int exc_target, int exc_depth, int exc_lasti, PyObject *with) {
    PyObject *key = NULL, *fn = NULL, *bytes = NULL, *newcode = NULL, *varnames = NULL;
    PyObject *kw = NULL, *args = NULL, *replace = NULL, *lt = NULL, *name = NULL;
    PyObject *orig = NULL, *exctab = NULL, *consts = NULL;
    buf w = {0};
    if (init_ops() < 0)
        return NULL;
    {
        /* a break in a resume function continues the original code: its resume is built from
         * the original (the body is the original's, shifted by the prologue), so a loop with a
         * break in its body gets one resume code for all iterations, not a new one each */
        PyObject *info = PyDict_GetItemWithError(resume_info, (PyObject *)code);
        if (info == NULL && PyErr_Occurred())
            return NULL;
        PyCodeObject *orig = info ? (PyCodeObject *)PyTuple_GET_ITEM(info, 0) : NULL;
        int pro = info ? (int)PyLong_AsLong(PyTuple_GET_ITEM(info, 3)) : 0;
        if (orig != NULL && nlocals == orig->co_nlocalsplus - orig->co_nfreevars && target_pc >= pro &&
            (exc_target < 0 || exc_target >= pro)) {
            code = orig;
            target_pc -= pro;
            if (exc_target >= 0)
                exc_target -= pro;
        }
    }
    /* cache by (code, pc, layout) so every trace of the same break shares one resume code */
    key = Py_BuildValue("(Oiy#y#iiiO)", (PyObject *)code, target_pc, (const char *)unbound,
                        (Py_ssize_t)nlocals, (const char *)stack_null, (Py_ssize_t)nstack,
                        exc_target, exc_depth, exc_lasti, with ? with : Py_None);
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
    int body_units = (int)(PyBytes_GET_SIZE(orig) / 2);
    if (exc_target >= 0)
        target_pc = body_units; /* the appended RAISE_VARARGS 1 */
    int nfree = code->co_nfreevars;
    if (nfree > 0 && emit(&w, op_copy_free_vars, nfree) < 0)
        goto done;
    if (emit(&w, op_resume, 0) < 0)
        goto done;
    /* unbound[i]: 1 unbound at the break, 2 a cell variable passed as the cell itself (one a
     * function made before the break shares: sym_output.c shared_cell) */
    for (int i = 0; i < nlocals; i++)
        if (unbound[i] == 1 && emit(&w, op_delete_fast, i) < 0)
            goto done;
    /* the other cell variables come in as plain values (the trace held them so): a fresh
     * cell each, as the skipped MAKE_CELLs made */
    const unsigned char *kinds = (const unsigned char *)PyBytes_AS_STRING(code->co_localspluskinds);
    for (int i = 0; i < nlocals && i < code->co_nlocalsplus; i++)
        if ((kinds[i] & CO_FAST_CELL) && unbound[i] != 2 && emit(&w, op_make_cell, i) < 0)
            goto done;
    /* stack_null[k]: 0 a value, 1 NULL, 2 an iterator passed as the tuple of what is left,
     * 3 the exit of a with block: the block is entered again, cls(*args) from `with`, its
     * classes and arguments appended to the constants (BEFORE_WITH leaves the exit) */
    consts = PySequence_List(code->co_consts);
    if (consts == NULL)
        goto done;
    for (int k = 0; k < nstack; k++) {
        if (stack_null[k] == 3) {
            PyObject *rec = NULL;
            for (Py_ssize_t j = 0; with && j < PyTuple_GET_SIZE(with); j++)
                if (PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(with, j), 0)) == k)
                    rec = PyTuple_GET_ITEM(with, j);
            if (rec == NULL) {
                PyErr_SetString(PyExc_SystemError, "resume: a with block without its context");
                goto done;
            }
            PyObject *cargs = PyTuple_GET_ITEM(rec, 2);
            int na = (int)PyTuple_GET_SIZE(cargs);
            if (emit(&w, op_push_null, 0) < 0)
                goto done;
            for (int j = -1; j < na; j++) {
                if (PyList_Append(consts, j < 0 ? PyTuple_GET_ITEM(rec, 1) : PyTuple_GET_ITEM(cargs, j)) < 0 ||
                    emit(&w, op_load_const, (int)PyList_GET_SIZE(consts) - 1) < 0)
                    goto done;
            }
            if (op_precall >= 0) {
                if (emit(&w, op_precall, na) < 0)
                    goto done;
                for (int c = 0; c < ncache_precall; c++)
                    if (emit(&w, 0, 0) < 0)
                        goto done;
            }
            if (emit(&w, op_call, na) < 0)
                goto done;
            for (int c = 0; c < ncache_call; c++)
                if (emit(&w, 0, 0) < 0)
                    goto done;
            if (emit(&w, op_before_with, 0) < 0 || emit(&w, op_pop_top, 0) < 0)
                goto done;
            continue;
        }
        if ((stack_null[k] == 1 ? emit(&w, op_push_null, 0) : emit(&w, op_load_fast, nlocals + k)) < 0)
            goto done;
        if (stack_null[k] == 2 && emit(&w, op_get_iter, 0) < 0)
            goto done;
    }
    /* the stack slots are on the stack now: unbind them so locals() shows the function's own */
    for (int k = 0; k < nstack; k++)
        if (stack_null[k] != 1 && emit(&w, op_delete_fast, nlocals + k) < 0)
            goto done;
    if (emit(&w, op_jump_forward, target_pc) < 0)
        goto done;
    int prologue_units = w.n / 2;
    Py_ssize_t olen = PyBytes_GET_SIZE(orig);
    int tail = exc_target >= 0 ? 2 : 0;
    bytes = PyBytes_FromStringAndSize(NULL, w.n + olen + tail);
    if (bytes == NULL)
        goto done;
    memcpy(PyBytes_AS_STRING(bytes), w.b, (size_t)w.n);
    memcpy(PyBytes_AS_STRING(bytes) + w.n, PyBytes_AS_STRING(orig), (size_t)olen);
    if (tail) {
        PyBytes_AS_STRING(bytes)[w.n + olen] = (char)op_raise_varargs;
        PyBytes_AS_STRING(bytes)[w.n + olen + 1] = 1;
    }
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
    lt = PyBytes_FromStringAndSize(NULL, nlt + PyBytes_GET_SIZE(olt) + (tail ? 1 : 0));
    if (lt == NULL)
        goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(lt);
    for (int left = prologue_units; left > 0; left -= 8) {
        int k = left < 8 ? left : 8;
        *p++ = (unsigned char)(0x80 | (15 << 3) | (k - 1));
    }
    memcpy(p, PyBytes_AS_STRING(olt), (size_t)PyBytes_GET_SIZE(olt));
    if (tail) /* the raise: no location */
        p[PyBytes_GET_SIZE(olt)] = (unsigned char)(0x80 | (15 << 3) | 0);
    /* names: the original locals (cell variables among them, at their own slots: CPython
     * merges a cell named like a variable into its slot), then the stack slots */
    PyObject *ov = code->co_localsplusnames;
    if (PyTuple_GET_SIZE(ov) < nlocals) {
        PyErr_SetString(PyExc_SystemError, "resume: more locals than the code has");
        goto done;
    }
    varnames = PyTuple_New(nlocals + nstack);
    if (varnames == NULL)
        goto done;
    for (int i = 0; i < nlocals; i++)
        PyTuple_SET_ITEM(varnames, i, Py_NewRef(PyTuple_GET_ITEM(ov, i)));
    exctab = shift_exception_table(code->co_exceptiontable, prologue_units, exc_target >= 0 ? prologue_units + body_units : -1,
                                   exc_target + prologue_units, exc_depth * 2 + (exc_lasti ? 1 : 0));
    if (exctab == NULL)
        goto done;
    for (int k = 0; k < nstack; k++) {
        PyObject *s = PyUnicode_FromFormat("__torchc_stack%d", k);
        if (s == NULL)
            goto done;
        PyTuple_SET_ITEM(varnames, nlocals + k, s);
    }
    /* resume functions of resume functions keep the original name: torchc_resume_<fn>_at_<pc>
     * is the qualified name (explain()); co_name stays the function's own, which is what
     * sys._getframe().f_code.co_name, tracebacks and logging's funcName show */
    PyObject *base = code->co_qualname;
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
    PyObject *ctup = PyList_AsTuple(consts);
    if (ctup == NULL)
        goto done;
    Py_SETREF(consts, ctup);
    kw = Py_BuildValue("{s:O,s:i,s:i,s:i,s:i,s:O,s:i,s:i,s:O,s:O,s:O,s:O,s:O}", "co_code", bytes,
                       "co_argcount", nlocals + nstack, "co_posonlyargcount", 0,
                       "co_kwonlyargcount", 0, "co_nlocals", nlocals + nstack, "co_varnames",
                       varnames, "co_flags", flags, "co_stacksize",
                       code->co_stacksize + nstack + 8, "co_linetable", lt, "co_name",
                       code->co_name, "co_qualname", name, "co_exceptiontable", exctab,
                       "co_consts", consts);
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
    if (fn != NULL && exc_target < 0) {
        /* what a break call at target_pc needs to rebuild the frame (dh_break_call) */
        PyObject *info = Py_BuildValue("(Oiy#i)", (PyObject *)code, target_pc,
                                       (const char *)unbound, (Py_ssize_t)nlocals, prologue_units);
        if (info == NULL || PyDict_SetItem(resume_info, newcode, info) < 0)
            Py_CLEAR(fn);
        Py_XDECREF(info);
    }
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
    Py_XDECREF(exctab);
    Py_XDECREF(consts);
    return fn;
}

PyObject *dh_make_resume(PyCodeObject *code, PyObject *globals, int target_pc, int nlocals,
                         const unsigned char *unbound, int nstack, const unsigned char *stack_null,
                         PyObject *with) {
    return make_resume(code, globals, target_pc, nlocals, unbound, nstack, stack_null, -1, 0, 0, with);
}

/* The break's instruction raised inside a try block: a function taking the locals, the first
 * `depth` stack items and the exception, which raises it where the handler at `handler`
 * catches it, as eager's frame would. Never hooked: the rest of the frame after an exception
 * runs as it is (callees are hooked as usual), so no entry is specialized on one exception
 * object. */
PyObject *dh_make_exc_resume(PyCodeObject *code, PyObject *globals, int handler, int depth, int lasti,
                             int nlocals, const unsigned char *unbound, const unsigned char *stack_null) {
    unsigned char sn[512];
    if (depth + 1 > (int)sizeof sn) {
        PyErr_SetString(PyExc_NotImplementedError, "resume: handler stack too deep");
        return NULL;
    }
    memcpy(sn, stack_null, (size_t)depth);
    for (int k = 0; k < depth; k++)
        if (sn[k] == 3)
            sn[k] = 0; /* a with block's exit: the real one, entered around the instruction */
    sn[depth] = 0; /* the exception */
    PyObject *fn = make_resume(code, globals, 0, nlocals, unbound, depth + 1, sn, handler, depth, lasti, NULL);
    if (fn == NULL)
        return NULL;
    dh_cache *c = dh_cache_of((PyCodeObject *)PyFunction_GET_CODE(fn));
    if (c == NULL) {
        Py_DECREF(fn);
        return NULL;
    }
    if (!c->skip) {
        c->skip = 1;
        free(c->skip_reason);
        c->skip_reason = strdup("the rest of a frame after an exception at a graph break");
    }
    return fn;
}

int dh_resume_cell_passed(PyCodeObject *code, int i) {
    if (resume_info == NULL)
        return 0;
    PyObject *info = PyDict_GetItemWithError(resume_info, (PyObject *)code);
    if (info == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    PyObject *ub = PyTuple_GET_ITEM(info, 2);
    return i >= 0 && i < PyBytes_GET_SIZE(ub) && PyBytes_AS_STRING(ub)[i] == 2;
}

int dh_resume_base_nlocals(PyCodeObject *code, int nlocals) {
    if (resume_info == NULL)
        return nlocals;
    PyObject *info = PyDict_GetItemWithError(resume_info, (PyObject *)code);
    if (info == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return nlocals;
    }
    PyCodeObject *orig = (PyCodeObject *)PyTuple_GET_ITEM(info, 0);
    int base = orig->co_nlocalsplus - orig->co_nfreevars;
    if (base > nlocals)
        return nlocals;
    return base; /* the stack slots after them are unbound by the prologue */
}

void dh_resume_reset(void) {
    if (resume_cache)
        PyDict_Clear(resume_cache);
    if (resume_info)
        PyDict_Clear(resume_info);
    if (break_cache)
        PyDict_Clear(break_cache);
}

/* ---- break calls ------------------------------------------------------------------------
 * The call a trace stopped at runs inside a frame of the original function, as in eager:
 * a small code object with the function's name, file, line of the call and locals
 *
 *   RESUME 0
 *   DELETE_FAST u          each local unbound at the break
 *   PUSH_NULL; LOAD_FAST f; LOAD_FAST a0..an-1
 *   DELETE_FAST f, a0..    (locals() shows the function's own variables only)
 *   [KW_NAMES k]; [PRECALL n]; CALL n; RETURN_VALUE
 *
 * so locals(), sys._getframe(), inspect.currentframe(), warnings.warn(stacklevel=...) and
 * logging called at the break (or by what it calls) see the frame eager would. The frame is
 * never hooked (its cache is marked skip); the callee is hooked as usual. Its result goes to
 * the resume function as before, which is called from C, so the caller of the original
 * frame is the resume frame's f_back as well. */

/* one location entry per <= 8 code units, all on `line` (form 13: no column) */
static PyObject *one_line_table(int units, int delta) {
    unsigned char tmp[1024], *p = tmp;
    for (int left = units, first = 1; left > 0 && p < tmp + sizeof tmp - 16; left -= 8, first = 0) {
        int k = left < 8 ? left : 8;
        *p++ = (unsigned char)(0x80 | (13 << 3) | (k - 1));
        int d = first ? delta : 0;
        unsigned int v = d < 0 ? ((unsigned int)(-d) << 1) | 1 : (unsigned int)d << 1;
        while (v >= 64) {
            *p++ = (unsigned char)(64 | (v & 63));
            v >>= 6;
        }
        *p++ = (unsigned char)v;
    }
    return PyBytes_FromStringAndSize((const char *)tmp, p - tmp);
}

/* noinline: built once per break site, its locals stay off the C stack of dh_break_call,
 * which a compiled recursion nests once a level (recursion.c) */
static __attribute__((noinline)) PyObject *make_break_code(PyObject *rcode, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *info = PyDict_GetItemWithError(resume_info, rcode); /* borrowed */
    if (info == NULL)
        return NULL;
    PyCodeObject *code = (PyCodeObject *)PyTuple_GET_ITEM(info, 0);
    int target_pc = (int)PyLong_AsLong(PyTuple_GET_ITEM(info, 1));
    PyObject *ub = PyTuple_GET_ITEM(info, 2);
    const unsigned char *unbound = (const unsigned char *)PyBytes_AS_STRING(ub);
    int nlocals = (int)PyBytes_GET_SIZE(ub);
    PyObject *bytes = NULL, *varnames = NULL, *consts = NULL, *lt = NULL, *kw = NULL;
    PyObject *replace = NULL, *args = NULL, *newcode = NULL, *ov = NULL;
    buf w = {0};
    if (emit(&w, op_resume, 0) < 0)
        goto done;
    for (int i = 0; i < nlocals; i++)
        if (unbound[i] == 1 && emit(&w, op_delete_fast, i) < 0)
            goto done;
    if (emit(&w, op_push_null, 0) < 0)
        goto done;
    for (Py_ssize_t k = 0; k <= nargs; k++)
        if (emit(&w, op_load_fast, nlocals + (int)k) < 0)
            goto done;
    for (Py_ssize_t k = 0; k <= nargs; k++)
        if (emit(&w, op_delete_fast, nlocals + (int)k) < 0)
            goto done;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0 && emit(&w, op_kw_names, 1) < 0)
        goto done;
    if (op_precall >= 0) {
        if (emit(&w, op_precall, (int)nargs) < 0)
            goto done;
        for (int k = 0; k < ncache_precall; k++)
            if (emit(&w, 0, 0) < 0) /* CACHE */
                goto done;
    }
    if (emit(&w, op_call, (int)nargs) < 0)
        goto done;
    for (int k = 0; k < ncache_call; k++)
        if (emit(&w, 0, 0) < 0)
            goto done;
    if (emit(&w, op_return_value, 0) < 0)
        goto done;
    bytes = PyBytes_FromStringAndSize((const char *)w.b, w.n);
    /* the line of the call: the code unit just before the resume point (its last cache) */
    int line = PyCode_Addr2Line(code, 2 * (target_pc - 1));
    lt = one_line_table(w.n / 2, line >= code->co_firstlineno ? line - code->co_firstlineno : 0);
    consts = Py_BuildValue("(OO)", Py_None, kwnames ? kwnames : Py_None);
    ov = PyObject_GetAttrString((PyObject *)code, "co_varnames");
    varnames = bytes && lt && consts && ov ? PyTuple_New(nlocals + nargs + 1) : NULL;
    if (varnames == NULL)
        goto done;
    for (int i = 0; i < nlocals; i++) {
        /* the original locals by name (cells and free variables by theirs) */
        PyObject *nm = i < PyTuple_GET_SIZE(ov) ? PyTuple_GET_ITEM(ov, i)
                       : i < PyTuple_GET_SIZE(code->co_localsplusnames)
                           ? PyTuple_GET_ITEM(code->co_localsplusnames, i)
                           : NULL;
        nm = nm ? Py_NewRef(nm) : PyUnicode_FromFormat("__torchc_local%d", i);
        if (nm == NULL)
            goto done;
        PyTuple_SET_ITEM(varnames, i, nm);
    }
    for (Py_ssize_t k = 0; k <= nargs; k++) {
        PyObject *nm = k == 0 ? PyUnicode_FromString("__torchc_fn") : PyUnicode_FromFormat("__torchc_arg%zd", k - 1);
        if (nm == NULL)
            goto done;
        PyTuple_SET_ITEM(varnames, nlocals + k, nm);
    }
    int flags = code->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE |
                                   CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE);
    PyObject *empty = PyTuple_New(0);
    kw = empty ? Py_BuildValue("{s:O,s:i,s:i,s:i,s:i,s:O,s:i,s:i,s:O,s:O,s:O,s:O,s:O,s:O,s:y}",
                               "co_code", bytes, "co_argcount", (int)(nlocals + nargs + 1),
                               "co_posonlyargcount", 0, "co_kwonlyargcount", 0, "co_nlocals",
                               (int)(nlocals + nargs + 1), "co_varnames", varnames, "co_flags",
                               flags, "co_stacksize", (int)nargs + 4, "co_linetable", lt,
                               "co_consts", consts, "co_names", empty, "co_cellvars", empty,
                               "co_freevars", empty, "co_name", code->co_name,
                               "co_exceptiontable", "")
               : NULL;
    Py_XDECREF(empty);
    replace = kw ? PyObject_GetAttrString((PyObject *)code, "replace") : NULL;
    args = replace ? PyTuple_New(0) : NULL;
    newcode = args ? PyObject_Call(replace, args, kw) : NULL;
done:
    free(w.b);
    Py_XDECREF(bytes);
    Py_XDECREF(varnames);
    Py_XDECREF(consts);
    Py_XDECREF(lt);
    Py_XDECREF(kw);
    Py_XDECREF(replace);
    Py_XDECREF(args);
    Py_XDECREF(ov);
    return newcode;
}

PyObject *dh_break_call(PyObject *resume_proto, PyObject *const *locals, int nlocals, PyObject *fn,
                        PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *key = NULL, *bfn = NULL, *argv_small[40], **argv = argv_small, *res = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (resume_info == NULL || ncache_call < 0 || !PyFunction_Check(resume_proto) ||
        nargs > 200)
        goto direct;
    PyObject *rcode = PyFunction_GET_CODE(resume_proto);
    key = Py_BuildValue("(OnO)", rcode, nargs, kwnames ? kwnames : Py_None);
    if (key == NULL)
        goto direct;
    bfn = PyDict_GetItemWithError(break_cache, key);
    if (bfn != NULL) {
        Py_INCREF(bfn);
    } else {
        if (PyErr_Occurred())
            goto direct;
        PyObject *info = PyDict_GetItemWithError(resume_info, rcode);
        if (info == NULL || PyBytes_GET_SIZE(PyTuple_GET_ITEM(info, 2)) != nlocals)
            goto direct;
        PyObject *bc = make_break_code(rcode, nargs, kwnames);
        if (bc == NULL)
            goto direct;
        dh_cache *c = dh_cache_of((PyCodeObject *)bc);
        if (c == NULL) {
            Py_DECREF(bc);
            goto direct;
        }
        c->skip = 1; /* the break call runs as it is: never hooked */
        free(c->skip_reason);
        c->skip_reason = strdup("the call at a graph break");
        bfn = PyFunction_New(bc, PyFunction_GET_GLOBALS(resume_proto));
        Py_DECREF(bc);
        if (bfn == NULL || PyDict_SetItem(break_cache, key, bfn) < 0)
            goto direct;
    }
    Py_ssize_t n = nlocals + 1 + nargs;
    if (n > 40 && (argv = PyMem_Malloc((size_t)n * sizeof *argv)) == NULL) {
        argv = argv_small;
        goto direct;
    }
    for (int i = 0; i < nlocals; i++)
        argv[i] = locals[i];
    argv[nlocals] = fn;
    for (Py_ssize_t k = 0; k < nargs; k++)
        argv[nlocals + 1 + k] = args[k];
    /* the break frame stands in for the hooked frame (which never ran in the interpreter and
     * was already counted once by the compiled run, recursion.c dh_rec_enter_run): it must not count
     * a second level, or compiled recursion would reach the limit at half eager's depth */
    PyThreadState *ts = PyThreadState_GET();
#if PY_VERSION_HEX >= 0x030C0000
    ts->py_recursion_remaining++;
#else
    ts->recursion_remaining++;
#endif
    res = PyObject_Vectorcall(bfn, argv, (size_t)n, NULL);
#if PY_VERSION_HEX >= 0x030C0000
    ts->py_recursion_remaining--;
#else
    ts->recursion_remaining--;
#endif
    if (argv != argv_small)
        PyMem_Free(argv);
    Py_XDECREF(key);
    Py_XDECREF(bfn);
    return res;
direct:
    Py_XDECREF(key);
    Py_XDECREF(bfn);
    if (tc_clear_expected(PyExc_Exception) < 0)
        return NULL; /* MemoryError, Ctrl-C: as eager would see them */
    return PyObject_Vectorcall(fn, args, (size_t)(nargs - nkw), kwnames);
}
