/* obj_new.c — instances of Python classes constructed inside the traced frame.
 *
 * cls(*args) of a plain Python class (object's __new__, the generic __setattr__, no
 * metaclass __call__, no __del__) splits in two:
 *   allocation: object.__new__(cls) reads no state and has no effect, so it is hoisted to the
 *     guards (a DH_S_NEW source: a fresh, empty object each call, made before the graph
 *     runs; at trace time an empty stand-in of the same class);
 *   initialisation: cls.__init__ is inlined on it like any method. Its attribute writes (and
 *     every later one) are logged as for any object passed in (t->attrw, read back by later
 *     reads in the trace) and replayed on the fresh object after the graph, in program order.
 * The object then is an ordinary V_OBJ with a source: returned, stored into caller-visible
 * state or handed to a graph break, it is the real object with eager's attributes.
 *
 * Requires: attribute reads of an object with a source consult t->attrw first (symbolic.c
 *           load_attr), so the stand-in's empty __dict__ is never read for a written name.
 * Keeps:    eager's order of effects: the allocation is unobservable; what __init__ does is
 *           traced (a write before the construction in the trace stays before it).
 * Breaks:   nothing; classes outside the rule keep failing the trace ("call of type").
 */
#include "sym.h"

#include <string.h>

static PyObject *obj_new;     /* object.__new__ */
static PyObject *obj_init;    /* object.__init__ (a slot wrapper) */
static PyObject *s_init;      /* "__init__" */

static int init_once(void) {
    if (obj_new != NULL)
        return 0;
    s_init = PyUnicode_InternFromString("__init__");
    PyObject *nw = PyObject_GetAttrString((PyObject *)&PyBaseObject_Type, "__new__");
    obj_init = s_init ? _PyType_Lookup(&PyBaseObject_Type, s_init) : NULL;
    if (nw == NULL || obj_init == NULL) {
        Py_XDECREF(nw);
        (void)tc_clear_expected(PyExc_AttributeError);
        return -1;
    }
    Py_INCREF(obj_init); /* kept for the process */
    obj_new = nw;
    return 0;
}

int sym_obj_plain_class(PyObject *cls) {
    if (!PyType_Check(cls) || init_once() < 0)
        return 0;
    PyTypeObject *tp = (PyTypeObject *)cls;
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || (tp->tp_flags & Py_TPFLAGS_IS_ABSTRACT) ||
        Py_TYPE(cls)->tp_call != PyType_Type.tp_call || tp->tp_new != PyBaseObject_Type.tp_new ||
        tp->tp_setattro != PyObject_GenericSetAttr || tp->tp_finalize != NULL || tp->tp_del != NULL ||
        tp->tp_dictoffset == 0 || sym_is_nn_module_type(cls))
        return 0;
    PyObject *init = _PyType_Lookup(tp, s_init);
    return init != NULL && (init == obj_init || PyFunction_Check(init));
}

int sym_obj_new(trace *t, PyObject *cls, var *args, int nargs, PyObject *kwnames, var *out) {
    PyTypeObject *tp = (PyTypeObject *)cls;
    PyObject *init = _PyType_Lookup(tp, s_init);
    if (init == obj_init && nargs > 0)
        return sym_fail(t, "%s() takes no arguments (eager will raise)", tp->tp_name);
    PyObject *spec = NULL, *stand_in = NULL;
    int rc = -1;
    int cs = sym_source(t, DH_S_CONST, -1, 0, cls);
    if (cs < 0)
        return -1;
    spec = Py_BuildValue("(O()(i))", obj_new, cs);
    stand_in = PyObject_CallOneArg(obj_new, cls); /* what the trace reads (never initialised) */
    if (spec == NULL || stand_in == NULL) {
        if (stand_in == NULL && spec != NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            rc = sym_fail(t, "%s.__new__ raised (eager will raise)", tp->tp_name);
        }
        goto done;
    }
    int s = sym_source(t, DH_S_NEW, -1, t->nsrc, spec);
    if (s < 0 || sym_wrap(t, stand_in, s, out) < 0)
        goto done;
    if (out->kind != V_OBJ) {
        rc = sym_fail(t, "%s(): not an object", tp->tp_name);
        goto done;
    }
    if (init != obj_init) {
        PyObject *fn = sym_keep(t, Py_NewRef(init));
        int fs = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
        var r, self = *out;
        if (fs < 0 || sym_inline(t, fn, fs, &self, args, nargs, kwnames, &r) < 0)
            goto done;
        if (r.kind != V_CONST || r.obj != Py_None) {
            rc = sym_fail(t, "%s.__init__ returned a value (eager will raise)", tp->tp_name);
            goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(spec);
    Py_XDECREF(stand_in);
    return rc;
}

int sym_obj_attr_special(trace *t, const var *o, PyObject *name) {
    if (PyUnicode_CompareWithASCIIString(name, "__dict__") != 0)
        return 0;
    for (int i = 0; i < t->nattrw; i++)
        if (t->attrw[i].obj == o->obj)
            return sym_fail(t, "__dict__ of an object whose attributes the trace wrote");
    return 0;
}
