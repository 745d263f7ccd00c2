/* sym_flow.c — handlers of the stack, locals, control-flow, exception, generator and
 * operator opcodes (the interpreter loop is in symbolic.c; sym_interp.h has the contract). */
#include "sym_interp.h"
#include "sym_sem.h"

#include <string.h>
/* EXTENDED_ARG */
int sym_op_extended_arg(trace *t, sframe *f, sym_ins *in) {
    in->ext = in->oparg << 8;
    return SYM_NEXT;
}

/* NOP RESUME CACHE PRECALL MAKE_CELL */
int sym_op_nop(trace *t, sframe *f, sym_ins *in) {
    return SYM_NEXT;
}

/* COPY_FREE_VARS */
int sym_op_copy_free_vars(trace *t, sframe *f, sym_ins *in) {
    /* free variables are the last oparg slots; read them through the closure */
    int first = f->nlocals - in->oparg;
    if (f->closure != NULL) {
        if (in->oparg > f->nclosure)
            return sym_fail(t, "closure size mismatch");
        for (int i = 0; i < in->oparg; i++)
            f->locals[first + i] = f->closure[i];
        return SYM_NEXT;
    }
    if (!f->top && f->func_src < 0)
        return sym_fail(t, "closure of an inlined function without a source");
    for (int i = 0; i < in->oparg; i++) {
        PyObject *fn = f->func;
        PyObject *cl = fn && PyFunction_Check(fn) ? PyFunction_GET_CLOSURE(fn) : NULL;
        if (cl == NULL || i >= PyTuple_GET_SIZE(cl))
            return sym_fail(t, "missing closure");
        PyObject *cell = PyTuple_GET_ITEM(cl, i);
        sframe *top = t->top_frame;
        int shared = -1; /* the top frame's cell shared with this function (sym_op_store_fast) */
        for (int j = 0; top != NULL && top != f && j < top->nlocals && shared < 0; j++)
            if (t->localsplus[j] == cell && dh_resume_cell_passed(t->code, j))
                shared = j;
        if (shared >= 0) {
            /* read as the top frame's local: right for this function object only (another
             * of its code need not close over the top frame's cell), so its identity counts */
            if (!f->top && f->func_src >= 0 && fn != NULL && sym_guard_id(t, f->func_src, fn) < 0)
                return -1;
            var v;
            if (sym_load_local(t, top, shared, &v) < 0)
                return -1; /* its value now, written in the trace or read through the cell */
            f->locals[first + i] = v;
            continue;
        }
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
    return SYM_NEXT;
}

/* PUSH_NULL */
int sym_op_push_null(trace *t, sframe *f, sym_ins *in) {
    PUSH(sym_null_var());
    return SYM_NEXT;
}

/* POP_TOP */
int sym_op_pop_top(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    (void)POP();
    return SYM_NEXT;
}

/* END_FOR */
int sym_op_end_for(trace *t, sframe *f, sym_ins *in) {
    NEED(2);
    f->sp -= 2;
    return SYM_NEXT;
}

/* COPY */
int sym_op_copy(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(in->oparg);
    a = PEEK(in->oparg);
    PUSH(a);
    return SYM_NEXT;
}

/* SWAP */
int sym_op_swap(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(in->oparg);
    a = PEEK(1);
    PEEK(1) = PEEK(in->oparg);
    PEEK(in->oparg) = a;
    return SYM_NEXT;
}

/* LOAD_CONST */
int sym_op_load_const(trace *t, sframe *f, sym_ins *in) {
    var a;
    if (sym_const(t, Py_NewRef(PyTuple_GET_ITEM(in->consts, in->oparg)), &a) < 0 ||
        sym_set_note_const(t, &a) < 0) /* a frozenset: eager's own object (obj_setorder.c) */
        return -1;
    PUSH(a);
    return SYM_NEXT;
}

/* RETURN_CONST */
int sym_op_return_const(trace *t, sframe *f, sym_ins *in) {
    return sym_const(t, Py_NewRef(PyTuple_GET_ITEM(in->consts, in->oparg)), in->result);
}

/* RETURN_VALUE */
int sym_op_return_value(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    *in->result = POP(); /* a generator's: the StopIteration value */
    if (f->top && !f->gen) /* the frame's result: a dynamic int in it is its graph value's int */
        t->dyn_inst = t->cur_inst;   /* (sym_output.c), not a constant */
    return 0;
}

/* RETURN_GENERATOR */
/* the generator is made: its frame stops here until the first next() (sym_gen.c), which
 * sends the None the following POP_TOP drops */
int sym_op_return_generator(trace *t, sframe *f, sym_ins *in) {
    if (!f->gen || f->top)
        return sym_fail(t, "RETURN_GENERATOR outside an inlined generator");
    f->resume_pc = in->next;
    return SYM_YIELD;
}

/* YIELD_VALUE */
/* the generator's frame stops with the value; the step that resumes it sends None */
int sym_op_yield_value(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    if (!f->gen || f->top)
        return sym_fail(t, "yield outside an inlined generator");
    *in->result = POP();
    f->resume_pc = in->next;
    return SYM_YIELD;
}

/* GET_YIELD_FROM_ITER */
/* `yield from it`: a generator stays one (stepped by SEND); anything else becomes an
 * iterator over its items */
int sym_op_get_yield_from_iter(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    var *a = &PEEK(1);
    if ((a->kind == V_GEN && a->op == 0) || (a->kind == V_ITER && a->op == 0))
        return SYM_NEXT;
    var *items, it = sym_var(V_ITER);
    int n;
    if (sym_iter_items(t, a, &items, &n) < 0)
        return -1;
    it.items = items;
    it.n = n;
    PEEK(1) = it;
    return SYM_NEXT;
}

/* SEND */
/* (receiver, None) -> (receiver, item), or at the receiver's end the jump with its return
 * value (3.11: in the receiver's place; 3.12: above it, END_SEND drops the receiver) */
int sym_op_send(trace *t, sframe *f, sym_ins *in) {
    var r;
    NEED(2);
    var v = POP();
    if (v.kind != V_CONST || v.obj != Py_None)
        return sym_fail(t, "send() of a value to a generator not supported");
    var *rec = &PEEK(1);
    int yielded;
    if (rec->kind == V_GEN) {
        yielded = sym_gen_step(t, rec, &r);
        if (yielded < 0)
            return -1;
    } else if (rec->kind == V_ITER && rec->op == 0) {
        yielded = rec->pos < rec->n;
        if (yielded)
            r = rec->items[rec->pos++];
        else if (sym_const(t, Py_NewRef(Py_None), &r) < 0)
            return -1;
    } else {
        return sym_fail(t, "yield from an unsupported value");
    }
    if (yielded || DH_PY312)
        PUSH(r);
    else
        PEEK(1) = r;
    if (!yielded)
        in->next += in->oparg;
    return SYM_NEXT;
}

/* END_SEND */
int sym_op_end_send(trace *t, sframe *f, sym_ins *in) {
    NEED(2);
    var v = POP();
    PEEK(1) = v;
    return SYM_NEXT;
}

/* LOAD_FAST LOAD_FAST_CHECK LOAD_DEREF LOAD_CLOSURE */
int sym_op_load_fast(trace *t, sframe *f, sym_ins *in) {
    var a;
    int first_free = f->nlocals - f->code->co_nfreevars;
    if (in->op != OP_LOAD_FAST && f->closure != NULL && in->oparg >= first_free &&
        in->oparg - first_free < f->nclosure)
        /* a made closure's free variable: its cell as it is now (sym_cells.c) */
        a = f->closure[in->oparg - first_free];
    else if (in->op == OP_LOAD_CLOSURE && in->oparg < first_free && in->oparg < f->nlocals &&
             (f->locals[in->oparg].kind == V_NULL ||
              (f->locals[in->oparg].kind == V_UNSET && (!f->top || t->localsplus[in->oparg] == NULL))))
        /* a cell not assigned yet (a nested function that calls itself by name): the closure
         * holds it unset; the STORE_DEREF that binds it reaches the closure (sym_cells.c) */
        a = sym_var(V_UNSET);
    else if (in->op == OP_LOAD_CLOSURE && f->top && dh_resume_cell_passed(t->code, in->oparg))
        /* a new closure over a cell shared with a function made before a break: its cell
         * would be a copy */
        return sym_fail(t, "a nested function over a variable shared with a function made before a graph break");
    else if (sym_load_local(t, f, in->oparg, &a) < 0)
        return -1;
    if (a.kind == V_NULL || (a.kind == V_UNSET && in->op != OP_LOAD_CLOSURE))
        return sym_fail(t, "free variable referenced before assignment (eager will raise)");
    PUSH(a);
    return SYM_NEXT;
}

/* LOAD_FAST_AND_CLEAR */
/* 3.12 inlined comprehensions */
int sym_op_load_fast_and_clear(trace *t, sframe *f, sym_ins *in) {
    var a;
    if (in->oparg >= f->nlocals)
        return sym_fail(t, "bad local");
    if (f->locals[in->oparg].kind == V_UNSET && f->top && t->localsplus[in->oparg] != NULL) {
        if (sym_load_local(t, f, in->oparg, &a) < 0)
            return -1;
    } else {
        a = f->locals[in->oparg].kind == V_UNSET ? sym_null_var() : f->locals[in->oparg];
        if (a.kind == V_UNSET)
            a = sym_null_var();
    }
    f->locals[in->oparg] = sym_null_var(); /* unbound */
    PUSH(a);
    return SYM_NEXT;
}

/* STORE_FAST STORE_DEREF */
int sym_op_store_fast(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(1);
    if (in->op == OP_STORE_DEREF && in->oparg >= f->nlocals - f->code->co_nfreevars) {
        /* the cell belongs to an enclosing function (nonlocal): the write reaches its frame
         * and every closure over it (sym_cells.c) */
        if (sym_cells_store_free(t, f, in->oparg - (f->nlocals - f->code->co_nfreevars), &PEEK(1)) < 0)
            return -1;
        (void)POP();
        return SYM_NEXT;
    }
    if (in->oparg >= f->nlocals)
        return sym_fail(t, "bad local");
    if (in->op == OP_STORE_DEREF && f->top && dh_resume_cell_passed(t->code, in->oparg) &&
        t->localsplus[in->oparg] != NULL && PyCell_Check(t->localsplus[in->oparg])) {
        /* a resume frame's cell shared with a function made before the break: the write is
         * replayed on the cell after the graph (cell.cell_contents = value, entry_run.c), and
         * the functions sharing it read the frame's value in the trace (COPY_FREE_VARS) */
        static PyObject *contents;
        if (contents == NULL && (contents = PyUnicode_InternFromString("cell_contents")) == NULL)
            return -1;
        PyObject *cell = t->localsplus[in->oparg];
        int w = -1;
        for (int i = 0; i < t->nattrw && w < 0; i++)
            if (t->attrw[i].obj == cell && t->attrw[i].name == contents)
                w = i;
        if (w < 0) {
            int s = sym_source(t, DH_S_LOCAL, -1, in->oparg, NULL);
            if (s < 0 || sym_attrw_new(t) == NULL)
                return -1;
            w = t->nattrw - 1;
            t->attrw[w].src = s;
            t->attrw[w].obj = cell;
            t->attrw[w].name = contents;
        }
        var *val = sym_alloc(t, 1);
        if (val == NULL)
            return -1;
        *val = POP();
        t->attrw[w].val = val;
        f->locals[in->oparg] = *val;
        return SYM_NEXT;
    }
    /* the closures made over the cell see the new value (sym_cells.c) */
    if (in->op == OP_STORE_DEREF && sym_cells_store(t, f, in->oparg, &PEEK(1)) < 0)
        return -1;
    a = POP();
    f->locals[in->oparg] = a; /* V_NULL: restoring an unbound slot (3.12 comprehensions) */
    return SYM_NEXT;
}

/* DELETE_FAST */
int sym_op_delete_fast(trace *t, sframe *f, sym_ins *in) {
    f->locals[in->oparg] = sym_null_var();
    return SYM_NEXT;
}

/* BINARY_OP */
int sym_op_binary_op(trace *t, sframe *f, sym_ins *in) {
    var a, b, c;
    NEED(2);
    b = POP();
    a = POP();
    if (sym_binary(t, in->oparg, &a, &b, &c) < 0) {
        /* a tensor operator the graph can't express (e.g. @): run it eagerly */
        if (f->top && t->failed && !PyErr_Occurred() && sym_can_break(t) &&
            (a.kind == V_TENSOR || b.kind == V_TENSOR)) {
            var *ops = sym_alloc(t, 2);
            if (ops == NULL)
                return -1;
            ops[0] = a;
            ops[1] = b;
            t->brk.kind = DH_BRK_BINOP;
            t->brk.binop = in->oparg;
            t->brk.pc_next = in->next;
            t->brk.fn = &ops[0];
            t->brk.args = &ops[1];
            t->brk.nargs = 1;
            return sym_record_break_state(t, f);
        }
        return -1;
    }
    PUSH(c);
    return SYM_NEXT;
}

/* COMPARE_OP */
int sym_op_compare_op(trace *t, sframe *f, sym_ins *in) {
    var a, b, c;
    NEED(2);
    b = POP();
    a = POP();
    int cmp = DH_PY312 ? in->oparg >> 4 : in->oparg;
    int dyn = sym_dynint_compare(t, cmp, &a, &b, &c); /* its outcome guarded (variables.c) */
    if (dyn < 0 || (dyn == 0 && sym_compare(t, cmp, &a, &b, &c) < 0))
        return -1;
    PUSH(c);
    return SYM_NEXT;
}

/* IS_OP */
int sym_op_is_op(trace *t, sframe *f, sym_ins *in) {
    var a, b, c;
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
    else if (sym_real_object_pinned(t, &a) && sym_real_object_pinned(t, &b)) {
        same = a.obj == b.obj; /* type(x) is torch.Tensor: a constant and a class */
        /* objects of Python classes: DH_G_SAMEOBJ keeps which sources are one
         * object; others (C types) are identity-guarded already */
    }
    else if (a.kind != b.kind && a.kind != V_CONST && b.kind != V_CONST)
        same = 0;
    else if ((a.kind == V_TENSOR && b.kind == V_CONST && !tc_is_tensor(b.obj)) ||
             (b.kind == V_TENSOR && a.kind == V_CONST && !tc_is_tensor(a.obj)))
        same = 0; /* a tensor is never a (non-tensor) constant: `x is sentinel` */
    else if (a.kind == V_DICT && b.kind == V_DICT && (a.op == SYM_DICT_VIEW || b.op == SYM_DICT_VIEW))
        same = a.op == b.op && a.globals == b.globals; /* obj.__dict__ views: the object's one dict */
    else if (((a.kind == V_SEQ && a.is_list) || a.kind == V_DICT) && a.kind == b.kind &&
             a.src < 0 && b.src < 0 && a.items != NULL)
        same = a.items == b.items; /* made in the trace: named by their items */
    else
        return sym_fail(t, "'is' on unsupported values");
    if (sym_const(t, PyBool_FromLong(same ^ in->oparg), &c) < 0)
        return -1;
    PUSH(c);
    return SYM_NEXT;
}

/* UNARY_NEGATIVE */
int sym_op_unary_negative(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(1);
    a = POP();
    if (sym_neg(t, &a, &b) < 0)
        return -1;
    PUSH(b);
    return SYM_NEXT;
}

/* UNARY_POSITIVE (3.11; 3.12: CALL_INTRINSIC_1 INTRINSIC_UNARY_POSITIVE) */
/* +x: a tensor's __pos__ returns the tensor itself (bool tensors raise) */
int sym_unary_positive(trace *t, var *a, var *out) {
    sym_resolve(t, a);
    if (a->kind == V_CONST && (PyLong_Check(a->obj) || PyFloat_Check(a->obj) || PyComplex_Check(a->obj))) {
        if (sym_const(t, PyNumber_Positive(a->obj), out) < 0)
            return -1;
        return 0;
    }
    if (a->kind == V_TENSOR && t->tfm_active <= 0 && ic_value_meta(t->g, a->val)->dtype != IC_BOOL) {
        *out = *a;
        return 0;
    }
    return sym_fail(t, "+ of an unsupported value");
}

int sym_op_unary_positive(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(1);
    a = POP();
    if (sym_unary_positive(t, &a, &b) < 0)
        return -1;
    PUSH(b);
    return SYM_NEXT;
}

/* UNARY_NOT */
int sym_op_unary_not(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(1);
    a = POP();
    int r;
    if (sym_truthy(t, &a, &r) < 0 || sym_dynint_truth(t, &a, r) < 0)
        return -1;
    if (sym_const(t, PyBool_FromLong(!r), &b) < 0)
        return -1;
    PUSH(b);
    return SYM_NEXT;
}

/* UNARY_INVERT */
int sym_op_unary_invert(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(1);
    a = POP();
    sym_resolve(t, &a);
    if (a.kind == V_CONST) {
        if (sym_const(t, PyNumber_Invert(a.obj), &b) < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "~ of a constant raised");
        }
    } else if (a.kind == V_TENSOR) {
        sym_fold fo; /* ~ of a tensor built from constants: computed now (fold.c) */
        var none = sym_var(V_CONST);
        none.obj = Py_None;
        int rc = sym_fold_binary(t, 201, &a, &none, &fo, &b);
        sym_fold_clear(&fo);
        if (rc == 0) {
            PUSH(b);
            return SYM_NEXT;
        }
        if (rc < 0 || sym_fold_check(t, &a, 1, 1) < 0)
            return -1;
        ic_op iop = ic_value_meta(t->g, a.val)->dtype == IC_BOOL ? IC_OP_LOGICAL_NOT : IC_OP_BITWISE_NOT;
        ic_val r = ic_unary(t->g, iop, a.val);
        if (r < 0)
            return sym_check_graph(t);
        b = sym_var(V_TENSOR);
        b.val = r;
        b.oid = sym_new_object(t, r);
    } else {
        return sym_fail(t, "~ of an unsupported value");
    }
    PUSH(b);
    return SYM_NEXT;
}

/* GET_ITER */
int sym_op_get_iter(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(1);
    a = POP();
    if (a.kind == V_GEN && a.op == 0) { /* iter(generator) is the generator */
        PUSH(a);
        return SYM_NEXT;
    }
    if (a.kind == V_ITER && a.op == SYM_LAZY_ITER) { /* iter(it) is it */
        PUSH(a);
        return SYM_NEXT;
    }
    if (a.kind == V_ITER && a.items != NULL && (a.op == SYM_OWN_ITER || sym_iter_copies(t, a.items) > 0)) {
        /* an iterator a local holds: the loop advances that one (obj_data.c) */
        if (sym_iter_own(t, &a) < 0)
            return -1;
        PUSH(a);
        return SYM_NEXT;
    }
    var *items;
    int n;
    int so = sym_set_iter_items(t, &a, &items, &n); /* a set: in eager's order (obj_setorder.c) */
    if (so < 0 || (so > 0 && sym_iter_items(t, &a, &items, &n) < 0))
        return -1;
    b = sym_var(V_ITER);
    b.items = items;
    b.n = n;
    /* over a list the caller can see (an argument, a global): it may grow while the
     * loop runs eagerly after a break (is_list marks it) */
    b.is_list = (a.kind == V_SEQ && a.is_list && a.src >= 0) ||
                (a.kind == V_CONST && PyList_Check(a.obj));
    PUSH(b);
    return SYM_NEXT;
}

/* one more traced iteration of the loop at f's pc (t->loops, for the unrolled-loop hint) */
static void loop_seen(trace *t, const sframe *f, int pc) {
    int ops = ic_graph_num_ops(t->g);
    for (int i = 0; i < t->nloops; i++) {
        struct sym_loop *l = &t->loops[i];
        if (l->code == (const void *)f->code && l->pc == pc) {
            l->iters++;
            l->ops = ops;
            return;
        }
    }
    if (t->nloops == SYM_MAX_LOOPS)
        return;
    struct sym_loop *l = &t->loops[t->nloops++];
    l->code = f->code;
    l->pc = pc;
    l->iters = 1;
    l->ops0 = l->ops = ops;
    const char *fn = PyUnicode_AsUTF8(f->code->co_filename), *name = PyUnicode_AsUTF8(f->code->co_qualname);
    if (fn == NULL || name == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        l->where[0] = 0;
        return;
    }
    snprintf(l->where, sizeof l->where, "%s:%d in %s", fn, PyCode_Addr2Line(f->code, pc * 2), name);
}

/* FOR_ITER */
int sym_op_for_iter(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(1);
    var *it = &PEEK(1);
    int r; /* 1: a is the next item, 0: the iterator is exhausted */
    if (it->kind == V_GEN) { /* one step of a generator (sym_gen.c) */
        r = sym_gen_step(t, it, &a);
    } else if (it->kind != V_ITER) {
        return sym_fail(t, "FOR_ITER on a non-iterator");
    } else if (it->op == SYM_LAZY_ITER) { /* an iterator passed in (obj_iter.c) */
        r = sym_lazy_iter_next(t, it, &a);
    } else {
        r = it->pos < it->n;
        if (r) {
            a = it->items[it->pos++];
            sym_iter_advanced(t, it); /* every copy of an owned iterator follows */
        }
    }
    if (r < 0)
        return -1;
    if (r > 0) {
        loop_seen(t, f, in->pc);
        PUSH(a);
    } else {
        (void)POP();
        in->next = in->next + in->oparg + (DH_PY312 ? 1 : 0);
    }
    return SYM_NEXT;
}

/* JUMP_FORWARD */
int sym_op_jump_forward(trace *t, sframe *f, sym_ins *in) {
    in->next = in->next + in->oparg;
    return SYM_NEXT;
}

/* PUSH_EXC_INFO */
/* (exc) -> (previous exc: none here, exc) */
int sym_op_push_exc_info(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(1);
    a = POP();
    /* the exception handled before (None: the caller's), restored by POP_EXCEPT (sym_exc.c) */
    if (sym_const(t, Py_NewRef(t->exc_cur ? t->exc_cur : Py_None), &b) < 0)
        return -1;
    PUSH(b);
    PUSH(a);
    t->exc_cur = a.kind == V_CONST && a.obj != NULL && PyExceptionInstance_Check(a.obj) ? a.obj : NULL;
    return SYM_NEXT;
}

/* CHECK_EXC_MATCH */
/* (exc, types) -> (exc, isinstance(exc, types)) */
int sym_op_check_exc_match(trace *t, sframe *f, sym_ins *in) {
    var a, b, c;
    NEED(2);
    b = POP();
    a = PEEK(1);
    if (a.kind != V_CONST || !PyExceptionInstance_Check(a.obj) || b.kind == V_TENSOR ||
        b.obj == NULL)
        return sym_fail(t, "except clause on an unsupported value");
    int r = PyObject_IsInstance(a.obj, b.obj);
    if (r < 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "except clause match raised");
    }
    if (sym_const(t, PyBool_FromLong(r), &c) < 0)
        return -1;
    PUSH(c);
    return SYM_NEXT;
}

/* POP_EXCEPT */
int sym_op_pop_except(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    var a = POP();
    t->exc_cur = a.kind == V_CONST && a.obj != NULL && PyExceptionInstance_Check(a.obj) ? a.obj : NULL;
    return SYM_NEXT;
}

/* RERAISE: the exception on the stack, raised again as is (an except clause's cleanup, the
 * end of a finally or of an except clause that matched nothing): the next handler out */
int sym_op_reraise(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    var a = POP();
    if (a.kind != V_CONST || a.obj == NULL || !PyExceptionInstance_Check(a.obj))
        return sym_fail(t, "an exception is re-raised (eager raises it)");
    int rc = sym_fail(t, "%s raised (eager raises it)", Py_TYPE(a.obj)->tp_name);
    t->pending_exc = a.obj; /* (kept by the trace) */
    return rc;
}

/* JUMP_BACKWARD JUMP_BACKWARD_NO_INTERRUPT */
int sym_op_jump_backward(trace *t, sframe *f, sym_ins *in) {
    in->next = in->next - in->oparg;
    return SYM_NEXT;
}

/* POP_JUMP_IF_FALSE POP_JUMP_IF_TRUE POP_JUMP_FORWARD_IF_FALSE POP_JUMP_FORWARD_IF_TRUE POP_JUMP_BACKWARD_IF_FALSE POP_JUMP_BACKWARD_IF_TRUE */
int sym_op_pop_jump_if_false(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(1);
    a = POP();
    int r;
    int want = in->op == OP_POP_JUMP_IF_TRUE || in->op == OP_POP_JUMP_FORWARD_IF_TRUE ||
               in->op == OP_POP_JUMP_BACKWARD_IF_TRUE;
    int back = in->op == OP_POP_JUMP_BACKWARD_IF_FALSE || in->op == OP_POP_JUMP_BACKWARD_IF_TRUE;
    if (sym_truthy(t, &a, &r) < 0) {
        if (f->top && a.kind == V_TENSOR && !PyErr_Occurred() && sym_can_break(t)) {
            var *cond = sym_alloc(t, 1);
            if (cond == NULL)
                return -1;
            *cond = a;
            t->brk.kind = DH_BRK_JUMP;
            t->brk.pc_next = in->next;
            t->brk.pc_taken = back ? in->next - in->oparg : in->next + in->oparg;
            t->brk.jump_when = want;
            t->brk.fn = cond;
            return sym_record_break_state(t, f);
        }
        return -1;
    }
    if (sym_dynint_truth(t, &a, r) < 0) /* `if k:` of a dynamic int: its truth guarded */
        return -1;
    if (r == want)
        in->next = back ? in->next - in->oparg : in->next + in->oparg;
    return SYM_NEXT;
}

/* POP_JUMP_IF_NONE POP_JUMP_IF_NOT_NONE POP_JUMP_FORWARD_IF_NONE POP_JUMP_FORWARD_IF_NOT_NONE POP_JUMP_BACKWARD_IF_NONE POP_JUMP_BACKWARD_IF_NOT_NONE */
int sym_op_pop_jump_if_none(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(1);
    a = POP();
    int isnone = a.kind == V_CONST && a.obj == Py_None;
    int want = in->op == OP_POP_JUMP_IF_NONE || in->op == OP_POP_JUMP_FORWARD_IF_NONE ||
               in->op == OP_POP_JUMP_BACKWARD_IF_NONE;
    int back = in->op == OP_POP_JUMP_BACKWARD_IF_NONE || in->op == OP_POP_JUMP_BACKWARD_IF_NOT_NONE;
    if (isnone == want)
        in->next = back ? in->next - in->oparg : in->next + in->oparg;
    return SYM_NEXT;
}

/* JUMP_IF_FALSE_OR_POP JUMP_IF_TRUE_OR_POP */
int sym_op_jump_if_false_or_pop(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    int r;
    if (sym_truthy(t, &PEEK(1), &r) < 0)
        return -1;
    if (r == (in->op == OP_JUMP_IF_TRUE_OR_POP))
        in->next = in->next + in->oparg;
    else
        (void)POP();
    return SYM_NEXT;
}
