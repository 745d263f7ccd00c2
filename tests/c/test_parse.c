/* test_parse.c — the graph text parser (inductor_c/graph/parse.c): graphs written as IR text
 * compile and run; print(parse(text)) == text; parse(print(g)) == g for built graphs, and the
 * round trip fails when a field the compiler reads is left out of the text; malformed text
 * gives the line and the reason. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic.h"
#include "ic_internal.h"
#include "harness.h"

static ic_graph *parse_ok(const char *text) {
    char msg[256];
    ic_graph *g = ic_graph_parse(text, msg, sizeof msg);
    CHECK(g != NULL, "parse failed: %s\n%s", msg, text);
    return g;
}

/* the text comes back unchanged through parse and print */
static void same_text(const char *text) {
    ic_graph *g = parse_ok(text);
    if (!g) return;
    char *t = ic_graph_to_string(g);
    CHECK(t && !strcmp(t, text), "print(parse(text)) differs:\n%s---\n%s", text, t ? t : "(null)");
    free(t);
    ic_graph_free(g);
}

static void test_written_graph_runs(void) {
    cur_test = "written graph runs";
    /* y = (x * 2 + b).sum(1, keepdim) over x[4,5] with a transposed b[5,4] (strides) */
    const char *text = "%0 = input 0 : f32[4,5] strides=[5,1]\n"
                       "%1 = input 1 : f32[4,5] strides=[1,4]\n"
                       "%2 = scalar 2 : f64[]\n"
                       "%3 = mul %0 %2 : f32[4,5]\n"
                       "%4 = add %3 %1 : f32[4,5]\n"
                       "%5 = sum %4 dims=[1] keepdim : f32[4,1]\n"
                       "output 0 = %5\n"
                       "output 1 = %4\n";
    same_text(text);
    ic_graph *g = parse_ok(text);
    if (!g) return;
    CHECK(ic_graph_num_inputs(g) == 2 && ic_graph_num_outputs(g) == 2 && ic_graph_num_ops(g) == 3,
          "counts: %d inputs, %d outputs, %d ops", ic_graph_num_inputs(g), ic_graph_num_outputs(g),
          ic_graph_num_ops(g));
    ic_options o = {.device = IC_CPU};
    ic_err err;
    ic_compiled *c = ic_compile(g, &o, &err);
    CHECK(c != NULL, "compile: %s", err.msg);
    if (c) {
        CHECK(ic_compiled_num_kernels(c) >= 1, "no kernels");
        float x[20], b[20], y[4], z[20];
        for (int i = 0; i < 20; i++) x[i] = (float)i, b[i] = (float)(100 * i);
        void *in[2] = {x, b}, *out[2] = {y, z};
        CHECK(ic_run(c, in, out, &err) == 0, "run: %s", err.msg);
        for (int r = 0; r < 4; r++) {
            float want = 0;
            for (int j = 0; j < 5; j++) {
                float e = x[r * 5 + j] * 2 + b[j * 4 + r];
                want += e;
                CHECK(z[r * 5 + j] == e, "z[%d,%d] = %g, want %g", r, j, z[r * 5 + j], e);
            }
            CHECK(fabsf(y[r] - want) <= 1e-4f * fabsf(want), "y[%d] = %g, want %g", r, y[r], want);
        }
        ic_compiled_free(c);
    }
    ic_graph_free(g);
}

static void test_attributes(void) {
    cur_test = "attributes";
    same_text("%0 = input 0 : bf16[2,3,8] strides=[24,8,1]\n"
              "%1 = permute %0 perm=[2,0,1] : bf16[8,2,3]\n"
              "%2 = slice %1 dim=0 start=1 step=2 : bf16[4,2,3]\n"
              "%3 = cat %2 %2 dim=1 : bf16[4,4,3]\n"
              "%4 = arange start=-0.5 step=0.25 : f32[3]\n"
              "%5 = cast %3 : f32[4,4,3]\n"
              "%6 = add %5 %4 : f32[4,4,3]\n"
              "%7 = argmax %6 dims=[2] : i64[4,4]\n"
              "%8 = scalar -inf : f64[]\n"
              "%9 = scalar nan : f64[]\n"
              "%10 = where %0 %8 %9 : f64[2,3,8]\n"
              "output 0 = %7\n"
              "output 1 = %10\n");
    same_text("%0 = input 0 : f32[3,4] strides=[4,1]\n"
              "%1 = input 1 : f32[4,5] strides=[5,1]\n"
              "%2 = input 2 : f32[5] strides=[1]\n"
              "%3 = extern %0 %1 mm : f32[3,5]\n"
              "%4 = extern %2 %0 %1 addmm beta=0.5 alpha=2 : f32[3,5]\n"
              "%5 = extern %3 cumsum params=[1,-1] : f32[3,5]\n"
              "output 0 = %4\n"
              "output 1 = %5\n");
    /* symbolic sizes: hints in the sizes, symbols learnt from the inputs */
    const char *dyn = "%0 = input 0 : f32[6,4] sym=[3*s0,4] strides=[4,1]\n"
                      "%1 = input 1 : f32[5] sym=[s1] strides=[1]\n"
                      "%2 = reshape %0 : f32[24] sym=[12*s0]\n"
                      "%3 = exp %1 : f32[5] sym=[s1]\n"
                      "output 0 = %2\n"
                      "output 1 = %3\n";
    same_text(dyn);
    ic_graph *g = parse_ok(dyn);
    if (g) {
        CHECK(g->sym_hint[0] == 2 && g->sym_hint[1] == 5 && g->sym_hint[2] == 0, "hints %lld %lld %lld",
              (long long)g->sym_hint[0], (long long)g->sym_hint[1], (long long)g->sym_hint[2]);
        ic_graph_free(g);
    }
}

/* built through the API: the round trip holds, and fails once a field the text does not
 * carry is changed (that is how a field missing from the cache key would show) */
static void test_roundtrip_detects(void) {
    cur_test = "round trip";
    ic_graph *g = ic_graph_new();
    ic_meta m = {.dtype = IC_F32, .ndim = 2, .sizes = {4, 6}, .strides = {1, 4}};
    ic_val x = ic_input(g, &m);
    ic_val s = ic_scalar(g, 0.1, IC_F64);
    ic_val y = ic_binary(g, IC_OP_MUL, x, s);
    int perm[2] = {1, 0};
    ic_val p = ic_permute(g, y, perm);
    ic_val r = ic_reduce(g, IC_OP_AMAX, p, 1u, 0, -1);
    ic_output(g, r);
    ic_output(g, p);
    char msg[256];
    CHECK(ic_graph_error(g) == NULL, "graph: %s", ic_graph_error(g));
    CHECK(ic_graph_roundtrip(g, msg, sizeof msg) == 0, "round trip: %s", msg);
    /* an intermediate with strides the text does not carry */
    g->nodes[y].meta.strides[0] = 1;
    CHECK(ic_graph_roundtrip(g, msg, sizeof msg) != 0 && strstr(msg, "meta"), "strides change missed: %s", msg);
    g->nodes[y].meta.strides[0] = 6;
    CHECK(ic_graph_roundtrip(g, msg, sizeof msg) == 0, "restored: %s", msg);
    /* a field no op prints for this op */
    g->nodes[y].dim = 1;
    CHECK(ic_graph_roundtrip(g, msg, sizeof msg) != 0 && strstr(msg, "dim"), "dim change missed: %s", msg);
    g->nodes[y].dim = 0;
    /* a scalar's value bit for bit: 0.1 and 0.1 + 1 ulp differ in the text too */
    g->nodes[s].num = nextafter(0.1, 1.0);
    CHECK(ic_graph_roundtrip(g, msg, sizeof msg) == 0, "ulp: %s", msg);
    g->nodes[s].num = -0.0;
    CHECK(ic_graph_roundtrip(g, msg, sizeof msg) == 0, "-0.0: %s", msg);
    /* ic_graph_equal itself: a different scalar is a difference */
    ic_graph *h = ic_graph_parse(NULL, msg, sizeof msg);
    CHECK(h == NULL && strstr(msg, "no text"), "NULL text: %s", msg);
    char *t = ic_graph_to_string(g);
    h = t ? ic_graph_parse(t, msg, sizeof msg) : NULL;
    free(t);
    CHECK(h != NULL, "parse: %s", msg);
    if (h) {
        h->nodes[s].num = 0.0;
        CHECK(ic_graph_equal(g, h, msg, sizeof msg) != 0 && strstr(msg, "num"), "-0.0 vs 0.0: %s", msg);
        ic_graph_free(h);
    }
    ic_graph_free(g);
}

static void bad(const char *text, const char *want) {
    char msg[256];
    ic_graph *g = ic_graph_parse(text, msg, sizeof msg);
    CHECK(g == NULL && strstr(msg, want), "want an error with '%s', got %s\n%s", want, g ? "a graph" : msg, text);
    ic_graph_free(g);
}

static void test_errors(void) {
    cur_test = "errors";
    bad("%0 = input 0 : f32[4]\n%1 = frob %0 : f32[4]\n", "line 2: unknown op 'frob'");
    bad("%0 = input 0 : f33[4]\n", "unknown dtype");
    bad("%1 = input 0 : f32[4]\n", "out of order");
    bad("%0 = input 1 : f32[4]\n", "input 1 out of order");
    bad("%0 = input 0 : f32[4]\n%1 = neg %1 : f32[4]\n", "not an earlier value");
    bad("%0 = input 0 : f32[4]\n%1 = neg %0 %0 : f32[4]\n", "bad operand"); /* arity (ic_graph_verify) */
    bad("%0 = input 0 : f32[4]\n%1 = sum %0 : f32[]\n", "expected 'dims='");
    bad("%0 = input 0 : f32[4] junk\n", "unexpected 'junk'");
    bad("%0 = input 0 : f32[4]\noutput 0 = %3\n", "not an earlier value");
    bad("%0 = input 0 : f32[4]\noutput 0 = %0\n%1 = neg %0 : f32[4]\n", "after the outputs");
    bad("%0 = input 0 : f32[4]\n%1 = extern %0 nosuch : f32[4]\n", "unknown extern");
    bad("%0 = input 0 : f32[4] sym=[s9]\n", "out of range");
    bad("%0 = input 0 : f32[4] strides=[1,1]\n", "2 strides for 1 dims");
    bad("%0 = scalar one : f64[]\n", "expected a number");
    /* comments and blank lines are allowed */
    ic_graph *g = parse_ok("# a comment\n\n%0 = input 0 : f32[4]\n  \noutput 0 = %0\n");
    ic_graph_free(g);
}

int main(void) {
    double t0 = now();
    test_written_graph_runs();
    test_attributes();
    test_roundtrip_detects();
    test_errors();
    printf("test_parse: %d checks, %d failures (%.1f s)\n", checks, failures, now() - t0);
    return failures;
}
