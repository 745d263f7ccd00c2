/* support.h — internal helpers shared by the passes (hash-consing, arena teardown). */
#ifndef IC_SUPPORT_H
#define IC_SUPPORT_H

#include "ic_internal.h"

typedef struct ic_htab ic_htab;
/* Returns the id of an existing entry equal to cand, or inserts cand and returns it. */
int32_t ic_hintern(ic_ctx *c, ic_htab **h, uint64_t hash, int32_t cand,
                   bool (*eq)(ic_ctx *, int32_t, int32_t));
uint64_t ic_hmix(uint64_t h, uint64_t v);
void ic_arena_free(ic_ctx *c);
ic_kind ic_op_kind(ic_op op);

#endif
