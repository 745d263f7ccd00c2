/* harness.h — what the C tests (tests/c/: inductor_c's and layouts/') share: the CHECK
 * counter macro (failures and checks; a test's main returns failures; the first two failures
 * of one CHECK are printed, random property tests repeat a failing check thousands of times),
 * the name of the test under way (cur_test, printed with a failure when set) and a monotonic
 * clock. Included once by each test program. */
#ifndef TC_TEST_HARNESS_H
#define TC_TEST_HARNESS_H

#include <stdio.h>
#include <time.h>

static int failures, checks;
static const char *cur_test __attribute__((unused)) = "";

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        static int site_fails_;                                                                   \
        checks++;                                                                                 \
        if (!(cond)) {                                                                            \
            failures++;                                                                           \
            if (++site_fails_ <= 2) {                                                             \
                if (cur_test[0]) fprintf(stderr, "FAIL [%s] %s:%d: ", cur_test, __FILE__, __LINE__); \
                else fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                         \
                fprintf(stderr, __VA_ARGS__);                                                     \
                fprintf(stderr, "\n");                                                            \
            }                                                                                     \
        }                                                                                         \
    } while (0)

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
