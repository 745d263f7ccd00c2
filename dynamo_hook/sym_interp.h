/* sym_interp.h — the bytecode interpreter's internals, shared by symbolic.c (the loop,
 * frames, breaks, the driver) and the files of opcode handlers (sym_flow.c, sym_attr.c,
 * sym_containers.c, sym_call.c) and of the trace's end (sym_output.c). Not used outside
 * the interpreter: the ops_*.c files, variables.c & co. see sym.h only. */
#ifndef DH_SYM_INTERP_H
#define DH_SYM_INTERP_H

#include "sym.h"

#include <string.h>

/* opcode names we interpret (X-macro): one enum, looked up by name at init */
#define DH_OPCODES(X)                                                                     \
    X(NOP) X(RESUME) X(CACHE) X(PRECALL) X(PUSH_NULL) X(POP_TOP) X(COPY) X(SWAP)          \
    X(LOAD_CONST) X(RETURN_CONST) X(LOAD_FAST) X(LOAD_FAST_CHECK) X(LOAD_FAST_AND_CLEAR)  \
    X(STORE_FAST) X(DELETE_FAST) X(LOAD_GLOBAL) X(STORE_GLOBAL) X(LOAD_ATTR) X(LOAD_METHOD) X(KW_NAMES)   \
    X(CALL) X(BINARY_OP) X(COMPARE_OP) X(IS_OP) X(CONTAINS_OP) X(UNARY_NEGATIVE) X(UNARY_POSITIVE)\
    X(UNARY_NOT) X(BUILD_TUPLE) X(BUILD_LIST) X(LIST_EXTEND) X(LIST_TO_TUPLE)             \
    X(BINARY_SUBSCR) X(UNPACK_SEQUENCE) X(RETURN_VALUE) X(POP_JUMP_IF_FALSE)              \
    X(POP_JUMP_IF_TRUE) X(POP_JUMP_IF_NONE) X(POP_JUMP_IF_NOT_NONE)                       \
    X(POP_JUMP_FORWARD_IF_FALSE) X(POP_JUMP_FORWARD_IF_TRUE) X(POP_JUMP_FORWARD_IF_NONE)  \
    X(POP_JUMP_FORWARD_IF_NOT_NONE) X(POP_JUMP_BACKWARD_IF_FALSE)                         \
    X(POP_JUMP_BACKWARD_IF_TRUE) X(POP_JUMP_BACKWARD_IF_NONE)                             \
    X(POP_JUMP_BACKWARD_IF_NOT_NONE) X(JUMP_FORWARD) X(JUMP_BACKWARD)                     \
    X(JUMP_BACKWARD_NO_INTERRUPT) X(JUMP_IF_FALSE_OR_POP) X(JUMP_IF_TRUE_OR_POP)          \
    X(GET_ITER) X(GET_YIELD_FROM_ITER) X(SEND) X(END_SEND) X(FOR_ITER) X(END_FOR) X(EXTENDED_ARG) X(MAKE_CELL) X(COPY_FREE_VARS)     \
    X(LOAD_DEREF) X(STORE_DEREF) X(LOAD_CLOSURE) X(BUILD_MAP) X(BUILD_CONST_KEY_MAP)         \
    X(CALL_FUNCTION_EX) X(DICT_MERGE) X(DICT_UPDATE) X(FORMAT_VALUE) X(BUILD_STRING)      \
    X(STORE_ATTR) X(BUILD_SLICE) X(LIST_APPEND) X(MAP_ADD) X(UNPACK_EX) X(MAKE_FUNCTION) X(BINARY_SLICE) X(UNARY_INVERT) X(LOAD_SUPER_ATTR) X(IMPORT_NAME) X(IMPORT_FROM) X(BUILD_SET) X(BEFORE_WITH) \
    X(STORE_SUBSCR) X(STORE_SLICE) X(RETURN_GENERATOR) X(YIELD_VALUE)                     \
    X(PUSH_EXC_INFO) X(CHECK_EXC_MATCH) X(POP_EXCEPT) X(RERAISE) X(WITH_EXCEPT_START) X(CALL_INTRINSIC_1)     \
    X(DELETE_SUBSCR) X(DELETE_ATTR) X(SET_ADD) X(SET_UPDATE) X(LOAD_BUILD_CLASS)                \
    X(MATCH_SEQUENCE) X(MATCH_MAPPING) X(MATCH_KEYS) X(MATCH_CLASS) X(GET_LEN)                 \
    X(RAISE_VARARGS) X(LOAD_ASSERTION_ERROR) X(DELETE_GLOBAL)

enum {
    OP_UNKNOWN = 0,
#define X(n) OP_##n,
    DH_OPCODES(X)
#undef X
    OP_COUNT_
};

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
    /* the closures made here (or through here: a free variable passed on) capturing a cell
     * of this frame: a write of the cell updates them (sym_cells.c); full: writes fail */
    struct sym_cellref { var *items; int k; PyObject *name; } cellrefs[24];
    int ncellrefs, cellrefs_full;
    int gen;           /* a generator's frame, run lazily (sym_gen.c) */
    int resume_pc;     /* where the interpretation starts: after the yield a generator left */
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

static inline var sym_null_var(void) { return sym_var(V_NULL); }

/* ---- opcode handlers ---------------------------------------------------------------
 * One handler per opcode (or family sharing one body), called by symbolic.c run_body
 * with the instruction decoded. A handler returns
 *   SYM_NEXT  go on at in->next (a jump sets in->next; EXTENDED_ARG sets in->ext),
 *   0         the frame returned: *in->result holds its value,
 *   1         the top frame stops at a graph break (record_break_state; t->brk is set),
 *   -1        the trace failed (sym_fail's reason, or a Python exception set). */
#define SYM_NEXT 2

typedef struct sym_ins {
    int op;                   /* OP_* of the instruction */
    int opcode;               /* CPython opcode */
    int oparg;                /* with the EXTENDED_ARG prefixes folded in */
    int pc;                   /* this instruction (code units) */
    int next;                 /* where the loop goes on: after the inline caches */
    int ext;                  /* EXTENDED_ARG: the high bits of the next oparg */
    PyObject *consts, *names; /* the code's co_consts / co_names (borrowed) */
    var *result;              /* where a returning frame's value goes */
} sym_ins;

typedef int (*sym_handler)(trace *t, sframe *f, sym_ins *in);

/* sym_flow.c */
int sym_op_extended_arg(trace *t, sframe *f, sym_ins *in);
int sym_op_nop(trace *t, sframe *f, sym_ins *in);
int sym_op_copy_free_vars(trace *t, sframe *f, sym_ins *in);
int sym_op_push_null(trace *t, sframe *f, sym_ins *in);
int sym_op_pop_top(trace *t, sframe *f, sym_ins *in);
int sym_op_end_for(trace *t, sframe *f, sym_ins *in);
int sym_op_copy(trace *t, sframe *f, sym_ins *in);
int sym_op_swap(trace *t, sframe *f, sym_ins *in);
int sym_op_load_const(trace *t, sframe *f, sym_ins *in);
int sym_op_return_const(trace *t, sframe *f, sym_ins *in);
int sym_op_return_value(trace *t, sframe *f, sym_ins *in);
int sym_op_return_generator(trace *t, sframe *f, sym_ins *in);
int sym_op_yield_value(trace *t, sframe *f, sym_ins *in);
int sym_op_load_fast(trace *t, sframe *f, sym_ins *in);
int sym_op_load_fast_and_clear(trace *t, sframe *f, sym_ins *in);
int sym_op_store_fast(trace *t, sframe *f, sym_ins *in);
int sym_op_delete_fast(trace *t, sframe *f, sym_ins *in);
int sym_op_binary_op(trace *t, sframe *f, sym_ins *in);
int sym_op_compare_op(trace *t, sframe *f, sym_ins *in);
int sym_op_is_op(trace *t, sframe *f, sym_ins *in);
int sym_op_unary_negative(trace *t, sframe *f, sym_ins *in);
int sym_op_unary_positive(trace *t, sframe *f, sym_ins *in);
int sym_unary_positive(trace *t, var *a, var *out);
int sym_op_unary_not(trace *t, sframe *f, sym_ins *in);
int sym_op_unary_invert(trace *t, sframe *f, sym_ins *in);
int sym_op_get_iter(trace *t, sframe *f, sym_ins *in);
int sym_op_for_iter(trace *t, sframe *f, sym_ins *in);
int sym_op_jump_forward(trace *t, sframe *f, sym_ins *in);
int sym_op_push_exc_info(trace *t, sframe *f, sym_ins *in);
int sym_op_check_exc_match(trace *t, sframe *f, sym_ins *in);
int sym_op_pop_except(trace *t, sframe *f, sym_ins *in);
int sym_op_reraise(trace *t, sframe *f, sym_ins *in);
int sym_op_with_except_start(trace *t, sframe *f, sym_ins *in);
/* the exit of a with block (on the stack below the handler's lasti) that the trace can call with
 * an exception: 1, else 0 (sym_exc.c) */
int sym_exc_exit_ok(const var *exit);
int sym_op_jump_backward(trace *t, sframe *f, sym_ins *in);
int sym_op_pop_jump_if_false(trace *t, sframe *f, sym_ins *in);
int sym_op_pop_jump_if_none(trace *t, sframe *f, sym_ins *in);
int sym_op_jump_if_false_or_pop(trace *t, sframe *f, sym_ins *in);
int sym_op_get_yield_from_iter(trace *t, sframe *f, sym_ins *in);
int sym_op_send(trace *t, sframe *f, sym_ins *in);
int sym_op_end_send(trace *t, sframe *f, sym_ins *in);

/* sym_attr.c */
int sym_op_load_global(trace *t, sframe *f, sym_ins *in);
int sym_op_store_global(trace *t, sframe *f, sym_ins *in);
int sym_op_load_attr(trace *t, sframe *f, sym_ins *in);
int sym_op_store_attr(trace *t, sframe *f, sym_ins *in);
int sym_op_delete_attr(trace *t, sframe *f, sym_ins *in); /* obj_attrs.c */
int sym_op_import_name(trace *t, sframe *f, sym_ins *in);
int sym_op_import_from(trace *t, sframe *f, sym_ins *in);
int sym_op_load_super_attr(trace *t, sframe *f, sym_ins *in);

/* sym_containers.c */
int sym_op_contains_op(trace *t, sframe *f, sym_ins *in);
int sym_op_build_tuple(trace *t, sframe *f, sym_ins *in);
int sym_op_list_extend(trace *t, sframe *f, sym_ins *in);
int sym_op_build_map(trace *t, sframe *f, sym_ins *in);
int sym_op_build_const_key_map(trace *t, sframe *f, sym_ins *in);
int sym_op_dict_merge(trace *t, sframe *f, sym_ins *in);
int sym_op_map_add(trace *t, sframe *f, sym_ins *in);
int sym_op_list_append(trace *t, sframe *f, sym_ins *in);
int sym_op_unpack_ex(trace *t, sframe *f, sym_ins *in);
int sym_op_build_slice(trace *t, sframe *f, sym_ins *in);
int sym_op_format_value(trace *t, sframe *f, sym_ins *in);
int sym_op_build_string(trace *t, sframe *f, sym_ins *in);
int sym_op_list_to_tuple(trace *t, sframe *f, sym_ins *in);
int sym_op_call_intrinsic_1(trace *t, sframe *f, sym_ins *in);
int sym_op_build_set(trace *t, sframe *f, sym_ins *in);
int sym_op_set_add(trace *t, sframe *f, sym_ins *in);
int sym_op_binary_slice(trace *t, sframe *f, sym_ins *in);
int sym_op_delete_subscr(trace *t, sframe *f, sym_ins *in);
/* sym_match.c: match statements */
int sym_op_match_sequence(trace *t, sframe *f, sym_ins *in);
int sym_op_match_mapping(trace *t, sframe *f, sym_ins *in);
int sym_op_match_keys(trace *t, sframe *f, sym_ins *in);
int sym_op_match_class(trace *t, sframe *f, sym_ins *in);
int sym_op_get_len(trace *t, sframe *f, sym_ins *in);
int sym_op_store_subscr(trace *t, sframe *f, sym_ins *in);
int sym_op_binary_subscr(trace *t, sframe *f, sym_ins *in);
int sym_op_unpack_sequence(trace *t, sframe *f, sym_ins *in);

/* sym_call.c */
int sym_op_kw_names(trace *t, sframe *f, sym_ins *in);
int sym_op_call(trace *t, sframe *f, sym_ins *in);
int sym_op_call_function_ex(trace *t, sframe *f, sym_ins *in);
int sym_op_make_function(trace *t, sframe *f, sym_ins *in);
int sym_op_before_with(trace *t, sframe *f, sym_ins *in);
int sym_op_load_build_class(trace *t, sframe *f, sym_ins *in);
int sym_op_raise_varargs(trace *t, sframe *f, sym_ins *in);        /* sym_exc.c */
int sym_op_load_assertion_error(trace *t, sframe *f, sym_ins *in); /* sym_exc.c */
int sym_op_delete_global(trace *t, sframe *f, sym_ins *in);        /* sym_attr.c */

/* ---- shared by the files of the interpreter --------------------------------------- */

/* symbolic.c */
int sym_load_local(trace *t, sframe *f, int i, var *out);
int sym_is_real_object(const var *v);
int sym_truthy(trace *t, const var *v, int *out);
int sym_can_break(trace *t);
int sym_record_break_state(trace *t, sframe *f);
int sym_exc_handler(PyCodeObject *co, int pc, int *depth, int *lasti);
const char *sym_opname(int opcode); /* CPython's name of an opcode, NULL if none */
/* sym_exc.c: a pending exception at pc caught by f's except clause: 1 (stack unwound, *next
 * the handler), 0 none, -1 failed */
int sym_exc_unwind(trace *t, sframe *f, const unsigned char *code, int ninstr, int pc, int *next);
/* sym_exc.c: the top frame's pending raise at in, caught by nothing: a break (1), 0 not, -1 */
int sym_exc_top_raise(trace *t, sframe *f, const sym_ins *in);
/* sym_cells.c: closure items[0..n) of code made in f (registered with the frames owning
 * their cells); a write v to cell i of f, reaching the closures that captured it: 0, -1 */
int sym_cells_made(trace *t, sframe *f, PyCodeObject *code, var *items, int n);
int sym_cells_store(trace *t, sframe *f, int i, const var *v);
int sym_cells_store_free(trace *t, sframe *f, int k, const var *v); /* nonlocal: free var k */
int sym_cells_real(trace *t, const var *items, int k); /* the DH_S_CELL source of closure item k, or -1 */
int sym_run_frame(trace *t, sframe *f, var *result);

/* sym_containers.c */
int sym_dict_from_const(trace *t, PyObject *d, var *out);
int sym_dicts_shared(trace *t, const var *v, int n, const var *all, int nall, int depth);

typedef struct dh_entry_brk {
    PyObject *resume[2];
    PyObject *exc_resume; /* the break's instruction raised: its try block's handler */
} dh_entry_brk;
/* one object of the trace (a list, dict, set, record, made function: named by its items
 * array) given a node of the spec: where it is reached again, DH_O_SAME gives that object */
typedef struct out_alias {
    const void *key;
    int group, node, done;
} out_alias;
typedef struct outbuf {
    dh_outspec *o;
    int n, cap;
    out_alias *alias;
    int nalias, calias;
} outbuf;
/* Inputs whose object was updated in place: their final value becomes an output and is
 * copied back into the caller's tensor after the kernels (as eager would have written). */
typedef struct mutlist {
    int n, cap; /* cap: dh_limit.max_outputs at most */
    int *src, *from;
    unsigned char *mode; /* per update: DH_MUT_* (train_inplace_store.c; NULL: all plain) */
} mutlist;

/* sym_output.c */
int sym_out_reserve(trace *t, outbuf *ob, int k);
int sym_fill_out(trace *t, outbuf *ob, int at, const var *v_in, ic_val *outvals, int *nout);
void sym_out_root_moved(outbuf *ob, int to);
int sym_made_fns_resumable(trace *t, sframe *f, const var *v, int n, int depth);
int sym_fill_break(trace *t, outbuf *ob, ic_val *outvals, int *nout, dh_entry_brk *eb);
void sym_record_mutations(trace *t, ic_val *outvals, int *nout, mutlist *m);
void sym_add_distinct_guard(trace *t, const mutlist *m);
void sym_add_sameobj_guard(trace *t);
int sym_is_extern_break(const sym_break *b);
int sym_trace_trains(trace *t);
int sym_train_build(trace *t, mutlist *muts, const outbuf *ob, const ic_options *opt, PyObject **train);
dh_entry *sym_finish_entry(trace *t, outbuf *ob, ic_compiled *compiled);
void sym_trace_free(trace *t, outbuf *ob);
char *sym_dyn_signature(trace *t);
/* train_inplace_store.c: before the compile, the updated inputs whose new value the kernels
 * may store straight into them (ic_output_into); after it, the entry's per-update facts
 * (stored in place or copied back, eager's version bumps). 0, or -1 (MemoryError). */
void sym_inplace_request(trace *t, const mutlist *m, const outbuf *ob);
int sym_inplace_setup(trace *t, dh_entry *e, const mutlist *m);
/* training (sym_train_build): m->mode of each update, the new value of one that autograd
 * records given an output of its own; req: sym_train_req's. 0, or -1 (failed, or MemoryError) */
int sym_inplace_train_modes(trace *t, mutlist *m, const outbuf *ob, const unsigned char *req);

#endif
