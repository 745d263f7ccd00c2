/* test_scan_kernel.c — torchc.scan's persistent CUDA kernel (codegen/gpu_scan.c) without a GPU:
 * graph texts of scan bodies planned (launch shape, the reasons of bodies that do not qualify),
 * the kernel cache (a repeat is the same kernel, a reason is kept too), and the PTX made for
 * sm_90. Run under valgrind/ASan it covers the generator's error paths (ic_fail from inside
 * the IR build) for leaks. Exit status: number of failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        CHECK(s->threads == 32 && s->R == 1 && s->ctas == 2 && s->has_mv && s->w_smem && s->nres == 1,
              "shape %d %d %d %d %d", s->threads, s->R, s->ctas, s->has_mv, s->w_smem);
        CHECK(strstr(ic_scan_kernel_ir(k), "define void @torchc_scan_persist") != NULL, "IR");
        char *ptx = ic_scan_kernel_ptx(k, msg, sizeof msg);
        CHECK(ptx && strstr(ptx, ".entry torchc_scan_persist") && strstr(ptx, "bar.sync"), "PTX: %s", ptx ? "" : msg);
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
    cur_test = "reasons";
    k = get(REDUCE, 2, "cx", ridx, 1, xs0, 2, 8, 90, why);
    CHECK(k == NULL && strstr(why, "sum"), "reduction: %s", k ? "planned" : why);
    k = get(TANH, 3, "ckx", ridx, 1, xs0, 2, 2000, 90, why);
    CHECK(k == NULL && strstr(why, "1024"), "hidden size: %s", k ? "planned" : why);
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
