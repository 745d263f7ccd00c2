/* sym_match.c — the opcodes of `match` statements (3.10+: the same on 3.11 and 3.12).
 *
 * MATCH_SEQUENCE / MATCH_MAPPING push whether the subject's type is a sequence / mapping for
 * pattern matching (Py_TPFLAGS_SEQUENCE / Py_TPFLAGS_MAPPING: tuples, lists, deques, named
 * tuples, Sequence ABCs; dicts and Mapping ABCs; never str, bytes, tensors); GET_LEN pushes
 * len(subject) as len() does; MATCH_KEYS the tuple of the subject's values for constant keys
 * (None when one is missing); MATCH_CLASS(n) isinstance(subject, cls) and its n positional
 * attributes (cls.__match_args__, or the subject itself for the builtins that match
 * themselves) then the keyword ones, as a tuple, or None.
 *
 * Requires: the subject is a value the trace holds; kinds it knows are answered from the
 *           kind, objects from their (guarded) type.
 * Keeps:    eager's order: attributes are read in the pattern's order, each once.
 * Breaks:   nothing: what it can't answer fails the trace with a reason (the frame runs as
 *           it is, or breaks where the top frame may).
 */
#include "sym_interp.h"

#include <string.h>

/* the subject's type flags for pattern matching: 1 has `flag`, 0 not, -1 failed */
static int match_flag(trace *t, const var *v, unsigned long flag) {
    switch (v->kind) {
    case V_SEQ:
        return flag == Py_TPFLAGS_SEQUENCE; /* tuple, list, deque, named tuple, return_types */
    case V_DICT:
    case V_REC:
        return flag == Py_TPFLAGS_MAPPING; /* dict, OrderedDict, defaultdict, ModelOutput */
    case V_TENSOR:
    case V_SYM:
    case V_ITER:
    case V_GEN:
    case V_FUNC:
    case V_METHOD:
    case V_SUPER:
        return 0;
    case V_CONST:
    case V_OBJ:
        if (v->obj != NULL) /* a constant, or an object whose type the trace guards */
            return (Py_TYPE(v->obj)->tp_flags & flag) != 0;
        break;
    default:
        break;
    }
    return sym_fail(t, "match on an unsupported value");
}

/* MATCH_SEQUENCE, MATCH_MAPPING */
static int match_kind(trace *t, sframe *f, unsigned long flag) {
    var c;
    NEED(1);
    int r = match_flag(t, &PEEK(1), flag);
    if (r < 0 || sym_const(t, PyBool_FromLong(r), &c) < 0)
        return -1;
    PUSH(c);
    return SYM_NEXT;
}

int sym_op_match_sequence(trace *t, sframe *f, sym_ins *in) {
    (void)in;
    return match_kind(t, f, Py_TPFLAGS_SEQUENCE);
}

int sym_op_match_mapping(trace *t, sframe *f, sym_ins *in) {
    (void)in;
    return match_kind(t, f, Py_TPFLAGS_MAPPING);
}

/* a builtin callable (len, isinstance) called on args as the trace calls it */
static int call_builtin(trace *t, const char *name, var *args, int nargs, var *out) {
    PyObject *b = PyDict_GetItemString(PyEval_GetBuiltins(), name); /* borrowed */
    if (b == NULL)
        return sym_fail(t, "builtins.%s not found", name);
    var fn;
    if (sym_wrap(t, b, -1, &fn) < 0)
        return -1;
    return sym_call(t, &fn, args, nargs, NULL, out);
}

/* GET_LEN: len(TOS) pushed, TOS kept */
int sym_op_get_len(trace *t, sframe *f, sym_ins *in) {
    var a, c;
    (void)in;
    NEED(1);
    a = PEEK(1);
    if (call_builtin(t, "len", &a, 1, &c) < 0)
        return -1;
    PUSH(c);
    return SYM_NEXT;
}

/* MATCH_KEYS: TOS the constant keys, TOS1 the mapping; pushes the values (a tuple) or None */
int sym_op_match_keys(trace *t, sframe *f, sym_ins *in) {
    var c;
    (void)in;
    NEED(2);
    const var *keys = &PEEK(1), *d = &PEEK(2);
    if (keys->kind != V_CONST || !PyTuple_Check(keys->obj))
        return sym_fail(t, "match: mapping pattern keys that are not constants");
    if (d->kind != V_DICT)
        return sym_fail(t, "match: a mapping pattern on a mapping the trace does not hold as a dict");
    Py_ssize_t nk = PyTuple_GET_SIZE(keys->obj);
    var *vals = sym_alloc(t, nk > 0 ? (int)nk : 1);
    if (vals == NULL)
        return -1;
    for (Py_ssize_t j = 0; j < nk; j++) {
        int at = sym_dict_find(t, d, PyTuple_GET_ITEM(keys->obj, j));
        if (at == -2)
            return -1;
        if (at < 0) { /* no match */
            if (sym_const(t, Py_NewRef(Py_None), &c) < 0)
                return -1;
            PUSH(c);
            return SYM_NEXT;
        }
        vals[j] = d->items[at];
    }
    c = sym_var(V_SEQ);
    c.n = (int)nk;
    c.items = vals;
    PUSH(c);
    return SYM_NEXT;
}

/* the builtins whose class pattern C(x) matches the subject itself */
static int self_matching(PyObject *cls) {
    PyTypeObject *tp = (PyTypeObject *)cls;
    return tp->tp_flags & (Py_TPFLAGS_LONG_SUBCLASS | Py_TPFLAGS_LIST_SUBCLASS | Py_TPFLAGS_TUPLE_SUBCLASS |
                           Py_TPFLAGS_BYTES_SUBCLASS | Py_TPFLAGS_UNICODE_SUBCLASS | Py_TPFLAGS_DICT_SUBCLASS)
               ? 1
               : (PyType_IsSubtype(tp, &PyFloat_Type) || PyType_IsSubtype(tp, &PyByteArray_Type) ||
                  PyType_IsSubtype(tp, &PySet_Type) || PyType_IsSubtype(tp, &PyFrozenSet_Type));
}

/* MATCH_CLASS(count): TOS the keyword names, TOS1 the class, TOS2 the subject; pops the
 * three, pushes the attributes (a tuple: count positional, then the keywords) or None */
int sym_op_match_class(trace *t, sframe *f, sym_ins *in) {
    var c;
    NEED(3);
    var names = POP(), cls = POP(), subj = POP();
    int count = in->oparg;
    if (names.kind != V_CONST || !PyTuple_Check(names.obj))
        return sym_fail(t, "match: class pattern keywords that are not constants");
    if ((cls.kind != V_FUNC && cls.kind != V_CONST) || cls.obj == NULL || !PyType_Check(cls.obj))
        return sym_fail(t, "match: a class pattern on something that is not a class (eager will raise)");
    var two[2] = {subj, cls}, r;
    if (call_builtin(t, "isinstance", two, 2, &r) < 0)
        return -1;
    if (r.kind != V_CONST || !PyBool_Check(r.obj))
        return sym_fail(t, "match: isinstance gave no constant answer");
    if (r.obj == Py_False) {
        if (sym_const(t, Py_NewRef(Py_None), &c) < 0)
            return -1;
        PUSH(c);
        return SYM_NEXT;
    }
    Py_ssize_t nkw = PyTuple_GET_SIZE(names.obj);
    var *vals = sym_alloc(t, count + (int)nkw > 0 ? count + (int)nkw : 1);
    if (vals == NULL)
        return -1;
    PyObject *margs = NULL;
    if (count > 0) {
        margs = PyObject_GetAttrString(cls.obj, "__match_args__"); /* the class is guarded */
        if (margs == NULL) {
            if (tc_clear_expected(PyExc_AttributeError) < 0)
                return -1;
            if (count == 1 && self_matching(cls.obj)) {
                vals[0] = subj;
            } else {
                return sym_fail(t, "match: %s() accepts 0 positional sub-patterns (eager will raise TypeError)",
                                ((PyTypeObject *)cls.obj)->tp_name);
            }
        } else if (!PyTuple_Check(margs) || PyTuple_GET_SIZE(margs) < count) {
            Py_DECREF(margs);
            return sym_fail(t, "match: %s.__match_args__ too short or not a tuple (eager will raise TypeError)",
                            ((PyTypeObject *)cls.obj)->tp_name);
        }
    }
    for (int i = 0; i < count + (int)nkw; i++) {
        if (i == 0 && count == 1 && margs == NULL)
            continue; /* the subject itself */
        PyObject *nm = i < count ? PyTuple_GET_ITEM(margs, i) : PyTuple_GET_ITEM(names.obj, i - count);
        if (!PyUnicode_Check(nm)) {
            Py_XDECREF(margs);
            return sym_fail(t, "match: __match_args__ items must be strings (eager will raise TypeError)");
        }
        if (sym_load_attr(t, &subj, nm, &vals[i]) < 0) {
            Py_XDECREF(margs);
            return -1; /* (a missing attribute: no match in eager, a failed trace here) */
        }
    }
    Py_XDECREF(margs);
    c = sym_var(V_SEQ);
    c.n = count + (int)nkw;
    c.items = vals;
    PUSH(c);
    return SYM_NEXT;
}
