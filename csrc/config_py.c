/* config_py.c — torchc._C's view of the settings table (inductor_c/ic_config.h):
 * config_table(), config_get(name), config_set(name, value or None), config_changed().
 * torchc/_config.py builds torchc.config on these. */
#include <Python.h>

#include "config_py.h"
#include "ic_config.h"

static int find(PyObject *name) {
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (s == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "a setting's name is a str");
        return -1;
    }
    int id = ic_config_find(s);
    if (id < 0)
        PyErr_Format(PyExc_AttributeError, "torchc.config has no setting %R", name);
    return id;
}

PyObject *tc_config_table(PyObject *m, PyObject *unused) {
    PyObject *l = PyList_New(0);
    if (l == NULL)
        return NULL;
    for (int i = 0;; i++) {
        const ic_config_entry *e = ic_config_entry_at(i);
        if (e == NULL)
            break;
        PyObject *d = Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:s,s:O}", "name", e->name, "type", e->type, "default",
                                    e->dflt, "choices", e->choices, "doc", e->doc, "env", e->env, "codegen",
                                    e->codegen ? Py_True : Py_False);
        if (d == NULL || PyList_Append(l, d) < 0) {
            Py_XDECREF(d);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(d);
    }
    return l;
}

/* config_get(name) -> (value, source): value typed (bool, int or str), source "default",
 * the environment variable's name, or "set" */
PyObject *tc_config_get(PyObject *m, PyObject *name) {
    int id = find(name);
    if (id < 0)
        return NULL;
    const ic_config_entry *e = ic_config_entry_at(id);
    char v[IC_CFG_STR_MAX];
    int src = ic_config_value(id, v, sizeof v);
    PyObject *val;
    if (e->type[0] == 'B')
        val = PyBool_FromLong(v[0] != '0');
    else if (e->type[0] == 'I')
        val = PyLong_FromString(v, NULL, 10);
    else
        val = PyUnicode_DecodeUTF8(v, (Py_ssize_t)strlen(v), "replace");
    if (val == NULL)
        return NULL;
    return Py_BuildValue("(Ns)", val, src == 2 ? "set" : src == 1 ? e->env : "default");
}

/* config_set(name, value): bool, int, str, or None (back to the environment / the default) */
PyObject *tc_config_set(PyObject *m, PyObject *const *a, Py_ssize_t n) {
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "config_set(name, value)");
        return NULL;
    }
    int id = find(a[0]);
    if (id < 0)
        return NULL;
    const ic_config_entry *e = ic_config_entry_at(id);
    PyObject *v = a[1];
    char text[80];
    const char *t = NULL;
    if (v == Py_None) {
        t = NULL;
    } else if (e->type[0] == 'B') {
        if (!PyBool_Check(v) && !(PyLong_CheckExact(v))) {
            PyErr_Format(PyExc_ValueError, "torchc.config.%s must be a bool, got %R", e->name, v);
            return NULL;
        }
        int on = PyObject_IsTrue(v);
        if (on < 0)
            return NULL;
        if (!PyBool_Check(v)) {
            long x = PyLong_AsLong(v);
            if (x == -1 && PyErr_Occurred())
                return NULL;
            if (x != 0 && x != 1) {
                PyErr_Format(PyExc_ValueError, "torchc.config.%s must be a bool, got %R", e->name, v);
                return NULL;
            }
        }
        t = on ? "1" : "0";
    } else if (e->type[0] == 'I') {
        if (!PyLong_Check(v) || PyBool_Check(v)) {
            PyErr_Format(PyExc_ValueError, "torchc.config.%s must be an int, got %R", e->name, v);
            return NULL;
        }
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return NULL;
        if (overflow) { /* the row's range: ic_config_set */
            PyErr_Format(PyExc_ValueError, "torchc.config.%s: %R is out of range", e->name, v);
            return NULL;
        }
        snprintf(text, sizeof text, "%lld", x);
        t = text;
    } else {
        if (!PyUnicode_Check(v)) {
            PyErr_Format(PyExc_ValueError, "torchc.config.%s must be a str, got %R", e->name, v);
            return NULL;
        }
        t = PyUnicode_AsUTF8(v);
        if (t == NULL)
            return NULL;
    }
    char err[200];
    if (ic_config_set(id, t, err, sizeof err) < 0) {
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* config_changed() -> str: "name=value (source)" lines of the settings not at their default */
PyObject *tc_config_changed(PyObject *m, PyObject *unused) {
    char *s = ic_config_changed();
    if (s == NULL)
        return PyErr_NoMemory();
    PyObject *r = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
    free(s);
    return r;
}

/* config_check(name, text) -> None when text is a valid value, else the reason (a str) */
PyObject *tc_config_check(PyObject *m, PyObject *const *a, Py_ssize_t n) {
    if (n != 2 || !PyUnicode_Check(a[1])) {
        PyErr_SetString(PyExc_TypeError, "config_check(name, text)");
        return NULL;
    }
    int id = find(a[0]);
    if (id < 0)
        return NULL;
    const char *t = PyUnicode_AsUTF8(a[1]);
    if (t == NULL)
        return NULL;
    char err[200];
    if (ic_config_check(id, t, err, sizeof err) < 0)
        return PyUnicode_DecodeUTF8(err, (Py_ssize_t)strlen(err), "replace");
    Py_RETURN_NONE;
}
