/* dyn_bench.c — dynamic sizes: one symbolic compile vs. one static compile per batch size,
 * and run time of the dynamic kernel vs the static kernel at the same size.
 *
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Iinductor_c -I$(llvm-config-16 --includedir) benchmarks/dyn_bench.c \
 *      inductor_c/[*].c inductor_c/[*]/[*].c layouts/[*].c -L$(llvm-config-16 --libdir) -lLLVM-16 -lpthread -lm -ldl
 *   TORCHC_CACHE=0 [DYN_BENCH_THREADS=1] ./a.out
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ic.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { SOFTMAX, LAYERNORM, SUM0 };
static const char *names[] = {"softmax [B,1024]", "layernorm [B,768]", "sum(0) [B,512]"};
static const int64_t cols[] = {1024, 768, 512};

static ic_compiled *build(int kind, int64_t b, int dyn) {
    ic_graph *g = ic_graph_new();
    ic_meta m = {.dtype = IC_F32, .ndim = 2, .sizes = {b, cols[kind]}, .strides = {cols[kind], 1}};
    m.dims[0] = (ic_dim){.coef = 1, .exp = {1}};
    m.dims[1] = (ic_dim){.coef = cols[kind]};
    ic_val x = dyn ? ic_input_dyn(g, &m) : ic_input(g, &m);
    if (kind == SOFTMAX) {
        ic_val mx = ic_reduce(g, IC_OP_AMAX, x, 2u, 1, -1);
        ic_val e = ic_unary(g, IC_OP_EXP, ic_binary(g, IC_OP_SUB, x, mx));
        ic_output(g, ic_binary(g, IC_OP_DIV, e, ic_reduce(g, IC_OP_SUM, e, 2u, 1, -1)));
    } else if (kind == LAYERNORM) {
        ic_val mu = ic_reduce(g, IC_OP_MEAN, x, 2u, 1, -1);
        ic_val d = ic_binary(g, IC_OP_SUB, x, mu);
        ic_val var = ic_reduce(g, IC_OP_MEAN, ic_binary(g, IC_OP_MUL, d, d), 2u, 1, -1);
        ic_val r = ic_unary(g, IC_OP_RSQRT, ic_binary(g, IC_OP_ADD, var, ic_scalar(g, 1e-5, IC_F64)));
        ic_output(g, ic_binary(g, IC_OP_MUL, d, r));
    } else {
        ic_output(g, ic_reduce(g, IC_OP_SUM, x, 1u, 0, -1));
    }
    ic_err err;
    ic_options o = {0};
    ic_compiled *c = ic_compile(g, &o, &err);
    if (!c) fprintf(stderr, "compile failed: %s\n", err.msg);
    ic_graph_free(g);
    return c;
}

static double run_time(ic_compiled *c, int64_t b, int kind, int dyn) {
    int64_t sym[IC_MAX_SYMS] = {b};
    size_t n = (size_t)b * (size_t)cols[kind];
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = (float)(i % 97) * 0.01f;
    void *in[1] = {x}, *out[1] = {y};
    ic_err err;
    double best = 1e9;
    for (int rep = 0; rep < 30; rep++) {
        double t0 = now();
        if (dyn) ic_run_dyn(c, in, out, sym, &err);
        else ic_run(c, in, out, &err);
        double t = now() - t0;
        if (t < best) best = t;
    }
    free(x);
    free(y);
    return best;
}

int main(void) {
    if (getenv("DYN_BENCH_THREADS")) ic_set_num_threads(atoi(getenv("DYN_BENCH_THREADS")));
    const int64_t B[5] = {8, 64, 333, 1024, 4096};
    for (int kind = 0; kind < 3; kind++) {
        double t0 = now();
        ic_compiled *d = build(kind, 32, 1);
        double tdyn = now() - t0, tstat = 0;
        printf("%s: dynamic compile once %.1f ms\n", names[kind], 1e3 * tdyn);
        for (int i = 0; i < 5; i++) {
            t0 = now();
            ic_compiled *s = build(kind, B[i], 0);
            double tc = now() - t0;
            tstat += tc;
            double rs = run_time(s, B[i], kind, 0), rd = run_time(d, B[i], kind, 1);
            printf("  B=%5lld  static compile %6.1f ms  run static %8.1f us  dynamic %8.1f us  (%.2fx)\n",
                   (long long)B[i], 1e3 * tc, 1e6 * rs, 1e6 * rd, rd / rs);
            ic_compiled_free(s);
        }
        printf("  total compile: dynamic %.1f ms (1 compile) vs static %.1f ms (5 compiles)\n", 1e3 * tdyn, 1e3 * tstat);
        ic_compiled_free(d);
    }
    return 0;
}
