/* test_decomp.c — the graph-level decompositions of inductor_c/graph/decomp_pool.c
 * (ic_decomp.h) against naive loops in double: max/sum pool windows (strided, padded,
 * dilated, ceil mode, the tiled form), constant padding (negative = cut), nearest index maps
 * and depthwise convolutions; refusals leave the graph untouched. Exit status: failures. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ic.h"
#include "ic_decomp.h"

static ic_meta meta4(int64_t a, int64_t b, int64_t c, int64_t d) {
    ic_meta m = {.dtype = IC_F32, .ndim = 4, .sizes = {a, b, c, d}, .strides = {b * c * d, c * d, d, 1}};
    return m;
}

static float *filled(int64_t n, int salt) {
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(((i * 37 + salt * 11) % 23) - 11) * 0.125f;
    return p;
}

/* compiles g (one output of n floats), runs it on ins, compares with want */
static void run_check(ic_graph *g, void **ins, const double *want, int64_t n, const char *what) {
    ic_err err;
    ic_compiled *c = ic_compile(g, NULL, &err);
    CHECK(c != NULL, "%s: compile: %s", what, c ? "" : err.msg);
    if (c == NULL)
        return;
    CHECK(ic_compiled_output_meta(c, 0)->ndim >= 1, "%s: output meta", what);
    float *out = calloc((size_t)n, sizeof *out);
    void *outs[1] = {out};
    CHECK(ic_run(c, ins, outs, &err) == 0, "%s: run", what);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++)
        if (!(fabs(out[i] - want[i]) <= 1e-5 * (1 + fabs(want[i])))) {
            CHECK(0, "%s: [%lld] %g != %g", what, (long long)i, out[i], want[i]);
            bad++;
        }
    free(out);
    ic_compiled_free(c);
}

/* pool over the last 2 dims of [N, C, H, W] as torch: window o*s - pad + j*dl */
static void test_pool(int maxp, const int64_t *k, const int64_t *s, const int64_t *pad, const int64_t *dl, int ceil) {
    int64_t N = 2, C = 3, H = 7, W = 9;
    ic_graph *g = ic_graph_new();
    ic_meta m = meta4(N, C, H, W);
    ic_val x = ic_input(g, &m);
    ic_val r;
    int64_t osz[2];
    char why[160] = "";
    int rc = ic_pool_window(g, x, 2, k, s, pad, dl, ceil, maxp ? IC_OP_MAXIMUM : IC_OP_ADD, &r, osz, why, sizeof why);
    CHECK(rc == 0, "pool refused: %s", why);
    if (rc != 0) {
        ic_graph_free(g);
        return;
    }
    ic_output(g, r);
    float *in = filled(N * C * H * W, 1);
    int64_t n = N * C * osz[0] * osz[1];
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t b = 0; b < N * C; b++)
        for (int64_t oh = 0; oh < osz[0]; oh++)
            for (int64_t ow = 0; ow < osz[1]; ow++) {
                double acc = maxp ? -INFINITY : 0;
                for (int64_t i = 0; i < k[0]; i++)
                    for (int64_t j = 0; j < k[1]; j++) {
                        int64_t h = oh * s[0] - pad[0] + i * dl[0], w = ow * s[1] - pad[1] + j * dl[1];
                        double v = h < 0 || h >= H || w < 0 || w >= W ? (maxp ? -INFINITY : 0) : in[(b * H + h) * W + w];
                        acc = maxp ? fmax(acc, v) : acc + v;
                    }
                want[(b * osz[0] + oh) * osz[1] + ow] = acc;
            }
    void *ins[1] = {in};
    char what[96];
    snprintf(what, sizeof what, "%s pool k%lldx%lld s%lld ceil%d", maxp ? "max" : "sum", (long long)k[0],
             (long long)k[1], (long long)s[0], ceil);
    run_check(g, ins, want, n, what);
    free(in);
    free(want);
    ic_graph_free(g);
}

static void test_pools(void) {
    cur_test = "pool";
    test_pool(1, (int64_t[]){3, 2}, (int64_t[]){2, 2}, (int64_t[]){1, 0}, (int64_t[]){1, 2}, 0);
    test_pool(1, (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, 1);
    test_pool(0, (int64_t[]){2, 2}, (int64_t[]){1, 3}, (int64_t[]){0, 1}, (int64_t[]){1, 1}, 0);
    test_pool(0, (int64_t[]){3, 3}, (int64_t[]){3, 3}, (int64_t[]){0, 0}, (int64_t[]){1, 1}, 0); /* tiled */
    test_pool(1, (int64_t[]){3, 4}, (int64_t[]){3, 4}, (int64_t[]){0, 0}, (int64_t[]){1, 1}, 0); /* tiled */
    /* ceil mode, windows past the input: one clipped window (kernel > input), a partial last one */
    test_pool(0, (int64_t[]){10, 12}, (int64_t[]){10, 12}, (int64_t[]){0, 0}, (int64_t[]){1, 1}, 1);
    test_pool(1, (int64_t[]){10, 12}, (int64_t[]){10, 12}, (int64_t[]){0, 0}, (int64_t[]){1, 1}, 1);
    test_pool(0, (int64_t[]){4, 4}, (int64_t[]){4, 4}, (int64_t[]){0, 0}, (int64_t[]){1, 1}, 1);
    /* refusals: nothing built, the graph not in error */
    ic_graph *g = ic_graph_new();
    ic_meta m = meta4(1, 2, 5, 5);
    ic_val x = ic_input(g, &m), r = -1;
    int64_t osz[3]; /* the 3-d window case below writes three */
    char why[160] = "";
    CHECK(ic_pool_window(g, x, 2, (int64_t[]){3, 3}, (int64_t[]){1, 1}, (int64_t[]){2, 0}, (int64_t[]){1, 1}, 0,
                         IC_OP_MAXIMUM, &r, osz, why, sizeof why) == 1 && strstr(why, "bad kernel"),
          "padding over half the window refused: %s", why);
    CHECK(ic_pool_window(g, x, 3, (int64_t[]){1, 1, 1}, (int64_t[]){1, 1, 1}, (int64_t[]){0, 0, 0},
                         (int64_t[]){1, 1, 1}, 0, IC_OP_ADD, &r, osz, why, sizeof why) == 0,
          "3-d window of a 4-d input accepted");
    ic_meta mi = m;
    mi.dtype = IC_I32;
    ic_val xi = ic_input(g, &mi);
    CHECK(ic_pool_window(g, xi, 2, (int64_t[]){2, 2}, (int64_t[]){2, 2}, (int64_t[]){0, 0}, (int64_t[]){1, 1}, 0,
                         IC_OP_MAXIMUM, &r, osz, why, sizeof why) == 1 && strstr(why, "integer"),
          "integer max pool refused: %s", why);
    CHECK(ic_graph_error(g) == NULL, "refusals leave the graph without error");
    /* after a failed builder the chain goes on in the error state without crashing */
    ic_val bad = ic_slice(g, x, 9, 0, 1, 1);
    CHECK(bad < 0 && ic_graph_error(g) != NULL, "slice of a missing dim fails");
    CHECK(ic_pad_const(g, bad, 2, -1, -1, 0.0) < 0, "padding a failed value");
    CHECK(ic_pool_window(g, bad, 2, (int64_t[]){2, 2}, (int64_t[]){2, 2}, (int64_t[]){0, 0}, (int64_t[]){1, 1}, 0,
                         IC_OP_ADD, &r, osz, why, sizeof why) == 1, "pool of a failed value refused");
    ic_graph_free(g);
}

static void test_pad_and_index(void) {
    cur_test = "pad";
    ic_graph *g = ic_graph_new();
    ic_meta m = meta4(1, 2, 3, 6);
    ic_val x = ic_input(g, &m);
    /* width: cut 2 before, pad 3 after with 1.5 -> 7; height: pad 1 before -> 4 */
    ic_val y = ic_pad_const(g, ic_pad_const(g, x, 3, -2, 3, 1.5), 2, 1, 0, 1.5);
    ic_output(g, y);
    float *in = filled(36, 2);
    double want[2 * 4 * 7];
    for (int c = 0; c < 2; c++)
        for (int h = 0; h < 4; h++)
            for (int w = 0; w < 7; w++)
                want[(c * 4 + h) * 7 + w] = h == 0 || w >= 4 ? 1.5 : in[(c * 3 + h - 1) * 6 + w + 2];
    void *ins[1] = {in};
    run_check(g, ins, want, 56, "pad/cut");
    free(in);
    ic_graph_free(g);

    cur_test = "nearest index";
    for (int exact = 0; exact < 2; exact++) {
        g = ic_graph_new();
        ic_meta d = {.dtype = IC_F32, .ndim = 1, .sizes = {1}, .strides = {1}};
        ic_val dummy = ic_input(g, &d);
        int64_t L = 5, O = 8;
        ic_val idx = ic_interp_nearest_index(g, L, O, 0, exact);
        ic_output(g, ic_binary(g, IC_OP_ADD, ic_cast(g, idx, IC_F32), dummy));
        double w[8];
        for (int i = 0; i < O; i++) {
            double src = exact ? floor((i + 0.5) * (double)L / (double)O) : floor(i * ((float)L / (float)O));
            w[i] = fmin(src, (double)(L - 1));
        }
        float zero = 0;
        void *ins2[1] = {&zero};
        run_check(g, ins2, w, O, exact ? "nearest-exact index" : "nearest index");
        ic_graph_free(g);
    }
}

static void test_dwconv(void) {
    cur_test = "dwconv";
    int64_t N = 2, C = 4, H = 6, W = 5, K = 3;
    ic_graph *g = ic_graph_new();
    ic_meta mx = meta4(N, C, H, W), mw = meta4(C, 1, K, K);
    ic_meta mb = {.dtype = IC_F32, .ndim = 1, .sizes = {C}, .strides = {1}};
    ic_val v[3] = {ic_input(g, &mx), ic_input(g, &mw), ic_input(g, &mb)};
    /* nd, stride[2], padding[2], dilation[2], groups */
    int64_t prm[8] = {2, 1, 2, 1, 0, 1, 1, C};
    ic_val r = -1;
    CHECK(ic_dwconv_window(g, 2, prm, v, 3, 1, 4, &r) == 0, "9 taps over max_taps 4: not applicable");
    int64_t prm_g[8] = {2, 1, 1, 1, 1, 1, 1, 2};
    CHECK(ic_dwconv_window(g, 2, prm_g, v, 3, 1, 25, &r) == 0, "groups != channels: not applicable");
    CHECK(ic_dwconv_window(g, 2, prm, v, 3, 1, 25, &r) == 1, "depthwise conv built");
    ic_output(g, r);
    int64_t OH = (H + 2 * 1 - K) / 1 + 1, OW = (W + 0 - K) / 2 + 1;
    float *x = filled(N * C * H * W, 3), *w = filled(C * K * K, 4), *b = filled(C, 5);
    double *want = malloc((size_t)(N * C * OH * OW) * sizeof *want);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = b[c];
                    for (int64_t i = 0; i < K; i++)
                        for (int64_t j = 0; j < K; j++) {
                            int64_t h = oh - 1 + i, ww = ow * 2 + j;
                            if (h >= 0 && h < H && ww >= 0 && ww < W)
                                acc += (double)x[((n * C + c) * H + h) * W + ww] * w[(c * K + i) * K + j];
                        }
                    want[((n * C + c) * OH + oh) * OW + ow] = acc;
                }
    void *ins[3] = {x, w, b};
    run_check(g, ins, want, N * C * OH * OW, "depthwise 3x3 stride (1,2) pad (1,0)");
    free(x);
    free(w);
    free(b);
    free(want);
    ic_graph_free(g);
}

int main(void) {
    test_pools();
    test_pad_and_index();
    test_dwconv();
    printf("test_decomp: %d checks, %d failures\n", checks, failures);
    return failures;
}
