/* test_dyn.c — dynamic (symbolic) sizes in inductor_c.
 *
 * Graph level: symbolic dims propagate through the builders (ic_value_meta), unsupported
 * cases report IC_EUNSUPPORTED, and the graph text (the cache key) shows the symbols.
 * Compile level: one graph with symbols compiled once and run at several symbol values is
 * compared with the same graph built statically at those sizes (differential).
 * Exit status: number of failures (0 = pass).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ic.h"

static int failures, checks;
static const char *cur_test = "";

#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        checks++;                                                                           \
        if (!(cond)) {                                                                      \
            failures++;                                                                     \
            fprintf(stderr, "FAIL [%s] %s:%d: ", cur_test, __FILE__, __LINE__);             \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fprintf(stderr, "\n");                                                          \
        }                                                                                   \
    } while (0)

static ic_dim S(int k) { ic_dim d = {.coef = 1}; d.exp[k] = 1; return d; }
static ic_dim K(int64_t k) { return (ic_dim){.coef = k}; }
static ic_dim Ms(int64_t c, ic_dim d) { d.coef *= c; return d; }

static bool dim_is(const ic_meta *m, int i, ic_dim d) {
    return m->dyn && m->dims[i].coef == d.coef && !memcmp(m->dims[i].exp, d.exp, sizeof d.exp);
}

/* input [dims...] with the symbols at `hint` */
static ic_val in_dyn(ic_graph *g, ic_dtype dt, int nd, const ic_dim *dims, const int64_t *hint) {
    ic_meta m = {.dtype = dt, .ndim = nd};
    for (int i = 0; i < nd; i++) {
        m.dims[i] = dims[i];
        int64_t v = dims[i].coef;
        for (int k = 0; k < IC_MAX_SYMS; k++)
            for (int e = 0; e < dims[i].exp[k]; e++) v *= hint[k];
        m.sizes[i] = v;
    }
    return ic_input_dyn(g, &m);
}

static void test_graph_meta(void) {
    cur_test = "graph_meta";
    int64_t hint[4] = {4, 6};
    ic_graph *g = ic_graph_new();
    ic_val x = in_dyn(g, IC_F32, 3, (ic_dim[]){S(0), K(16), K(32)}, hint);
    const ic_meta *m = ic_value_meta(g, x);
    CHECK(x >= 0 && m->dyn && m->sizes[0] == 4 && m->strides[0] == 512 && dim_is(m, 0, S(0)) &&
              dim_is(m, 1, K(16)), "input meta");
    ic_val r = ic_reshape_dyn(g, x, 2, (ic_dim[]){K(-1), K(32)});
    m = ic_value_meta(g, r);
    CHECK(r >= 0 && dim_is(m, 0, Ms(16, S(0))) && m->sizes[0] == 64, "reshape infer: %s", ic_graph_error(g));
    ic_val b = ic_reshape_dyn(g, r, 3, (ic_dim[]){S(0), K(16), K(32)});
    CHECK(b >= 0 && dim_is(ic_value_meta(g, b), 0, S(0)), "reshape back");
    ic_val y = in_dyn(g, IC_F32, 2, (ic_dim[]){K(1), K(32)}, hint);
    CHECK(!ic_value_meta(g, y)->dyn, "static dims report dyn = 0");
    ic_val s = ic_binary(g, IC_OP_ADD, b, y);
    m = ic_value_meta(g, s);
    CHECK(s >= 0 && dim_is(m, 0, S(0)) && m->sizes[0] == 4, "broadcast s vs 1");
    ic_val red = ic_reduce(g, IC_OP_SUM, s, 1u, 0, -1);
    CHECK(red >= 0 && !ic_value_meta(g, red)->dyn && ic_value_meta(g, red)->sizes[0] == 16, "sum over s0 is static");
    ic_val red2 = ic_reduce(g, IC_OP_MEAN, s, 4u, 1, -1);
    m = ic_value_meta(g, red2);
    CHECK(red2 >= 0 && dim_is(m, 0, S(0)) && m->sizes[2] == 1, "mean keepdim");
    ic_val p = ic_permute(g, s, (int[]){2, 0, 1});
    m = ic_value_meta(g, p);
    CHECK(p >= 0 && dim_is(m, 1, S(0)) && m->strides[0] == 64, "permute");
    ic_val idx = in_dyn(g, IC_I64, 1, (ic_dim[]){S(1)}, hint);
    ic_val e = ic_expand_dyn(g, y, 3, (ic_dim[]){S(1), K(-1), K(-1)});
    m = ic_value_meta(g, e);
    CHECK(e >= 0 && dim_is(m, 0, S(1)) && m->sizes[0] == 6 && m->sizes[1] == 1, "expand_dyn: %s", ic_graph_error(g));
    ic_val e2 = ic_expand(g, s, 3, (int64_t[]){4, 16, 32});
    CHECK(e2 >= 0 && dim_is(ic_value_meta(g, e2), 0, S(0)), "plain expand with the hint keeps s0");
    ic_val sl = ic_slice(g, s, 0, 0, INT64_MAX / 2, 1);
    CHECK(sl >= 0 && dim_is(ic_value_meta(g, sl), 0, S(0)), "full slice of s0: %s", ic_graph_error(g));
    ic_val sl2 = ic_slice(g, s, 1, 2, 10, 2);
    CHECK(sl2 >= 0 && dim_is(ic_value_meta(g, sl2), 0, S(0)) && ic_value_meta(g, sl2)->sizes[1] == 4, "slice static dim");
    ic_val c = ic_cat(g, s, s, 0);
    CHECK(c >= 0 && dim_is(ic_value_meta(g, c), 0, Ms(2, S(0))) && ic_value_meta(g, c)->sizes[0] == 8, "cat along s0");
    ic_val w = in_dyn(g, IC_F32, 2, (ic_dim[]){K(10), K(8)}, hint);
    ic_val is = ic_index_select(g, w, 0, idx);
    CHECK(is >= 0 && dim_is(ic_value_meta(g, is), 0, S(1)) && ic_value_meta(g, is)->sizes[0] == 6, "index_select");
    ic_output(g, s);
    char *text = ic_graph_to_string(g);
    CHECK(text && strstr(text, "sym=[s0,16,32]") && strstr(text, "sym=[16*s0,32]"), "text: %s", text);
    free(text);
    CHECK(ic_graph_error(g) == NULL, "no error: %s", ic_graph_error(g));
    ic_graph_free(g);
}

/* each case: a fresh graph, one failing builder, the expected code */
static void test_graph_errors(void) {
    cur_test = "graph_errors";
    int64_t hint[4] = {4, 4};
    struct { const char *what; ic_errcode want; } cases[] = {
        {"s0 vs static 4", IC_EUNSUPPORTED},  {"s0 vs s1", IC_EUNSUPPORTED},
        {"slice part of s0", IC_EUNSUPPORTED}, {"plain reshape", IC_EUNSUPPORTED},
        {"reshape not monomial", IC_EUNSUPPORTED}, {"cat s0 + 3", IC_EUNSUPPORTED},
        {"index_select along s0", IC_EUNSUPPORTED}, {"bad hint", IC_EINVALID},
        {"static mismatch", IC_EINVALID},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        ic_graph *g = ic_graph_new();
        ic_val x = in_dyn(g, IC_F32, 2, (ic_dim[]){S(0), K(8)}, hint), r = 0;
        switch (i) {
        case 0: r = ic_binary(g, IC_OP_ADD, x, in_dyn(g, IC_F32, 2, (ic_dim[]){K(4), K(8)}, hint)); break;
        case 1: r = ic_binary(g, IC_OP_ADD, x, in_dyn(g, IC_F32, 2, (ic_dim[]){S(1), K(8)}, hint)); break;
        case 2: r = ic_slice(g, x, 0, 1, 4, 1); break;
        case 3: r = ic_reshape(g, x, 1, (int64_t[]){32}); break;
        case 4: r = ic_reshape_dyn(g, x, 2, (ic_dim[]){K(-1), K(3)}); break;
        case 5: r = ic_cat(g, x, in_dyn(g, IC_F32, 2, (ic_dim[]){K(3), K(8)}, hint), 0); break;
        case 6: r = ic_index_select(g, x, 0, in_dyn(g, IC_I64, 1, (ic_dim[]){K(3)}, hint)); break;
        case 7: {
            ic_meta m = {.dtype = IC_F32, .ndim = 1, .sizes = {5}};
            m.dims[0] = Ms(2, S(2));
            r = ic_input_dyn(g, &m);
            break;
        }
        case 8: r = ic_binary(g, IC_OP_ADD, in_dyn(g, IC_F32, 1, (ic_dim[]){K(3)}, hint),
                              in_dyn(g, IC_F32, 2, (ic_dim[]){S(0), K(4)}, hint)); break;
        }
        CHECK(r == IC_NONE && ic_graph_errcode(g) == cases[i].want, "%s: got %d (%s)", cases[i].what,
              ic_graph_errcode(g), ic_graph_error(g) ? ic_graph_error(g) : "");
        ic_graph_free(g);
    }
}

int main(void) {
    test_graph_meta();
    test_graph_errors();
    printf("test_dyn: %d checks, %d failures\n", checks, failures);
    return failures;
}
