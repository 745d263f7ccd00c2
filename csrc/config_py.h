/* config_py.h — torchc._C functions over the settings table (config_py.c) */
#ifndef TC_CONFIG_PY_H
#define TC_CONFIG_PY_H
#include <Python.h>

PyObject *tc_config_table(PyObject *m, PyObject *unused);
PyObject *tc_config_get(PyObject *m, PyObject *name);
PyObject *tc_config_set(PyObject *m, PyObject *const *a, Py_ssize_t n);
PyObject *tc_config_changed(PyObject *m, PyObject *unused);
PyObject *tc_config_check(PyObject *m, PyObject *const *a, Py_ssize_t n);

#define TC_CONFIG_METHODS                                                                                  \
    {"config_table", tc_config_table, METH_NOARGS, "The settings table: a list of dicts."},              \
    {"config_get", tc_config_get, METH_O, "config_get(name) -> (value, source)."},                      \
    {"config_check", (PyCFunction)(void (*)(void))tc_config_check, METH_FASTCALL,                        \
     "config_check(name, text) -> None, or why text is not a valid value of the setting."},             \
    {"config_set", (PyCFunction)(void (*)(void))tc_config_set, METH_FASTCALL,                            \
     "config_set(name, value): a bool/int/str, or None to go back to the environment or the default."}, \
    {"config_changed", tc_config_changed, METH_NOARGS, "Lines 'name=value (source)' of changed settings."},

#endif
