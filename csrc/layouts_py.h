/* layouts_py.h - the Python view of layouts/ (linear layouts): adds the type
 * torchc._C.LinearLayout and the ll_* functions to the extension module. */
#ifndef TORCHC_LAYOUTS_PY_H
#define TORCHC_LAYOUTS_PY_H

#include <Python.h>

/* Adds LinearLayout and the ll_* builders/queries to `module`.  Returns 0, or
 * -1 with an exception set. */
int tc_layouts_init(PyObject *module);

#endif
