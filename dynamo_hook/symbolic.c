/* symbolic.c — the bytecode symbolic interpreter (CPython 3.11 and 3.12).
 *
 * Requires: a frame that has not started (locals = bound arguments).
 * Produces: an inductor_c graph, the sources/guards it was specialized on, and an output
 *           spec; or a fallback entry whose reason says what stopped the capture. The
 *           guards of a fallback entry cover the path traced so far, so the same inputs
 *           skip the capture next time.
 * Opcodes are identified by name through dis.opmap at init (one table for both versions);
 * inline cache sizes come from dis._inline_cache_entries.
 */
#include "sym.h"
#include "train.h"

#include <string.h>

/* opcode names we interpret (X-macro): one enum, looked up by name at init */
#define DH_OPCODES(X)                                                                     \
    X(NOP) X(RESUME) X(CACHE) X(PRECALL) X(PUSH_NULL) X(POP_TOP) X(COPY) X(SWAP)          \
    X(LOAD_CONST) X(RETURN_CONST) X(LOAD_FAST) X(LOAD_FAST_CHECK) X(LOAD_FAST_AND_CLEAR)  \
    X(STORE_FAST) X(DELETE_FAST) X(LOAD_GLOBAL) X(LOAD_ATTR) X(LOAD_METHOD) X(KW_NAMES)   \
    X(CALL) X(BINARY_OP) X(COMPARE_OP) X(IS_OP) X(CONTAINS_OP) X(UNARY_NEGATIVE)          \
    X(UNARY_NOT) X(BUILD_TUPLE) X(BUILD_LIST) X(LIST_EXTEND) X(LIST_TO_TUPLE)             \
    X(BINARY_SUBSCR) X(UNPACK_SEQUENCE) X(RETURN_VALUE) X(POP_JUMP_IF_FALSE)              \
    X(POP_JUMP_IF_TRUE) X(POP_JUMP_IF_NONE) X(POP_JUMP_IF_NOT_NONE)                       \
    X(POP_JUMP_FORWARD_IF_FALSE) X(POP_JUMP_FORWARD_IF_TRUE) X(POP_JUMP_FORWARD_IF_NONE)  \
    X(POP_JUMP_FORWARD_IF_NOT_NONE) X(POP_JUMP_BACKWARD_IF_FALSE)                         \
    X(POP_JUMP_BACKWARD_IF_TRUE) X(POP_JUMP_BACKWARD_IF_NONE)                             \
    X(POP_JUMP_BACKWARD_IF_NOT_NONE) X(JUMP_FORWARD) X(JUMP_BACKWARD)                     \
    X(JUMP_BACKWARD_NO_INTERRUPT) X(JUMP_IF_FALSE_OR_POP) X(JUMP_IF_TRUE_OR_POP)          \
    X(GET_ITER) X(FOR_ITER) X(END_FOR) X(EXTENDED_ARG) X(MAKE_CELL) X(COPY_FREE_VARS)     \
    X(LOAD_DEREF) X(STORE_DEREF) X(LOAD_CLOSURE) X(BUILD_MAP) X(BUILD_CONST_KEY_MAP)         \
    X(CALL_FUNCTION_EX) X(DICT_MERGE) X(DICT_UPDATE) X(FORMAT_VALUE) X(BUILD_STRING)      \
    X(STORE_ATTR) X(BUILD_SLICE) X(LIST_APPEND) X(MAP_ADD) X(UNPACK_EX) X(MAKE_FUNCTION) X(BINARY_SLICE) X(UNARY_INVERT) X(LOAD_SUPER_ATTR) X(IMPORT_NAME) X(IMPORT_FROM) X(BUILD_SET) X(BEFORE_WITH) \
    X(STORE_SUBSCR) X(STORE_SLICE) X(RETURN_GENERATOR) X(YIELD_VALUE)                     \
    X(PUSH_EXC_INFO) X(CHECK_EXC_MATCH) X(POP_EXCEPT) X(RERAISE) X(CALL_INTRINSIC_1)     \
    X(DELETE_SUBSCR) X(SET_ADD) X(SET_UPDATE)

enum {
    OP_UNKNOWN = 0,
#define X(n) OP_##n,
    DH_OPCODES(X)
#undef X
    OP_COUNT_
};

static unsigned char optab[256];   /* CPython opcode → OP_* */
static unsigned char ncaches[256]; /* inline cache entries after each opcode */
static const char *opnames[256];   /* for reasons */

int dh_symbolic_init(void) {
    PyObject *dis = NULL, *opmap = NULL, *caches = NULL;
    int rc = -1;
    static const char *names[] = {
        "",
#define X(n) #n,
        DH_OPCODES(X)
#undef X
    };
    if (sym_variables_init() < 0 || sym_ops_init() < 0)
        return -1;
    dis = PyImport_ImportModule("dis");
    if (dis == NULL)
        goto error;
    opmap = PyObject_GetAttrString(dis, "opmap");
    caches = PyObject_GetAttrString(dis, "_inline_cache_entries");
    if (opmap == NULL || caches == NULL)
        goto error;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(opmap, &pos, &k, &v)) {
        long code = PyLong_AsLong(v);
        if (code < 0 || code > 255)
            continue;
        const char *s = PyUnicode_AsUTF8(k);
        opnames[code] = s; /* opmap keys are interned and live as long as dis */
        for (int i = 1; i < OP_COUNT_; i++)
            if (strcmp(names[i], s) == 0)
                optab[code] = (unsigned char)i;
    }
    Py_ssize_t n = PySequence_Size(caches);
    for (Py_ssize_t i = 0; i < n && i < 256; i++) {
        PyObject *c = PySequence_GetItem(caches, i);
        if (c == NULL)
            goto error;
        ncaches[i] = (unsigned char)PyLong_AsLong(c);
        Py_DECREF(c);
    }
    Py_INCREF(opmap); /* keep the names alive for opnames[] */
    rc = 0;
error:
    Py_XDECREF(dis);
    Py_XDECREF(opmap);
    Py_XDECREF(caches);
    return rc;
}

/* ---- frames of the symbolic interpreter ------------------------------------------ */

#define STACK_MAX 256

typedef struct sframe {
    PyCodeObject *code;
    var *locals;
    int nlocals;
    var stack[STACK_MAX];
    int sp;
    PyObject *kwnames; /* pending KW_NAMES (borrowed from co_consts) */
    int top;           /* the frame being compiled (locals come from the real frame) */
    PyObject *globals; /* this frame's globals */
    PyObject *func;    /* this frame's function (closure cells) */
    int func_src;      /* source of func for inlined frames; -1 for the top frame */
    var *closure;      /* a MAKE_FUNCTION closure: free variable values */
    int nclosure;
    int made_closure;  /* a closure was created: cell variables must not change */
    int gen;           /* a generator run to completion: what it yields is collected */
    var *yielded;      /* gen: the values yielded so far (the result, as an iterator) */
    int nyielded, capyielded;
    int pc;            /* instruction being interpreted (sym_where) */
} sframe;

#define PUSH(v)                                            \
    do {                                                   \
        if (f->sp >= STACK_MAX)                            \
            return sym_fail(t, "symbolic stack overflow"); \
        f->stack[f->sp++] = (v);                           \
    } while (0)
#define POP() (f->stack[--f->sp])
#define PEEK(n) (f->stack[f->sp - (n)])
#define NEED(n)                                                \
    do {                                                       \
        if (f->sp < (n))                                       \
            return sym_fail(t, "symbolic stack underflow");   \
    } while (0)

static var null_var(void) {
    var v;
    memset(&v, 0, sizeof v);
    v.kind = V_NULL;
    v.src = -1;
    return v;
}

/* Reads local i: the real frame's value wrapped on first use. */
static int load_local(trace *t, sframe *f, int i, var *out) {
    if (i < 0 || i >= f->nlocals)
        return sym_fail(t, "bad local index");
    var *l = &f->locals[i];
    if (l->kind == V_UNSET && f->top) {
        PyObject *o = t->localsplus[i];
        if (o == NULL)
            return sym_fail(t, "local read before assignment");
        int s = sym_source(t, DH_S_LOCAL, -1, i, NULL);
        if (s < 0 || sym_wrap(t, o, s, l) < 0)
            return -1;
    } else if (l->kind == V_UNSET || l->kind == V_NULL) {
        return sym_fail(t, "local read before assignment (eager will raise)");
    }
    *out = *l;
    return 0;
}

/* v stands for the Python object v->obj itself (identity comparisons are exact) */
static int is_real_object(const var *v) {
    return v->obj != NULL && (v->kind == V_CONST || v->kind == V_OBJ ||
                              (v->kind == V_FUNC && v->op != SYM_MADE_FUNCTION &&
                               v->op != SYM_CTX_EXIT));
}

static int truthy(trace *t, const var *v, int *out) {
    if (v->kind == V_CONST) {
        int r = PyObject_IsTrue(v->obj);
        if (r < 0) {
            PyErr_Clear();
            return sym_fail(t, "truth value of a constant raised");
        }
        *out = r;
        return 0;
    }
    if (v->kind == V_SEQ || v->kind == V_DICT) {
        *out = v->n != 0;
        return 0;
    }
    if (v->kind == V_REC) { /* an OrderedDict: non-empty when a field is not None */
        var *items;
        int n;
        if (sym_record_items(t, v, &items, &n) < 0)
            return -1;
        *out = n != 0;
        return 0;
    }
    if (v->kind == V_OBJ && !PyModule_Check(v->obj)) {
        /* objects are true unless their class has __bool__/__len__ */
        PyTypeObject *tp = Py_TYPE(v->obj);
        int has = (tp->tp_as_number && tp->tp_as_number->nb_bool) ||
                  (tp->tp_as_mapping && tp->tp_as_mapping->mp_length) ||
                  (tp->tp_as_sequence && tp->tp_as_sequence->sq_length);
        if (has && sym_is_module_container(v->obj, "__len__")) {
            var *items;
            int n;
            if (sym_iter_items(t, v, &items, &n) < 0)
                return -1;
            *out = n != 0;
            return 0;
        }
        if (has)
            return sym_fail(t, "truth value of a %s not supported", tp->tp_name);
        *out = 1;
        return 0;
    }
    if (v->kind == V_OBJ || v->kind == V_FUNC) {
        *out = 1;
        return 0;
    }
    if (v->kind == V_TENSOR)
        return sym_fail(t, "data-dependent branch on a tensor (graph break not supported yet)");
    return sym_fail(t, "branch on an unsupported value");
}

static int to_items(trace *t, const var *v, var **items, int *n);
static int load_attr(trace *t, const var *o, PyObject *name, var *out);

static int fn_const_attr(const char *n) {
    return !strcmp(n, "__name__") || !strcmp(n, "__qualname__") || !strcmp(n, "__module__");
}

int sym_load_attr(trace *t, const var *o, PyObject *name, var *out) { return load_attr(t, o, name, out); }
int sym_iter_items(trace *t, const var *v, var **items, int *n) { return to_items(t, v, items, n); }

/* cls.name for a class reached as a guarded global or as type(guarded object): a function
 * on the class (taken as it is now: reassigning a method after compiling is not seen), an
 * enum member, a plain constant, or the class's name. 0 done, -1 failed, 1 not handled. */
static int type_attr(trace *t, PyObject *cls, PyObject *name, var *out) {
    const char *n = PyUnicode_AsUTF8(name);
    if (n == NULL) {
        PyErr_Clear();
        return 1;
    }
    if (!strcmp(n, "__name__") || !strcmp(n, "__qualname__") || !strcmp(n, "__module__"))
        return sym_const(t, PyObject_GetAttr(cls, name), out) < 0
                   ? (PyErr_Clear(), sym_fail(t, "attribute %U of a class", name)) : 0;
    if (n[0] == '_')
        return 1;
    PyObject *a = _PyType_Lookup((PyTypeObject *)cls, name);
    if (a == NULL)
        return 1;
    if (PyFunction_Check(a)) {
        int s = sym_source(t, DH_S_CONST, -1, 0, a); /* its globals/closure are read through it */
        if (s < 0)
            return -1;
        memset(out, 0, sizeof *out);
        out->kind = V_FUNC;
        out->src = s;
        out->op = SYM_USER_FUNCTION;
        out->obj = sym_keep(t, Py_NewRef(a));
        return out->obj ? 0 : -1;
    }
    if (a == Py_None || PyBool_Check(a) || PyLong_CheckExact(a) || PyFloat_CheckExact(a) ||
        PyUnicode_CheckExact(a) || PyObject_TypeCheck(a, (PyTypeObject *)cls) /* an enum member */)
        return sym_const(t, Py_NewRef(a), out);
    return 1;
}

/* o.name on an object whose class defines __getattr__ in Python (and no __getattribute__
 * of its own): found in the instance dict or on the class, the generic path below reads it;
 * else __getattr__(o, name) is inlined (eager calls it once per read: so does the graph,
 * where the real getattr at trace and guard time would call it more often). The name's
 * absence from the instance dict is guarded. 1: not this case. */
static int getattr_hook(trace *t, const var *o, PyObject *name, var *out) {
    static PyObject *s_getattr, *s_getattribute, *obj_getattribute;
    PyTypeObject *tp = Py_TYPE(o->obj);
    if (tp->tp_getattro == PyObject_GenericGetAttr || sym_is_nn_module(o->obj) || o->src < 0)
        return 1;
    if (s_getattr == NULL) {
        s_getattr = PyUnicode_InternFromString("__getattr__");
        s_getattribute = PyUnicode_InternFromString("__getattribute__");
        obj_getattribute = s_getattribute ? _PyType_Lookup(&PyBaseObject_Type, s_getattribute) : NULL;
        if (s_getattr == NULL || obj_getattribute == NULL) {
            PyErr_Clear();
            return 1;
        }
    }
    PyObject *ga = _PyType_Lookup(tp, s_getattr);
    if (ga == NULL || !PyFunction_Check(ga) || _PyType_Lookup(tp, s_getattribute) != obj_getattribute)
        return 1;
    if (_PyType_Lookup(tp, name) != NULL)
        return 1; /* a class attribute, method or descriptor: the generic path */
    PyObject **dp = _PyObject_GetDictPtr(o->obj);
    PyObject *dict = dp ? *dp : NULL;
    int has = sym_guard_key(t, o->src, dict, name);
    if (has < 0)
        return -1;
    if (has)
        return 1;
    if (sym_guard_type(t, o->src, o->obj) < 0)
        return -1;
    PyObject *fn = sym_keep(t, Py_NewRef(ga));
    int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
    var *arg = sym_alloc(t, 1);
    if (s < 0 || arg == NULL || sym_const(t, Py_NewRef(name), arg) < 0)
        return -1;
    return sym_inline(t, fn, s, o, arg, 1, NULL, out);
}

static int load_attr(trace *t, const var *o, PyObject *name, var *out) {
    if (o->kind == V_SEQ && o->obj != NULL && PyType_Check(o->obj) && o->n == 2 &&
        PyType_IsSubtype((PyTypeObject *)o->obj, &PyTuple_Type)) {
        const char *n = PyUnicode_AsUTF8(name);
        if (n && (!strcmp(n, "values") || !strcmp(n, "indices"))) {
            *out = o->items[n[0] == 'v' ? 0 : 1];
            return 0;
        }
        return sym_fail(t, "attribute %U of a %s", name, ((PyTypeObject *)o->obj)->tp_name);
    }
    if (o->kind == V_SEQ && o->obj == NULL) {
        const char *n = PyUnicode_AsUTF8(name);
        static const char *const list_methods[] = {"append", "extend", "insert", "pop", "remove",
                                                   "clear", "reverse", "sort", "copy", NULL};
        int ok = n != NULL && (!strcmp(n, "index") || !strcmp(n, "count"));
        for (int i = 0; !ok && o->is_list && n != NULL && list_methods[i]; i++)
            ok = !strcmp(n, list_methods[i]);
        if (!ok)
            return sym_fail(t, "%s.%U not supported", o->is_list ? "list" : "tuple", name);
        var *self = sym_alloc(t, 1);
        if (self == NULL)
            return -1;
        self[0] = *o;
        memset(out, 0, sizeof *out);
        out->kind = V_METHOD;
        out->src = -1;
        out->obj = name;
        out->items = self;
        return 0;
    }
    switch (o->kind) {
    case V_TENSOR:
        return sym_tensor_attr(t, o, name, out);
    case V_OBJ: {
        if (o->obj == sym_os_environ()) {
            if (PyUnicode_CompareWithASCIIString(name, "get") != 0)
                return sym_fail(t, "os.environ.%U not supported", name);
            var *self = sym_alloc(t, 1);
            if (self == NULL)
                return -1;
            self[0] = *o;
            memset(out, 0, sizeof *out);
            out->kind = V_METHOD;
            out->src = -1;
            out->obj = name;
            out->items = self;
            return 0;
        }
        if (PyContextVar_CheckExact(o->obj)) {
            const char *n = PyUnicode_AsUTF8(name);
            if (strcmp(n, "set") && strcmp(n, "get") && strcmp(n, "reset"))
                return sym_fail(t, "ContextVar.%U not supported", name);
            var *self = sym_alloc(t, 1);
            if (self == NULL)
                return -1;
            self[0] = *o;
            memset(out, 0, sizeof *out);
            out->kind = V_METHOD;
            out->src = -1;
            out->obj = name;
            out->items = self;
            return 0;
        }
        if (PyModule_Check(o->obj)) {
            PyObject *a = PyObject_GetAttr(o->obj, name);
            if (a == NULL) {
                PyErr_Clear();
                return sym_fail(t, "module has no attribute %U", name);
            }
            if (a == sym_os_environ()) { /* os.environ: .get(k, d) asked and guarded */
                memset(out, 0, sizeof *out);
                out->kind = V_OBJ;
                out->src = -1;
                out->obj = sym_keep(t, a);
                return out->obj ? 0 : -1;
            }
            /* user functions and modules reached through a module are guarded; torch's
             * own callables are taken as constants */
            int s = -1;
            if (o->src >= 0 && (PyFunction_Check(a) || PyModule_Check(a)))
                s = sym_source(t, DH_S_ATTR, o->src, 0, name);
            int rc = sym_wrap(t, a, s, out);
            Py_DECREF(a);
            return rc;
        }
        int rc_ga = getattr_hook(t, o, name, out);
        if (rc_ga <= 0)
            return rc_ga;
        if (!sym_is_nn_module(o->obj) && Py_TYPE(o->obj)->tp_getattro != PyObject_GenericGetAttr) {
            /* a custom __getattribute__/__getattr__: the real getattr, re-run by the guard */
            if (o->src < 0)
                return sym_fail(t, "attribute of an object without a source");
            PyObject *a = PyObject_GetAttr(o->obj, name);
            if (a == NULL) {
                PyErr_Clear();
                return sym_fail(t, "attribute %U not found", name);
            }
            if (PyMethod_Check(a) && PyFunction_Check(PyMethod_GET_FUNCTION(a)) &&
                PyMethod_GET_SELF(a) == o->obj) {
                PyObject *fn = sym_keep(t, Py_NewRef(PyMethod_GET_FUNCTION(a)));
                Py_DECREF(a);
                var *self = sym_alloc(t, 1);
                int s = sym_source(t, DH_S_ATTR, o->src, 1, name);
                if (fn == NULL || self == NULL || s < 0)
                    return -1;
                self[0] = *o;
                memset(out, 0, sizeof *out);
                out->kind = V_METHOD;
                out->src = s;
                out->obj = fn;
                out->items = self;
                return 0;
            }
            int s = sym_source(t, DH_S_ATTR, o->src, 2, name);
            int rc = s < 0 ? -1 : sym_wrap(t, a, s, out);
            Py_DECREF(a);
            return rc;
        }
        if (PyUnicode_CompareWithASCIIString(name, "__class__") == 0 && o->src >= 0)
            /* the object is identity-guarded: its class is fixed */
            return sym_const(t, Py_NewRef((PyObject *)Py_TYPE(o->obj)), out);
        for (int i = t->nattrw - 1; i >= 0; i--) /* written earlier in this trace */
            if (t->attrw[i].obj == o->obj && o->src >= 0 &&
                PyUnicode_Compare(t->attrw[i].name, name) == 0) {
                *out = *t->attrw[i].val;
                return 0;
            }
        if (PyUnicode_CompareWithASCIIString(name, "_modules") == 0 && o->src >= 0) {
            /* the submodule dict: values reached as attributes of the module */
            PyObject *mods = dh_module_getattr(o->obj, name);
            if (mods == NULL || !PyDict_Check(mods)) {
                Py_XDECREF(mods);
                return sym_fail(t, "_modules is not a dict");
            }
            Py_ssize_t n = PyDict_GET_SIZE(mods), pos = 0;
            PyObject *keys = PyTuple_New(n), *k, *v;
            var *vals = sym_alloc(t, (int)n);
            if (keys == NULL || vals == NULL || sym_keep(t, keys) == NULL) {
                Py_DECREF(mods);
                return -1;
            }
            int i = 0;
            while (PyDict_Next(mods, &pos, &k, &v)) {
                PyTuple_SET_ITEM(keys, i, Py_NewRef(k));
                int s = sym_source(t, DH_S_ATTR, o->src, 0, k);
                if (s < 0 || sym_wrap(t, v, s, &vals[i++]) < 0) {
                    Py_DECREF(mods);
                    return -1;
                }
            }
            Py_DECREF(mods);
            memset(out, 0, sizeof *out);
            out->kind = V_DICT;
            out->src = -1;
            out->obj = keys;
            out->items = vals;
            out->n = i;
            return 0;
        }
        /* nn.Module: no data descriptor may shadow the instance attribute */
        PyObject *descr = _PyType_Lookup(Py_TYPE(o->obj), name);
        if (descr != NULL) {
            if (Py_TYPE(descr) == &PyProperty_Type && o->src >= 0) {
                /* a property: its getter inlined (the class is guarded with the object) */
                PyObject *fget = PyObject_GetAttrString(descr, "fget");
                if (fget == NULL)
                    PyErr_Clear();
                if (fget == NULL || !PyFunction_Check(fget)) {
                    Py_XDECREF(fget);
                    return sym_fail(t, "property %U on %s without a Python getter", name,
                                    Py_TYPE(o->obj)->tp_name);
                }
                PyObject *fn = sym_keep(t, fget);
                int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
                return s < 0 ? -1 : sym_inline(t, fn, s, o, NULL, 0, NULL, out);
            }
            if (Py_TYPE(descr)->tp_descr_set != NULL)
                return sym_fail(t, "property/descriptor %U on %s not supported", name,
                                Py_TYPE(o->obj)->tp_name);
            if (PyFunction_Check(descr) && !dh_module_has_attr(o->obj, name)) {
                /* a method: inlined when called, its function reached through the class */
                int s = sym_source(t, DH_S_ATTR, o->src, 1, name);
                var *self = sym_alloc(t, 1);
                if (s < 0 || self == NULL)
                    return -1;
                self[0] = *o;
                memset(out, 0, sizeof *out);
                out->kind = V_METHOD;
                out->src = s;
                out->obj = descr;
                out->items = self;
                return 0;
            }
        }
        PyObject *a = dh_module_getattr(o->obj, name);
        if (a == NULL && descr != NULL && o->src >= 0 && Py_IS_TYPE(descr, &PyStaticMethod_Type)) {
            /* self.f of a staticmethod: the plain function, reached through the class */
            PyObject *fn = PyObject_GetAttrString(descr, "__func__");
            if (fn == NULL || !PyFunction_Check(fn)) {
                Py_XDECREF(fn);
                PyErr_Clear();
                return sym_fail(t, "staticmethod %U without a Python function", name);
            }
            fn = sym_keep(t, fn);
            int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
            if (s < 0)
                return -1;
            memset(out, 0, sizeof *out);
            out->kind = V_FUNC;
            out->src = s;
            out->op = SYM_USER_FUNCTION;
            out->obj = fn;
            return 0;
        }
        if (a == NULL && descr != NULL && o->src >= 0 && Py_TYPE(descr)->tp_descr_get == NULL) {
            /* a plain class attribute (a constant on the class) */
            int s = sym_source(t, DH_S_ATTR, o->src, 1, name);
            return s < 0 ? -1 : sym_wrap(t, descr, s, out);
        }
        if (a == NULL) {
            if (descr != NULL)
                return sym_fail(t, "class attribute %U not supported", name);
            return sym_fail(t, "attribute %U not found", name);
        }
        int s = sym_source(t, DH_S_ATTR, o->src, 0, name);
        int rc = s < 0 ? -1 : sym_wrap(t, a, s, out);
        Py_DECREF(a);
        return rc;
    }
    case V_CONST: {
        /* attributes of constants: only plain data of immutable builtins */
        if (PyFloat_CheckExact(o->obj) || PyLong_CheckExact(o->obj)) {
            const char *n = PyUnicode_AsUTF8(name);
            if (!strcmp(n, "real") || !strcmp(n, "imag"))
                return sym_const(t, PyObject_GetAttr(o->obj, name), out);
        }
        const char *n = PyUnicode_AsUTF8(name);
        if ((PyUnicode_CheckExact(o->obj) || PyTuple_CheckExact(o->obj) || PyAnySet_CheckExact(o->obj)) &&
            n[0] != '_') {
            /* methods of immutable builtins are pure: called on constants */
            return sym_const(t, PyObject_GetAttr(o->obj, name), out) < 0
                       ? (PyErr_Clear(), sym_fail(t, "attribute %U of a constant", name)) : 0;
        }
        if (strcmp(Py_TYPE(o->obj)->tp_name, "torch.device") == 0 &&
            (!strcmp(n, "type") || !strcmp(n, "index")))
            return sym_const(t, PyObject_GetAttr(o->obj, name), out);
        if (PyType_Check(o->obj) && fn_const_attr(n)) /* a class's names */
            return sym_const(t, PyObject_GetAttr(o->obj, name), out);
        if ((!strcmp(Py_TYPE(o->obj)->tp_name, "torch.finfo") || !strcmp(Py_TYPE(o->obj)->tp_name, "torch.iinfo")) &&
            n[0] != '_') /* immutable facts of a dtype */
            return sym_const(t, PyObject_GetAttr(o->obj, name), out) < 0
                       ? (PyErr_Clear(), sym_fail(t, "attribute %U of %s", name, Py_TYPE(o->obj)->tp_name)) : 0;
        if (strcmp(Py_TYPE(o->obj)->tp_name, "torch.dtype") == 0 &&
            (!strcmp(n, "is_floating_point") || !strcmp(n, "itemsize") || !strcmp(n, "is_complex")))
            return sym_const(t, PyObject_GetAttr(o->obj, name), out);
        if (PyType_Check(o->obj)) {
            int rc = type_attr(t, o->obj, name, out);
            if (rc <= 0)
                return rc;
        }
        if (PyCode_Check(o->obj) && (!strcmp(n, "co_varnames") || !strcmp(n, "co_argcount") ||
                                     !strcmp(n, "co_name") || !strcmp(n, "co_kwonlyargcount") ||
                                     !strcmp(n, "co_posonlyargcount") || !strcmp(n, "co_flags") ||
                                     !strcmp(n, "co_qualname") || !strcmp(n, "co_filename")))
            return sym_const(t, PyObject_GetAttr(o->obj, name), out); /* code is immutable */
        if (!strcmp(Py_TYPE(o->obj)->tp_name, "Signature") && !strcmp(n, "parameters"))
            return sym_const(t, PyObject_GetAttr(o->obj, name), out) < 0
                       ? (PyErr_Clear(), sym_fail(t, "attribute %U of a constant", name)) : 0;
        return sym_fail(t, "attribute %U of %s constant not supported", name, Py_TYPE(o->obj)->tp_name);
    }
    case V_SUPER: {
        /* super().name: look past the class in self's MRO; methods are inlined */
        PyObject *sup = PyObject_CallFunctionObjArgs((PyObject *)&PySuper_Type, o->obj,
                                                     o->items[0].obj, NULL);
        if (sup == NULL) {
            PyErr_Clear();
            return sym_fail(t, "super() failed");
        }
        PyObject *a = PyObject_GetAttr(sup, name);
        Py_DECREF(sup);
        if (a == NULL) {
            PyErr_Clear();
            return sym_fail(t, "super().%U not found", name);
        }
        if (PyCFunction_Check(a) && PyCFunction_GET_SELF(a) == o->items[0].obj &&
            o->items[0].kind == V_OBJ && o->items[0].src >= 0 && PyDict_Check(o->items[0].obj)) {
            /* dict.get / __getitem__ / __contains__ of a dict subclass (a registry) */
            PyObject *d = _PyType_Lookup(&PyDict_Type, name);
            const char *n = PyUnicode_AsUTF8(name);
            int ok = d != NULL && Py_IS_TYPE(d, &PyMethodDescr_Type) &&
                     ((PyCFunctionObject *)a)->m_ml == ((PyMethodDescrObject *)d)->d_method &&
                     (!strcmp(n, "get") || !strcmp(n, "__getitem__") || !strcmp(n, "__contains__"));
            Py_DECREF(a);
            if (!ok)
                return sym_fail(t, "super().%U is not a Python method", name);
            var *self = sym_alloc(t, 1);
            if (self == NULL)
                return -1;
            self[0] = o->items[0];
            memset(out, 0, sizeof *out);
            out->kind = V_METHOD;
            out->src = -1;
            out->obj = name;
            out->items = self;
            return 0;
        }
        if (PyMethod_Check(a) && PyFunction_Check(PyMethod_GET_FUNCTION(a))) {
            PyObject *fn = sym_keep(t, Py_NewRef(PyMethod_GET_FUNCTION(a)));
            Py_DECREF(a);
            var *self = sym_alloc(t, 1);
            if (fn == NULL || self == NULL)
                return -1;
            self[0] = o->items[0];
            memset(out, 0, sizeof *out);
            out->kind = V_METHOD;
            out->src = -1;
            out->obj = fn;
            out->items = self;
            return 0;
        }
        Py_DECREF(a);
        return sym_fail(t, "super().%U is not a Python method", name);
    }
    case V_DICT: {
        const char *n = PyUnicode_AsUTF8(name);
        if (strcmp(n, "items") && strcmp(n, "keys") && strcmp(n, "values") && strcmp(n, "get") &&
            strcmp(n, "pop") && strcmp(n, "setdefault") && strcmp(n, "copy") && strcmp(n, "update") &&
            strcmp(n, "__contains__"))
            return sym_fail(t, "dict.%U not supported", name);
        var *self = sym_alloc(t, 1);
        if (self == NULL)
            return -1;
        self[0] = *o;
        memset(out, 0, sizeof *out);
        out->kind = V_METHOD;
        out->src = -1;
        out->obj = name;
        out->items = self;
        return 0;
    }
    case V_REC:
        return sym_record_attr(t, o, name, out);
    case V_FUNC: {
        const char *n = PyUnicode_AsUTF8(name);
        if (o->obj && PyType_Check(o->obj) && o->op < 0) {
            int rc = type_attr(t, o->obj, name, out);
            if (rc <= 0)
                return rc;
        }
        if (fn_const_attr(n) && o->obj && o->op != SYM_MADE_FUNCTION) {
            PyObject *a = PyObject_GetAttr(o->obj, name);
            if (a == NULL) {
                PyErr_Clear();
                return sym_fail(t, "attribute %U not found", name);
            }
            return sym_const(t, a, out);
        }
        if (!strcmp(n, "__class__") && o->obj) /* type(f): a constant */
            return sym_const(t, Py_NewRef((PyObject *)Py_TYPE(o->obj)), out);
        if (!strcmp(n, "__code__") && o->obj && o->op == SYM_USER_FUNCTION && o->src >= 0 &&
            PyFunction_Check(o->obj)) /* the function is identity-guarded: its code, as it is now */
            return sym_const(t, Py_NewRef(PyFunction_GET_CODE(o->obj)), out);
        return sym_fail(t, "attribute %U of a function", name);
    }
    case V_METHOD: {
        /* m.__func__ / m.__self__ of a bound Python method */
        const char *n = PyUnicode_AsUTF8(name);
        if (n && !strcmp(n, "__self__") && o->items) {
            *out = o->items[0];
            return 0;
        }
        if (n && !strcmp(n, "__func__") && o->obj && PyFunction_Check(o->obj)) {
            memset(out, 0, sizeof *out);
            out->kind = V_FUNC;
            out->src = o->src; /* the function reached through the class (when known) */
            out->op = SYM_USER_FUNCTION;
            out->obj = o->obj;
            return 0;
        }
        return sym_fail(t, "attribute %U of a bound method", name);
    }
    default:
        return sym_fail(t, "attribute %U of an unsupported value", name);
    }
}

static int subscr(trace *t, const var *c, const var *k, var *out) {
    if (c->kind == V_CONST && k->kind == V_CONST &&
        (PyTuple_Check(c->obj) || PyList_CheckExact(c->obj) || PyUnicode_CheckExact(c->obj)) &&
        (PyLong_Check(k->obj) || PySlice_Check(k->obj))) {
        PyObject *r = PyObject_GetItem(c->obj, k->obj);
        if (r == NULL) {
            PyErr_Clear();
            return sym_fail(t, "constant subscript raised");
        }
        return sym_const(t, r, out);
    }
    if (c->kind == V_DICT && k->kind == V_CONST) {
        for (int i = 0; i < c->n; i++) {
            int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(c->obj, i), k->obj, Py_EQ);
            if (eq < 0) {
                PyErr_Clear();
                return sym_fail(t, "dict key comparison raised");
            }
            if (eq) {
                *out = c->items[i];
                return 0;
            }
        }
        return sym_fail(t, "KeyError %R (eager will raise)", k->obj);
    }
    if (c->kind == V_SEQ && c->obj == NULL && k->kind == V_CONST && PySlice_Check(k->obj)) {
        /* seq[a:b:c]: a new list/tuple of the same items */
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(k->obj, &start, &stop, &step) < 0) {
            PyErr_Clear();
            return sym_fail(t, "bad slice (eager will raise)");
        }
        Py_ssize_t len = PySlice_AdjustIndices(c->n, &start, &stop, step);
        var *m = sym_alloc(t, (int)len);
        if (m == NULL)
            return -1;
        for (Py_ssize_t i = 0; i < len; i++)
            m[i] = c->items[start + i * step];
        *out = *c;
        out->src = -1;
        out->n = (int)len;
        out->items = m;
        return 0;
    }
    if (c->kind == V_SEQ && k->kind == V_CONST && PyLong_CheckExact(k->obj)) {
        long i = PyLong_AsLong(k->obj);
        if (i < 0)
            i += c->n;
        if (i < 0 || i >= c->n)
            return sym_fail(t, "index out of range");
        *out = c->items[i];
        return 0;
    }
    if (c->kind == V_OBJ && !PyModule_Check(c->obj) && !sym_is_nn_module(c->obj) && c->src >= 0) {
        /* a user container: type(c).__getitem__(c, k) inlined */
        PyObject *gn = PyUnicode_InternFromString("__getitem__");
        PyObject *fn = gn ? _PyType_Lookup(Py_TYPE(c->obj), gn) : NULL;
        if (fn == NULL || !PyFunction_Check(fn)) {
            Py_XDECREF(gn);
            return sym_fail(t, "subscript of a %s", Py_TYPE(c->obj)->tp_name);
        }
        var kk = *k;
        int fs = sym_source(t, DH_S_ATTR, c->src, 1, gn);
        Py_DECREF(gn);
        return fs < 0 ? -1 : sym_inline(t, fn, fs, c, &kk, 1, NULL, out);
    }
    if (c->kind == V_OBJ && !PyModule_Check(c->obj) && k->kind == V_CONST && PyUnicode_Check(k->obj) &&
        c->src >= 0) {
        /* ModuleDict["name"] */
        PyObject *m = dh_module_getattr(c->obj, k->obj);
        if (m == NULL)
            return sym_fail(t, "KeyError %R (eager will raise)", k->obj);
        int s = sym_source(t, DH_S_ATTR, c->src, 0, k->obj);
        int rc = s < 0 ? -1 : sym_wrap(t, m, s, out);
        Py_DECREF(m);
        return rc;
    }
    if (c->kind == V_OBJ && k->kind == V_CONST && PySlice_Check(k->obj) &&
        Py_TYPE(c->obj) == (PyTypeObject *)sym_module_list_type()) {
        /* ModuleList[a:b]: a new ModuleList of the same submodules (made for real where
         * it leaves the trace: DH_O_WRAP calls ModuleList(tuple)) */
        var *items;
        int n;
        Py_ssize_t start, stop, step;
        if (to_items(t, c, &items, &n) < 0)
            return -1;
        if (PySlice_Unpack(k->obj, &start, &stop, &step) < 0) {
            PyErr_Clear();
            return sym_fail(t, "bad slice");
        }
        Py_ssize_t m = PySlice_AdjustIndices(n, &start, &stop, step);
        var *sl = sym_alloc(t, (int)m);
        if (sl == NULL)
            return -1;
        for (Py_ssize_t j = 0; j < m; j++)
            sl[j] = items[start + j * step];
        memset(out, 0, sizeof *out);
        out->kind = V_SEQ;
        out->src = -1;
        out->n = (int)m;
        out->items = sl;
        out->obj = sym_module_list_type();
        return 0;
    }
    if (c->kind == V_OBJ && !PyModule_Check(c->obj) && k->kind == V_CONST && PyLong_CheckExact(k->obj)) {
        /* ModuleList / Sequential indexing by a constant */
        var *items;
        int n;
        if (!sym_is_module_container(c->obj, "__getitem__"))
            return sym_fail(t, "indexing a %s not supported", Py_TYPE(c->obj)->tp_name);
        if (to_items(t, c, &items, &n) < 0)
            return -1;
        long i = PyLong_AsLong(k->obj);
        if (i < 0)
            i += n;
        if (i < 0 || i >= n)
            return sym_fail(t, "module index out of range");
        *out = items[i];
        return 0;
    }
    if (c->kind == V_TENSOR)
        return sym_tensor_index(t, c, k, out);
    if (c->kind == V_REC)
        return sym_record_subscr(t, c, k, out);
    return sym_fail(t, "subscript of an unsupported value");
}

static int build_seq(trace *t, sframe *f, int n, int is_list, var *out) {
    int allconst = 1;
    for (int i = 0; i < n; i++)
        if (PEEK(n - i).kind != V_CONST)
            allconst = 0;
    if (allconst && !is_list) {
        PyObject *tup = PyTuple_New(n);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < n; i++)
            PyTuple_SET_ITEM(tup, i, Py_NewRef(PEEK(n - i).obj));
        f->sp -= n;
        return sym_const(t, tup, out);
    }
    var *items = sym_alloc(t, n);
    if (items == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        items[i] = PEEK(n - i);
    f->sp -= n;
    memset(out, 0, sizeof *out);
    out->kind = V_SEQ;
    out->src = -1;
    out->is_list = is_list;
    out->n = n;
    out->items = items;
    return 0;
}

static int to_items(trace *t, const var *v, var **items, int *n) {
    if (v->kind == V_DICT) { /* iterating a dict: its keys */
        var *it = sym_alloc(t, v->n);
        if (it == NULL)
            return -1;
        for (int i = 0; i < v->n; i++)
            if (sym_const(t, Py_NewRef(PyTuple_GET_ITEM(v->obj, i)), &it[i]) < 0)
                return -1;
        *items = it;
        *n = v->n;
        return 0;
    }
    if (v->kind == V_SEQ || v->kind == V_ITER) {
        *items = v->items + (v->kind == V_ITER ? v->pos : 0);
        *n = v->n - (v->kind == V_ITER ? v->pos : 0);
        return 0;
    }
    if (v->kind == V_CONST && (PyTuple_Check(v->obj) || PyList_CheckExact(v->obj) ||
                               PyRange_Check(v->obj))) {
        PyObject *seq = PySequence_Fast(v->obj, "");
        if (seq == NULL)
            return -1;
        Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
        if (k > 4096) {
            Py_DECREF(seq);
            return sym_fail(t, "constant sequence too long to unroll");
        }
        var *it = sym_alloc(t, (int)k);
        if (it == NULL) {
            Py_DECREF(seq);
            return -1;
        }
        for (Py_ssize_t i = 0; i < k; i++)
            if (sym_const(t, Py_NewRef(PySequence_Fast_GET_ITEM(seq, i)), &it[i]) < 0) {
                Py_DECREF(seq);
                return -1;
            }
        Py_DECREF(seq);
        *items = it;
        *n = (int)k;
        return 0;
    }
    if (v->kind == V_OBJ && !PyModule_Check(v->obj)) {
        /* nn.Sequential / nn.ModuleList (or a subclass keeping their __iter__): their
         * submodules, in order */
        if (!sym_is_module_container(v->obj, "__iter__"))
            return sym_fail(t, "iteration over %s not supported yet", Py_TYPE(v->obj)->tp_name);
        PyObject *name = PyUnicode_InternFromString("_modules");
        PyObject *mods = name ? dh_module_getattr(v->obj, name) : NULL;
        Py_XDECREF(name);
        if (mods == NULL || !PyDict_Check(mods)) {
            Py_XDECREF(mods);
            return sym_fail(t, "module container without _modules");
        }
        int k = (int)PyDict_GET_SIZE(mods);
        var *it = sym_alloc(t, k);
        if (it == NULL) {
            Py_DECREF(mods);
            return -1;
        }
        PyObject *key, *val;
        Py_ssize_t pos = 0;
        int j = 0;
        while (PyDict_Next(mods, &pos, &key, &val) && j < k) {
            int s = sym_source(t, DH_S_ATTR, v->src, 0, key);
            if (s < 0 || sym_wrap(t, val, s, &it[j++]) < 0) {
                Py_DECREF(mods);
                return -1;
            }
        }
        Py_DECREF(mods);
        *items = it;
        *n = j;
        return 0;
    }
    if (v->kind == V_TENSOR)
        return sym_fail(t, "iterating over a tensor not supported yet");
    return sym_fail(t, "iteration over an unsupported value");
}

/* ---- dicts -------------------------------------------------------------------------- */

/* A dict of constant keys; values are tracked values. Keys must be hashable constants. */
static int make_dict(trace *t, PyObject *keys, var *vals, int n, var *out) {
    memset(out, 0, sizeof *out);
    out->kind = V_DICT;
    out->src = -1;
    out->n = n;
    out->items = vals;
    out->obj = keys;
    return 0;
}

static int dict_from_const(trace *t, PyObject *d, var *out) {
    Py_ssize_t n = PyDict_GET_SIZE(d), pos = 0;
    PyObject *k, *v, *keys = PyTuple_New(n);
    var *vals = sym_alloc(t, (int)n);
    if (keys == NULL || vals == NULL) {
        Py_XDECREF(keys);
        return -1;
    }
    int i = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        PyTuple_SET_ITEM(keys, i, Py_NewRef(k));
        if (sym_wrap(t, v, -1, &vals[i++]) < 0) {
            Py_DECREF(keys);
            return -1;
        }
    }
    PyObject *kk = sym_keep(t, keys);
    return kk ? make_dict(t, kk, vals, (int)n, out) : -1;
}

static int dict_merge(trace *t, var *dst, const var *src) {
    var tmp;
    if (src->kind == V_CONST && PyDict_Check(src->obj)) {
        if (dict_from_const(t, src->obj, &tmp) < 0)
            return -1;
        src = &tmp;
    }
    if (dst->kind != V_DICT || src->kind != V_DICT)
        return sym_fail(t, "dict merge of unsupported values");
    int n = dst->n + src->n;
    PyObject *keys = PyTuple_New(n);
    var *vals = sym_alloc(t, n);
    if (keys == NULL || vals == NULL) {
        Py_XDECREF(keys);
        return -1;
    }
    int m = 0;
    for (int pass = 0; pass < 2; pass++) {
        const var *d = pass ? src : dst;
        for (int i = 0; i < d->n; i++) {
            PyObject *k = PyTuple_GET_ITEM(d->obj, i);
            int at = -1;
            for (int j = 0; j < m; j++) {
                int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(keys, j), k, Py_EQ);
                if (eq < 0) {
                    PyErr_Clear();
                    Py_DECREF(keys);
                    return sym_fail(t, "dict key comparison raised");
                }
                if (eq)
                    at = j;
            }
            if (at < 0) {
                PyTuple_SET_ITEM(keys, m, Py_NewRef(k));
                at = m++;
            }
            vals[at] = d->items[i];
        }
    }
    if (_PyTuple_Resize(&keys, m) < 0)
        return -1;
    PyObject *kk = sym_keep(t, keys);
    return kk ? make_dict(t, kk, vals, m, dst) : -1;
}

/* Index of constant key k in dict d, -1 when absent, -2 on a comparison error (failed). */
static int dict_find(trace *t, const var *d, PyObject *k) {
    for (int i = 0; i < d->n; i++) {
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(d->obj, i), k, Py_EQ);
        if (eq < 0) {
            PyErr_Clear();
            sym_fail(t, "dict key comparison raised");
            return -2;
        }
        if (eq)
            return i;
    }
    return -1;
}

/* Vars are values: every copy of a dict (locals, stack, closures, containers of any live
 * frame) shares its items array, which names the dict. An update builds the new keys and
 * items, then rebinds every copy. */
static int same_object(const var *x, const var *items, const var *nd) {
    if (x->items != items)
        return 0;
    if (nd->kind == V_SEQ)
        return x->kind == V_SEQ && x->is_list;
    return x->kind == V_DICT || x->kind == V_REC;
}

static void dict_rebind(trace *t, var *v, int n, const var *items, const var *nd, int depth) {
    for (int i = 0; i < n; i++) {
        var *x = &v[i];
        if (same_object(x, items, nd)) {
            var y = *nd;
            y.src = x->src;
            sym_fx_set(t, x, &y); /* journalled: undone if the call becomes a break */
            continue;
        }
        if (depth < 8 && x->items != NULL && x->items != items &&
            (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC || x->kind == V_METHOD))
            dict_rebind(t, x->items, x->kind == V_METHOD ? 1 : x->n, items, nd, depth + 1);
    }
}

/* copies of the dict named by items in v[0..n) (containers too) */
static int dict_refs(const var *v, int n, const var *items, int depth) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        const var *x = &v[i];
        if ((x->kind == V_DICT || x->kind == V_REC || (x->kind == V_SEQ && x->is_list)) && x->items == items)
            k++;
        else if (depth < 8 && x->items != NULL &&
                 (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC || x->kind == V_METHOD))
            k += dict_refs(x->items, x->kind == V_METHOD ? 1 : x->n, items, depth + 1);
    }
    return k;
}

/* A graph break rebuilds each dict variable as its own dict: a dict reachable twice from
 * the state handed to the resume function would split in two. */
/* handed on as the caller's own object (fill_out: an unchanged source), not rebuilt */
static int passed_as_source(trace *t, const var *x) {
    return x->src >= 0 && x->src < t->capsrc && t->srcdone[x->src] &&
           t->srcvar[x->src].kind == x->kind && t->srcvar[x->src].items == x->items &&
           t->srcvar[x->src].n == x->n;
}

static int dicts_shared(trace *t, const var *v, int n, const var *all, int nall, int depth) {
    for (int i = 0; i < n; i++) {
        const var *x = &v[i];
        if ((x->kind == V_DICT || x->kind == V_REC || (x->kind == V_SEQ && x->is_list)) &&
            x->items != NULL && !passed_as_source(t, x) && dict_refs(all, nall, x->items, 0) > 1)
            return 1;
        if (depth < 8 && x->items != NULL && (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC) &&
            dicts_shared(t, x->items, x->n, all, nall, depth + 1))
            return 1;
    }
    return 0;
}

static void dict_rebind_all(trace *t, const var *old, const var *nd) {
    for (int i = 0; i < t->nframes; i++) {
        sframe *f = t->frames[i];
        dict_rebind(t, f->stack, f->sp, old, nd, 0);
        dict_rebind(t, f->locals, f->nlocals, old, nd, 0);
        if (f->closure)
            dict_rebind(t, f->closure, f->nclosure, old, nd, 0);
    }
    for (int i = 0; i < t->nattrw; i++) /* stored on a module, replayed after the graph */
        dict_rebind(t, t->attrw[i].val, 1, old, nd, 0);
}

/* A list (or dict) made in the trace changed: every copy of it, in any live frame or
 * container, now holds nv (journalled). Lists are named by their items array. */
void sym_rebind(trace *t, const var *old_items, const var *nv) { dict_rebind_all(t, old_items, nv); }

/* The top frame's **kwargs dict: made fresh by the call, no caller holds it (resume
 * functions take their locals as plain arguments: no CO_VARKEYWORDS). */
static int own_kwargs(trace *t, const var *d) {
    PyCodeObject *co = t->code;
    if (d->src < 0 || d->src >= t->nsrc || t->src[d->src].kind != DH_S_LOCAL ||
        !(co->co_flags & CO_VARKEYWORDS))
        return 0;
    Py_ssize_t kw = co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0);
    return t->src[d->src].index == kw;
}

/* d[k] = val (val NULL: del d[k]; the key must exist). Dicts read from the frame's inputs
 * are left to eager (the caller would see the update), except the frame's own **kwargs. */
static int dict_update(trace *t, const var *d, PyObject *k, const var *val) {
    if (d->kind != V_DICT || d->items == NULL)
        return sym_fail(t, "update of an unsupported dict");
    if (d->src >= 0 && !own_kwargs(t, d))
        return sym_fail(t, "update of a dict passed in (the caller sees it) not supported");
    if (PyObject_Hash(k) == -1) {
        PyErr_Clear();
        return sym_fail(t, "unhashable dict key");
    }
    int at = dict_find(t, d, k);
    if (at == -2)
        return -1;
    if (at < 0 && val == NULL)
        return sym_fail(t, "KeyError (eager will raise)");
    int n = d->n + (at < 0 ? 1 : val == NULL ? -1 : 0);
    PyObject *keys = PyTuple_New(n);
    var *vals = sym_alloc(t, n);
    if (keys == NULL || vals == NULL) {
        Py_XDECREF(keys);
        return -1;
    }
    int m = 0;
    for (int i = 0; i < d->n; i++) {
        if (i == at && val == NULL)
            continue;
        PyTuple_SET_ITEM(keys, m, Py_NewRef(PyTuple_GET_ITEM(d->obj, i)));
        vals[m++] = i == at ? *val : d->items[i];
    }
    if (at < 0) {
        PyTuple_SET_ITEM(keys, m, Py_NewRef(k));
        vals[m++] = *val;
    }
    PyObject *kk = sym_keep(t, keys);
    if (kk == NULL)
        return -1;
    var nd;
    make_dict(t, kk, vals, m, &nd);
    dict_rebind_all(t, d->items, &nd);
    return 0;
}

/* d.get(k, default) / d.pop(k[, default]) / d.setdefault(k, default) / d.copy() /
 * d.update(other) / d.__contains__(k) on a dict of constant keys; 0, or -1 failed */
int sym_dict_method(trace *t, const var *d, const char *mn, var *args, int nargs, var *out) {
    if (!strcmp(mn, "copy") && nargs == 0) {
        var *vals = sym_alloc(t, d->n);
        if (vals == NULL)
            return -1;
        memcpy(vals, d->items, (size_t)d->n * sizeof(var));
        return make_dict(t, d->obj, vals, d->n, out);
    }
    if (!strcmp(mn, "update") && nargs == 1) {
        if (d->src >= 0 && !own_kwargs(t, d))
            return sym_fail(t, "update of a dict passed in (the caller sees it) not supported");
        var m = *d;
        if (dict_merge(t, &m, &args[0]) < 0)
            return -1;
        dict_rebind_all(t, d->items, &m);
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if (nargs < 1 || nargs > 2 || args[0].kind != V_CONST)
        return sym_fail(t, "dict.%s with these arguments not supported", mn);
    PyObject *k = args[0].obj;
    int at = dict_find(t, d, k);
    if (at == -2)
        return -1;
    if (!strcmp(mn, "__contains__") && nargs == 1)
        return sym_const(t, PyBool_FromLong(at >= 0), out);
    if (!strcmp(mn, "get") || !strcmp(mn, "pop") || !strcmp(mn, "setdefault")) {
        if (at >= 0)
            *out = d->items[at];
        else if (nargs == 2)
            *out = args[1];
        else if (!strcmp(mn, "pop"))
            return sym_fail(t, "KeyError (eager will raise)");
        else if (sym_const(t, Py_NewRef(Py_None), out) < 0)
            return -1;
        if (!strcmp(mn, "pop") && at >= 0)
            return dict_update(t, d, k, NULL);
        if (!strcmp(mn, "setdefault") && at < 0)
            return dict_update(t, d, k, out);
        return 0;
    }
    return sym_fail(t, "dict.%s not supported", mn);
}

/* ---- graph breaks ------------------------------------------------------------------ */

static int can_break(trace *t) {
    PyCodeObject *c = t->code;
    /* free variables come back through the closure (COPY_FREE_VARS in the prologue);
     * cell variables would need their cells rebuilt: not supported */
    return (c->co_ncellvars == 0 && PyBytes_GET_SIZE(c->co_exceptiontable) == 0 &&
            !t->cfg->fullgraph);
}

/* The trace stops here: keep the reason, clear the failure, snapshot stack and locals.
 * Returns 1 (a break), which run() passes up. */
static int record_break_state(trace *t, sframe *f) {
    if (sym_ctxvar_pending(t, NULL))
        return sym_fail(t, "a context variable set in the trace is live across a graph break");
    t->failed = 0;
    t->brk.nstack = f->sp;
    t->brk.stack = sym_alloc(t, f->sp);
    t->brk.locals = sym_alloc(t, f->nlocals);
    if (t->brk.stack == NULL || t->brk.locals == NULL)
        return -1;
    memcpy(t->brk.stack, f->stack, (size_t)f->sp * sizeof(var));
    memcpy(t->brk.locals, f->locals, (size_t)f->nlocals * sizeof(var));
    /* the call's callable and arguments are rebuilt too: a list passed to the eager call
     * and still held by a local must stay one object (or the call's update is lost) */
    int na = (t->brk.fn ? 1 : 0) + (t->brk.args ? t->brk.nargs : 0);
    int nall = f->sp + f->nlocals + na;
    var *all = sym_alloc(t, nall);
    if (all == NULL)
        return -1;
    memcpy(all, f->stack, (size_t)f->sp * sizeof(var));
    memcpy(all + f->sp, f->locals, (size_t)f->nlocals * sizeof(var));
    if (t->brk.fn)
        all[f->sp + f->nlocals] = *t->brk.fn;
    if (t->brk.args && t->brk.nargs > 0)
        memcpy(all + f->sp + f->nlocals + (t->brk.fn ? 1 : 0), t->brk.args, (size_t)t->brk.nargs * sizeof(var));
    if (dicts_shared(t, all, nall, all, nall, 0))
        return sym_fail(t, "a list or dict referenced twice is live across a graph break");
    t->brk.nlocals = f->nlocals - f->code->co_nfreevars; /* plain locals: free vars stay in the closure */
    t->brk.nlocals = dh_resume_base_nlocals(f->code, t->brk.nlocals); /* a resume's dead stack slots */
    return 1;
}

/* ---- aliasing: is a view sharing oid's storage still reachable? ------------------- */

static int live_in(trace *t, const var *v, int n, int oid, int depth) {
    for (int i = 0; i < n; i++) {
        const var *x = &v[i];
        if (x->kind == V_TENSOR && x->oid > 0 && x->oid != oid && sym_alias_same(t, x->oid, oid))
            return 1;
        if (depth < 8 && x->items != NULL &&
            (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC || x->kind == V_METHOD) &&
            live_in(t, x->items, x->kind == V_METHOD ? 1 : x->n, oid, depth + 1))
            return 1;
    }
    return 0;
}

int sym_alias_live(trace *t, int oid) {
    for (int i = 0; i < t->nframes; i++) {
        sframe *f = t->frames[i];
        if (live_in(t, f->stack, f->sp, oid, 0) || live_in(t, f->locals, f->nlocals, oid, 0) ||
            (f->closure && live_in(t, f->closure, f->nclosure, oid, 0)) ||
            (f->yielded && live_in(t, f->yielded, f->nyielded, oid, 0)))
            return 1;
    }
    /* inputs are alive in the caller; attribute writes keep their values */
    for (int s = 0; s < t->nsrc && s < t->capsrc; s++)
        if (t->srcdone[s] && live_in(t, &t->srcvar[s], 1, oid, 0))
            return 1;
    for (int i = 0; i < t->nattrw; i++)
        if (live_in(t, t->attrw[i].val, 1, oid, 0))
            return 1;
    /* frames not registered (should not happen): stay conservative */
    return t->nframes == 0;
}

/* ---- the interpreter loop ---------------------------------------------------------- */

static int run_body(trace *t, sframe *f, var *result);

/* a generator frame returned: its result is an iterator over what it yielded */
static int gen_result(sframe *f, var *result) {
    memset(result, 0, sizeof *result);
    result->kind = V_ITER;
    result->src = -1;
    result->items = f->yielded;
    result->n = f->nyielded;
    return 0;
}

/* interprets f with f registered as live (aliasing checks scan its stack and locals) */
/* The exception table's handler for instruction pc (code units): its target, with the
 * stack depth and lasti flag; -1 when none. */
static int exc_handler(PyCodeObject *co, int pc, int *depth, int *lasti) {
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(co->co_exceptiontable);
    const unsigned char *end = p + PyBytes_GET_SIZE(co->co_exceptiontable);
    while (p < end) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            if (p >= end)
                return -1;
            int b = *p++;
            v[k] = b & 63;
            while (b & 64) {
                if (p >= end)
                    return -1;
                b = *p++;
                v[k] = (v[k] << 6) | (b & 63);
            }
        }
        if (pc >= v[0] && pc < v[0] + v[1]) {
            *depth = v[3] >> 1;
            *lasti = v[3] & 1;
            return v[2];
        }
    }
    return -1;
}

/* "file:line in fn; file:line in caller; ..." of the frames being interpreted, innermost
 * first, into t->where (the user's location of a failure or graph break). */
void sym_where(trace *t) {
    char *p = t->where, *end = t->where + sizeof t->where;
    *p = 0;
    for (int i = t->nframes - 1; i >= 0 && p < end - 1; i--) {
        const sframe *f = t->frames[i];
        const char *fn = PyUnicode_AsUTF8(f->code->co_filename);
        const char *name = PyUnicode_AsUTF8(f->code->co_qualname);
        if (fn == NULL || name == NULL) {
            PyErr_Clear();
            continue;
        }
        int line = PyCode_Addr2Line(f->code, f->pc * 2);
        int n = snprintf(p, (size_t)(end - p), "%s%s:%d in %s", p == t->where ? "" : "; ", fn,
                         line, name);
        if (n < 0)
            break;
        p += n;
    }
}

static int run(trace *t, sframe *f, var *result) {
    if (t->nframes >= (int)(sizeof t->frames / sizeof t->frames[0]))
        return sym_fail(t, "inlining too deep");
    t->frames[t->nframes++] = f;
    int rc = run_body(t, f, result);
    t->nframes--;
    return rc;
}

static int run_body(trace *t, sframe *f, var *result) {
    PyObject *bytes = PyCode_GetCode(f->code);
    if (bytes == NULL)
        return -1;
    /* keep the deoptimized bytes alive for the trace */
    if (sym_keep(t, bytes) == NULL)
        return -1;
    const unsigned char *code = (const unsigned char *)PyBytes_AS_STRING(bytes);
    int ninstr = (int)(PyBytes_GET_SIZE(bytes) / 2);
    PyObject *consts = f->code->co_consts, *names = f->code->co_names;
    int pc = 0, ext = 0;
    while (pc < ninstr) {
        if (++t->steps > 200000)
            return sym_fail(t, "trace too long (loop unrolled too far)");
        f->pc = pc;
        int opcode = code[2 * pc];
        int oparg = code[2 * pc + 1] | ext;
        int next = pc + 1 + ncaches[opcode];
        int op = optab[opcode];
        ext = 0;
        var a, b, c;
        switch (op) {
        case OP_EXTENDED_ARG:
            ext = oparg << 8;
            break;
        case OP_NOP:
        case OP_RESUME:
        case OP_CACHE:
        case OP_PRECALL:
        case OP_MAKE_CELL:
            break;
        case OP_COPY_FREE_VARS: {
            /* free variables are the last oparg slots; read them through the closure */
            int first = f->nlocals - oparg;
            if (f->closure != NULL) {
                if (oparg > f->nclosure)
                    return sym_fail(t, "closure size mismatch");
                for (int i = 0; i < oparg; i++)
                    f->locals[first + i] = f->closure[i];
                break;
            }
            if (!f->top && f->func_src < 0)
                return sym_fail(t, "closure of an inlined function without a source");
            for (int i = 0; i < oparg; i++) {
                PyObject *fn = f->func;
                PyObject *cl = fn && PyFunction_Check(fn) ? PyFunction_GET_CLOSURE(fn) : NULL;
                if (cl == NULL || i >= PyTuple_GET_SIZE(cl))
                    return sym_fail(t, "missing closure");
                PyObject *cell = PyTuple_GET_ITEM(cl, i);
                PyObject *o = PyCell_GET(cell);
                if (o == NULL) {
                    f->locals[first + i].kind = V_NULL; /* empty cell: unbound */
                    continue;
                }
                if (!f->top && f->func_src < 0 && fn != t->func)
                    return sym_fail(t, "closure of a function reached without a source");
                int s = sym_source(t, DH_S_CLOSURE, f->top ? -1 : f->func_src, i, NULL);
                if (s < 0 || sym_wrap(t, o, s, &f->locals[first + i]) < 0)
                    return -1;
            }
            break;
        }
        case OP_PUSH_NULL:
            PUSH(null_var());
            break;
        case OP_POP_TOP:
            NEED(1);
            (void)POP();
            break;
        case OP_END_FOR:
            NEED(2);
            f->sp -= 2;
            break;
        case OP_COPY:
            NEED(oparg);
            a = PEEK(oparg);
            PUSH(a);
            break;
        case OP_SWAP:
            NEED(oparg);
            a = PEEK(1);
            PEEK(1) = PEEK(oparg);
            PEEK(oparg) = a;
            break;
        case OP_LOAD_CONST:
            if (sym_const(t, Py_NewRef(PyTuple_GET_ITEM(consts, oparg)), &a) < 0)
                return -1;
            PUSH(a);
            break;
        case OP_RETURN_CONST:
            if (f->gen)
                return gen_result(f, result);
            return sym_const(t, Py_NewRef(PyTuple_GET_ITEM(consts, oparg)), result);
        case OP_RETURN_VALUE:
            NEED(1);
            *result = POP();
            if (f->gen)
                return gen_result(f, result);
            return 0;
        case OP_RETURN_GENERATOR: /* the generator object, popped by the next POP_TOP */
            if (!f->gen)
                return sym_fail(t, "RETURN_GENERATOR outside a generator");
            PUSH(null_var());
            break;
        case OP_YIELD_VALUE: {
            /* run to completion: the value is collected, next() sends None back */
            NEED(1);
            if (!f->gen)
                return sym_fail(t, "yield outside a generator");
            if (f->nyielded == f->capyielded) {
                int cap = f->capyielded ? 2 * f->capyielded : 8;
                var *y = sym_alloc(t, cap);
                if (y == NULL)
                    return -1;
                if (f->nyielded)
                    memcpy(y, f->yielded, (size_t)f->nyielded * sizeof(var));
                f->yielded = y;
                f->capyielded = cap;
            }
            f->yielded[f->nyielded++] = POP();
            if (sym_const(t, Py_NewRef(Py_None), &a) < 0)
                return -1;
            PUSH(a);
            break;
        }
        case OP_LOAD_FAST:
        case OP_LOAD_FAST_CHECK:
        case OP_LOAD_DEREF:
        case OP_LOAD_CLOSURE:
            if (load_local(t, f, oparg, &a) < 0)
                return -1;
            if (a.kind == V_NULL)
                return sym_fail(t, "free variable referenced before assignment");
            PUSH(a);
            break;
        case OP_LOAD_FAST_AND_CLEAR: /* 3.12 inlined comprehensions */
            if (oparg >= f->nlocals)
                return sym_fail(t, "bad local");
            if (f->locals[oparg].kind == V_UNSET && f->top && t->localsplus[oparg] != NULL) {
                if (load_local(t, f, oparg, &a) < 0)
                    return -1;
            } else {
                a = f->locals[oparg].kind == V_UNSET ? null_var() : f->locals[oparg];
                if (a.kind == V_UNSET)
                    a = null_var();
            }
            f->locals[oparg] = null_var(); /* unbound */
            PUSH(a);
            break;
        case OP_STORE_FAST:
        case OP_STORE_DEREF:
            NEED(1);
            if (op == OP_STORE_DEREF && f->made_closure)
                return sym_fail(t, "a captured variable changes after its closure was made");
            if (op == OP_STORE_DEREF && oparg >= f->nlocals - f->code->co_nfreevars)
                /* the cell belongs to an enclosing function (nonlocal): the write must reach it */
                return sym_fail(t, "write to a nonlocal variable of an enclosing function not supported yet");
            if (oparg >= f->nlocals)
                return sym_fail(t, "bad local");
            a = POP();
            f->locals[oparg] = a; /* V_NULL: restoring an unbound slot (3.12 comprehensions) */
            break;
        case OP_DELETE_FAST:
            f->locals[oparg] = null_var();
            break;
        case OP_LOAD_GLOBAL: {
            PyObject *name = PyTuple_GET_ITEM(names, oparg >> 1);
            if (oparg & 1)
                PUSH(null_var());
            if (!f->top && f->func_src < 0 && f->globals != t->globals)
                return sym_fail(t, "global %U of a function reached without a source", name);
            int s = sym_source(t, DH_S_GLOBAL, f->top ? -1 : f->func_src, 0, name);
            if (s < 0)
                return -1;
            PyObject *o = PyDict_GetItemWithError(f->globals, name);
            if (o == NULL && !PyErr_Occurred())
                o = PyDict_GetItemWithError(t->builtins, name);
            if (o == NULL) {
                PyErr_Clear();
                return sym_fail(t, "global %U not found (eager will raise)", name);
            }
            if (sym_wrap(t, o, s, &a) < 0)
                return -1;
            PUSH(a);
            break;
        }
        case OP_LOAD_ATTR:
        case OP_LOAD_METHOD: {
            NEED(1);
            int method = op == OP_LOAD_METHOD || (DH_PY312 && (oparg & 1));
            PyObject *name = PyTuple_GET_ITEM(names, DH_PY312 && op == OP_LOAD_ATTR ? oparg >> 1 : oparg);
            a = POP();
            if (load_attr(t, &a, name, &b) < 0)
                return -1;
            if (method)
                PUSH(null_var());
            PUSH(b);
            break;
        }
        case OP_KW_NAMES:
            f->kwnames = PyTuple_GET_ITEM(consts, oparg);
            break;
        case OP_CALL: {
            NEED(oparg + 2);
            var *args = &f->stack[f->sp - oparg];
            var *callable = &PEEK(oparg + 1);
            var *maybe = &PEEK(oparg + 2);
            var *fnv;
            var *argv = args;
            int nargs = oparg;
            if (maybe->kind != V_NULL) { /* [method, self, args...] */
                fnv = maybe;
                argv = callable;
                nargs = oparg + 1;
            } else {
                fnv = callable;
            }
            var fn = *fnv;
            if (fn.kind == V_FUNC && fn.obj == (PyObject *)&PySuper_Type && nargs == 2 && !f->kwnames &&
                argv[0].obj != NULL && PyType_Check(argv[0].obj) && argv[1].kind == V_OBJ &&
                PyObject_IsInstance(argv[1].obj, argv[0].obj) == 1) {
                /* super(C, self): as the zero-argument form, with the class given */
                var *sv = sym_alloc(t, 1);
                if (sv == NULL)
                    return -1;
                sv[0] = argv[1];
                PyObject *cls = argv[0].obj;
                f->sp -= oparg + 2;
                memset(&a, 0, sizeof a);
                a.kind = V_SUPER;
                a.src = -1;
                a.obj = cls;
                a.items = sv;
                PUSH(a);
                break;
            }
            PyErr_Clear();
            if (fn.kind == V_FUNC && fn.obj == (PyObject *)&PySuper_Type && nargs == 0) {
                /* zero-argument super(): the method's __class__ cell and first argument */
                PyObject *cls = NULL;
                PyObject *fv = PyObject_GetAttrString((PyObject *)f->code, "co_freevars");
                if (fv != NULL && PyTuple_Check(fv)) {
                    Py_ssize_t nfree = PyTuple_GET_SIZE(fv);
                    for (Py_ssize_t ci = 0; ci < nfree; ci++)
                        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(fv, ci), "__class__") == 0) {
                            var *cv = &f->locals[f->nlocals - (int)nfree + (int)ci];
                            if (cv->kind == V_CONST || cv->kind == V_FUNC || cv->kind == V_OBJ)
                                cls = cv->obj;
                        }
                }
                Py_XDECREF(fv);
                PyErr_Clear();
                var self0;
                if (cls == NULL || !PyType_Check(cls) || f->code->co_argcount < 1 ||
                    load_local(t, f, 0, &self0) < 0 || self0.kind != V_OBJ)
                    return sym_fail(t, "zero-argument super() outside a module method");
                f->sp -= oparg + 2;
                var *sv = sym_alloc(t, 1);
                if (sv == NULL)
                    return -1;
                sv[0] = self0;
                memset(&a, 0, sizeof a);
                a.kind = V_SUPER;
                a.src = -1;
                a.obj = cls;
                a.items = sv;
                PUSH(a);
                break;
            }
            var *copy = sym_alloc(t, nargs);
            if (copy == NULL)
                return -1;
            memcpy(copy, argv, (size_t)nargs * sizeof *copy);
            PyObject *kw = f->kwnames;
            f->kwnames = NULL;
            f->sp -= oparg + 2;
            t->pending_exc = NULL; /* only what this call raises */
            /* the top frame may break at this call: what its trace logs is undone then */
            sym_fx_mark mark = {0};
            if (f->top && can_break(t) && sym_fx_save(t, &mark) < 0)
                return -1;
            int crc = sym_call(t, &fn, copy, nargs, kw, &a);
            if (crc < 0 && mark.valid && t->failed && !PyErr_Occurred() && t->pending_exc == NULL)
                sym_fx_rollback(t, &mark);
            sym_fx_drop(&mark);
            if (crc < 0) {
                int hd, hl, h;
                if (t->pending_exc != NULL && t->failed && !PyErr_Occurred() &&
                    (h = exc_handler(f->code, pc, &hd, &hl)) >= 0 && hd <= f->sp) {
                    /* a process-state predicate raised (torch.cuda's without CUDA): the
                     * frame's handler runs, as in eager (the raise is guarded) */
                    t->failed = 0;
                    t->reason[0] = 0;
                    f->sp = hd;
                    if (hl && sym_const(t, PyLong_FromLong(pc), &c) < 0)
                        return -1;
                    if (hl)
                        PUSH(c);
                    memset(&c, 0, sizeof c);
                    c.kind = V_CONST;
                    c.src = -1;
                    c.obj = t->pending_exc;
                    t->pending_exc = NULL;
                    PUSH(c);
                    next = h;
                    break;
                }
                /* constructing an exception (to raise it) is not worth a break: the resume
                 * would be specialized on each new exception object */
                int exc = fn.kind == V_FUNC && fn.obj && PyExceptionClass_Check(fn.obj);
                if (f->top && t->failed && !PyErr_Occurred() && can_break(t) && !exc) {
                    var *fnc = sym_alloc(t, 1);
                    if (fnc == NULL)
                        return -1;
                    *fnc = fn;
                    t->brk.kind = DH_BRK_CALL;
                    t->brk.pc_next = next;
                    t->brk.fn = fnc;
                    t->brk.args = copy;
                    t->brk.nargs = nargs;
                    t->brk.kwnames = kw;
                    return record_break_state(t, f);
                }
                return -1;
            }
            PUSH(a);
            break;
        }
        case OP_BINARY_OP:
            NEED(2);
            b = POP();
            a = POP();
            if (sym_binary(t, oparg, &a, &b, &c) < 0) {
                /* a tensor operator the graph can't express (e.g. @): run it eagerly */
                if (f->top && t->failed && !PyErr_Occurred() && can_break(t) &&
                    (a.kind == V_TENSOR || b.kind == V_TENSOR)) {
                    var *ops = sym_alloc(t, 2);
                    if (ops == NULL)
                        return -1;
                    ops[0] = a;
                    ops[1] = b;
                    t->brk.kind = DH_BRK_BINOP;
                    t->brk.binop = oparg;
                    t->brk.pc_next = next;
                    t->brk.fn = &ops[0];
                    t->brk.args = &ops[1];
                    t->brk.nargs = 1;
                    return record_break_state(t, f);
                }
                return -1;
            }
            PUSH(c);
            break;
        case OP_COMPARE_OP:
            NEED(2);
            b = POP();
            a = POP();
            if (sym_compare(t, DH_PY312 ? oparg >> 4 : oparg, &a, &b, &c) < 0)
                return -1;
            PUSH(c);
            break;
        case OP_IS_OP: {
            NEED(2);
            b = POP();
            a = POP();
            int same;
            if (a.kind == V_CONST && b.kind == V_CONST)
                same = a.obj == b.obj;
            else if ((a.kind == V_CONST && a.obj == Py_None) || (b.kind == V_CONST && b.obj == Py_None))
                same = a.kind == b.kind && a.obj == b.obj; /* a tracked non-const is never None */
            else if (a.kind == V_TENSOR && b.kind == V_TENSOR)
                same = (a.oid > 0 && b.oid > 0) ? a.oid == b.oid : a.val == b.val; /* object identity */
            else if (is_real_object(&a) && is_real_object(&b)) {
                same = a.obj == b.obj; /* type(x) is torch.Tensor: a constant and a class */
                /* objects of Python classes: DH_G_SAMEOBJ keeps which sources are one
                 * object; others (C types) are identity-guarded already */
            }
            else if (a.kind != b.kind && a.kind != V_CONST && b.kind != V_CONST)
                same = 0;
            else if (((a.kind == V_SEQ && a.is_list) || a.kind == V_DICT) && a.kind == b.kind &&
                     a.src < 0 && b.src < 0 && a.items != NULL)
                same = a.items == b.items; /* made in the trace: named by their items */
            else
                return sym_fail(t, "'is' on unsupported values");
            if (sym_const(t, PyBool_FromLong(same ^ oparg), &c) < 0)
                return -1;
            PUSH(c);
            break;
        }
        case OP_CONTAINS_OP: {
            NEED(2);
            b = POP();
            a = POP();
            if (a.kind == V_CONST && b.kind == V_DICT) {
                int at = dict_find(t, &b, a.obj);
                if (at == -2)
                    return -1;
                if (sym_const(t, PyBool_FromLong((at >= 0) ^ oparg), &c) < 0)
                    return -1;
                PUSH(c);
                break;
            }
            if (a.kind == V_CONST && b.kind == V_SEQ) { /* constants only: == on values */
                int r = 0, i;
                for (i = 0; i < b.n && !r && b.items[i].kind == V_CONST; i++) {
                    r = PyObject_RichCompareBool(b.items[i].obj, a.obj, Py_EQ);
                    if (r < 0) {
                        PyErr_Clear();
                        return sym_fail(t, "'in' raised");
                    }
                }
                if (!r && i < b.n)
                    return sym_fail(t, "'in' on a sequence of non-constant values");
                if (sym_const(t, PyBool_FromLong(r ^ oparg), &c) < 0)
                    return -1;
                PUSH(c);
                break;
            }
            if (b.kind == V_OBJ && b.src >= 0 && !PyModule_Check(b.obj)) {
                /* a user mapping/container: type(b).__contains__(b, a) inlined */
                PyObject *cn = PyUnicode_InternFromString("__contains__");
                PyObject *fn = cn ? _PyType_Lookup(Py_TYPE(b.obj), cn) : NULL;
                if (fn == NULL || !PyFunction_Check(fn)) {
                    Py_XDECREF(cn);
                    return sym_fail(t, "'in' on a %s", Py_TYPE(b.obj)->tp_name);
                }
                var r;
                int fs = sym_source(t, DH_S_ATTR, b.src, 1, cn);
                Py_DECREF(cn);
                if (fs < 0 || sym_inline(t, fn, fs, &b, &a, 1, NULL, &r) < 0)
                    return -1;
                int truth = r.kind == V_CONST ? PyObject_IsTrue(r.obj) : -1;
                if (truth < 0) {
                    PyErr_Clear();
                    return sym_fail(t, "'in' on a %s: not a constant answer", Py_TYPE(b.obj)->tp_name);
                }
                if (sym_const(t, PyBool_FromLong(truth ^ oparg), &c) < 0)
                    return -1;
                PUSH(c);
                break;
            }
            if (a.kind != V_CONST || b.kind != V_CONST)
                return sym_fail(t, "'in' on non-constant values");
            int r = PySequence_Contains(b.obj, a.obj);
            if (r < 0) {
                PyErr_Clear();
                return sym_fail(t, "'in' raised");
            }
            if (sym_const(t, PyBool_FromLong(r ^ oparg), &c) < 0)
                return -1;
            PUSH(c);
            break;
        }
        case OP_UNARY_NEGATIVE:
            NEED(1);
            a = POP();
            if (sym_neg(t, &a, &b) < 0)
                return -1;
            PUSH(b);
            break;
        case OP_UNARY_NOT: {
            NEED(1);
            a = POP();
            int r;
            if (truthy(t, &a, &r) < 0)
                return -1;
            if (sym_const(t, PyBool_FromLong(!r), &b) < 0)
                return -1;
            PUSH(b);
            break;
        }
        case OP_BUILD_TUPLE:
        case OP_BUILD_LIST:
            NEED(oparg);
            if (build_seq(t, f, oparg, op == OP_BUILD_LIST, &a) < 0)
                return -1;
            PUSH(a);
            break;
        case OP_LIST_EXTEND: {
            NEED(oparg + 1);
            b = POP();
            var *lst = &PEEK(oparg);
            var *items;
            int n;
            if (lst->kind != V_SEQ || !lst->is_list)
                return sym_fail(t, "LIST_EXTEND on a non-list");
            if (to_items(t, &b, &items, &n) < 0)
                return -1;
            var *m = sym_alloc(t, lst->n + n);
            if (m == NULL)
                return -1;
            memcpy(m, lst->items, (size_t)lst->n * sizeof *m);
            memcpy(m + lst->n, items, (size_t)n * sizeof *m);
            lst->items = m;
            lst->n += n;
            break;
        }
        case OP_BUILD_MAP: {
            NEED(2 * oparg);
            PyObject *keys = PyTuple_New(oparg);
            var *vals = sym_alloc(t, oparg);
            if (keys == NULL || vals == NULL) {
                Py_XDECREF(keys);
                return -1;
            }
            for (int i = 0; i < oparg; i++) {
                var *k = &PEEK(2 * oparg - 2 * i), *v = &PEEK(2 * oparg - 2 * i - 1);
                if (k->kind != V_CONST || PyObject_Hash(k->obj) == -1) {
                    PyErr_Clear();
                    Py_DECREF(keys);
                    return sym_fail(t, "dict with non-constant keys");
                }
                PyTuple_SET_ITEM(keys, i, Py_NewRef(k->obj));
                vals[i] = *v;
            }
            f->sp -= 2 * oparg;
            var d;
            if (sym_keep(t, keys) == NULL)
                return -1;
            memset(&d, 0, sizeof d);
            d.kind = V_DICT;
            d.src = -1;
            d.obj = keys;
            d.items = vals;
            d.n = oparg;
            if (oparg > 0) {
                /* duplicate keys: the last wins, as in Python */
                var e2;
                memset(&e2, 0, sizeof e2);
                e2.kind = V_DICT;
                e2.obj = sym_keep(t, PyTuple_New(0));
                if (e2.obj == NULL || dict_merge(t, &e2, &d) < 0)
                    return -1;
                d = e2;
            }
            PUSH(d);
            break;
        }
        case OP_BUILD_CONST_KEY_MAP: {
            NEED(oparg + 1);
            a = POP(); /* keys tuple */
            if (a.kind != V_CONST || !PyTuple_Check(a.obj) || PyTuple_GET_SIZE(a.obj) != oparg)
                return sym_fail(t, "BUILD_CONST_KEY_MAP without constant keys");
            var *vals = sym_alloc(t, oparg);
            if (vals == NULL)
                return -1;
            for (int i = 0; i < oparg; i++)
                vals[i] = PEEK(oparg - i);
            f->sp -= oparg;
            make_dict(t, a.obj, vals, oparg, &b);
            PUSH(b);
            break;
        }
        case OP_DICT_MERGE:
        case OP_DICT_UPDATE: {
            NEED(oparg + 1);
            b = POP();
            if (dict_merge(t, &PEEK(oparg), &b) < 0)
                return -1;
            break;
        }
        case OP_MAP_ADD: {
            NEED(oparg + 2);
            b = POP(); /* value */
            a = POP(); /* key */
            if (a.kind != V_CONST)
                return sym_fail(t, "dict comprehension with non-constant keys");
            var one;
            PyObject *k1 = PyTuple_Pack(1, a.obj);
            var *v1 = sym_alloc(t, 1);
            if (k1 == NULL || v1 == NULL || sym_keep(t, k1) == NULL)
                return -1;
            v1[0] = b;
            make_dict(t, k1, v1, 1, &one);
            if (dict_merge(t, &PEEK(oparg), &one) < 0)
                return -1;
            break;
        }
        case OP_LIST_APPEND: {
            NEED(oparg + 1);
            b = POP();
            var *lst = &PEEK(oparg);
            if (lst->kind != V_SEQ || !lst->is_list)
                return sym_fail(t, "LIST_APPEND on a non-list");
            var *m = sym_alloc(t, lst->n + 1);
            if (m == NULL)
                return -1;
            memcpy(m, lst->items, (size_t)lst->n * sizeof *m);
            m[lst->n] = b;
            lst->items = m;
            lst->n++;
            break;
        }
        case OP_UNPACK_EX: {
            NEED(1);
            a = POP();
            var *items;
            int n, before = oparg & 0xff, after = oparg >> 8;
            if (to_items(t, &a, &items, &n) < 0)
                return -1;
            if (n < before + after)
                return sym_fail(t, "not enough values to unpack (eager will raise)");
            for (int i = n - 1; i >= n - after; i--)
                PUSH(items[i]);
            var *mid = sym_alloc(t, n - before - after);
            if (mid == NULL)
                return -1;
            memcpy(mid, items + before, (size_t)(n - before - after) * sizeof *mid);
            memset(&b, 0, sizeof b);
            b.kind = V_SEQ;
            b.src = -1;
            b.is_list = 1;
            b.n = n - before - after;
            b.items = mid;
            PUSH(b);
            for (int i = before - 1; i >= 0; i--)
                PUSH(items[i]);
            break;
        }
        case OP_BUILD_SLICE: {
            NEED(oparg);
            PyObject *parts[3] = {Py_None, Py_None, Py_None};
            for (int i = 0; i < oparg; i++) {
                var *v = &PEEK(oparg - i);
                if (v->kind != V_CONST)
                    return sym_fail(t, "slice with non-constant bounds");
                parts[i] = v->obj;
            }
            f->sp -= oparg;
            if (sym_const(t, PySlice_New(parts[0], parts[1], oparg == 3 ? parts[2] : Py_None), &a) < 0)
                return -1;
            PUSH(a);
            break;
        }
        case OP_FORMAT_VALUE: {
            int have_spec = (oparg & 0x04) != 0;
            NEED(1 + have_spec);
            var spec = have_spec ? POP() : null_var();
            a = POP();
            if (a.kind != V_CONST || (have_spec && spec.kind != V_CONST))
                return sym_fail(t, "f-string of a non-constant value");
            PyObject *v = Py_NewRef(a.obj), *r;
            int conv = oparg & 0x03;
            if (conv) {
                PyObject *c = conv == 1 ? PyObject_Str(v) : conv == 2 ? PyObject_Repr(v) : PyObject_ASCII(v);
                Py_DECREF(v);
                if (c == NULL)
                    return -1;
                v = c;
            }
            r = PyObject_Format(v, have_spec ? spec.obj : NULL);
            Py_DECREF(v);
            if (r == NULL) {
                PyErr_Clear();
                return sym_fail(t, "format raised");
            }
            if (sym_const(t, r, &b) < 0)
                return -1;
            PUSH(b);
            break;
        }
        case OP_BUILD_STRING: {
            NEED(oparg);
            PyObject *parts = PyTuple_New(oparg);
            if (parts == NULL)
                return -1;
            for (int i = 0; i < oparg; i++) {
                var *v = &PEEK(oparg - i);
                if (v->kind != V_CONST || !PyUnicode_Check(v->obj)) {
                    Py_DECREF(parts);
                    return sym_fail(t, "BUILD_STRING of non-strings");
                }
                PyTuple_SET_ITEM(parts, i, Py_NewRef(v->obj));
            }
            f->sp -= oparg;
            PyObject *empty = PyUnicode_FromString("");
            PyObject *r = empty ? PyUnicode_Join(empty, parts) : NULL;
            Py_XDECREF(empty);
            Py_DECREF(parts);
            if (sym_const(t, r, &a) < 0)
                return -1;
            PUSH(a);
            break;
        }
        case OP_CALL_FUNCTION_EX: {
            int has_kw = oparg & 1;
            NEED(3 + has_kw);
            var kw = has_kw ? POP() : null_var();
            var args = POP();
            var fnv = POP();
            (void)POP(); /* the NULL slot */
            var *items;
            int n;
            if (to_items(t, &args, &items, &n) < 0)
                return -1;
            var kwd = kw;
            if (has_kw && kwd.kind == V_CONST && PyDict_Check(kwd.obj) && dict_from_const(t, kwd.obj, &kwd) < 0)
                return -1;
            if (has_kw && kwd.kind != V_DICT)
                return sym_fail(t, "**kwargs of an unsupported value");
            int nk = has_kw ? kwd.n : 0;
            var *all = sym_alloc(t, n + nk);
            if (all == NULL)
                return -1;
            memcpy(all, items, (size_t)n * sizeof *all);
            PyObject *kwnames = NULL;
            if (nk > 0) {
                for (int i = 0; i < nk; i++) {
                    if (!PyUnicode_Check(PyTuple_GET_ITEM(kwd.obj, i)))
                        return sym_fail(t, "keywords must be strings (eager will raise)");
                    all[n + i] = kwd.items[i];
                }
                kwnames = kwd.obj;
            }
            if (sym_call(t, &fnv, all, n + nk, kwnames, &a) < 0)
                return -1;
            PUSH(a);
            break;
        }
        case OP_MAKE_FUNCTION: {
            if (oparg & 0x03)
                return sym_fail(t, "nested function with defaults not supported yet");
            int need = 1 + !!(oparg & 0x04) + !!(oparg & 0x08);
            NEED(need);
            var code = POP();
            var clos = null_var();
            if (oparg & 0x08)
                clos = POP();
            if (oparg & 0x04)
                (void)POP();
            if (code.kind != V_CONST || !PyCode_Check(code.obj))
                return sym_fail(t, "MAKE_FUNCTION without a code constant");
            memset(&a, 0, sizeof a);
            a.kind = V_FUNC;
            a.op = SYM_MADE_FUNCTION;
            a.src = -1;
            a.obj = code.obj;
            /* its globals are this frame's: reached through this frame's function */
            if (!f->top && f->func_src < 0 && f->globals != t->globals)
                return sym_fail(t, "nested function in a function reached without a source");
            a.val = f->top ? -1 : f->func_src;
            a.globals = f->globals;
            if (oparg & 0x08) {
                if (clos.kind != V_SEQ)
                    return sym_fail(t, "closure of unsupported values");
                a.items = clos.items;
                a.n = clos.n;
                f->made_closure = 1;
            }
            PUSH(a);
            break;
        }
        case OP_STORE_ATTR: {
            NEED(2);
            a = POP(); /* the object */
            b = POP(); /* the value */
            PyObject *name = PyTuple_GET_ITEM(names, oparg);
            if (a.kind != V_OBJ || PyModule_Check(a.obj) || a.src < 0)
                return sym_fail(t, "attribute assignment on a non-module value");
            if (t->in_gen) /* a generator runs to completion: eager may stop it before this */
                return sym_fail(t, "attribute assignment inside a generator");
            PyObject *descr = _PyType_Lookup(Py_TYPE(a.obj), name);
            if (descr != NULL && Py_TYPE(descr)->tp_descr_set != NULL)
                return sym_fail(t, "assignment to a property %U", name);
            if (b.kind == V_FUNC && b.op == SYM_MADE_FUNCTION)
                return sym_fail(t, "storing a nested function on a module");
            int i;
            for (i = 0; i < t->nattrw; i++) /* one object (sources may differ: DH_G_SAMEOBJ) */
                if (t->attrw[i].obj == a.obj && PyUnicode_Compare(t->attrw[i].name, name) == 0)
                    break;
            int fresh = i == t->nattrw;
            if (fresh) {
                if (t->nattrw >= 256)
                    return sym_fail(t, "too many attribute writes");
                t->nattrw++;
            }
            var *v = sym_alloc(t, 1);
            if (v == NULL)
                return -1;
            *v = b;
            if (fresh)
                t->attrw[i].src = a.src;
            t->attrw[i].obj = a.obj;
            t->attrw[i].name = name;
            t->attrw[i].val = v;
            break;
        }
        case OP_LIST_TO_TUPLE:
            NEED(1);
            if (PEEK(1).kind != V_SEQ)
                return sym_fail(t, "LIST_TO_TUPLE on a non-list");
            PEEK(1).is_list = 0;
            break;
        case OP_CALL_INTRINSIC_1: /* 3.12: LIST_TO_TUPLE became intrinsic 6 ((*a, b), f(*a, b)) */
            NEED(1);
            if (oparg != 6)
                return sym_fail(t, "CALL_INTRINSIC_1 %d not supported", oparg);
            if (PEEK(1).kind != V_SEQ || !PEEK(1).is_list)
                return sym_fail(t, "INTRINSIC_LIST_TO_TUPLE on a non-list");
            PEEK(1).is_list = 0;
            break;
        case OP_BEFORE_WITH: {
            /* with torch.no_grad()/enable_grad()/inference_mode()/set_grad_enabled(b): the
             * graph is the same; grad mode at entry is guarded, outputs never need grad */
            NEED(1);
            a = POP();
            if (a.kind != V_OBJ || !sym_is_grad_ctx(a.obj))
                return sym_fail(t, "with-statement on %s not supported yet",
                                a.kind == V_OBJ ? Py_TYPE(a.obj)->tp_name : "a tracked value");
            /* inference_mode(False) turns grad mode on (like enable_grad): not captured */
            PyObject *mode = PyObject_GetAttrString(a.obj, "mode");
            int on = mode != NULL && PyObject_Not(mode) == 1;
            Py_XDECREF(mode);
            PyErr_Clear();
            if (on)
                return sym_fail(t, "inference_mode(False) turns grad mode on: not captured");
            if (t->nograd++ == 0) /* grad off inside */
                ic_set_grad_enabled(t->g, 0); /* training: no gradient through the block */
            memset(&b, 0, sizeof b);
            b.kind = V_FUNC;
            b.op = SYM_CTX_EXIT;
            b.src = -1;
            b.obj = a.obj;
            PUSH(b);
            if (sym_const(t, Py_NewRef(Py_None), &c) < 0)
                return -1;
            PUSH(c);
            break;
        }
        case OP_IMPORT_NAME: {
            /* import of a module that is already loaded: a constant module */
            NEED(2);
            (void)POP();
            (void)POP();
            PyObject *name = PyTuple_GET_ITEM(names, oparg);
            PyObject *mods = PyImport_GetModuleDict();
            PyObject *m = PyDict_GetItemWithError(mods, name);
            if (m == NULL) {
                PyErr_Clear();
                return sym_fail(t, "import of a module not loaded yet");
            }
            /* "import a.b" binds a; "from a.b import c" reads from a.b (IMPORT_FROM) */
            PyObject *top = m;
            Py_ssize_t dot = PyUnicode_FindChar(name, '.', 0, PyUnicode_GET_LENGTH(name), 1);
            if (dot > 0) {
                PyObject *first = PyUnicode_Substring(name, 0, dot);
                top = first ? PyDict_GetItemWithError(mods, first) : NULL;
                Py_XDECREF(first);
                if (top == NULL) {
                    PyErr_Clear();
                    return sym_fail(t, "import of a module not loaded yet");
                }
            }
            memset(&a, 0, sizeof a);
            a.kind = V_OBJ;
            a.src = -1;
            a.obj = sym_keep(t, Py_NewRef(top));
            a.items = NULL;
            a.n = 0;
            /* remember the full module for IMPORT_FROM */
            a.pos = 0;
            if (a.obj == NULL)
                return -1;
            if (dot > 0) {
                var *full = sym_alloc(t, 1);
                if (full == NULL)
                    return -1;
                memset(full, 0, sizeof *full);
                full->kind = V_OBJ;
                full->src = -1;
                full->obj = sym_keep(t, Py_NewRef(m));
                a.items = full;
            }
            PUSH(a);
            break;
        }
        case OP_IMPORT_FROM: {
            NEED(1);
            var *mod = &PEEK(1);
            var base = mod->items ? mod->items[0] : *mod;
            if (base.kind != V_OBJ || !PyModule_Check(base.obj))
                return sym_fail(t, "IMPORT_FROM of a non-module");
            if (load_attr(t, &base, PyTuple_GET_ITEM(names, oparg), &b) < 0)
                return -1;
            PUSH(b);
            break;
        }
        case OP_BUILD_SET: {
            NEED(oparg);
            PyObject *set = PySet_New(NULL);
            if (set == NULL)
                return -1;
            for (int i = 0; i < oparg; i++) {
                var *v = &PEEK(oparg - i);
                if (v->kind != V_CONST || PySet_Add(set, v->obj) < 0) {
                    PyErr_Clear();
                    Py_DECREF(set);
                    return sym_fail(t, "set of non-constant values");
                }
            }
            f->sp -= oparg;
            PyObject *fs = PyFrozenSet_New(set);
            Py_DECREF(set);
            if (sym_const(t, fs, &a) < 0)
                return -1;
            a.is_list = 1; /* a set (objects.c: sets of constants are held as frozensets) */
            PUSH(a);
            break;
        }
        case OP_SET_ADD:    /* set comprehension: TOS1[-oparg].add(TOS) */
        case OP_SET_UPDATE: { /* {*a, *b}: TOS1[-oparg].update(TOS) */
            NEED(oparg + 1);
            b = POP();
            if (sym_set_add(t, &PEEK(oparg), &b, op == OP_SET_UPDATE) < 0)
                return -1;
            break;
        }
        case OP_LOAD_SUPER_ATTR: { /* 3.12: [super, class, self] -> attribute of super(class, self) */
            NEED(3);
            var self0 = POP(), cls = POP();
            (void)POP();
            if (self0.kind != V_OBJ || cls.obj == NULL || !PyType_Check(cls.obj))
                return sym_fail(t, "super() outside a module method");
            var *sv = sym_alloc(t, 1);
            if (sv == NULL)
                return -1;
            sv[0] = self0;
            memset(&a, 0, sizeof a);
            a.kind = V_SUPER;
            a.src = -1;
            a.obj = cls.obj;
            a.items = sv;
            if (load_attr(t, &a, PyTuple_GET_ITEM(names, oparg >> 2), &b) < 0)
                return -1;
            if (oparg & 1)
                PUSH(null_var());
            PUSH(b);
            break;
        }
        case OP_BINARY_SLICE: {
            NEED(3);
            var stop = POP(), start = POP();
            a = POP();
            if ((start.kind != V_CONST) || (stop.kind != V_CONST))
                return sym_fail(t, "slice with non-constant bounds");
            var k;
            if (sym_const(t, PySlice_New(start.obj, stop.obj, Py_None), &k) < 0)
                return -1;
            if (subscr(t, &a, &k, &c) < 0)
                return -1;
            PUSH(c);
            break;
        }
        case OP_DELETE_SUBSCR: { /* del TOS1[TOS] */
            NEED(2);
            b = POP(); /* key */
            a = POP(); /* container */
            if (a.kind == V_SEQ && a.is_list && a.obj == NULL && b.kind == V_CONST) {
                if (sym_list_store(t, &a, &b, NULL) < 0)
                    return -1;
                break;
            }
            if (a.kind == V_DICT && b.kind == V_CONST) {
                if (dict_update(t, &a, b.obj, NULL) < 0)
                    return -1;
                break;
            }
            return sym_fail(t, "del of an item of an unsupported container");
        }
        case OP_STORE_SUBSCR:
        case OP_STORE_SLICE: {
            /* STORE_SUBSCR: TOS1[TOS] = TOS2; STORE_SLICE (3.12): TOS2[TOS1:TOS] = TOS3 */
            var k;
            if (op == OP_STORE_SLICE) {
                NEED(4);
                var stop = POP(), start = POP();
                if (start.kind != V_CONST || stop.kind != V_CONST)
                    return sym_fail(t, "slice with non-constant bounds");
                if (sym_const(t, PySlice_New(start.obj, stop.obj, Py_None), &k) < 0)
                    return -1;
            } else {
                NEED(3);
                k = POP();
            }
            a = POP(); /* container */
            b = POP(); /* value */
            if (a.kind == V_TENSOR && sym_tensor_setitem(t, &a, &k, &b) == 0)
                break;
            if (a.kind == V_SEQ && a.is_list && a.obj == NULL && k.kind == V_CONST) {
                if (sym_list_store(t, &a, &k, &b) == 0)
                    break;
                return -1;
            }
            if (a.kind == V_DICT && k.kind == V_CONST && op == OP_STORE_SUBSCR) {
                if (dict_update(t, &a, k.obj, &b) == 0)
                    break;
                return -1;
            }
            if (a.kind != V_TENSOR)
                sym_fail(t, "item assignment to a %s", a.kind == V_SEQ ? "list" : a.kind == V_DICT ? "dict" : "non-tensor");
            /* run the store eagerly between two graphs */
            if (f->top && t->failed && !PyErr_Occurred() && can_break(t) && a.kind == V_TENSOR) {
                var *ops = sym_alloc(t, 3);
                if (ops == NULL)
                    return -1;
                ops[0] = a;
                ops[1] = k;
                ops[2] = b;
                t->brk.kind = DH_BRK_STORE;
                t->brk.pc_next = next;
                t->brk.fn = &ops[0];
                t->brk.args = &ops[1];
                t->brk.nargs = 2;
                return record_break_state(t, f);
            }
            return -1;
        }
        case OP_UNARY_INVERT: {
            NEED(1);
            a = POP();
            sym_resolve(t, &a);
            if (a.kind == V_CONST) {
                if (sym_const(t, PyNumber_Invert(a.obj), &b) < 0) {
                    PyErr_Clear();
                    return sym_fail(t, "~ of a constant raised");
                }
            } else if (a.kind == V_TENSOR) {
                ic_op iop = ic_value_meta(t->g, a.val)->dtype == IC_BOOL ? IC_OP_LOGICAL_NOT : IC_OP_BITWISE_NOT;
                ic_val r = ic_unary(t->g, iop, a.val);
                if (r < 0)
                    return sym_check_graph(t);
                memset(&b, 0, sizeof b);
                b.kind = V_TENSOR;
                b.src = -1;
                b.val = r;
                b.oid = sym_new_object(t, r);
            } else {
                return sym_fail(t, "~ of an unsupported value");
            }
            PUSH(b);
            break;
        }
        case OP_BINARY_SUBSCR:
            NEED(2);
            b = POP();
            a = POP();
            if (subscr(t, &a, &b, &c) < 0)
                return -1;
            PUSH(c);
            break;
        case OP_UNPACK_SEQUENCE: {
            NEED(1);
            a = POP();
            var *items;
            int n;
            if (to_items(t, &a, &items, &n) < 0)
                return -1;
            if (n != oparg)
                return sym_fail(t, "unpacking %d values into %d (eager will raise)", n, oparg);
            for (int i = n - 1; i >= 0; i--)
                PUSH(items[i]);
            break;
        }
        case OP_GET_ITER: {
            NEED(1);
            a = POP();
            var *items;
            int n;
            if (to_items(t, &a, &items, &n) < 0)
                return -1;
            memset(&b, 0, sizeof b);
            b.kind = V_ITER;
            b.src = -1;
            b.items = items;
            b.n = n;
            /* over a list the caller can see (an argument, a global): it may grow while the
             * loop runs eagerly after a break (is_list marks it) */
            b.is_list = (a.kind == V_SEQ && a.is_list && a.src >= 0) ||
                        (a.kind == V_CONST && PyList_Check(a.obj));
            PUSH(b);
            break;
        }
        case OP_FOR_ITER: {
            NEED(1);
            var *it = &PEEK(1);
            if (it->kind != V_ITER)
                return sym_fail(t, "FOR_ITER on a non-iterator");
            if (it->pos < it->n) {
                a = it->items[it->pos++];
                PUSH(a);
            } else {
                (void)POP();
                next = next + oparg + (DH_PY312 ? 1 : 0);
            }
            break;
        }
        case OP_JUMP_FORWARD:
            next = next + oparg;
            break;
        case OP_PUSH_EXC_INFO: /* (exc) -> (previous exc: none here, exc) */
            NEED(1);
            a = POP();
            if (sym_const(t, Py_NewRef(Py_None), &b) < 0)
                return -1;
            PUSH(b);
            PUSH(a);
            break;
        case OP_CHECK_EXC_MATCH: { /* (exc, types) -> (exc, isinstance(exc, types)) */
            NEED(2);
            b = POP();
            a = PEEK(1);
            if (a.kind != V_CONST || !PyExceptionInstance_Check(a.obj) || b.kind == V_TENSOR ||
                b.obj == NULL)
                return sym_fail(t, "except clause on an unsupported value");
            int r = PyObject_IsInstance(a.obj, b.obj);
            if (r < 0) {
                PyErr_Clear();
                return sym_fail(t, "except clause match raised");
            }
            if (sym_const(t, PyBool_FromLong(r), &c) < 0)
                return -1;
            PUSH(c);
            break;
        }
        case OP_POP_EXCEPT:
            NEED(1);
            (void)POP();
            break;
        case OP_RERAISE:
            return sym_fail(t, "an exception is re-raised (eager raises it)");
        case OP_JUMP_BACKWARD:
        case OP_JUMP_BACKWARD_NO_INTERRUPT:
            next = next - oparg;
            break;
        case OP_POP_JUMP_IF_FALSE:
        case OP_POP_JUMP_IF_TRUE:
        case OP_POP_JUMP_FORWARD_IF_FALSE:
        case OP_POP_JUMP_FORWARD_IF_TRUE:
        case OP_POP_JUMP_BACKWARD_IF_FALSE:
        case OP_POP_JUMP_BACKWARD_IF_TRUE: {
            NEED(1);
            a = POP();
            int r;
            int want = op == OP_POP_JUMP_IF_TRUE || op == OP_POP_JUMP_FORWARD_IF_TRUE ||
                       op == OP_POP_JUMP_BACKWARD_IF_TRUE;
            int back = op == OP_POP_JUMP_BACKWARD_IF_FALSE || op == OP_POP_JUMP_BACKWARD_IF_TRUE;
            if (truthy(t, &a, &r) < 0) {
                if (f->top && a.kind == V_TENSOR && !PyErr_Occurred() && can_break(t)) {
                    var *cond = sym_alloc(t, 1);
                    if (cond == NULL)
                        return -1;
                    *cond = a;
                    t->brk.kind = DH_BRK_JUMP;
                    t->brk.pc_next = next;
                    t->brk.pc_taken = back ? next - oparg : next + oparg;
                    t->brk.jump_when = want;
                    t->brk.fn = cond;
                    return record_break_state(t, f);
                }
                return -1;
            }
            if (r == want)
                next = back ? next - oparg : next + oparg;
            break;
        }
        case OP_POP_JUMP_IF_NONE:
        case OP_POP_JUMP_IF_NOT_NONE:
        case OP_POP_JUMP_FORWARD_IF_NONE:
        case OP_POP_JUMP_FORWARD_IF_NOT_NONE:
        case OP_POP_JUMP_BACKWARD_IF_NONE:
        case OP_POP_JUMP_BACKWARD_IF_NOT_NONE: {
            NEED(1);
            a = POP();
            int isnone = a.kind == V_CONST && a.obj == Py_None;
            int want = op == OP_POP_JUMP_IF_NONE || op == OP_POP_JUMP_FORWARD_IF_NONE ||
                       op == OP_POP_JUMP_BACKWARD_IF_NONE;
            int back = op == OP_POP_JUMP_BACKWARD_IF_NONE || op == OP_POP_JUMP_BACKWARD_IF_NOT_NONE;
            if (isnone == want)
                next = back ? next - oparg : next + oparg;
            break;
        }
        case OP_JUMP_IF_FALSE_OR_POP:
        case OP_JUMP_IF_TRUE_OR_POP: {
            NEED(1);
            int r;
            if (truthy(t, &PEEK(1), &r) < 0)
                return -1;
            if (r == (op == OP_JUMP_IF_TRUE_OR_POP))
                next = next + oparg;
            else
                (void)POP();
            break;
        }
        default:
            return sym_fail(t, "unsupported bytecode %s", opnames[opcode] ? opnames[opcode] : "?");
        }
        pc = next;
    }
    return sym_fail(t, "fell off the end of the bytecode");
}

/* ---- inlining ----------------------------------------------------------------------- */

static int inline_code(trace *t, PyCodeObject *code, PyObject *globals, PyObject *func,
                       int fn_src, var *closure, int nclosure, const var *self, var *args,
                       int nargs, PyObject *kwnames, var *out);

int sym_inline(trace *t, PyObject *func, int fn_src, const var *self, var *args, int nargs,
               PyObject *kwnames, var *out) {
    if (fn_src >= 0) {
        /* the function object is identity-guarded; its code and defaults can still be
         * reassigned: guard them too (getattr re-run by the guard) */
        static PyObject *s_code, *s_defaults;
        if (s_code == NULL) {
            s_code = PyUnicode_InternFromString("__code__");
            s_defaults = PyUnicode_InternFromString("__defaults__");
            if (s_code == NULL || s_defaults == NULL)
                return -1;
        }
        int sc = sym_source(t, DH_S_ATTR, fn_src, 2, s_code);
        int sd = sym_source(t, DH_S_ATTR, fn_src, 2, s_defaults);
        if (sc < 0 || sd < 0 || sym_guard_id(t, sc, PyFunction_GET_CODE(func)) < 0)
            return -1;
        PyObject *defs = PyFunction_GET_DEFAULTS(func);
        if (sym_guard_id(t, sd, defs ? defs : Py_None) < 0)
            return -1;
    }
    return inline_code(t, (PyCodeObject *)PyFunction_GET_CODE(func), PyFunction_GET_GLOBALS(func),
                       func, fn_src, NULL, 0, self, args, nargs, kwnames, out);
}

int sym_inline_made(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    /* its globals: those of the frame that made it, whose function has source fn->val
     * (-1: the top frame) */
    return inline_code(t, (PyCodeObject *)fn->obj, fn->globals ? fn->globals : t->globals, NULL,
                       fn->val, fn->items, fn->n, NULL, args, nargs, kwnames, out);
}

static int inline_code(trace *t, PyCodeObject *code, PyObject *globals, PyObject *func,
                       int fn_src, var *closure, int nclosure, const var *self, var *args,
                       int nargs, PyObject *kwnames, var *out) {
    if (t->depth >= dh_limit.inline_depth || t->depth >= SYM_INLINE_DEPTH)
        return sym_fail(t, "inlining deeper than %d calls (recursion? torchc.config.inline_depth)",
                        dh_limit.inline_depth);
    /* generators (genexprs: all(f(x) for x in xs)) run to completion when called and
     * return an iterator over their values: exact when the consumer drains them; one that
     * stops early only skips graph values never read (a Python-level error in a later item
     * fails the trace: eager runs) */
    if (code->co_flags & (CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
        return sym_fail(t, "call to coroutine %U", code->co_name);
    /* try/except/with: only the path without exceptions is traced; anything that would
     * raise fails the trace (eager then runs, raising and handling as usual) */
    if (dh_code_is_disabled(code))
        return sym_fail(t, "call to %U, which is torchc.disable'd", code->co_qualname);
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    int npos = nargs - nkw;
    int extra_kw[64], nextra_kw = 0;
    if (nkw > 64)
        return sym_fail(t, "too many keyword arguments");
    sframe *f = calloc(1, sizeof *f);
    if (f == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = -1;
    f->code = code;
    f->top = 0;
    f->globals = globals;
    f->func = func;
    f->func_src = fn_src;
    f->closure = closure;
    f->nclosure = nclosure;
    f->gen = (code->co_flags & CO_GENERATOR) != 0;
    f->nlocals = (int)code->co_nlocalsplus;
    f->locals = sym_alloc(t, f->nlocals);
    if (f->locals == NULL)
        goto done;
    /* bind: [self] + positionals, keywords by name, then defaults */
    int argc = code->co_argcount, kwonly = code->co_kwonlyargcount;
    int given = npos + (self ? 1 : 0);
    int i = 0;
    if (self) { /* one positional list [self] + args (self may land in *args) */
        var *all = sym_alloc(t, nargs + 1);
        if (all == NULL)
            goto done;
        all[0] = *self;
        if (nargs > 0)
            memcpy(all + 1, args, (size_t)nargs * sizeof(var));
        args = all;
        npos = given;
        self = NULL;
    }
    for (int k = 0; k < npos && i < argc; k++)
        f->locals[i++] = args[k];
    int extra_pos = given - argc;
    if (extra_pos > 0) {
        if (!(code->co_flags & CO_VARARGS)) {
            sym_fail(t, "%U() takes %d positional arguments but %d were given (eager will raise)",
                     code->co_name, argc, given);
            goto done;
        }
        var *items = sym_alloc(t, extra_pos);
        if (items == NULL)
            goto done;
        for (int k = 0; k < extra_pos; k++)
            items[k] = args[npos - extra_pos + k];
        var *va = &f->locals[argc + kwonly];
        va->kind = V_SEQ;
        va->src = -1;
        va->n = extra_pos;
        va->items = items;
    } else if (code->co_flags & CO_VARARGS) {
        var *va = &f->locals[argc + kwonly];
        if (sym_const(t, PyTuple_New(0), va) < 0)
            goto done;
    }
    for (int k = 0; k < nkw; k++) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int j = self ? 1 : 0; j < argc + kwonly; j++)
            if (PyUnicode_Compare(PyTuple_GET_ITEM(code->co_localsplusnames, j), kn) == 0)
                found = j;
        if (found < 0 && (code->co_flags & CO_VARKEYWORDS)) {
            extra_kw[nextra_kw++] = k;
            continue;
        }
        if (found < 0) {
            sym_fail(t, "%U() got an unexpected keyword argument %R (eager will raise)",
                     code->co_name, kn);
            goto done;
        }
        if (f->locals[found].kind != V_UNSET) {
            sym_fail(t, "%U() got multiple values for %R", code->co_name, kn);
            goto done;
        }
        f->locals[found] = args[npos + k];
    }
    if (code->co_flags & CO_VARKEYWORDS) {
        /* **kwargs: a dict of the keywords no parameter took */
        PyObject *keys = PyTuple_New(nextra_kw);
        var *vals = sym_alloc(t, nextra_kw);
        if (keys == NULL || vals == NULL || sym_keep(t, keys) == NULL)
            goto done;
        for (int k = 0; k < nextra_kw; k++) {
            PyTuple_SET_ITEM(keys, k, Py_NewRef(PyTuple_GET_ITEM(kwnames, extra_kw[k])));
            vals[k] = args[npos + extra_kw[k]];
        }
        var *kwv = &f->locals[argc + kwonly + ((code->co_flags & CO_VARARGS) ? 1 : 0)];
        memset(kwv, 0, sizeof *kwv);
        kwv->kind = V_DICT;
        kwv->src = -1;
        kwv->obj = keys;
        kwv->items = vals;
        kwv->n = nextra_kw;
    }
    PyObject *defs = func ? PyFunction_GET_DEFAULTS(func) : NULL;
    PyObject *kwdefs = func ? PyFunction_GET_KW_DEFAULTS(func) : NULL;
    int ndefs = defs ? (int)PyTuple_GET_SIZE(defs) : 0;
    for (int j = 0; j < argc + kwonly; j++) {
        if (f->locals[j].kind != V_UNSET)
            continue;
        PyObject *d = NULL;
        if (j < argc && j >= argc - ndefs)
            d = PyTuple_GET_ITEM(defs, j - (argc - ndefs));
        else if (j >= argc && kwdefs)
            d = PyDict_GetItemWithError(kwdefs, PyTuple_GET_ITEM(code->co_localsplusnames, j));
        if (d == NULL) {
            PyErr_Clear();
            sym_fail(t, "%U() missing argument %R (eager will raise)", code->co_name,
                     PyTuple_GET_ITEM(code->co_localsplusnames, j));
            goto done;
        }
        /* defaults belong to the (guarded) function object: constants */
        if (sym_wrap(t, d, -1, &f->locals[j]) < 0)
            goto done;
    }
    t->depth++;
    t->in_gen += f->gen;
    PyObject *saved_globals = t->cur_globals;
    t->cur_globals = globals;
    rc = run(t, f, out);
    t->cur_globals = saved_globals;
    t->in_gen -= f->gen;
    t->depth--;
done:
    sym_fx_forget(t, f, sizeof *f); /* its stack dies with it */
    free(f);
    return rc;
}

static PyObject *str_forward, *str_hooks[4];

int sym_inline_module(trace *t, const var *mod, var *args, int nargs, PyObject *kwnames,
                      var *out) {
    if (str_forward == NULL) {
        str_forward = PyUnicode_InternFromString("forward");
        str_hooks[0] = PyUnicode_InternFromString("_forward_hooks");
        str_hooks[1] = PyUnicode_InternFromString("_forward_pre_hooks");
        str_hooks[2] = PyUnicode_InternFromString("_backward_hooks");
        str_hooks[3] = PyUnicode_InternFromString("_backward_pre_hooks");
        if (!str_forward || !str_hooks[3])
            return -1;
    }
    if (!sym_is_nn_module(mod->obj)) {
        /* a callable object: inline type(obj).__call__ */
        PyObject *call = PyUnicode_InternFromString("__call__");
        PyObject *fn = call ? _PyType_Lookup(Py_TYPE(mod->obj), call) : NULL;
        if (fn == NULL || !PyFunction_Check(fn)) {
            Py_XDECREF(call);
            return sym_fail(t, "call of a %s object", Py_TYPE(mod->obj)->tp_name);
        }
        int s = sym_source(t, DH_S_ATTR, mod->src, 1, call);
        Py_DECREF(call);
        return s < 0 ? -1 : sym_inline(t, fn, s, mod, args, nargs, kwnames, out);
    }
    for (int i = 0; i < 4; i++) {
        PyObject *h = dh_module_getattr(mod->obj, str_hooks[i]);
        int busy = h != NULL && PyDict_Check(h) && PyDict_GET_SIZE(h) > 0;
        Py_XDECREF(h);
        if (busy)
            return sym_fail(t, "module %s has hooks", Py_TYPE(mod->obj)->tp_name);
        /* hooks registered later (output capturing on a second call) must not reuse a
         * trace that inlined this forward without them */
        int hs = mod->src >= 0 ? sym_source(t, DH_S_ATTR, mod->src, 0, str_hooks[i]) : -1;
        if (mod->src >= 0 && (hs < 0 || sym_guard_len(t, hs, 0) < 0))
            return -1;
    }
    if (sym_global_hooks_guard(t) < 0)
        return -1;
    PyObject *fwd = _PyType_Lookup(Py_TYPE(mod->obj), str_forward);
    if (fwd == NULL || !PyFunction_Check(fwd))
        return sym_fail(t, "module %s has no Python forward", Py_TYPE(mod->obj)->tp_name);
    int s = sym_source(t, DH_S_ATTR, mod->src, 1, str_forward);
    if (s < 0)
        return -1;
    return sym_inline(t, fwd, s, mod, args, nargs, kwnames, out);
}

/* ---- output spec ------------------------------------------------------------------- */

typedef struct dh_entry_brk {
    PyObject *resume[2];
} dh_entry_brk;

typedef struct outbuf {
    dh_outspec *o;
    int n, cap;
} outbuf;

static int out_reserve(trace *t, outbuf *ob, int k) {
    if (ob->n + k > ob->cap) {
        int cap = ob->cap ? ob->cap * 2 : 8;
        while (cap < ob->n + k)
            cap *= 2;
        dh_outspec *n = realloc(ob->o, (size_t)cap * sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        ob->o = n;
        ob->cap = cap;
    }
    int at = ob->n;
    memset(ob->o + at, 0, (size_t)k * sizeof *ob->o);
    ob->n += k;
    return at;
}

static int fill_out(trace *t, outbuf *ob, int at, const var *v_in, ic_val *outvals, int *nout) {
    dh_outspec *o = &ob->o[at];
    var rv = *v_in, *v = &rv;
    sym_resolve(t, v);
    if ((v->kind == V_DICT || v->kind == V_SEQ) && v->src >= 0 && v->src < t->capsrc &&
        t->srcdone[v->src] && t->srcvar[v->src].kind == v->kind &&
        t->srcvar[v->src].items == v->items && t->srcvar[v->src].n == v->n) {
        /* a dict/list read from the frame as it was: the object itself (a copy would lose
         * its identity: a collector dict returned by a getter, then appended to) */
        o->kind = DH_O_SOURCE;
        o->index = v->src;
        return 0;
    }
    switch (v->kind) {
    case V_TENSOR: {
        if (v->src >= 0 && t->srcdone[v->src] && t->srcvar[v->src].kind == V_TENSOR &&
            t->srcvar[v->src].oid == v->oid) {
            /* the input object itself (maybe updated in place: copied back first) */
            o->kind = DH_O_SOURCE;
            o->index = v->src;
            return 0;
        }
        if (ic_value_op(t->g, v->val) == IC_OP_INPUT) {
            if (v->src < 0) {
                /* an input reached through a no-op (detach/contiguous): find its source */
                int k = 0;
                for (ic_val x = 0; x < v->val; x++)
                    if (ic_value_op(t->g, x) == IC_OP_INPUT)
                        k++;
                if (v->oid > 0 && v->oid != t->input_oid[k]) {
                    /* another object over the input's data (detach()): a real one, as eager */
                    int child = out_reserve(t, ob, 1);
                    if (child < 0)
                        return -1;
                    o = &ob->o[at];
                    o->kind = DH_O_CALLM;
                    o->index = child;
                    o->obj = Py_BuildValue("(s())", "detach");
                    if (o->obj == NULL)
                        return -1;
                    ob->o[child].kind = DH_O_SOURCE;
                    ob->o[child].index = t->input_src[k];
                    return 0;
                }
                o->kind = DH_O_SOURCE;
                o->index = t->input_src[k];
                return 0;
            }
            o->kind = DH_O_SOURCE;
            o->index = v->src;
            return 0;
        }
        if (sym_is_view_of_input(t, v->val) ||
            (v->val < t->capvals && t->view_desc[v->val] != NULL && v->oid > 0 &&
             t->obj_aliased[v->oid])) {
            /* replay the view ops on the real base (an input, or a graph output): the caller
             * (or the eager code after a break) gets a real view sharing its base's data */
            PyObject *desc = v->val < t->capvals ? t->view_desc[v->val] : NULL;
            if (desc == NULL)
                return sym_fail(t, "returning a view of an input (untracked view)");
            if (t->nsym > 0) /* the view's arguments are hint sizes */
                return sym_fail(t, "a view returned with dynamic shapes (specializing)");
            ic_val base = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(desc, 0));
            int child = out_reserve(t, ob, 1);
            if (child < 0)
                return -1;
            o = &ob->o[at];
            o->kind = DH_O_CALLM;
            o->index = child;
            o->obj = PyTuple_GetSlice(desc, 1, 3);
            if (o->obj == NULL)
                return -1;
            if (ic_value_op(t->g, base) == IC_OP_INPUT) {
                int k = 0;
                for (ic_val x = 0; x < base; x++)
                    if (ic_value_op(t->g, x) == IC_OP_INPUT)
                        k++;
                ob->o[child].kind = DH_O_SOURCE;
                ob->o[child].index = t->input_src[k];
                return 0;
            }
            var bv;
            memset(&bv, 0, sizeof bv);
            bv.kind = V_TENSOR;
            bv.src = -1;
            bv.val = base;
            return fill_out(t, ob, child, &bv, outvals, nout);
        }
        for (int i = 0; i < *nout; i++)
            if (outvals[i] == v->val) {
                o->kind = DH_O_GRAPH;
                o->index = i;
                return 0;
            }
        if (*nout >= dh_limit.max_outputs)
            return sym_fail(t, "more than %d outputs (torchc.config.max_outputs)", dh_limit.max_outputs);
        if (ic_output(t->g, v->val) < 0)
            return sym_check_graph(t);
        outvals[*nout] = v->val;
        o->kind = DH_O_GRAPH;
        o->index = (*nout)++;
        return 0;
    }
    case V_CONST:
    case V_OBJ:
    case V_FUNC:
        if (v->kind == V_CONST && sym_ctxvar_pending(t, v))
            return sym_fail(t, "a ContextVar token leaves the trace");
        if (v->kind == V_FUNC && v->op == SYM_MADE_FUNCTION)
            return sym_fail(t, "a nested function is live across a graph break");
        if (v->kind != V_CONST && v->src >= 0) {
            /* re-read from the frame each call: no strong reference in the cache entry */
            o->kind = DH_O_SOURCE;
            o->index = v->src;
            return 0;
        }
        if (v->kind == V_CONST && v->is_list && PyFrozenSet_CheckExact(v->obj)) {
            /* a set of constants (held as a frozenset): a fresh set(...) each call */
            int child = out_reserve(t, ob, 1);
            if (child < 0)
                return -1;
            o = &ob->o[at];
            o->kind = DH_O_WRAP;
            o->index = child;
            o->obj = Py_NewRef((PyObject *)&PySet_Type);
            ob->o[child].kind = DH_O_CONST;
            ob->o[child].obj = Py_NewRef(v->obj);
            return 0;
        }
        o->kind = DH_O_CONST;
        o->obj = Py_NewRef(v->obj);
        return 0;
    case V_NULL:
        o->kind = DH_O_CONST;
        o->obj = Py_NewRef(Py_None);
        return 0;
    case V_ITER:
    case V_METHOD: {
        int child = out_reserve(t, ob, 1);
        if (child < 0)
            return -1;
        o = &ob->o[at];
        o->index = child;
        if (v->kind == V_ITER) {
            var seq;
            memset(&seq, 0, sizeof seq);
            seq.kind = V_SEQ;
            seq.src = -1;
            seq.n = v->n - v->pos;
            seq.items = v->items + v->pos;
            o->kind = DH_O_ITER;
            return fill_out(t, ob, child, &seq, outvals, nout);
        }
        o->kind = PyFunction_Check(v->obj) ? DH_O_BOUND : DH_O_ATTR;
        o->obj = Py_NewRef(v->obj);
        return fill_out(t, ob, child, &v->items[0], outvals, nout);
    }
    case V_DICT: {
        int first = out_reserve(t, ob, v->n);
        if (first < 0)
            return -1;
        o = &ob->o[at];
        o->kind = DH_O_DICT;
        o->index = first;
        o->count = v->n;
        o->obj = Py_NewRef(v->obj);
        for (int i = 0; i < v->n; i++)
            if (fill_out(t, ob, first + i, &v->items[i], outvals, nout) < 0)
                return -1;
        return 0;
    }
    case V_REC: { /* class(**fields), built after the graph runs */
        int child = out_reserve(t, ob, 1);
        if (child < 0)
            return -1;
        o = &ob->o[at];
        o->kind = DH_O_KWCALL;
        o->index = child;
        o->obj = Py_NewRef(sym_record_class(v));
        var kw = *v;
        kw.kind = V_DICT;
        kw.obj = PyTuple_GET_ITEM(v->obj, 1);
        return fill_out(t, ob, child, &kw, outvals, nout);
    }
    case V_SEQ: {
        if (v->obj != NULL && PyType_Check(v->obj)) { /* a named tuple: type(tuple) */
            int child = out_reserve(t, ob, 1);
            if (child < 0)
                return -1;
            o = &ob->o[at];
            o->kind = DH_O_WRAP;
            o->index = child;
            o->obj = Py_NewRef(v->obj);
            var plain = *v;
            plain.obj = NULL;
            return fill_out(t, ob, child, &plain, outvals, nout);
        }
        int first = out_reserve(t, ob, v->n);
        if (first < 0)
            return -1;
        o = &ob->o[at]; /* may have moved */
        o->kind = v->is_list ? DH_O_LIST : DH_O_TUPLE;
        o->index = first;
        o->count = v->n;
        for (int i = 0; i < v->n; i++)
            if (fill_out(t, ob, first + i, &v->items[i], outvals, nout) < 0)
                return -1;
        return 0;
    }
    case V_SYM: {
        ic_dim d = t->symv[v->val];
        o->kind = DH_O_SYM;
        o->obj = Py_BuildValue("(LLLLL)", (long long)d.coef, (long long)d.exp[0], (long long)d.exp[1],
                               (long long)d.exp[2], (long long)d.exp[3]);
        return o->obj ? 0 : -1;
    }
    default:
        return sym_fail(t, "returning an unsupported value");
    }
}

/* Outspec of the break state: (fn/cond, args..., stack..., locals...) and resume code. */
static int fill_break(trace *t, outbuf *ob, ic_val *outvals, int *nout, dh_entry_brk *eb) {
    sym_break *b = &t->brk;
    int n = 1 + b->nargs + b->nstack + b->nlocals;
    int first = out_reserve(t, ob, n);
    if (first < 0)
        return -1;
    ob->o[0].kind = DH_O_TUPLE;
    ob->o[0].index = first;
    ob->o[0].count = n;
    int k = first;
    if (fill_out(t, ob, k++, b->fn, outvals, nout) < 0)
        return -1;
    for (int i = 0; i < b->nargs; i++)
        if (fill_out(t, ob, k++, &b->args[i], outvals, nout) < 0)
            return -1;
    unsigned char stack_null[STACK_MAX + 1], *unbound = calloc((size_t)b->nlocals + 1, 1);
    if (unbound == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = -1;
    for (int i = 0; i < b->nstack; i++) {
        var it = b->stack[i];
        stack_null[i] = it.kind == V_NULL ? 1 : it.kind == V_ITER ? 2 : 0;
        if (it.kind == V_ITER && it.is_list) {
            sym_fail(t, "a graph break inside a loop over a list the caller sees (it may change)");
            goto done;
        }
        if (it.kind == V_ITER) { /* the items still to come, as a tuple; GET_ITER in the prologue */
            it.kind = V_SEQ;
            it.items = it.items + it.pos;
            it.n = it.n - it.pos;
            it.pos = 0;
            it.is_list = 0;
        }
        if (fill_out(t, ob, k++, &it, outvals, nout) < 0)
            goto done;
    }
    for (int i = 0; i < b->nlocals; i++) {
        var *l = &b->locals[i];
        if (l->kind == V_UNSET && t->localsplus[i] != NULL) {
            /* never read by the trace: pass the frame's value through */
            int s = sym_source(t, DH_S_LOCAL, -1, i, NULL);
            if (s < 0)
                goto done;
            ob->o[k].kind = DH_O_SOURCE;
            ob->o[k++].index = s;
            continue;
        }
        if (l->kind == V_UNSET || l->kind == V_NULL) {
            unbound[i] = 1;
            ob->o[k].kind = DH_O_CONST;
            ob->o[k++].obj = Py_NewRef(Py_None);
            continue;
        }
        if (fill_out(t, ob, k++, l, outvals, nout) < 0)
            goto done;
    }
    if (b->kind == DH_BRK_CALL || b->kind == DH_BRK_BINOP) {
        stack_null[b->nstack] = 0; /* the call's result */
        eb->resume[0] = dh_make_resume(t->code, t->globals, b->pc_next, b->nlocals, unbound,
                                       b->nstack + 1, stack_null);
        if (eb->resume[0] == NULL)
            goto done;
    } else if (b->kind == DH_BRK_STORE) {
        eb->resume[0] = dh_make_resume(t->code, t->globals, b->pc_next, b->nlocals, unbound,
                                       b->nstack, stack_null);
        if (eb->resume[0] == NULL)
            goto done;
    } else {
        eb->resume[0] = dh_make_resume(t->code, t->globals, b->pc_next, b->nlocals, unbound,
                                       b->nstack, stack_null);
        eb->resume[1] = eb->resume[0] ? dh_make_resume(t->code, t->globals, b->pc_taken,
                                                       b->nlocals, unbound, b->nstack, stack_null)
                                      : NULL;
        if (eb->resume[1] == NULL)
            goto done;
    }
    rc = 0;
done:
    free(unbound);
    return rc;
}

/* Inputs whose object was updated in place: their final value becomes an output and is
 * copied back into the caller's tensor after the kernels (as eager would have written). */
typedef struct mutlist {
    int n, cap; /* cap: dh_limit.max_outputs at most */
    int *src, *from;
} mutlist;

static int mut_room(trace *t, mutlist *m) {
    if (m->n < m->cap)
        return 1;
    int cap = m->cap ? 2 * m->cap : 16;
    if (m->n >= dh_limit.max_outputs) {
        sym_fail(t, "more than %d in-place updated inputs (torchc.config.max_outputs)", dh_limit.max_outputs);
        return 0;
    }
    int *s = realloc(m->src, (size_t)cap * sizeof *s);
    if (s != NULL)
        m->src = s;
    int *f = s ? realloc(m->from, (size_t)cap * sizeof *f) : NULL;
    if (f == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    m->from = f;
    m->cap = cap;
    return 1;
}

static void record_mutations(trace *t, ic_val *outvals, int *nout, mutlist *m) {
    for (int i = 0; i < t->ninputs; i++) {
        int oid = t->input_oid[i];
        ic_val now = t->obj_val[oid];
        if (ic_value_op(t->g, now) == IC_OP_INPUT && now == t->obj_val[oid] &&
            ic_value_meta(t->g, now) != NULL) {
            /* unchanged, or replaced by another input's value */
            int k = -1;
            for (int j = 0, c = 0; j <= now; j++)
                if (ic_value_op(t->g, j) == IC_OP_INPUT) {
                    if (j == now)
                        k = c;
                    c++;
                }
            if (k == i)
                continue;
            if (k < 0) {
                sym_fail(t, "an in-place updated input not found");
                return;
            }
            if (!mut_room(t, m))
                return;
            m->src[m->n] = t->input_src[i];
            m->from[m->n++] = -1 - t->input_src[k];
            continue;
        }
        int idx = -1;
        for (int j = 0; j < *nout; j++)
            if (outvals[j] == now)
                idx = j;
        if (!mut_room(t, m)) /* (also when the value is an output already: m->src grows) */
            return;
        if (idx < 0) {
            if (*nout >= dh_limit.max_outputs) {
                sym_fail(t, "more than %d outputs (torchc.config.max_outputs)", dh_limit.max_outputs);
                return;
            }
            if (ic_output(t->g, now) < 0) {
                sym_check_graph(t);
                return;
            }
            outvals[*nout] = now;
            idx = (*nout)++;
        }
        m->src[m->n] = t->input_src[i];
        m->from[m->n++] = idx;
    }
}

/* The trace took tensors from different sources to be different objects (an object seen
 * twice became one, with an ALIAS guard): the arguments must stay distinct, and an input
 * updated in place must not share memory with another input (views passed together). */
static void add_distinct_guard(trace *t, const mutlist *m) {
    PyObject *args = PyList_New(0), *muts = PyList_New(0), *ins = PyList_New(0), *spec = NULL;
    if (args == NULL || muts == NULL || ins == NULL)
        goto done;
    for (int i = 0; i < t->ninputs; i++) {
        int s = t->input_src[i], r = s;
        while (r >= 0 && t->src[r].kind != DH_S_LOCAL && t->src[r].kind != DH_S_GLOBAL &&
               t->src[r].kind != DH_S_CLOSURE)
            r = t->src[r].base;
        PyObject *si = PyLong_FromLong(s);
        /* an overlapping input the graph never reads (passed through, returned as itself)
         * is fine: the copy-back after the kernels updates the memory it shares */
        ic_val iv = ic_graph_input(t->g, i);
        int read = iv != IC_NONE && ic_value_num_uses(t->g, iv) > 0;
        if (si == NULL || (read && PyList_Append(ins, si) < 0) ||
            (r >= 0 && t->src[r].kind == DH_S_LOCAL && PyList_Append(args, si) < 0)) {
            Py_XDECREF(si);
            goto done;
        }
        Py_DECREF(si);
    }
    for (int i = 0; i < m->n; i++) {
        PyObject *si = PyLong_FromLong(m->src[i]);
        if (si == NULL || PyList_Append(muts, si) < 0) {
            Py_XDECREF(si);
            goto done;
        }
        Py_DECREF(si);
    }
    if (PyList_GET_SIZE(args) < 2 && (m->n == 0 || PyList_GET_SIZE(ins) < 2))
        goto done; /* nothing to check */
    if (m->n == 0)
        PyList_SetSlice(ins, 0, PyList_GET_SIZE(ins), NULL);
    spec = Py_BuildValue("(NNN)", PyList_AsTuple(args), PyList_AsTuple(muts), PyList_AsTuple(ins));
    if (spec == NULL)
        goto done;
    if (!dh_distinct_ok(spec, (PyObject *const *)t->srcobj)) {
        sym_fail(t, "an input updated in place shares memory with another input (eager decides)");
        goto done;
    }
    if (t->nguards == t->capguards) {
        dh_guard *n = realloc(t->guards, (size_t)(2 * t->capguards + 1) * sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        t->guards = n;
        t->capguards = 2 * t->capguards + 1;
    }
    dh_guard *g = &t->guards[t->nguards++];
    memset(g, 0, sizeof *g);
    g->kind = DH_G_DISTINCT;
    g->src = -1;
    g->input_index = -1;
    g->obj = spec;
    spec = NULL;
done:
    Py_XDECREF(args);
    Py_XDECREF(muts);
    Py_XDECREF(ins);
    Py_XDECREF(spec);
}

/* Objects of Python classes are type-guarded, not identity-guarded: which of their sources
 * were one object (an attribute written through one, read through another) is guarded. */
static void add_sameobj_guard(trace *t) {
    if (t->ntobj < 2)
        return;
    PyObject *srcs = PyTuple_New(t->ntobj), *pat = PyTuple_New(t->ntobj), *spec = NULL;
    if (srcs == NULL || pat == NULL)
        goto done;
    for (int i = 0; i < t->ntobj; i++) {
        int j = 0;
        while (t->tobj[j] != t->tobj[i])
            j++;
        PyTuple_SET_ITEM(srcs, i, PyLong_FromLong(t->tobj_src[i]));
        PyTuple_SET_ITEM(pat, i, PyLong_FromLong(j));
        if (PyErr_Occurred())
            goto done;
    }
    spec = Py_BuildValue("(OO)", srcs, pat);
    if (spec == NULL)
        goto done;
    if (t->nguards == t->capguards) {
        dh_guard *n = realloc(t->guards, (size_t)(2 * t->capguards + 1) * sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        t->guards = n;
        t->capguards = 2 * t->capguards + 1;
    }
    dh_guard *g = &t->guards[t->nguards++];
    memset(g, 0, sizeof *g);
    g->kind = DH_G_SAMEOBJ;
    g->src = -1;
    g->input_index = -1;
    g->obj = spec;
    spec = NULL;
done:
    Py_XDECREF(srcs);
    Py_XDECREF(pat);
    Py_XDECREF(spec);
}

/* Splits at matrix products and convolutions are by design (they run as ATen kernels
 * between compiled graphs, the epilogue fused into the next graph): explain reports them
 * as extern calls, not as graph breaks. */
static int is_extern_break(const sym_break *b) {
    static const char *names[] = {"matmul", "mm", "bmm", "addmm", "baddbmm", "linear",
                                  "conv1d", "conv2d", "conv3d", "einsum", "addmv", "mv", NULL};
    if (b->kind == DH_BRK_BINOP)
        return b->binop == 4 || b->binop == 17;
    if (b->kind != DH_BRK_CALL)
        return 0;
    const char *n = NULL;
    if (b->fn->kind == V_OBJ && !PyModule_Check(b->fn->obj)) {
        /* torch's own linear/conv modules: their forward is the extern kernel */
        const char *tn = Py_TYPE(b->fn->obj)->tp_name;
        PyObject *mod = PyObject_GetAttrString((PyObject *)Py_TYPE(b->fn->obj), "__module__");
        const char *mn = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : "";
        int torchmod = mn && strncmp(mn, "torch.nn.modules.", 17) == 0;
        Py_XDECREF(mod);
        PyErr_Clear();
        return torchmod && (!strcmp(tn, "Linear") || !strcmp(tn, "Conv1d") || !strcmp(tn, "Conv2d") ||
                            !strcmp(tn, "Conv3d") || !strcmp(tn, "Bilinear"));
    }
    if (b->fn->kind == V_METHOD && PyUnicode_Check(b->fn->obj))
        n = PyUnicode_AsUTF8(b->fn->obj);
    else if (b->fn->kind == V_FUNC && PyCFunction_Check(b->fn->obj))
        n = ((PyCFunctionObject *)b->fn->obj)->m_ml->ml_name;
    if (n == NULL) {
        PyErr_Clear();
        return 0;
    }
    for (int i = 0; names[i]; i++)
        if (strcmp(n, names[i]) == 0)
            return 1;
    return 0;
}

/* ---- driver -------------------------------------------------------------------------- */

/* ---- training (owner: training) ----
 * When inputs require grad under grad mode, the backward graph is derived from the forward
 * one (inductor_c/graph/autograd.c: saved values become extra forward outputs) and compiled
 * like it; the entry's train object (csrc/train.c) runs it from an autograd node. 1 if the
 * trace trains. */
static int trace_trains(trace *t) {
    if (t->ninputs == 0 || !tc_grad_enabled())
        return 0;
    unsigned char *req = malloc((size_t)t->ninputs);
    int n = req ? sym_train_req(t, req) : 0;
    free(req);
    return n > 0;
}

/* 0: not training, or *train set; -1: the trace failed (reason) or an exception */
static int train_build(trace *t, const mutlist *muts, const ic_options *opt, PyObject **train) {
    unsigned char *req = calloc((size_t)t->ninputs + 1, 1);
    if (req == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (sym_train_req(t, req) == 0) {
        free(req);
        return 0;
    }
    for (int i = 0; i < muts->n; i++)
        for (int k = 0; k < t->nguards; k++)
            if (t->guards[k].kind == DH_G_TENSOR && t->guards[k].src == muts->src[i] &&
                t->guards[k].meta.requires_grad) {
                free(req);
                return sym_fail(t, "training: an input that requires grad is updated in place (eager decides)");
            }
    /* a tensor updated in place with a value that carries a gradient: eager records the
     * update in autograd (the tensor then requires grad); the copy-back does not */
    for (int i = 0; i < muts->n; i++)
        if (muts->from[i] >= 0 && ic_value_requires_grad(t->g, ic_graph_output_value(t->g, muts->from[i]), req)) {
            free(req);
            return sym_fail(t, "training: a tensor is updated in place with a value that requires grad (eager decides)");
        }
    ic_autograd ag;
    ic_err err = {0};
    int rc = ic_autograd_build(t->g, req, &ag, &err);
    free(req);
    if (rc < 0)
        return sym_fail(t, "training: %s", err.msg);
    if (ag.bwd == NULL) {
        ic_autograd_clear(&ag);
        return 0;
    }
    ic_compiled *bwd;
    Py_BEGIN_ALLOW_THREADS
    bwd = ic_compile(ag.bwd, opt, &err);
    Py_END_ALLOW_THREADS
    dh_note_compile(&err);
    if (bwd == NULL) {
        ic_autograd_clear(&ag);
        return sym_fail(t, "training: backward compile failed: %s", err.msg);
    }
    *train = tc_train_new(&ag, bwd, t->ninputs, t->device_type < 0 ? TC_DEV_CPU : t->device_type,
                          t->device_index > 0 ? t->device_index : 0);
    return *train ? 0 : -1;
}

static dh_entry *finish(trace *t, outbuf *ob, ic_compiled *compiled) {
    dh_entry *e = calloc(1, sizeof *e);
    if (e == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    e->fallback = t->failed;
    e->reason = t->failed ? strdup(t->reason) : NULL;
    e->where = t->failed && t->where[0] ? strdup(t->where) : NULL;
    e->nsources = t->nsrc;
    e->sources = t->src;
    t->src = NULL;
    t->nsrc = 0;
    e->nguards = t->nguards;
    e->guards = t->guards;
    t->guards = NULL;
    t->nguards = 0;
    e->ninputs = t->ninputs;
    e->input_src = t->input_src;
    t->input_src = NULL;
    if (!t->failed) {
        e->nouts = ob->n;
        e->outs = ob->o;
        ob->o = NULL;
        ob->n = 0;
        e->compiled = compiled;
        e->graph_text = ic_graph_to_string(t->g);
        e->op_count = ic_graph_num_ops(t->g);
    }
    return e;
}

static void trace_free(trace *t, outbuf *ob) {
    for (int i = 0; i < t->nsrc; i++)
        Py_XDECREF(t->src[i].name);
    free(t->src);
    free(t->srcvar);
    free(t->srcobj);
    free(t->srcdone);
    for (int i = 0; i < t->nguards; i++)
        dh_guard_clear(&t->guards[i]);
    free(t->guards);
    free(t->input_src);
    free(t->input_oid);
    free(t->obj_val);
    free(t->obj_aliased);
    free(t->obj_root);
    free(t->symv);
    free(t->view_of_input);
    free(t->view_desc);
    sym_fx_free(t);
    if (ob) {
        for (int i = 0; i < ob->n; i++)
            Py_XDECREF(ob->o[i].obj);
        free(ob->o);
    }
    Py_XDECREF(t->keep);
    if (t->g)
        ic_graph_free(t->g);
    free(t);
}

/* Graph text with the hint sizes of symbolic values removed (and the strides of dynamic
 * inputs), plus the index bounds: equal for two traces at different hints iff no hint
 * value leaked into the graph as a constant. malloc'd. */
static char *dyn_signature(trace *t) {
    char *txt = ic_graph_to_string(t->g);
    if (txt == NULL)
        return NULL;
    size_t n = strlen(txt);
    char *out = malloc(n + 64 + 48 * (size_t)t->nidx);
    if (out == NULL) {
        free(txt);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        /* "[h0,h1,..] sym=[" : drop the hint list */
        if (txt[i] == '[') {
            size_t j = i + 1;
            while (j < n && (txt[j] == ',' || txt[j] == '-' || (txt[j] >= '0' && txt[j] <= '9')))
                j++;
            if (j < n && txt[j] == ']' && strncmp(txt + j + 1, " sym=[", 6) == 0) {
                i = j + 1;
                continue;
            }
        }
        /* " strides=[...]" right after a sym list: contiguous strides of the hints */
        if (strncmp(txt + i, "] strides=[", 11) == 0 && o > 0) {
            size_t back = o;
            while (back > 0 && out[back - 1] != '[' && out[back - 1] != '\n')
                back--;
            if (back >= 5 && strncmp(out + back - 5, "sym=[", 5) == 0) {
                size_t j = i + 11;
                while (j < n && txt[j] != ']')
                    j++;
                out[o++] = ']';
                i = j + 1;
                continue;
            }
        }
        out[o++] = txt[i++];
    }
    for (int k = 0; k < t->nidx; k++)
        o += (size_t)sprintf(out + o, "\nidx %d < %lld", t->idx_src[k], (long long)t->idx_bound[k]);
    out[o] = 0;
    free(txt);
    return out;
}

/* dyn: 0 static; 1 verification trace at fake hints (no compile; *sig receives the
 * signature, NULL when the trace can't be dynamic); 2 dynamic trace at the real hints,
 * accepted only if its signature equals expect (else *reject = 1, no entry). */
static dh_entry *trace_once(PyCodeObject *code, PyObject *const *localsplus, PyObject *globals,
                            PyObject *builtins, PyObject *func, const dh_config *cfg,
                            const uint32_t *dynmask, int dyn, const char *expect, char **sig,
                            int *reject);

dh_entry *dh_trace_frame(PyCodeObject *code, PyObject *const *localsplus, PyObject *globals,
                         PyObject *builtins, PyObject *func, const dh_config *cfg,
                         const uint32_t *dynmask) {
    /* the dims asked for; if the compiler can't take them, the outermost dims alone (the
     * batch); else static */
    uint32_t outer[DH_DYN_LOCALS], outer2[DH_DYN_LOCALS];
    const uint32_t *masks[3] = {dynmask, NULL, NULL};
    if (dynmask != NULL) {
        int differs = 0, any = 0;
        for (int i = 0; i < DH_DYN_LOCALS; i++) {
            outer[i] = dynmask[i] & 1u;
            outer2[i] = outer[i] ? outer[i] | DH_DYN_ND2 : 0; /* bit 31: tensors of >= 2 dims only */
            differs |= outer[i] != dynmask[i];
            any |= outer[i] != 0;
        }
        int k = 1;
        if (differs && any)
            masks[k++] = outer;
        if (any)
            masks[k++] = outer2;
    }
    for (int m = 0; m < 3 && masks[m] != NULL; m++) {
        char *sig = NULL;
        int reject = 0;
        trace_once(code, localsplus, globals, builtins, func, cfg, masks[m], 1, NULL, &sig, &reject);
        PyErr_Clear();
        if (sig == NULL)
            continue;
        dh_entry *e = trace_once(code, localsplus, globals, builtins, func, cfg, masks[m], 2,
                                 sig, NULL, &reject);
        free(sig);
        if (e != NULL || !reject)
            return e;
        PyErr_Clear();
    }
    return trace_once(code, localsplus, globals, builtins, func, cfg, NULL, 0, NULL, NULL, NULL);
}

static dh_entry *trace_once(PyCodeObject *code, PyObject *const *localsplus, PyObject *globals,
                            PyObject *builtins, PyObject *func, const dh_config *cfg,
                            const uint32_t *dynmask, int dyn, const char *expect, char **sig,
                            int *reject) {
    trace *t = calloc(1, sizeof *t);
    sframe *f = calloc(1, sizeof *f);
    outbuf ob = {0};
    dh_entry *e = NULL;
    dh_entry_brk brk = {{NULL, NULL}};
    mutlist muts = {0};
    ic_val *outvals = NULL; /* graph outputs (dh_limit.max_outputs at most) */
    ic_compiled *compiled = NULL;
    PyObject *backend_fn = NULL; /* another backend's code for the graph (backend.c) */
    PyObject *train = NULL; /* training: the autograd node's state */
    if (t == NULL || f == NULL) {
        free(t);
        free(f);
        PyErr_NoMemory();
        return NULL;
    }
    t->code = code;
    t->localsplus = localsplus;
    t->globals = globals;
    t->builtins = builtins;
    t->func = func;
    t->cfg = cfg;
    t->keep = PyList_New(0);
    t->g = ic_graph_new();
    if (t->g)
        ic_graph_set_default_dtype(t->g, (ic_dtype)tc_default_dtype());
    t->device_type = -1;
    t->cur_globals = globals;
    t->dynmask = dynmask;
    t->dyn_fake = dyn == 1;
    if (t->keep == NULL || t->g == NULL) {
        if (t->g == NULL)
            PyErr_NoMemory();
        goto error;
    }
    /* grad mode, default dtype and autocast are part of every specialization */
    {
        dh_guardkind kinds[DH_NSTATE];
        int vals[DH_NSTATE], ns = dh_global_state(kinds, vals);
        if (t->nguards + ns > t->capguards) {
            dh_guard *ng = realloc(t->guards, (size_t)(t->nguards + ns + 16) * sizeof *t->guards);
            if (ng == NULL) {
                PyErr_NoMemory();
                goto error;
            }
            t->guards = ng;
            t->capguards = t->nguards + ns + 16;
        }
        for (int k = 0; k < ns; k++) {
            dh_guard *g = &t->guards[t->nguards++];
            memset(g, 0, sizeof *g);
            g->kind = kinds[k];
            g->src = -1;
            g->input_index = -1;
            g->value = vals[k];
        }
        dh_tl_autocast = vals[DH_NSTATE - 1];
    }
    f->code = code;
    f->top = 1;
    f->globals = globals;
    f->func = func;
    f->func_src = -1;
    f->gen = (code->co_flags & CO_GENERATOR) != 0;
    f->nlocals = (int)code->co_nlocalsplus;
    f->locals = sym_alloc(t, f->nlocals);
    if (f->locals == NULL)
        goto error;
    {
        var result;
        memset(&result, 0, sizeof result);
        int rr = run(t, f, &result);
        if (rr == 0 && sym_ctxvar_pending(t, NULL))
            rr = sym_fail(t, "a context variable set in the trace is not reset at its end");
        if (rr >= 0) {
            int nout = 0;
            outvals = malloc(sizeof *outvals * (size_t)dh_limit.max_outputs);
            if (outvals == NULL) {
                PyErr_NoMemory();
                goto error;
            }
            if (out_reserve(t, &ob, 1) == 0) {
                if (rr == 1)
                    fill_break(t, &ob, outvals, &nout, &brk);
                else
                    fill_out(t, &ob, 0, &result, outvals, &nout);
                if (!t->failed && !PyErr_Occurred() && t->nattrw > 0) {
                    /* root becomes (result, written values...) */
                    int first = out_reserve(t, &ob, 1 + t->nattrw);
                    if (first >= 0) {
                        ob.o[first] = ob.o[0];
                        memset(&ob.o[0], 0, sizeof ob.o[0]);
                        ob.o[0].kind = DH_O_TUPLE;
                        ob.o[0].index = first;
                        ob.o[0].count = 1 + t->nattrw;
                        for (int i = 0; i < t->nattrw && !t->failed; i++)
                            fill_out(t, &ob, first + 1 + i, t->attrw[i].val, outvals, &nout);
                    }
                }
                if (!t->failed && !PyErr_Occurred())
                    record_mutations(t, outvals, &nout, &muts);
                if (!t->failed && !PyErr_Occurred())
                    add_distinct_guard(t, &muts);
                if (!t->failed && !PyErr_Occurred())
                    add_sameobj_guard(t);
            }
            if (dyn) {
                /* dynamic only for a whole graph with symbols, on the CPU */
                int ok = !t->failed && !PyErr_Occurred() && rr == 0 && t->nsym > 0 && nout > 0 &&
                         t->device_type != TC_DEV_CUDA && !trace_trains(t);
                char *mine = ok ? dyn_signature(t) : NULL;
                if (dyn == 1 && !ok && getenv("TORCHC_DEBUG_DYN"))
                    fprintf(stderr, "torchc dyn: not dynamic: %s %s\n",
                            rr == 1 ? "graph break:" : t->failed ? "" : "no symbols/outputs or cuda", t->reason);
                if (dyn == 1) {
                    *sig = mine;
                    goto error;
                }
                ok = mine != NULL && expect != NULL && strcmp(mine, expect) == 0;
                if (!ok && getenv("TORCHC_DEBUG_DYN"))
                    fprintf(stderr, "torchc dyn: rejected (%s)\n--- real\n%s\n--- fake\n%s\n",
                            t->failed ? t->reason : "signature differs", mine ? mine : "-",
                            expect ? expect : "-");
                free(mine);
                if (!ok) {
                    *reject = 1;
                    goto error;
                }
            }
            if (!t->failed && !PyErr_Occurred() && nout > 0) {
                ic_options opt = {0};
                opt.device = t->device_type == TC_DEV_CUDA ? IC_CUDA : IC_CPU;
                opt.device_index = t->device_index > 0 ? t->device_index : 0;
                opt.opt_level = 3;
                opt.autotune = t->cfg->autotune;
                ic_err err = {0};
                if (t->cfg->backend != NULL && !dyn) { /* another backend (backend.c): autograd is eager's */
                    backend_fn = dh_backend_export(t->g, t->cfg->backend, t->device_type, opt.device_index);
                    if (backend_fn == NULL && PyErr_Occurred())
                        goto error;
                }
                if (backend_fn == NULL && train_build(t, &muts, &opt, &train) < 0 && PyErr_Occurred())
                    goto error;
                if (!t->failed && backend_fn == NULL) {
                    compiled = dh_compile(&t->g, &opt, &err); /* eval_frame.c: Ctrl-C heard during it */
                    if (compiled == NULL && t->g == NULL)
                        goto error; /* interrupted: the graph went with the compile */
                }
                if (compiled == NULL && dyn && getenv("TORCHC_DEBUG_DYN"))
                    fprintf(stderr, "torchc dyn: compile rejected: %s\n", err.msg);
                if (compiled == NULL && dyn) {
                    *reject = 1; /* the compiler can't do these symbols: specialize */
                    goto error;
                }
                if (compiled == NULL && backend_fn == NULL && !t->failed)
                    sym_fail(t, "compile failed: %s", err.msg);
                if (compiled != NULL && opt.device == IC_CPU && getenv("TORCHC_PTX_PROBE")) {
                    /* GPU codegen coverage without a GPU: the CPU graph through the PTX path */
                    ic_err e2 = {0};
                    char *ptx = ic_graph_to_ptx(t->g, 90, &e2);
                    const char *dir = getenv("TORCHC_PTX_PROBE"); /* a directory: the PTX goes there too */
                    static int nprobe;
                    if (ptx && dir[0] == '/') {
                        char path[1024];
                        snprintf(path, sizeof path, "%s/probe_%d.ptx", dir, nprobe++);
                        FILE *pf = fopen(path, "w");
                        if (pf) {
                            fputs(ptx, pf);
                            fclose(pf);
                        }
                    }
                    if (ptx)
                        fprintf(stderr, "torchc ptx probe: ok\n");
                    else
                        fprintf(stderr, "torchc ptx probe: FAILED: %s\n", e2.msg);
                    free(ptx);
                }
            } else if (!t->failed && !PyErr_Occurred() && nout == 0 && ic_graph_num_ops(t->g) > 0) {
                /* every op was dead (result is an input or a constant): nothing to compile */
            }
        }
    }
    if (PyErr_Occurred())
        goto error; /* internal error: reported by the hook */
    e = finish(t, &ob, compiled);
    compiled = NULL;
    if (e != NULL && !e->fallback && muts.n > 0) {
        e->mut_src = malloc(sizeof(int) * (size_t)muts.n);
        e->mut_from = malloc(sizeof(int) * (size_t)muts.n);
        if (e->mut_src == NULL || e->mut_from == NULL) {
            dh_entry_free(e);
            e = NULL;
            PyErr_NoMemory();
            goto error;
        }
        memcpy(e->mut_src, muts.src, sizeof(int) * (size_t)muts.n);
        memcpy(e->mut_from, muts.from, sizeof(int) * (size_t)muts.n);
        e->nmut = muts.n;
    }
    if (e != NULL && !e->fallback && t->nidx > 0) {
        e->nidx = t->nidx;
        memcpy(e->idx_src, t->idx_src, sizeof t->idx_src);
        memcpy(e->idx_bound, t->idx_bound, sizeof t->idx_bound);
        memcpy(e->idx_gather, t->idx_gather, sizeof t->idx_gather);
    }
    if (e != NULL && !e->fallback && t->nattrw > 0) {
        e->attrw_src = malloc(sizeof(int) * (size_t)t->nattrw);
        e->attrw_name = calloc((size_t)t->nattrw, sizeof(PyObject *));
        if (e->attrw_src == NULL || e->attrw_name == NULL) {
            dh_entry_free(e);
            e = NULL;
            PyErr_NoMemory();
            goto error;
        }
        for (int i = 0; i < t->nattrw; i++) {
            e->attrw_src[i] = t->attrw[i].src;
            e->attrw_name[i] = Py_NewRef(t->attrw[i].name);
        }
        e->nattrw = t->nattrw;
    }
    if (e != NULL && !e->fallback && train != NULL) {
        e->train = train;
        train = NULL;
    }
    if (e != NULL) {
        e->backend = Py_XNewRef(t->cfg->backend);
        if (!e->fallback && backend_fn != NULL) {
            e->backend_nout = ic_graph_num_outputs(t->g);
            e->backend_fn = backend_fn;
            backend_fn = NULL;
        }
    }
    if (e != NULL && !e->fallback && dyn == 2)
        e->nsyms = t->nsym;
    if (e != NULL) {
        e->device_type = t->device_type < 0 ? TC_DEV_CPU : t->device_type;
        e->device_index = t->device_index > 0 ? t->device_index : 0;
    }
    if (e != NULL && !e->fallback && t->brk.kind != DH_BRK_NONE) {
        e->brk = t->brk.kind;
        e->brk_nargs = t->brk.nargs;
        e->brk_nstack = t->brk.nstack;
        e->brk_nlocals = t->brk.nlocals;
        e->brk_jump_when = t->brk.jump_when;
        e->brk_kwnames = Py_XNewRef(t->brk.kwnames);
        e->brk_binop = t->brk.binop;
        e->brk_extern = is_extern_break(&t->brk);
        e->resume[0] = brk.resume[0];
        e->resume[1] = brk.resume[1];
        brk.resume[0] = brk.resume[1] = NULL;
        e->brk_reason = strdup(t->reason);
        if (e->where == NULL && t->where[0])
            e->where = strdup(t->where);
    }
error:
    Py_XDECREF(train);
    Py_XDECREF(backend_fn);
    Py_XDECREF(brk.resume[0]);
    Py_XDECREF(brk.resume[1]);
    if (compiled)
        ic_compiled_free(compiled);
    free(outvals);
    free(muts.src);
    free(muts.from);
    free(f);
    trace_free(t, &ob);
    return e;
}
