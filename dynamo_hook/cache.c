/* cache.c — per-code-object caches of compiled entries, stored in the code object's
 * co_extra slot (PEP 523's _PyEval_RequestCodeExtraIndex). Entries are kept most recently
 * used first; all caches are on a registry list so torchc.reset() can drop every entry.
 * The cache struct itself lives until its code object dies (free_cache callback). */
#include "dh_internal.h"

#include <string.h>

#if PY_VERSION_HEX < 0x030C0000
#define PyUnstable_Code_GetExtra _PyCode_GetExtra
#define PyUnstable_Code_SetExtra _PyCode_SetExtra
#define PyUnstable_Eval_RequestCodeExtraIndex _PyEval_RequestCodeExtraIndex
#endif

static Py_ssize_t extra_index = -1;
static dh_cache registry = {.prev = &registry, .next = &registry};
static PyObject *skip_prefixes; /* tuple of directory prefixes never hooked */
static PyObject *stdlib_prefix; /* the standard library, skipped except its *-packages/ */

void dh_guard_clear(dh_guard *g) {
    Py_CLEAR(g->obj);
}

void dh_entry_free(dh_entry *e) {
    if (e == NULL)
        return;
    for (int i = 0; i < e->nsources; i++)
        Py_XDECREF(e->sources[i].name);
    for (int i = 0; i < e->nguards; i++)
        dh_guard_clear(&e->guards[i]);
    for (int i = 0; i < e->nouts; i++)
        Py_XDECREF(e->outs[i].obj);
    free(e->sources);
    free(e->guards);
    free(e->input_src);
    free(e->live);
    for (int i = 0; i < e->nattrw; i++)
        Py_XDECREF(e->attrw_name[i]);
    free(e->attrw_src);
    free(e->attrw_name);
    free(e->mut_src);
    free(e->mut_inplace);
    free(e->mut_bumps);
    free(e->mut_mode);
    free(e->out_into_src);
    free(e->chk_out);
    free(e->idx_src);
    free(e->idx_bound);
    free(e->idx_gather);
    free(e->mut_from);
    free(e->outs);
    free(e->reason);
    free(e->graph_text);
    free(e->brk_reason);
    free(e->where);
    free(e->hint);
    Py_XDECREF(e->brk_kwnames);
    Py_XDECREF(e->brk_with);
    Py_XDECREF(e->resume[0]);
    Py_XDECREF(e->resume[1]);
    Py_XDECREF(e->exc_resume);
    Py_XDECREF(e->train);
    Py_XDECREF(e->backend);
    Py_XDECREF(e->backend_fn);
    if (e->compiled)
        ic_compiled_free(e->compiled);
    free(e);
}

unsigned long dh_reset_epoch;

void dh_entry_unpin(dh_entry *e) {
    if (--e->pins == 0 && e->unlinked)
        dh_entry_free(e);
}

/* An entry some call is still running (another thread inside its kernels with the GIL
 * released, or the frame that called torchc.reset() at a graph break) stays alive,
 * unlinked, until that run unpins it. The others go onto *dead, freed by the caller once no
 * list is half-walked: freeing one runs finalizers (a backend's compiled callable, a guarded
 * object's __del__) whose Python may reset again or compile, which walks these lists. */
static void clear_entries(dh_cache *c, dh_entry **dead) {
    dh_entry *e = c->entries;
    c->entries = NULL;
    c->nentries = 0;
    while (e) {
        dh_entry *n = e->next;
        e->next = NULL;
        e->unlinked = 1;
        if (e->pins == 0) {
            e->next = *dead;
            *dead = e;
        }
        e = n;
    }
    c->limit_hit = 0;
    /* what the entries taught is forgotten with them, as torch._dynamo.reset() forgets its frame
     * states: the dims seen changing (automatic dynamic shapes; kept, a reset module of another
     * test's batch size captured dynamic, where a fresh process specializes) and the sharing of
     * one entry by instances of a module class */
    memset(c->dynmask, 0, sizeof c->dynmask);
    Py_CLEAR(c->dynints);
    c->modtype = 0;
    if (c->skip_failed) { /* skipped after failed captures: a reset tries again */
        c->skip = c->skip_failed = 0;
        free(c->skip_reason);
        c->skip_reason = NULL;
    }
}

static void free_dead(dh_entry *dead) {
    while (dead) {
        dh_entry *n = dead->next;
        dh_entry_free(dead);
        dead = n;
    }
}

static void free_cache(void *p) {
    dh_cache *c = p;
    if (c == NULL)
        return;
    c->prev->next = c->next;
    c->next->prev = c->prev;
    dh_entry *dead = NULL;
    clear_entries(c, &dead);
    free(c->skip_reason);
    free(c);
    free_dead(dead);
}

int dh_cache_should_skip_file(PyCodeObject *code) {
    if (skip_prefixes == NULL || !PyUnicode_Check(code->co_filename))
        return 0;
    PyObject *fn = code->co_filename;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(skip_prefixes); i++)
        if (PyUnicode_Tailmatch(fn, PyTuple_GET_ITEM(skip_prefixes, i), 0, PY_SSIZE_T_MAX, -1) == 1)
            return 1;
    const char *s = PyUnicode_AsUTF8(fn);
    if (s == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        return 0;
    }
    if (strncmp(s, "<frozen", 7) == 0)
        return 1;
    if (dh_skipfile_module(s)) /* a library module a call only passes through */
        return 1;
    if (stdlib_prefix && PyUnicode_Tailmatch(fn, stdlib_prefix, 0, PY_SSIZE_T_MAX, -1) == 1 &&
        strstr(s, "-packages/") == NULL)
        return 1;
    return 0;
}

/* Code that reads its own frame (locals(), sys._getframe, inspect.currentframe): a graph
 * break would run the rest in a resume function whose frame holds other names (a
 * 'spec_for_{fullname}'.format(**locals()) after a break raised KeyError). */
int dh_code_reads_own_frame(PyCodeObject *code) {
    static const char *const names[] = {"locals", "_getframe", "currentframe"};
    PyObject *co_names = code->co_names;
    for (Py_ssize_t i = 0; co_names && i < PyTuple_GET_SIZE(co_names); i++) {
        PyObject *n = PyTuple_GET_ITEM(co_names, i);
        for (size_t j = 0; j < sizeof names / sizeof names[0]; j++)
            if (PyUnicode_Check(n) && PyUnicode_CompareWithASCIIString(n, names[j]) == 0)
                return 1;
    }
    return 0;
}

static int attr_hook_name(PyObject *name) {
    static const char *const names[] = {"__getattribute__", "__getattr__", "__setattr__",
                                        "__delattr__"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (PyUnicode_CompareWithASCIIString(name, names[i]) == 0)
            return 1;
    return 0;
}

dh_cache *dh_cache_of(PyCodeObject *code) {
    void *p = NULL;
    if (PyUnstable_Code_GetExtra((PyObject *)code, extra_index, &p) < 0)
        return NULL;
    if (p != NULL)
        return p;
    dh_cache *c = calloc(1, sizeof *c);
    if (c == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    c->code = code;
    if (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)) {
        c->skip = 1;
        c->skip_reason = strdup("generator or coroutine");
    } else if (dh_cache_should_skip_file(code)) {
        c->skip = 1;
        c->skip_reason = strdup("file in skip list (torch, torchc, stdlib, skipped library modules)");
        /* an import started by eager code under the hook (torch._dynamo's, imported by the
         * first torch._disable_dynamo wrapper called, 1 s alone): its dataclass __init__s,
         * decorators and registrations were captured one by one (a first training step with
         * such an import inside: ~530k frames, 1660 captures, 1.4 s CPU more) */
        const char *fn = PyUnicode_AsUTF8(code->co_filename);
        if (fn == NULL)
            (void)tc_clear_expected(PyExc_UnicodeError);
        else if (strncmp(fn, "<frozen importlib._bootstrap", 28) == 0)
            c->import_system = 1;
    } else if (attr_hook_name(code->co_name)) {
        /* __getattribute__ & co run implicitly on every attribute access of eager code (a
         * config read in a loop); traced code gets attributes through load_attr instead */
        c->skip = 1;
        c->skip_reason = strdup("attribute protocol method");
    }
    /* code that reads its own frame is captured whole or not at all (symbolic.c refuses a
     * break in it): a pytest-rewritten assert names locals() on its failure path only */
    if (PyUnstable_Code_SetExtra((PyObject *)code, extra_index, c) < 0) {
        free(c->skip_reason);
        free(c);
        return NULL;
    }
    c->next = registry.next;
    c->prev = &registry;
    registry.next->prev = c;
    registry.next = c;
    return c;
}

void dh_cache_add(dh_cache *c, dh_entry *e) {
    e->next = c->entries;
    c->entries = e;
    c->nentries++;
}

void dh_cache_touch(dh_cache *c, dh_entry *prev, dh_entry *e) {
    /* prev is a hint only: guards that ran Python may have let another thread reorder */
    if (c->entries == e || e->unlinked)
        return;
    dh_entry **pp = prev != NULL && prev->next == e ? &prev->next : &c->entries;
    while (*pp != NULL && *pp != e)
        pp = &(*pp)->next;
    if (*pp == NULL)
        return;
    *pp = e->next;
    e->next = c->entries;
    c->entries = e;
}

void dh_resume_reset(void);

void dh_cache_reset_all(void) {
    dh_reset_epoch++;
    dh_entry *dead = NULL; /* no Python runs during the walk: the registry stays as it is */
    for (dh_cache *c = registry.next; c != &registry; c = c->next)
        clear_entries(c, &dead);
    dh_resume_reset();
    free_dead(dead);
}

/* Skip list: torch's and torchc's own packages and the standard library. */
static int init_skip_prefixes(void) {
    PyObject *os = NULL, *torch = NULL, *list = NULL, *item = NULL;
    int rc = -1;
    list = PyList_New(0);
    if (list == NULL)
        goto error;
    const char *mods[] = {"os", "torch", "torchc"};
    for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++) {
        PyObject *m = PyImport_ImportModule(mods[i]);
        if (m == NULL) {
            (void)tc_clear_expected(PyExc_ImportError); /* torchc itself may still be importing */
            continue;
        }
        PyObject *file = PyObject_GetAttrString(m, "__file__");
        Py_DECREF(m);
        if (file == NULL) {
            (void)tc_clear_expected(PyExc_AttributeError);
            continue;
        }
        /* dirname */
        PyObject *osmod = PyImport_ImportModule("os.path");
        if (osmod == NULL) {
            Py_DECREF(file);
            goto error;
        }
        item = PyObject_CallMethod(osmod, "dirname", "O", file);
        Py_DECREF(osmod);
        Py_DECREF(file);
        if (item == NULL)
            goto error;
        PyObject *withsep = PyUnicode_FromFormat("%U/", item);
        Py_CLEAR(item);
        if (withsep != NULL && i == 0) {
            stdlib_prefix = withsep;
            continue;
        }
        if (withsep == NULL || PyList_Append(list, withsep) < 0) {
            Py_XDECREF(withsep);
            goto error;
        }
        Py_DECREF(withsep);
    }
    skip_prefixes = PyList_AsTuple(list);
    if (skip_prefixes == NULL)
        goto error;
    rc = 0;
error:
    Py_XDECREF(os);
    Py_XDECREF(torch);
    Py_XDECREF(list);
    Py_XDECREF(item);
    return rc;
}

int dh_cache_init(void) {
    extra_index = PyUnstable_Eval_RequestCodeExtraIndex(free_cache);
    if (extra_index < 0) {
        PyErr_SetString(PyExc_RuntimeError, "torchc: no code extra index left");
        return -1;
    }
    return init_skip_prefixes();
}

int dh_skip_code(PyObject *code) {
    dh_cache *c = dh_cache_of((PyCodeObject *)code);
    if (c == NULL)
        return -1;
    c->skip = 1;
    c->disabled = 1;
    free(c->skip_reason);
    c->skip_reason = strdup("torchc.disable");
    return 0;
}

int dh_skip_code_tree(PyObject *code) {
    if (dh_skip_code(code) < 0)
        return -1;
    dh_cache_of((PyCodeObject *)code)->disabled = 2; /* eval_frame.c: its callees unhooked too */
    free(dh_cache_of((PyCodeObject *)code)->skip_reason);
    dh_cache_of((PyCodeObject *)code)->skip_reason = strdup("torch.compiler.disable");
    return 0;
}

int dh_code_is_disabled(PyCodeObject *code) {
    void *p = NULL;
    if (PyUnstable_Code_GetExtra((PyObject *)code, extra_index, &p) < 0) {
        (void)tc_clear_expected(PyExc_SystemError);
        return 0;
    }
    return p != NULL && ((dh_cache *)p)->disabled;
}

int dh_allow_code(PyObject *code) {
    dh_cache *c = dh_cache_of((PyCodeObject *)code);
    if (c == NULL)
        return -1;
    c->skip = 0;
    c->disabled = 0;
    free(c->skip_reason);
    c->skip_reason = NULL;
    return 0;
}
