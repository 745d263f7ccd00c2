/* test_optable.c — the op table's columns agree with each other (ic_ops.h): one "what" flag an
 * op, the kinds and the flags say the same thing, the semantic flags do not contradict each
 * other; and the ops the graph builders treat specially carry the flags they read. */
#include <string.h>

#include "harness.h"
#include "ic_internal.h"
#include "support.h"

static int popcount(unsigned x) {
    int n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

int main(void) {
    for (int i = 0; i < IC_OP_COUNT; i++) {
        ic_op op = (ic_op)i;
        unsigned f = ic_op_flags(op);
        ic_kind k = ic_op_kind(op);
        cur_test = ic_op_name(op);
        CHECK(popcount(f & IC_F_WHAT) == 1, "exactly one of PW/RED/VIEW/GATHER/LEAF/EXT (flags %#x)", f);
        bool elementwise = k == IC_K_UNARY || k == IC_K_BINARY || k == IC_K_TERNARY || op == IC_OP_CAST;
        CHECK(!!(f & IC_F_PW) == elementwise, "PW exactly for unary/binary/ternary ops and cast");
        CHECK(!!(f & IC_F_RED) == (k == IC_K_REDUCE), "RED exactly for reductions");
        CHECK(!((f & IC_F_FLOAT) && (f & IC_F_INT)), "FLOAT and INT exclude each other");
        CHECK(!((f & IC_F_FLOAT) && (f & IC_F_BOOL)), "FLOAT ops do not return bool");
        CHECK(!(f & IC_F_BITS) || (f & IC_F_INT), "BITS ops have integer semantics");
        CHECK(!(f & IC_F_COMM) || k == IC_K_BINARY, "only binary ops are commutative");
        CHECK(!(f & (IC_F_FLOAT | IC_F_INT | IC_F_BOOL | IC_F_BITS)) || (f & (IC_F_PW | IC_F_RED)),
              "semantic flags only on pointwise ops and reductions");
        CHECK(strcmp(ic_op_name(op), "?") != 0, "a name");
    }
    cur_test = "";
    CHECK(ic_op_flags(IC_OP_COUNT) == 0 && ic_op_flags((ic_op)-1) == 0, "out of range: no flags");
    /* what graph.c reads */
    const ic_op boolean[] = {IC_OP_EQ, IC_OP_NE, IC_OP_LT, IC_OP_LE, IC_OP_GT, IC_OP_GE, IC_OP_LOGICAL_AND,
                             IC_OP_LOGICAL_OR, IC_OP_LOGICAL_XOR, IC_OP_LOGICAL_NOT, IC_OP_ISNAN, IC_OP_ISINF,
                             IC_OP_ISFINITE};
    for (size_t i = 0; i < sizeof boolean / sizeof *boolean; i++)
        CHECK(ic_op_flags(boolean[i]) & IC_F_BOOL, "%s returns bool", ic_op_name(boolean[i]));
    const ic_op fl[] = {IC_OP_DIV, IC_OP_ATAN2, IC_OP_EXP, IC_OP_SIN, IC_OP_ERF, IC_OP_SIGMOID};
    for (size_t i = 0; i < sizeof fl / sizeof *fl; i++)
        CHECK(ic_op_flags(fl[i]) & IC_F_FLOAT, "%s promotes ints to float", ic_op_name(fl[i]));
    const ic_op in[] = {IC_OP_FLOOR_DIVIDE, IC_OP_REMAINDER, IC_OP_FMOD, IC_OP_ADD, IC_OP_ABS, IC_OP_SIGN,
                        IC_OP_AMAX, IC_OP_ARGMIN};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++)
        CHECK(ic_op_flags(in[i]) & IC_F_INT, "%s has integer semantics", ic_op_name(in[i]));
    CHECK(!(ic_op_flags(IC_OP_MEAN) & IC_F_INT) && !(ic_op_flags(IC_OP_POW) & IC_F_INT), "mean, pow: floats only");
    printf("test_optable: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
