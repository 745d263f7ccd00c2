/* test_scan_kernel.c — torchc.scan's persistent CUDA kernel (codegen/gpu_scan.c) without a GPU:
 * graph texts of scan bodies planned (launch shape, the reasons of bodies that do not qualify),
 * the kernel cache (a repeat is the same kernel, a reason is kept too), the training form
 * (its saved stacks, the backward kernel's leaves, an op without a derivative refused), and
 * the PTX made for sm_90, assembled by ptxas where installed (PTXAS, /usr/local/cuda). Run
 * under valgrind/ASan it covers the generator's error paths (ic_fail from inside the IR
 * build) for leaks. Exit status: number of failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ic.h"
#include "ic_device.h"
#include "harness.h"

/* h' = tanh(h @ Wᵀ + x), N = 2, n = 8 (as torchc prints it) */
static const char *TANH = "%0 = input 0 : f32[2,8] strides=[8,1]\n"
                          "%1 = input 1 : f32[8,8] strides=[8,1]\n"
                          "%2 = permute %1 perm=[1,0] : f32[8,8]\n"
                          "%3 = extern %0 %2 matmul : f32[2,8]\n"
                          "%4 = input 2 : f32[2,8] strides=[8,1]\n"
                          "%5 = add %3 %4 : f32[2,8]\n"
                          "%6 = tanh %5 : f32[2,8]\n"
                          "output 0 = %6\n";
/* the tanh body at N = 2 and hidden size n */
static const char *tanh_n(int n) {
    static char buf[600];
    snprintf(buf, sizeof buf,
             "%%0 = input 0 : f32[2,%d] strides=[%d,1]\n%%1 = input 1 : f32[%d,%d] strides=[%d,1]\n"
             "%%2 = permute %%1 perm=[1,0] : f32[%d,%d]\n%%3 = extern %%0 %%2 matmul : f32[2,%d]\n"
             "%%4 = input 2 : f32[2,%d] strides=[%d,1]\n%%5 = add %%3 %%4 : f32[2,%d]\n"
             "%%6 = tanh %%5 : f32[2,%d]\noutput 0 = %%6\n",
             n, n, n, n, n, n, n, n, n, n, n, n);
    return buf;
}
/* modReLU with an input projection of K = 3 */
static const char *MODRELU = "%0 = input 0 : f32[2,3] strides=[3,1]\n"
                             "%1 = input 1 : f32[2,8] strides=[8,1]\n"
                             "%2 = input 2 : f32[2,8] strides=[8,1]\n"
                             "%3 = input 3 : f32[8,8] strides=[8,1]\n"
                             "%4 = permute %3 perm=[1,0] : f32[8,8]\n"
                             "%5 = extern %2 %4 mm : f32[2,8]\n"
                             "%6 = input 4 : f32[8,3] strides=[3,1]\n"
                             "%7 = permute %6 perm=[1,0] : f32[3,8]\n"
                             "%8 = extern %0 %7 mm : f32[2,8]\n"
                             "%9 = add %5 %8 : f32[2,8]\n"
                             "%10 = add %9 %1 : f32[2,8]\n"
                             "%11 = sign %10 : f32[2,8]\n"
                             "%12 = abs %10 : f32[2,8]\n"
                             "%13 = input 5 : f32[8] strides=[1]\n"
                             "%14 = add %12 %13 : f32[2,8]\n"
                             "%15 = relu %14 : f32[2,8]\n"
                             "%16 = mul %11 %15 : f32[2,8]\n"
                             "output 0 = %16\n";
/* a reduction of the carry: not taken */
static const char *REDUCE = "%0 = input 0 : f32[2,8] strides=[8,1]\n"
                            "%1 = input 1 : f32[2,8] strides=[8,1]\n"
                            "%2 = sum %0 dims=[1] keepdim : f32[2,1]\n"
                            "%3 = sub %1 %2 : f32[2,8]\n"
                            "output 0 = %3\n";

/* ptx assembled by ptxas for sm_90 where it is installed (PTXAS, else /usr/local/cuda) */
static void ptxas_ok(const char *name, const char *ptx) {
    const char *e = getenv("PTXAS"), *ptxas = NULL;
    if (e && access(e, X_OK) == 0) ptxas = e;
    else if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0) ptxas = "/usr/local/cuda/bin/ptxas";
    if (!ptxas || !ptx) return;
    char file[256], cmd[700];
    snprintf(file, sizeof file, "/tmp/torchc_scan_%d_%s.ptx", (int)getpid(), name);
    FILE *f = fopen(file, "w");
    if (!f) return;
    fputs(ptx, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90 '%s' -o /dev/null 2>&1", ptxas, file);
    FILE *pp = popen(cmd, "r");
    char out[4096] = "";
    size_t got = pp ? fread(out, 1, sizeof out - 1, pp) : 0;
    out[got] = 0;
    int st = pp ? pclose(pp) : -1;
    CHECK(st == 0, "%s: ptxas rejected the PTX:\n%s", name, out);
    unlink(file);
}

static ic_scan_kernel *get(const char *graph, int nin, const char *role, const int *ridx, int nx,
                           const int64_t *xs0, int64_t N, int64_t n, int sm, char *why) {
    int yout[1] = {0};
    ic_scan_spec sp = {.graph = graph, .ninputs = nin, .role = role, .role_index = ridx, .nx = nx,
                       .x_stride0 = xs0, .N = N, .n = n, .cout = 0, .ny = 1, .yout = yout, .sm = sm, .nsm = 132};
    return ic_scan_kernel_get(&sp, why, 300);
}

int main(void) {
    char why[300], msg[300];
    int ridx[6] = {0, 0, 0, 0, 0, 0};
    int64_t xs0[2] = {16, 0};

    cur_test = "tanh";
    ic_scan_kernel *k = get(TANH, 3, "ckx", ridx, 1, xs0, 2, 8, 90, why);
    CHECK(k != NULL, "tanh body: %s", why);
    if (k) {
        const ic_scan_shape *s = ic_scan_kernel_shape(k);
        CHECK(s->threads == 32 && s->R == 1 && s->ctas == 2 && s->has_mv && s->nres == 1,
              "shape %d %d %d %d", s->threads, s->R, s->ctas, s->has_mv);
        CHECK(strstr(ic_scan_kernel_ir(k), "define void @torchc_scan_persist") != NULL, "IR");
        char *ptx = ic_scan_kernel_ptx(k, msg, sizeof msg);
        CHECK(ptx && strstr(ptx, ".entry torchc_scan_persist") && strstr(ptx, "bar.sync"), "PTX: %s", ptx ? "" : msg);
        ptxas_ok("tanh", ptx);
        free(ptx);
        ic_scan_kernel *k2 = get(TANH, 3, "ckx", ridx, 1, xs0, 2, 8, 90, why);
        CHECK(k2 == k, "a repeat is the kept kernel");
        ic_scan_kernel_unref(k2);
        ic_scan_kernel_unref(k);
    }
    cur_test = "modrelu";
    int ridx2[6] = {0, 0, 0, 0, 0, 0};
    ridx2[1] = 1;
    int64_t xs02[2] = {6, 16};
    k = get(MODRELU, 6, "xxckkk", ridx2, 2, xs02, 2, 8, 86, why);
    CHECK(k != NULL, "modReLU body: %s", why);
    if (k) {
        CHECK(ic_scan_kernel_shape(k)->nxmm == 1, "one input projection");
        ic_scan_kernel_unref(k);
    }
    cur_test = "training";
    { /* the training form: the forward's saved stacks, the backward kernel and its leaves */
        int yout[1] = {0};
        ic_scan_spec sp = {.graph = MODRELU, .ninputs = 6, .role = "xxckkk", .role_index = ridx2, .nx = 2,
                           .x_stride0 = xs02, .N = 2, .n = 8, .cout = 0, .ny = 1, .yout = yout, .sm = 90, .nsm = 132,
                           .train = 1};
        k = ic_scan_kernel_get(&sp, why, sizeof why);
        CHECK(k != NULL, "modReLU training form: %s", why);
        if (k) {
            int nleaf;
            const char *wd, *lv = ic_scan_kernel_leaves(k, &nleaf, &wd);
            /* leaves: the tap (input 1) and b (input 5) read pointwise, then the projection */
            CHECK(ic_scan_kernel_shape(k)->nsave == 2 && nleaf == 3 && lv[0] == 'v' && strchr(lv, 'p'),
                  "nsave %d, leaves %d: %s", ic_scan_kernel_shape(k)->nsave, nleaf, lv);
            CHECK(ic_scan_kernel_bwd_nptrs(k) == 1 + 6 + 2 + 1 + 3 + 3, "bwd params %d", ic_scan_kernel_bwd_nptrs(k));
            CHECK(wd[0] == '3', "W's view: %s", wd);
            char *ptx = ic_scan_kernel_ptx(k, msg, sizeof msg);
            CHECK(ptx && strstr(ptx, ".entry torchc_scan_persist(") && strstr(ptx, ".entry torchc_scan_persist_bwd("),
                  "PTX of both kernels: %s", ptx ? "" : msg);
            ptxas_ok("modrelu_train", ptx);
            free(ptx);
            ic_scan_kernel_unref(k);
        }
        /* no derivative rule: the training form is refused with the reason, the forward kept */
        static const char *ATAN = "%0 = input 0 : f32[2,8] strides=[8,1]\n"
                                  "%1 = input 1 : f32[8,8] strides=[8,1]\n"
                                  "%2 = extern %0 %1 mm : f32[2,8]\n"
                                  "%3 = input 2 : f32[2,8] strides=[8,1]\n"
                                  "%4 = add %2 %3 : f32[2,8]\n"
                                  "%5 = atan %4 : f32[2,8]\n"
                                  "output 0 = %5\n";
        ic_scan_spec sa = {.graph = ATAN, .ninputs = 3, .role = "ckx", .role_index = ridx, .nx = 1, .x_stride0 = xs0,
                           .N = 2, .n = 8, .cout = 0, .ny = 1, .yout = yout, .sm = 90, .nsm = 132, .train = 1};
        k = ic_scan_kernel_get(&sa, why, sizeof why);
        CHECK(k == NULL && strstr(why, "no derivative of atan"), "atan training: %s", k ? "planned" : why);
        sa.train = 0;
        k = ic_scan_kernel_get(&sa, why, sizeof why);
        CHECK(k != NULL, "atan forward: %s", why);
        ic_scan_kernel_unref(k);
    }
    cur_test = "reasons";
    k = get(REDUCE, 2, "cx", ridx, 1, xs0, 2, 8, 90, why);
    CHECK(k == NULL && strstr(why, "sum"), "reduction: %s", k ? "planned" : why);
    k = get(TANH, 3, "ckx", ridx, 1, xs0, 2, 2000, 90, why);
    CHECK(k == NULL && strstr(why, "1024"), "hidden size: %s", k ? "planned" : why);
    /* W in global memory lost to the compiled-body loop: n = 240 on sm_90 and 160 on sm_86 do not fit */
    k = get(tanh_n(241), 3, "ckx", ridx, 1, xs0, 2, 241, 90, why);
    CHECK(k == NULL && strstr(why, "shared memory"), "n = 241 on sm_90: %s", k ? "planned" : why);
    k = get(tanh_n(160), 3, "ckx", ridx, 1, xs0, 2, 160, 86, why);
    CHECK(k == NULL && strstr(why, "shared memory"), "n = 160 on sm_86: %s", k ? "planned" : why);
    k = get(tanh_n(160), 3, "ckx", ridx, 1, xs0, 2, 160, 90, why);
    CHECK(k != NULL, "n = 160 on sm_90: %s", why);
    ic_scan_kernel_unref(k);
    k = get(TANH, 3, "kcx", ridx, 1, xs0, 2, 8, 90, why); /* the roles swapped: W as the carry */
    CHECK(k == NULL && strstr(why, "carry"), "roles: %s", k ? "planned" : why);
    k = get(TANH, 3, "cxx", ridx, 1, xs0, 2, 8, 90, why); /* W an x slice: no constant [K, n] */
    CHECK(k == NULL && strstr(why, "right operand"), "W as an x: %s", k ? "planned" : why);
    k = get("%0 = bogus\n", 1, "c", ridx, 0, xs0, 2, 8, 90, why);
    CHECK(k == NULL && strstr(why, "parse"), "bad text: %s", k ? "planned" : why);
    k = get(REDUCE, 2, "cx", ridx, 1, xs0, 2, 8, 90, why); /* the kept reason */
    CHECK(k == NULL && strstr(why, "sum"), "kept reason: %s", k ? "planned" : why);
    ic_scan_cache_clear();
    printf("test_scan_kernel: %d checks, %d failures\n", checks, failures);
    return failures;
}
